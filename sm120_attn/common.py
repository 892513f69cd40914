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
from cutlass.cute.nvgpu import warp

from .constants import SM120_SMEM_BYTES, SUPPORTED_HEAD_DIMS  # noqa: F401 (the kernels import them from here)


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


class FlashAttentionForward:
    """What the FlashAttention-2 forward kernels of this package share on the host side: the problem (head dim,
    causal), the tile (``m_block`` query rows of one (batch, head) per CTA, ``n_block`` keys per step), the number
    of key tiles that need a mask, and the implementability check. A subclass brings its element types
    (``dtypes``), its tile rules (``tile_fits``), its shared-memory footprint (``smem_bytes``) and its device code.

    Every kernel walks the key tiles from the last to the first, so the tiles that need the mask come first."""

    variant = ""
    dtypes: tuple = ()

    def __init__(self, head_dim: int, causal: bool, m_block: int, n_block: int, num_threads: int):
        self.head_dim = head_dim
        self.causal = causal
        self.m_block = m_block
        self.n_block = n_block
        self.num_threads = num_threads

    @staticmethod
    def default_n_block(head_dim: int) -> int:
        """Keys per tile of the 16-bit kernels: 64 at D=128, 128 at D=64."""
        return 64 if head_dim > 64 else 128

    @property
    def mask_tiles(self) -> int:
        """Key tiles that need a mask: the key tail (always the last tile) and, when causal, the tiles that cross
        the diagonal of the Q tile: ceil(m_block / n_block) of them, counted from the last."""
        return (self.m_block + self.n_block - 1) // self.n_block if self.causal else 1

    def query_tile(self):
        """(m_block, head, batch) of this CTA, in device code. Causal: longest rows first, the grid's first CTAs
        take the last Q tiles, which have the most key tiles."""
        bx, head, batch = cute.arch.block_idx()
        gx, _, _ = cute.arch.grid_dim()
        m_block = gx - 1 - bx if cutlass.const_expr(self.causal) else bx
        return m_block, head, batch

    def key_tiles(self, m_block, seqlen_k):
        """(n_tiles, last), in device code: the key tiles Q tile `m_block` visits (causal: none past its diagonal)
        and the index of the last, which every kernel visits first."""
        n_tiles = cute.ceil_div(seqlen_k, self.n_block)
        if cutlass.const_expr(self.causal):
            n_tiles = cutlass.min(n_tiles, cute.ceil_div((m_block + 1) * self.m_block, self.n_block))
        return n_tiles, n_tiles - 1

    @classmethod
    def can_implement(cls, dtype, head_dim: int, smem_limit: int = SM120_SMEM_BYTES, **tile) -> bool:
        """Whether this kernel takes `dtype` at `head_dim` with the tile choices `tile` (the constructor's keyword
        arguments) within `smem_limit` bytes of shared memory (SM120's by default)."""
        return (dtype in cls.dtypes and head_dim in SUPPORTED_HEAD_DIMS and cls.tile_fits(head_dim, **tile)
                and cls.smem_bytes(head_dim, **tile) <= smem_limit)

    @classmethod
    def tile_fits(cls, head_dim: int, **tile) -> bool:
        raise NotImplementedError

    @staticmethod
    def smem_bytes(head_dim: int, **tile) -> int:
        raise NotImplementedError


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


def ldmatrix_copies(mma: cute.TiledMma, dtype, tidx):
    """The ldmatrix x4 tiled copies that feed the two m16n8k16 GEMMs, and their slices for thread `tidx`:
    Q as the A operand and K as the B operand of S = Q K^T, V as the B operand of O += P V through
    ldmatrix.trans (V lies (keys, D) in shared memory, the GEMM reads V^T).

    Returns ((ld_q, ld_k, ld_v), (thr_ld_q, thr_ld_k, thr_ld_v)): `cute.copy` takes the tiled copy, the
    partitions come from the slice."""
    ld_q = cute.make_tiled_copy_A(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), dtype), mma)
    ld_k = cute.make_tiled_copy_B(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), dtype), mma)
    ld_v = cute.make_tiled_copy_B(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(True, 4), dtype), mma)
    return (ld_q, ld_k, ld_v), (ld_q.get_slice(tidx), ld_k.get_slice(tidx), ld_v.get_slice(tidx))


def row_stats(acc_o: cute.Tensor):
    """The online-softmax state for the rows of an m16n8 accumulator fragment: (row_max = -inf, row_sum = 0),
    one entry per row this thread holds (2 row halves x MMA_M)."""
    rows = cute.size(acc_o, mode=[0]) // 2 * cute.size(acc_o, mode=[1])
    row_max = cute.make_rmem_tensor(rows, cutlass.Float32)
    row_sum = cute.make_rmem_tensor(rows, cutlass.Float32)
    row_max.fill(-cutlass.Float32.inf)
    row_sum.fill(0.0)
    return row_max, row_sum


@cute.jit
def ldmatrix_gemm(mma: cute.TiledMma, acc: cute.Tensor, rA: cute.Tensor, rB: cute.Tensor, ld_b: cute.TiledCopy,
                  sB_ld: cute.Tensor, rB_ld: cute.Tensor, ld_a=None, sA_ld=None, rA_ld=None, stage=None):
    """acc += A B over the k slices (mode 2) of the fragments, B (and A, when `ld_a` is given) loaded from
    shared memory with ldmatrix one k slice ahead of the MMA that uses it (register double buffering). Without
    `ld_a`, A is already in registers (Q kept there, or P from the softmax). With `stage`, `sB_ld` carries a
    trailing stage mode (the TMA kernel's ring), indexed in place rather than sliced first, which keeps the
    generated address arithmetic as it was."""
    at = () if cutlass.const_expr(stage is None) else (stage,)
    ks = cute.size(rA, mode=[2])
    if cutlass.const_expr(ld_a is not None):
        cute.copy(ld_a, sA_ld[None, None, 0], rA_ld[None, None, 0])
    cute.copy(ld_b, sB_ld[(None, None, 0) + at], rB_ld[None, None, 0])
    for k in cutlass.range_constexpr(ks):
        if cutlass.const_expr(k + 1 < ks):
            if cutlass.const_expr(ld_a is not None):
                cute.copy(ld_a, sA_ld[None, None, k + 1], rA_ld[None, None, k + 1])
            cute.copy(ld_b, sB_ld[(None, None, k + 1) + at], rB_ld[None, None, k + 1])
        cute.gemm(mma, acc, rA[None, None, k], rB[None, None, k], acc)


@cute.jit
def load_rows(g2s: cute.TiledCopy, src: cute.Tensor, dst: cute.Tensor, coords: cute.Tensor, limit, tile=None):
    """cp.async a (CPY, ROWS, COLS) thread partition into smem row by row; rows whose coordinate (`coords`, the
    same partition of an identity tensor) is at or past `limit` become zeros instead: past the sequence end
    global memory must not be read, and a garbage V row would poison O (0 * NaN). With `tile`, `src` and
    `coords` carry a trailing tile mode and that tile is loaded (indexed in place rather than sliced first,
    which keeps the generated address arithmetic as it was)."""
    at = () if cutlass.const_expr(tile is None) else (tile,)
    for r in cutlass.range_constexpr(cute.size(dst, mode=[1])):
        if coords[(0, r, 0) + at][0] < limit:
            cute.copy(g2s, src[(None, r, None) + at], dst[None, r, None])
        else:
            dst[None, r, None].fill(0)


@cute.jit
def load_kv_tile(g2s: cute.TiledCopy, tg: cute.Tensor, ts: cute.Tensor, tc: cute.Tensor, n, seqlen_k,
                 tail: cutlass.Constexpr):
    """cp.async key tile `n` of a (CPY, ROWS, COLS, tiles) K or V partition into smem; only the `tail` tile
    (the last one, visited first) can run past seqlen_k and pays for the per-row check."""
    if cutlass.const_expr(tail):
        load_rows(g2s, tg, ts, tc, seqlen_k, tile=n)
    else:
        cute.copy(g2s, tg[None, None, None, n], ts)
