"""Pieces shared by the three FlashAttention-2 forward kernels of `sm120_attn`.

Everything here is written for this package. The design follows the public FlashAttention-2 algorithm (Dao, 2023)
and what the CuTe DSL Ampere example (`examples/python/CuTeDSL/ampere/flash_attention_v2.py` in NVIDIA/cutlass)
shows of the DSL's API: the `mma.sync` accumulator view as (rows, cols), the quad (4-lane) row reductions, and the
exp2-based online softmax. No line is copied from it.

Layout convention for every kernel: Q, K, V, O are (B, S, H, D) tensors, D contiguous.
"""


import math
from dataclasses import dataclass

import cutlass
import cutlass.cute as cute

SM120_SMEM_BYTES = 101_376
"""Shared memory one block may use on SM120 (RTX 50xx / RTX PRO 6000 / GB10): 99 KiB (NOTES §4)."""

LOG2_E = 1.4426950408889634

SUPPORTED_HEAD_DIMS = (64, 128)


@dataclass(frozen=True)
class TileConfig:
    m_block: int
    n_block: int
    head_dim: int
    stages: int = 1
    elem_bytes: int = 2

    def smem_bytes(self, *, q_tile: bool = True, kv_separate: bool = True, barriers: int = 0) -> int:
        q = self.m_block * self.head_dim * self.elem_bytes if q_tile else 0
        kv = self.n_block * self.head_dim * self.elem_bytes * (2 if kv_separate else 1) * self.stages
        return q + kv + 8 * barriers


def default_scale(head_dim: int) -> float:
    return 1.0 / math.sqrt(head_dim)


# ------------------------------------------------------------------------------------------------------------
# Device helpers (traced inside @cute.jit / @cute.kernel code)
# ------------------------------------------------------------------------------------------------------------


def rows_cols_view(acc: cute.Tensor) -> cute.Tensor:
    """View an `mma.sync` m16n8 accumulator fragment ((2, 2), MMA_M, MMA_N) as (rows, cols).

    In one m16n8 accumulator atom a thread holds (row g, cols 2t, 2t+1) and (row g+8, same cols); the value mode
    is (col-pair, row-half). Rows are (row-half, MMA_M), cols are (col-pair, MMA_N).
    """
    shp, strd = acc.layout.shape, acc.layout.stride
    view = cute.make_layout(((shp[0][1], shp[1]), (shp[0][0], shp[2])),
                            stride=((strd[0][1], strd[1]), (strd[0][0], strd[2])))
    return cute.make_tensor(acc.iterator, view)


def acc_as_a_operand(frag: cute.Tensor) -> cute.Tensor:
    """Reuse an m16n8 accumulator-shaped fragment ((2, 2), MMA_M, MMA_N) as the A operand of an m16n8k16 MMA.

    Two neighbouring n8 atoms of S are one k16 slice of P: value mode ((2, 2), 2), k mode MMA_N / 2.
    """
    shp, strd = frag.layout.shape, frag.layout.stride
    view = cute.make_layout(((shp[0], 2), shp[1], shp[2] // 2),
                            stride=((strd[0], strd[2]), strd[1], strd[2] * 2))
    return cute.make_tensor(frag.iterator, view)


def quad_allreduce(val, op):
    """Reduce over the 4 lanes that share one accumulator row (lanes 4g..4g+3)."""
    val = op(val, cute.arch.shuffle_sync_bfly(val, offset=2, mask=-1, mask_and_clamp=31))
    val = op(val, cute.arch.shuffle_sync_bfly(val, offset=1, mask=-1, mask_and_clamp=31))
    return val


def fmax(a, b):
    return cute.arch.fmax(a, b)


def fadd(a, b):
    return a + b


@cute.jit
def online_softmax_step(acc_s: cute.Tensor, acc_o: cute.Tensor, row_max: cute.Tensor, row_sum: cute.Tensor,
                        scale_log2: cutlass.Float32, first: cutlass.Constexpr):
    """One FlashAttention-2 online-softmax update, in place.

    acc_s (scores, fp32) becomes exp2((s - m_new) * scale_log2); acc_o is rescaled by exp2((m_old - m_new) *
    scale_log2); row_max / row_sum carry m and the (thread-partial) sum. Fully masked rows keep m = -inf; their
    exponent base is taken as 0 so that no NaN appears (their P is 0).
    """
    s_mn = rows_cols_view(acc_s)
    o_mn = rows_cols_view(acc_o)
    for r in cutlass.range_constexpr(cute.size(row_max)):
        row = s_mn[r, None].load()
        m_new = quad_allreduce(row.reduce(cute.ReductionOp.MAX, -cutlass.Float32.inf, 0), fmax)
        m_old = row_max[r]
        if cutlass.const_expr(not first):
            m_new = cute.arch.fmax(m_old, m_new)
        m_base = m_new * scale_log2
        m_base = 0.0 if m_new == -cutlass.Float32.inf else m_base
        p = cute.math.exp2(row * scale_log2 - m_base, fastmath=True)
        psum = p.reduce(cute.ReductionOp.ADD, cutlass.Float32.zero, 0)
        if cutlass.const_expr(first):
            row_sum[r] = psum
        else:
            corr = cute.math.exp2(m_old * scale_log2 - m_base, fastmath=True)
            row_sum[r] = row_sum[r] * corr + psum
            o_mn[r, None] = o_mn[r, None].load() * corr
        row_max[r] = m_new
        s_mn[r, None] = p


@cute.jit
def finish_softmax(acc_o: cute.Tensor, row_sum: cute.Tensor):
    """Divide O by the full row sum (quad-reduced here); empty rows (sum 0) give 0 rather than NaN."""
    o_mn = rows_cols_view(acc_o)
    for r in cutlass.range_constexpr(cute.size(row_sum)):
        total = quad_allreduce(row_sum[r], fadd)
        inv = 0.0 if total == 0.0 else cute.arch.rcp_approx(total)
        o_mn[r, None] = o_mn[r, None].load() * inv


@cute.jit
def mask_scores(acc_s: cute.Tensor, coords: cute.Tensor, seqlen_k, causal: cutlass.Constexpr):
    """Set scores outside the key range (col >= seqlen_k) and, when causal, above the diagonal (col > row) to
    -inf. `coords` is the identity-tensor partition (row, col) matching acc_s. Causal is top-left aligned, as
    torch SDPA's is_causal: query i sees keys 0..i."""
    s_mn = rows_cols_view(acc_s)
    c_mn = rows_cols_view(coords)
    for r in cutlass.range_constexpr(cute.size(s_mn, mode=[0])):
        limit = seqlen_k
        if cutlass.const_expr(causal):
            limit = cutlass.min(c_mn[r, 0][0] + 1, seqlen_k)
        for c in cutlass.range_constexpr(cute.size(s_mn, mode=[1])):
            if c_mn[0, c][1] >= limit:
                s_mn[r, c] = -cutlass.Float32.inf
