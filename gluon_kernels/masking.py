"""Score masks of the Hopper kernels: the sequence-end (key >= S) and causal masks applied to a block of scores.

``_mask`` is the general one (one compare a score against a per-row or scalar bound); ``_diagonal_mask`` does the
causal diagonal block that spans both consumer warpgroups' rows by comparing only the half that needs it, via the
register-only key split ``_halves`` / ``_joined``. Only masked blocks reach these (the softmax helpers branch on a
warp-uniform flag), so the unmasked loop carries no compares.
"""
from __future__ import annotations

from ._compat import gl, gluon
from .wgmma import _wgmma_layout


@gluon.jit
def _mask(s, n_off, rows, seq_len, s_layout: gl.constexpr, BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr):
    """-inf where the key is past the sequence end or (causal) after the query. One compare per element against
    a per-row (causal) or scalar bound, relative to the block start, to keep registers low."""
    offs = gl.expand_dims(gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout)), 0)
    if CAUSAL:
        limit = gl.minimum(rows, seq_len - 1) - n_off  # last allowed key of each row, block-relative
        # rows come in the full block's row layout; `_diagonal_mask`'s halves have their own (the same rows)
        valid = offs <= gl.expand_dims(gl.convert_layout(limit, gl.SliceLayout(1, s_layout)), 1)
    else:
        valid = offs < seq_len - n_off
    return gl.where(valid, s, -float("inf"))


@gluon.jit
def _halves(x, half_layout: gl.constexpr):
    """x [M, N] as its two key halves [M, N/2] in `half_layout`: keys [0, N/2) and [N/2, N). In a wgmma
    accumulator the key bit N/2 is a register bit, and each half is laid out as an N/2-wide accumulator, so the
    split moves no data (checked)."""
    M: gl.constexpr = x.shape[0]
    N: gl.constexpr = x.shape[1]
    lo, hi = gl.split(gl.permute(gl.reshape(x, [M, 2, N // 2]), (0, 2, 1)))
    return (gl.convert_layout(lo, half_layout, assert_trivial=True),
            gl.convert_layout(hi, half_layout, assert_trivial=True))


@gluon.jit
def _joined(lo, hi, layout: gl.constexpr):
    """``_halves`` undone, back in `layout` (register-only, checked)."""
    M: gl.constexpr = lo.shape[0]
    N: gl.constexpr = 2 * lo.shape[1]
    x = gl.reshape(gl.permute(gl.join(lo, hi), (0, 2, 1)), [M, N])
    return gl.convert_layout(x, layout, assert_trivial=True)


@gluon.jit
def _diagonal_mask(s, n_off, rows, seq_len, s_layout: gl.constexpr, WG: gl.constexpr):
    """``_mask`` for the causal diagonal block when it spans both warpgroups' rows (BLOCK_N = 2 * BLOCK_M, the
    block starting at the tile's first row), comparing half of it. Warpgroup 0 (the tile's first BLOCK_M rows)
    sees none of the upper half of keys: -inf there without a compare. Warpgroup 1 sees all of the lower half (a
    row past S is padding, never stored): only the upper half is compared."""
    HALF: gl.constexpr = s.shape[1] // 2
    half_layout: gl.constexpr = _wgmma_layout(HALF, 32, 4)  # an fp32 accumulator's layout is the same for any inputs
    lo, hi = _halves(s, half_layout)
    if WG == 0:
        lo = _mask(lo, n_off, rows, seq_len, half_layout, HALF, True)
        hi = gl.full_like(hi, -float("inf"))
    else:
        hi = _mask(hi, n_off + HALF, rows, seq_len, half_layout, HALF, True)
    return _joined(lo, hi, s_layout)
