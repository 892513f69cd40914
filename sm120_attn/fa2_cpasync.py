"""FlashAttentionSm120: FlashAttention-2 forward, BF16/FP16, `cp.async` + `ldmatrix` + `mma.sync m16n8k16`.

SM120 (consumer Blackwell) has no wgmma and no tcgen05: its tensor cores are driven by the SM80-class
`mma.sync`, so the SM80 FlashAttention-2 structure (Dao, 2023) is the natural baseline there (CUTLASS PR #3030
makes the same choice). The same code compiles for sm_90a, which is how it is run and timed on an H200.

One CTA = `num_warps` warps owns an (m_block x D) tile of Q for one (batch, head); each warp owns 16 rows per MMA
atom. Per K/V tile (n_block rows):

    wait K   | issue V load  | S = Q K^T (ldmatrix + mma, next k-slice loaded while the current one multiplies)
    wait V   | issue next K  | mask (only the diagonal / tail tiles) | online softmax | O += P V

Key tiles are visited from the last to the first, so the tiles that need masking (the key tail, and with causal
the diagonal ones) come first and every later iteration runs without any mask code.
Written for this package; the DSL API usage was learned from the CUTLASS CuTe DSL Ampere FA2 example.
"""


import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync, warp

from .common import (FlashAttentionForward, TileConfig, acc_as_a_operand, finish_softmax, ldmatrix_copies,
                     ldmatrix_gemm, load_kv_tile, load_rows, mask_scores, online_softmax_step, row_stats)


class FlashAttentionSm120(FlashAttentionForward):
    """FA2 forward with cp.async loads. Tiles: 128 query rows x (64 keys for D=128, 128 keys for D=64), 8 warps
    (16 query rows each). 4 warps with 32 rows each needs > 255 registers at D=128 and spills (ptxas, sm_90a and
    sm_120a), so 8 warps is the default."""

    variant = "cpasync"
    dtypes = (cutlass.BFloat16, cutlass.Float16)

    def __init__(self, head_dim: int, causal: bool = False, m_block: int = 128, n_block: int | None = None,
                 num_warps: int = 8, **_unused):
        super().__init__(head_dim, causal, m_block, n_block or self.default_n_block(head_dim), num_warps * 32)
        self.num_warps = num_warps

    # -------------------------------------------------------------------------------------------- host side
    @classmethod
    def smem_bytes(cls, head_dim: int, m_block: int = 128, n_block: int | None = None, **_unused) -> int:
        return TileConfig(m_block, n_block or cls.default_n_block(head_dim), head_dim).smem_bytes()

    @classmethod
    def tile_fits(cls, head_dim: int, m_block: int = 128, n_block: int | None = None, num_warps: int = 8,
                  **_unused) -> bool:
        n_block = n_block or cls.default_n_block(head_dim)
        if m_block % (16 * num_warps) != 0 or n_block % 16 != 0:
            return False
        return not ((m_block * head_dim // 8) % (num_warps * 32) or (n_block * head_dim // 8) % (num_warps * 32))

    @cute.jit
    def __call__(self, mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mO: cute.Tensor,
                 scale_log2: cutlass.Float32, stream):
        dtype = mQ.element_type
        if cutlass.const_expr(not (dtype == mK.element_type == mV.element_type == mO.element_type)):
            raise TypeError("Q, K, V, O must share one element type")
        if cutlass.const_expr(dtype not in (cutlass.BFloat16, cutlass.Float16)):
            raise TypeError("FlashAttentionSm120 takes BFloat16 or Float16")
        d = self.head_dim
        # The scale arrives already multiplied by log2(e) (exp2-based softmax).
        # Shared memory: 8 rows x 64 elements (128 B) atoms with a 3-bit XOR swizzle, so the 16 B cp.async
        # writes and the ldmatrix reads are bank-conflict free.
        k_atom = 64 if d % 64 == 0 else 32
        atom = cute.make_composed_layout(cute.make_swizzle(3 if k_atom == 64 else 2, 3, 3), 0,
                                         cute.make_layout((8, k_atom), stride=(k_atom, 1)))
        sQ_layout = cute.tile_to_shape(atom, (self.m_block, d), (0, 1))
        sKV_layout = cute.tile_to_shape(atom, (self.n_block, d), (0, 1))

        @cute.struct
        class Smem:
            q: cute.struct.Align[cute.struct.MemRange[dtype, cute.cosize(sQ_layout)], 1024]
            k: cute.struct.Align[cute.struct.MemRange[dtype, cute.cosize(sKV_layout)], 1024]
            v: cute.struct.Align[cute.struct.MemRange[dtype, cute.cosize(sKV_layout)], 1024]

        vec = 128 // dtype.width  # elements per 16 B copy
        cols = k_atom // vec
        thr_layout = cute.make_layout((self.num_threads // cols, cols), stride=(cols, 1))
        val_layout = cute.make_layout((1, vec))
        g2s = cute.make_tiled_copy_tv(
            cute.make_copy_atom(cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.GLOBAL), dtype,
                                num_bits_per_copy=128), thr_layout, val_layout)
        s2g = cute.make_tiled_copy_tv(
            cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype, num_bits_per_copy=128), thr_layout,
            val_layout)
        mma = cute.make_tiled_mma(warp.MmaF16BF16Op(dtype, cutlass.Float32, (16, 8, 16)),
                                  (self.num_warps, 1, 1), permutation_mnk=(self.num_warps * 16, 16, 16))
        num_m = cute.ceil_div(mQ.shape[1], self.m_block)
        self.kernel(mQ, mK, mV, mO, scale_log2, sQ_layout, sKV_layout, g2s, s2g, mma, Smem).launch(
            grid=(num_m, cute.size(mQ.shape[2]), cute.size(mQ.shape[0])),
            block=(self.num_threads, 1, 1), stream=stream)

    # ------------------------------------------------------------------------------------------ device side
    @cute.kernel
    def kernel(self, mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mO: cute.Tensor,
               scale_log2: cutlass.Float32, sQ_layout: cute.ComposedLayout, sKV_layout: cute.ComposedLayout,
               g2s: cute.TiledCopy, s2g: cute.TiledCopy, mma: cute.TiledMma, Smem: cutlass.Constexpr):
        tidx, _, _ = cute.arch.thread_idx()
        m_block, head, batch = self.query_tile()
        d = self.head_dim
        dtype = mQ.element_type
        seqlen_q = mQ.shape[1]
        seqlen_k = mK.shape[1]

        n_tiles, last = self.key_tiles(m_block, seqlen_k)

        q2 = mQ[batch, None, head, None]
        k2 = mK[batch, None, head, None]
        v2 = mV[batch, None, head, None]
        o2 = mO[batch, None, head, None]
        gQ = cute.local_tile(q2, (self.m_block, d), (m_block, 0))
        gK = cute.local_tile(k2, (self.n_block, d), (None, 0))
        gV = cute.local_tile(v2, (self.n_block, d), (None, 0))
        cQ = cute.local_tile(cute.make_identity_tensor((seqlen_q, d)), (self.m_block, d), (m_block, 0))
        cKV = cute.local_tile(cute.make_identity_tensor((seqlen_k, d)), (self.n_block, d), (None, 0))

        alloc = cutlass.utils.SmemAllocator()
        smem = alloc.allocate(Smem)
        sQ = smem.q.get_tensor(sQ_layout)
        sK = smem.k.get_tensor(sKV_layout)
        sV = smem.v.get_tensor(sKV_layout)
        # V^T view (D, n_block) for the second GEMM's B operand; ldmatrix.trans reads it.
        sVt = cute.composition(sV, cute.make_layout((d, self.n_block), stride=(self.n_block, 1)))

        thr_g2s = g2s.get_slice(tidx)
        tQg = thr_g2s.partition_S(gQ)
        tQs = thr_g2s.partition_D(sQ)
        tQc = thr_g2s.partition_S(cQ)
        tKg = thr_g2s.partition_S(gK)
        tKs = thr_g2s.partition_D(sK)
        tVg = thr_g2s.partition_S(gV)
        tVs = thr_g2s.partition_D(sV)
        tKVc = thr_g2s.partition_S(cKV)

        thr_mma = mma.get_slice(tidx)
        rQ = thr_mma.make_fragment_A(thr_mma.partition_A(sQ))
        rK = thr_mma.make_fragment_B(thr_mma.partition_B(sK))
        rVt = thr_mma.make_fragment_B(thr_mma.partition_B(sVt))
        acc_o = cute.make_rmem_tensor(thr_mma.partition_shape_C((self.m_block, d)), cutlass.Float32)
        acc_o.fill(0.0)

        (ld_q, ld_k, ld_v), (thr_ld_q, thr_ld_k, thr_ld_v) = ldmatrix_copies(mma, dtype, tidx)
        sQ_ld, rQ_ld = thr_ld_q.partition_S(sQ), thr_ld_q.retile(rQ)
        sK_ld, rK_ld = thr_ld_k.partition_S(sK), thr_ld_k.retile(rK)
        sVt_ld, rVt_ld = thr_ld_v.partition_S(sVt), thr_ld_v.retile(rVt)

        # ---- prologue: Q tile and the last K tile (both may run past the sequence end: zero those rows)
        load_rows(g2s, tQg, tQs, tQc, seqlen_q)
        load_kv_tile(g2s, tKg, tKs, tKVc, last, seqlen_k, True)
        cute.arch.cp_async_commit_group()

        row_max, row_sum = row_stats(acc_o)

        mask_tiles = self.mask_tiles
        for i in cutlass.range_constexpr(mask_tiles):
            n = last - i
            if n >= 0:
                self.step(mma, thr_mma, scale_log2, n, m_block, seqlen_q, seqlen_k, g2s, tKg, tKs, tVg, tVs, tKVc,
                          ld_q, ld_k, ld_v, sQ_ld, rQ_ld, sK_ld, rK_ld, sVt_ld, rVt_ld, rQ, rK, rVt,
                          acc_o, row_max, row_sum, first=(i == 0), masked=True)
        for i in range(mask_tiles, n_tiles, 1):
            n = last - i
            self.step(mma, thr_mma, scale_log2, n, m_block, seqlen_q, seqlen_k, g2s, tKg, tKs, tVg, tVs, tKVc,
                      ld_q, ld_k, ld_v, sQ_ld, rQ_ld, sK_ld, rK_ld, sVt_ld, rVt_ld, rQ, rK, rVt,
                      acc_o, row_max, row_sum, first=False, masked=False)

        # ---- epilogue: normalise, registers -> smem (reusing Q's buffer) -> 16 B global stores
        finish_softmax(acc_o, row_sum)
        rO = cute.make_fragment_like(acc_o, dtype)
        rO.store(acc_o.load().to(dtype))
        sO = cute.make_tensor(sQ.iterator, sQ_layout)
        cute.arch.sync_threads()  # every warp is done reading sQ
        st_o = cute.make_tiled_copy_C(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype), mma)
        thr_st_o = st_o.get_slice(tidx)
        cute.copy(st_o, thr_st_o.retile(rO), thr_st_o.partition_D(sO))
        cute.arch.sync_threads()
        gO = cute.local_tile(o2, (self.m_block, d), (m_block, 0))
        thr_s2g = s2g.get_slice(tidx)
        tOs = thr_s2g.partition_S(sO)
        tOg = thr_s2g.partition_D(gO)
        tOr = cute.make_fragment_like(tOg, dtype)
        cute.copy(s2g, tOs, tOr)
        for m in cutlass.range_constexpr(cute.size(tOg, mode=[1])):
            if tQc[0, m, 0][0] < seqlen_q:
                cute.copy(s2g, tOr[None, m, None], tOg[None, m, None])

    @cute.jit
    def step(self, mma: cute.TiledMma, thr_mma, scale_log2: cutlass.Float32, n, m_block, seqlen_q, seqlen_k,
             g2s: cute.TiledCopy, tKg, tKs, tVg, tVs, tKVc, ld_q, ld_k, ld_v, sQ_ld, rQ_ld, sK_ld, rK_ld,
             sVt_ld, rVt_ld, rQ, rK, rVt, acc_o, row_max, row_sum, first: cutlass.Constexpr,
             masked: cutlass.Constexpr):
        acc_s = cute.make_rmem_tensor(thr_mma.partition_shape_C((self.m_block, self.n_block)), cutlass.Float32)
        acc_s.fill(0.0)
        cute.arch.cp_async_wait_group(0)  # K(n) has landed
        cute.arch.sync_threads()          # ... for every thread, and everyone is done with V(n+1)
        load_kv_tile(g2s, tVg, tVs, tKVc, n, seqlen_k, first)
        cute.arch.cp_async_commit_group()

        # S = Q K^T, Q and K slices both loaded with ldmatrix
        ldmatrix_gemm(mma, acc_s, rQ, rK, ld_k, sK_ld, rK_ld, ld_q, sQ_ld, rQ_ld)

        cute.arch.cp_async_wait_group(0)  # V(n) has landed
        cute.arch.sync_threads()          # ... and every warp is done reading K(n)
        if n > 0:
            load_kv_tile(g2s, tKg, tKs, tKVc, n - 1, seqlen_k, False)
            cute.arch.cp_async_commit_group()

        if cutlass.const_expr(masked):
            cS = cute.local_tile(cute.make_identity_tensor((seqlen_q, seqlen_k)),
                                 (self.m_block, self.n_block), (m_block, n))
            mask_scores(acc_s, thr_mma.partition_C(cS), seqlen_k, self.causal)
        online_softmax_step(acc_s, acc_o, row_max, row_sum, scale_log2, first)

        rP = cute.make_fragment_like(acc_s, mQ_dtype(rQ))
        rP.store(acc_s.load().to(mQ_dtype(rQ)))
        ldmatrix_gemm(mma, acc_o, acc_as_a_operand(rP), rVt, ld_v, sVt_ld, rVt_ld)


def mQ_dtype(frag: cute.Tensor):
    return frag.element_type
