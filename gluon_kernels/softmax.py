"""Online softmax of the Hopper kernels (FlashAttention-2's, in base 2): running row maxima, P, the rescale of O
and of the row sums by alpha = 2^(m_old - m_new), and the row sums themselves.

The row sums are kept either on the FMA pipe (one FADD a score), as each thread's share of them (THREAD_ROWSUM:
``_row_partials``, the quad's shares added once a tile), or, with TC_ROWSUM, as a small wgmma of P against a ones
tile issued beside the P V GEMM (``_rowsum_mma``, ``_ones``); ``_zero_row_sums``, ``_row_sums_after`` and
``_row_sums`` take any of the three. All live here because they are one concern, the softmax denominator. Both
kernels of ``hopper_fa.py`` use these helpers.
"""
from __future__ import annotations

from ._compat import gl, gluon, warpgroup_mma
from .masking import _diagonal_mask, _mask
from .wgmma import _p_operand_layout


@gluon.jit
def _row_reduce(x, MAX: gl.constexpr):
    """Each row's max (MAX) or sum, in the row slice of x's layout."""
    if MAX:
        r = gl.max(x, axis=1)
    else:
        r = gl.sum(x, axis=1)
    return gl.convert_layout(r, gl.SliceLayout(1, x.type.layout), assert_trivial=True)


@gluon.jit
def _row_partials(p):
    """Each thread's share of each row's sum, [M, 4]: a wgmma accumulator spreads a row over the 4 threads of a
    quad (columns 8k + 2t and 8k + 2t + 1 in thread t), and only the columns a thread holds are added here, so no
    shuffle. The quad's shares are added once a tile (``_row_sums``) instead of once a block: FlashAttention-4's
    row sums (its K/V step has half our SHFL, benchmarks/hopper_kv_step_sass.py)."""
    M: gl.constexpr = p.shape[0]
    N: gl.constexpr = p.shape[1]
    # column c = 8k + 2t + r: k and r are register bits, t the quad's lane bits; only k and r are summed
    return gl.sum(gl.sum(p.reshape([M, N // 8, 4, 2]), axis=3), axis=1)


@gluon.jit
def _probs(s, m_prev, qk_scale, EMPTY_ROWS: gl.constexpr = False):
    """(m_new, P) for one block of scores: the running row maxima and exp2(s * qk_scale - m_new). `m_prev` None:
    a tile's first block. EMPTY_ROWS: a row may see no key in this block (its maximum -inf): P is taken against 0
    there, so the row's P is 0, not 0/0."""
    m_new = _row_reduce(s, True) * qk_scale
    if m_prev is not None:
        m_new = gl.maximum(m_prev, m_new)
    m_base = m_new
    if EMPTY_ROWS:
        m_base = gl.where(m_new == float("-inf"), 0.0, m_new)
    return m_new, gl.exp2(s * qk_scale - gl.expand_dims(m_base, 1))


@gluon.jit
def _block_probs(s, m_prev, n_off, masked, tile, cfg, WG: gl.constexpr, DIAGONAL_HALVES: gl.constexpr,
                 EMPTY_ROWS: gl.constexpr = False):
    """``_probs`` for K/V block `n_off`, masked where `masked` (a run-time, warp-uniform flag). Only the mask is
    under the branch: with the exponentials in both arms too, the bf16 loop lost 3-6% (H200). DIAGONAL_HALVES:
    every masked block is the causal diagonal spanning both warpgroups' rows (``_diagonal_mask``). `tile`: the
    rows' ``QueryTile`` (rows, sequence length, softmax scale). EMPTY_ROWS: see ``_probs``."""
    rows = tile.rows
    seq_len = tile.seq_len
    if masked:
        if DIAGONAL_HALVES:
            s = _diagonal_mask(s, n_off, rows, seq_len, cfg.s_layout, WG)
        else:
            s = _mask(s, n_off, rows, seq_len, cfg.s_layout, cfg.BLOCK_N, cfg.CAUSAL)
    return _probs(s, m_prev, tile.qk_scale, EMPTY_ROWS)


@gluon.jit
def _softmax(s, m_i, l_i, acc, n_off, masked, tile, cfg):
    """Online softmax in base 2 (scores pre-multiplied by sm_scale*log2(e)), for the loops that do one block at a
    time (`masked`: a constexpr or a warp-uniform run-time flag). Returns P (fp32) and the new state; rescales the
    output accumulator by alpha = 2^(m_old - m_new). `cfg`: the kernel's ``HopperConfig`` (its s_layout, BLOCK_N,
    CAUSAL and TC_ROWSUM are used)."""
    m_new, p = _block_probs(s, m_i, n_off, masked, tile, cfg, 0, False)
    alpha = gl.exp2(m_i - m_new)
    l_i = _row_sums_after(l_i, p, alpha, cfg)
    acc = _rescale(acc, alpha)
    return p, m_new, l_i, acc


@gluon.jit
def _rescale(x, alpha):
    """x * alpha per row (x: a wgmma accumulator; alpha: one value a row, in any slice layout)."""
    return x * gl.expand_dims(gl.convert_layout(alpha, gl.SliceLayout(1, x.type.layout)), 1)


@gluon.jit
def _zero_row_sums(cfg):
    """The row sums before a tile's first block, in the form ``cfg`` keeps them: [BLOCK_M] (one value a row),
    [BLOCK_M, 4] (THREAD_ROWSUM: each thread's share; the zeros are P's, so the layout is the one the loop carries) or
    [BLOCK_M, 8] (TC_ROWSUM: the row-sum GEMM's accumulator, 8 equal columns)."""
    if cfg.TC_ROWSUM:
        return gl.zeros([cfg.BLOCK_M, 8], gl.float32, cfg.l_layout)
    elif cfg.THREAD_ROWSUM:
        return _row_partials(gl.zeros([cfg.BLOCK_M, cfg.BLOCK_N], gl.float32, cfg.s_layout))
    else:
        return gl.full([cfg.BLOCK_M], 0.0, gl.float32, gl.SliceLayout(1, cfg.s_layout))


@gluon.jit
def _block_row_sums(p, cfg):
    """One block's row sums of P on the FMA pipe, in the form ``cfg`` keeps them (not TC_ROWSUM's: those come from
    the GEMM)."""
    if cfg.THREAD_ROWSUM:
        return _row_partials(p)
    else:
        return _row_reduce(p, False)


@gluon.jit
def _row_sums_after(l_i, p, alpha, cfg):
    """The running row sums of P after one block. TC_ROWSUM: the block's sums come from ``_rowsum_mma`` beside
    the P V GEMM, added after its wait, so here they are only rescaled, like O; otherwise the block's sums are added
    on the FMA pipe (one FADD a score; THREAD_ROWSUM: each thread's share)."""
    if cfg.TC_ROWSUM:
        return _rescale(l_i, alpha)
    elif cfg.THREAD_ROWSUM:
        return _rescale(l_i, alpha) + _block_row_sums(p, cfg)
    else:
        return l_i * alpha + _block_row_sums(p, cfg)


@gluon.jit
def _rowsum_mma(p_op, ones, l_acc):
    """P @ ones (this block's row sums, in `l_acc`'s [BLOCK_M, 8] layout), issued async beside the P V GEMM: P's
    row sums on the tensor cores, sparing the softmax step one FADD a score (the step's instruction issue is what
    bounds fp8 at D=128: docs/hopper_attention.md#the-exponential-unit-bounds-fp8). `ones`: [8, BLOCK_N] of 1.0 in shared memory, read K-major like V^T.
    The sums are of P as rounded for the GEMM, the same P that O is built from.

    Each block's sums start from zero and are added to the running sums in registers after the wait: an fp8
    wgmma accumulates with reduced precision, so a running sum kept in the tensor core lost the small terms once it
    had grown (relative error 0.32 at S=16k on the H200, fine at S <= 2k)."""
    bits: gl.constexpr = ones.dtype.primitive_bitwidth
    a = gl.convert_layout(p_op, _p_operand_layout(l_acc.type.layout, bits), assert_trivial=True)
    return warpgroup_mma(a, ones.permute((1, 0)), gl.zeros_like(l_acc),
                         use_acc=False, is_async=True)


@gluon.jit
def _ones(shape: gl.constexpr, dtype: gl.constexpr, num_warps: gl.constexpr):
    """A register tensor of 1.0 in `dtype`. fp8 from its bit pattern (0x38 in e4m3, stored as 0x38383838 words):
    with `gl.full(1.0, fp32).to(fp8)` the ones tile came out of Triton 3.6 wrong, and on the H200 the row sums
    missed the keys that P holds in bytes 2 and 3 of each 32-bit register (l about half the true sum)."""
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [num_warps, 1], [1, 0])
    if dtype == gl.float8e4nv:
        return gl.full(shape, 0x38, gl.int8, layout).to(dtype, bitcast=True)
    else:
        return gl.full(shape, 1.0, dtype, layout)


@gluon.jit
def _row_sums(l_i, like, cfg):
    """The row sums as one value a row, in the layout of `like`: the quad's shares added (THREAD_ROWSUM) or the 8
    equal columns collapsed (TC_ROWSUM), once a tile."""
    if cfg.TC_ROWSUM:
        return gl.convert_layout(gl.max(l_i, axis=1), like.type.layout)
    elif cfg.THREAD_ROWSUM:
        return gl.convert_layout(gl.sum(l_i, axis=1), like.type.layout)
    else:
        return l_i
