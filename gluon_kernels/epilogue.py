"""Output of the Hopper kernels: O = acc / l and the log-sum-exp, stored directly with a row mask (``_epilogue``,
``_store_lse``) or staged through shared memory and one TMA store (``_epilogue_tma``), and the release of a Q
buffer once a deferred TMA store has read it (``_release_stored``). Apart from the kernels because the simple and
the warp-specialized kernel share the masked store and its O = acc / l.
"""
from __future__ import annotations

from ._compat import fence_async_shared, gl, gluon, mbarrier_arrive, tma_store, tma_store_wait


@gluon.jit
def _epilogue(acc, m_i, l_i, o_ptr, lse_ptr, tile, HEAD_DIM: gl.constexpr, WRITE_LSE: gl.constexpr):
    """O = acc / l, written with a row mask (rows >= S belong to padding or to the next head); LSE in natural log.
    `tile`: the rows' ``QueryTile`` (its head, rows and sequence length are used)."""
    bh = tile.bh
    rows = tile.rows
    seq_len = tile.seq_len
    o_layout: gl.constexpr = acc.type.layout
    l_o = gl.convert_layout(l_i, gl.SliceLayout(1, o_layout))
    o = acc * gl.expand_dims(1.0 / l_o, 1)
    rows_o = gl.convert_layout(rows, gl.SliceLayout(1, o_layout))
    cols = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, o_layout))
    row_ok = rows_o < seq_len
    offs = gl.expand_dims((bh * seq_len + rows_o).to(gl.int64) * HEAD_DIM, 1) + gl.expand_dims(cols, 0)
    gl.store(o_ptr + offs, o.to(o_ptr.dtype.element_ty), mask=gl.expand_dims(row_ok, 1))
    if WRITE_LSE:
        _store_lse(m_i, l_i, lse_ptr, tile)


@gluon.jit
def _store_lse(m_i, l_i, lse_ptr, tile):
    """The log-sum-exp of each row of `tile` in natural log (rows >= S not written)."""
    bh = tile.bh
    rows = tile.rows
    seq_len = tile.seq_len
    lse = (m_i + gl.log2(l_i)) * 0.6931471805599453
    gl.store(lse_ptr + (bh * seq_len + rows).to(gl.int64), lse, mask=rows < seq_len)


@gluon.jit
def _epilogue_tma(acc, l_i, o_smem, o_desc, row0, DEFER_WAIT: gl.constexpr):
    """O = acc / l through shared memory and one TMA store of the whole [BLOCK_M, D] tile (``o_smem``: 16-bit, the
    tile's own Q buffer, free once its last Q K^T is done; fp8, an O tile of its own). Why: the wgmma accumulator
    layout gives each thread 4-byte pieces of rows, so a direct store issues many narrow, scattered writes;
    FlashAttention-3 stages O the same way. Only for tiles wholly inside the head (a TMA store cannot mask rows
    that belong to the next head).

    DEFER_WAIT: return with the store in flight; the caller waits for it (``_release_stored``) once the next tile
    has started, instead of idling here until the store has read shared memory. Any earlier store of this
    warpgroup is waited for first, since with one O tile of its own (fp8) it is the buffer written next."""
    o_layout: gl.constexpr = acc.type.layout
    l_o = gl.convert_layout(l_i, gl.SliceLayout(1, o_layout))
    if DEFER_WAIT:
        tma_store_wait(0)
    o_smem.store((acc * gl.expand_dims(1.0 / l_o, 1)).to(o_desc.dtype))
    fence_async_shared()
    tma_store(o_desc, [row0, 0], o_smem)
    if not DEFER_WAIT:
        tma_store_wait(0)


@gluon.jit
def _release_stored(stored, q_empty_prev):
    """With a deferred store wait (DEFER_WAIT, 16-bit): once the store of the previous tile's O has read its Q
    buffer, hand that buffer back to the producer (`stored`: the previous tile went out by TMA store, so its Q
    buffer is still held). Called after the first K/V block of the next tile, so the store overlaps that block's
    Q K^T."""
    if stored:
        tma_store_wait(0)
        mbarrier_arrive(q_empty_prev)
