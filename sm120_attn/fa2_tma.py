"""FlashAttentionSm120Tma: warp-specialized FlashAttention-2 forward, BF16/FP16, TMA loads + mma.sync m16n8k16.

Roles (3 warpgroups, 384 threads, one CTA per (128-row Q tile, head, batch)):

* warpgroup 0, the DMA side: it gives registers back (`setmaxnreg.dec`), then one thread of warp 0 issues every
  TMA load: Q once, then K and V tiles into a `stages`-deep ring each. 4-D TMA descriptors over (seq, dim, head,
  batch), so one descriptor serves every (batch, head) and rows past the sequence end arrive as zeros.
  Warps 1-3 of the group only take part in the register hand-back (setmaxnreg is per warpgroup) and leave.
* warpgroups 1-2, the MMA side: 8 warps, 16 query rows each; they take the registers (`setmaxnreg.inc`), keep Q
  in registers, and per key tile: wait K-full, S = Q K^T, release K, mask (diagonal / tail tiles only), online
  softmax, wait V-full, O += P V, release V.

K and V have separate pipelines (a full and an empty mbarrier per stage each), so the next K tile streams in
while P V of the current one runs, and V can be late without stalling Q K^T.

The register rebalancing: CUTLASS PR #3030's kernel calls setmaxnreg too, but ptxas ignores it with warning C7508
("unable to determine register count at entry"): the PTX carried `.reqntid` only. Here the launch passes
`min_blocks_per_mp=1`, so the PTX also gets `.minnctapersm 1`; with the block size ptxas can then fix the
per-thread budget at entry (65536 / 384 -> 168), and the setmaxnreg.dec/inc pair moves registers from the DMA
warpgroup to the MMA warpgroups (56 and 224 here: 128 * 56 + 256 * 224 = 64512 <= 65536). The cubin then carries
EIATTR_REG_RECONFIG. `benchmarks/sm120_build.py --variant tma` prints both.

Written for this package; the TMA / mbarrier / setmaxnreg API usage was learned from the CUTLASS CuTe DSL Hopper
FMHA example and the pipeline sources of nvidia-cutlass-dsl; the design follows CUTLASS PR #3030 /
flash-attention PR #2349 (1 DMA warp + MMA warps, TMA, mbarrier K/V ring) and FlashAttention-3's producer /
consumer register split.
"""

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync, warp, warpgroup

from .common import (FlashAttentionForward, acc_as_a_operand, finish_softmax, ldmatrix_copies, ldmatrix_gemm,
                     mask_scores, online_softmax_step, row_stats)

DMA_REGS = 56
MMA_REGS = 224


class FlashAttentionSm120Tma(FlashAttentionForward):
    variant = "tma"
    dtypes = (cutlass.BFloat16, cutlass.Float16)

    def __init__(self, head_dim: int, causal: bool = False, m_block: int = 128, n_block: int = None,
                 stages: int = 2, mma_warps: int = 8, dma_regs: int = DMA_REGS, mma_regs: int = MMA_REGS,
                 reg_rebalance: bool = True, entry_cap: bool = True, **_unused):
        # warpgroup 0 = DMA, then the MMA warpgroups
        super().__init__(head_dim, causal, m_block, n_block or self.default_n_block(head_dim), 128 + mma_warps * 32)
        self.stages = stages
        self.mma_warps = mma_warps
        self.mma_threads = mma_warps * 32
        self.dma_regs = dma_regs
        self.mma_regs = mma_regs
        self.reg_rebalance = reg_rebalance
        # entry_cap=False reproduces CUTLASS PR #3030's launch (no .minnctapersm): ptxas warns C7508 and drops
        # the setmaxnreg instructions. Kept for the demonstration in tests and README.
        self.entry_cap = entry_cap

    # -------------------------------------------------------------------------------------------- host side
    @classmethod
    def smem_bytes(cls, head_dim: int, m_block: int = 128, n_block: int = None, stages: int = 2, **_unused) -> int:
        n_block = n_block or cls.default_n_block(head_dim)
        tiles = (m_block + 2 * stages * n_block) * head_dim * 2
        barriers = 8 * (1 + 4 * stages)
        return tiles + barriers + 1024  # alignment slack of the 1024 B aligned buffers

    @classmethod
    def tile_fits(cls, head_dim: int, m_block: int = 128, mma_warps: int = 8, **_unused) -> bool:
        return mma_warps % 4 == 0 and m_block == 16 * mma_warps

    @staticmethod
    def _seq_dim_head_batch(t: cute.Tensor) -> cute.Tensor:
        """(B, S, H, D) -> (S, D, H, B) view: the TMA descriptor's 4 modes, innermost dim second."""
        return cute.make_tensor(t.iterator, cute.make_layout(
            (t.shape[1], t.shape[3], t.shape[2], t.shape[0]),
            stride=(t.stride[1], t.stride[3], t.stride[2], t.stride[0])))

    @cute.jit
    def __call__(self, mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mO: cute.Tensor,
                 scale_log2: cutlass.Float32, stream):
        dtype = mQ.element_type
        if cutlass.const_expr(not (dtype == mK.element_type == mV.element_type == mO.element_type)):
            raise TypeError("Q, K, V, O must share one element type")
        d = self.head_dim
        # 128 B swizzle atoms (8 rows x 64 elements), the swizzle applied to the byte address (TMA's
        # SWIZZLE_128B); ldmatrix reads 16 B rows, which the swizzle keeps contiguous.
        atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, dtype)
        sQ_layout = cute.tile_to_shape(atom, (self.m_block, d), (0, 1))
        sKV_layout = cute.tile_to_shape(atom, (self.n_block, d, self.stages), (0, 1, 2))
        sKV_one = cute.slice_(sKV_layout, (None, None, 0))

        op = cpasync.CopyBulkTensorTileG2SOp()
        tma_q, gQ_tma = cpasync.make_tiled_tma_atom(op, self._seq_dim_head_batch(mQ), sQ_layout, (self.m_block, d))
        tma_k, gK_tma = cpasync.make_tiled_tma_atom(op, self._seq_dim_head_batch(mK), sKV_one, (self.n_block, d))
        tma_v, gV_tma = cpasync.make_tiled_tma_atom(op, self._seq_dim_head_batch(mV), sKV_one, (self.n_block, d))

        stages = self.stages

        @cute.struct
        class Smem:
            full_q: cute.struct.MemRange[cutlass.Int64, 1]
            full_k: cute.struct.MemRange[cutlass.Int64, stages]
            empty_k: cute.struct.MemRange[cutlass.Int64, stages]
            full_v: cute.struct.MemRange[cutlass.Int64, stages]
            empty_v: cute.struct.MemRange[cutlass.Int64, stages]
            q: cute.struct.Align[cute.struct.MemRange[dtype, cute.cosize(sQ_layout)], 1024]
            k: cute.struct.Align[cute.struct.MemRange[dtype, cute.cosize(sKV_layout)], 1024]
            v: cute.struct.Align[cute.struct.MemRange[dtype, cute.cosize(sKV_layout)], 1024]

        vec = 128 // dtype.width
        cols = d // vec
        s2g = cute.make_tiled_copy_tv(
            cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype, num_bits_per_copy=128),
            cute.make_layout((self.mma_threads // cols, cols), stride=(cols, 1)), cute.make_layout((1, vec)))
        mma = cute.make_tiled_mma(warp.MmaF16BF16Op(dtype, cutlass.Float32, (16, 8, 16)),
                                  (self.mma_warps, 1, 1), permutation_mnk=(self.mma_warps * 16, 16, 16))
        num_m = cute.ceil_div(mQ.shape[1], self.m_block)
        self.kernel(mO, gQ_tma, gK_tma, gV_tma, tma_q, tma_k, tma_v, mQ.shape[1], mK.shape[1], scale_log2,
                    sQ_layout, sKV_layout, s2g, mma, Smem).launch(
            grid=(num_m, cute.size(mQ.shape[2]), cute.size(mQ.shape[0])),
            block=(self.num_threads, 1, 1), stream=stream,
            # .minnctapersm 1 next to .reqntid: ptxas can size the registers at entry, so setmaxnreg works
            min_blocks_per_mp=1 if cutlass.const_expr(self.entry_cap) else 0)

    # ------------------------------------------------------------------------------------------ device side
    @cute.kernel
    def kernel(self, mO: cute.Tensor, gQ_tma: cute.Tensor, gK_tma: cute.Tensor, gV_tma: cute.Tensor,
               tma_q: cute.CopyAtom, tma_k: cute.CopyAtom, tma_v: cute.CopyAtom, seqlen_q, seqlen_k,
               scale_log2: cutlass.Float32, sQ_layout: cute.ComposedLayout, sKV_layout: cute.ComposedLayout,
               s2g: cute.TiledCopy, mma: cute.TiledMma, Smem: cutlass.Constexpr):
        tidx, _, _ = cute.arch.thread_idx()
        m_block, head, batch = self.query_tile()
        warp_idx = cute.arch.make_warp_uniform(tidx // 32)
        d = self.head_dim
        stages = self.stages

        n_tiles, last = self.key_tiles(m_block, seqlen_k)

        alloc = cutlass.utils.SmemAllocator()
        smem = alloc.allocate(Smem)
        full_q = smem.full_q.data_ptr()
        full_k = smem.full_k.data_ptr()
        empty_k = smem.empty_k.data_ptr()
        full_v = smem.full_v.data_ptr()
        empty_v = smem.empty_v.data_ptr()
        sQ = smem.q.get_tensor(sQ_layout.outer, swizzle=sQ_layout.inner)
        sK = smem.k.get_tensor(sKV_layout.outer, swizzle=sKV_layout.inner)
        sV = smem.v.get_tensor(sKV_layout.outer, swizzle=sKV_layout.inner)

        if tidx == 0:
            cute.arch.mbarrier_init(full_q, 1)
            for s in cutlass.range_constexpr(stages):
                cute.arch.mbarrier_init(full_k + s, 1)
                cute.arch.mbarrier_init(full_v + s, 1)
                cute.arch.mbarrier_init(empty_k + s, self.mma_threads)
                cute.arch.mbarrier_init(empty_v + s, self.mma_threads)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()

        if warp_idx < 4:
            # ------------------------------------------------------------------ DMA warpgroup
            if cutlass.const_expr(self.reg_rebalance):
                cute.arch.setmaxregister_decrease(self.dma_regs)
            if tidx == 0:
                cpasync.prefetch_descriptor(tma_q)
                cpasync.prefetch_descriptor(tma_k)
                cpasync.prefetch_descriptor(tma_v)
                gQ = cute.local_tile(gQ_tma[None, None, head, batch], (self.m_block, d), (m_block, 0))
                gK = cute.local_tile(gK_tma[None, None, head, batch], (self.n_block, d), (None, 0))
                gV = cute.local_tile(gV_tma[None, None, head, batch], (self.n_block, d), (None, 0))
                tQs, tQg = cpasync.tma_partition(tma_q, 0, cute.make_layout(1), cute.group_modes(sQ, 0, 2),
                                                 cute.group_modes(gQ, 0, 2))
                tKs, tKg = cpasync.tma_partition(tma_k, 0, cute.make_layout(1), cute.group_modes(sK, 0, 2),
                                                 cute.group_modes(gK, 0, 2))
                tVs, tVg = cpasync.tma_partition(tma_v, 0, cute.make_layout(1), cute.group_modes(sV, 0, 2),
                                                 cute.group_modes(gV, 0, 2))
                q_bytes = self.m_block * d * (mO.element_type.width // 8)
                kv_bytes = self.n_block * d * (mO.element_type.width // 8)
                cute.arch.mbarrier_arrive_and_expect_tx(full_q, q_bytes)
                cute.copy(tma_q, tQg, tQs, tma_bar_ptr=full_q)
                for i in range(n_tiles):
                    n = last - i
                    s = i % stages
                    if i >= stages:
                        cute.arch.mbarrier_wait(empty_k + s, (i // stages - 1) % 2)
                    cute.arch.mbarrier_arrive_and_expect_tx(full_k + s, kv_bytes)
                    cute.copy(tma_k, tKg[None, n], tKs[None, s], tma_bar_ptr=full_k + s)
                    if i >= stages:
                        cute.arch.mbarrier_wait(empty_v + s, (i // stages - 1) % 2)
                    cute.arch.mbarrier_arrive_and_expect_tx(full_v + s, kv_bytes)
                    cute.copy(tma_v, tVg[None, n], tVs[None, s], tma_bar_ptr=full_v + s)
        else:
            # ------------------------------------------------------------------ MMA warpgroups
            if cutlass.const_expr(self.reg_rebalance):
                cute.arch.setmaxregister_increase(self.mma_regs)
            ctid = tidx - 128
            self.consumer(ctid, m_block, n_tiles, seqlen_q, seqlen_k, scale_log2, mO, head, batch, sQ, sK, sV,
                          sQ_layout, full_q, full_k, empty_k, full_v, empty_v, s2g, mma)

    @cute.jit
    def consumer(self, ctid, m_block, n_tiles, seqlen_q, seqlen_k, scale_log2: cutlass.Float32,
                 mO: cute.Tensor, head, batch, sQ: cute.Tensor, sK: cute.Tensor, sV: cute.Tensor,
                 sQ_layout: cute.ComposedLayout, full_q, full_k, empty_k, full_v, empty_v, s2g: cute.TiledCopy,
                 mma: cute.TiledMma):
        d = self.head_dim
        dtype = mO.element_type
        last = n_tiles - 1
        # V^T (D, n_block, stages) view for the second GEMM's B operand (read with ldmatrix.trans)
        sVt = cute.make_tensor(sV.iterator, cute.select(sV.layout, mode=[1, 0, 2]))

        thr_mma = mma.get_slice(ctid)
        rQ = thr_mma.make_fragment_A(thr_mma.partition_A(sQ))
        rK = thr_mma.make_fragment_B(thr_mma.partition_B(sK[None, None, 0]))
        rVt = thr_mma.make_fragment_B(thr_mma.partition_B(sVt[None, None, 0]))
        acc_o = cute.make_rmem_tensor(thr_mma.partition_shape_C((self.m_block, d)), cutlass.Float32)
        acc_o.fill(0.0)
        (ld_q, ld_k, ld_v), (thr_ld_q, thr_ld_k, thr_ld_v) = ldmatrix_copies(mma, dtype, ctid)
        sK_ld, rK_ld = thr_ld_k.partition_S(sK), thr_ld_k.retile(rK)
        sVt_ld, rVt_ld = thr_ld_v.partition_S(sVt), thr_ld_v.retile(rVt)

        row_max, row_sum = row_stats(acc_o)

        # Q stays in registers for the whole key loop
        cute.arch.mbarrier_wait(full_q, 0)
        cute.copy(ld_q, thr_ld_q.partition_S(sQ), thr_ld_q.retile(rQ))

        mask_tiles = self.mask_tiles
        for i in cutlass.range_constexpr(mask_tiles):
            if i < n_tiles:
                self.step(i, last - i, m_block, seqlen_q, seqlen_k, scale_log2, mma, thr_mma, rQ, rK, rVt,
                          ld_k, ld_v, sK_ld, rK_ld, sVt_ld, rVt_ld, acc_o, row_max, row_sum,
                          full_k, empty_k, full_v, empty_v, first=(i == 0), masked=True)
        for i in range(mask_tiles, n_tiles, 1):
            self.step(i, last - i, m_block, seqlen_q, seqlen_k, scale_log2, mma, thr_mma, rQ, rK, rVt,
                      ld_k, ld_v, sK_ld, rK_ld, sVt_ld, rVt_ld, acc_o, row_max, row_sum,
                      full_k, empty_k, full_v, empty_v, first=False, masked=False)

        # epilogue: normalise, stage O through Q's buffer (every MMA warp is past its Q reads), 16 B stores
        finish_softmax(acc_o, row_sum)
        rO = cute.make_fragment_like(acc_o, dtype)
        rO.store(acc_o.load().to(dtype))
        cute.arch.barrier(barrier_id=1, number_of_threads=self.mma_threads)
        st_o = cute.make_tiled_copy_C(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype), mma)
        thr_st_o = st_o.get_slice(ctid)
        cute.copy(st_o, thr_st_o.retile(rO), thr_st_o.partition_D(sQ))
        cute.arch.barrier(barrier_id=1, number_of_threads=self.mma_threads)
        gO = cute.local_tile(mO[batch, None, head, None], (self.m_block, d), (m_block, 0))
        cO = cute.local_tile(cute.make_identity_tensor((seqlen_q, d)), (self.m_block, d), (m_block, 0))
        thr_s2g = s2g.get_slice(ctid)
        tOs = thr_s2g.partition_S(sQ)
        tOg = thr_s2g.partition_D(gO)
        tOc = thr_s2g.partition_D(cO)
        tOr = cute.make_fragment_like(tOg, dtype)
        cute.copy(s2g, tOs, tOr)
        for m in cutlass.range_constexpr(cute.size(tOg, mode=[1])):
            if tOc[0, m, 0][0] < seqlen_q:
                cute.copy(s2g, tOr[None, m, None], tOg[None, m, None])

    @cute.jit
    def step(self, i, n, m_block, seqlen_q, seqlen_k, scale_log2: cutlass.Float32, mma: cute.TiledMma,
             thr_mma, rQ, rK, rVt, ld_k, ld_v, sK_ld, rK_ld, sVt_ld, rVt_ld, acc_o, row_max, row_sum,
             full_k, empty_k, full_v, empty_v, first: cutlass.Constexpr, masked: cutlass.Constexpr):
        s = i % self.stages
        phase = (i // self.stages) % 2
        acc_s = cute.make_rmem_tensor(thr_mma.partition_shape_C((self.m_block, self.n_block)), cutlass.Float32)
        acc_s.fill(0.0)

        cute.arch.mbarrier_wait(full_k + s, phase)
        ldmatrix_gemm(mma, acc_s, rQ, rK, ld_k, sK_ld, rK_ld, stage=s)  # Q is already in registers
        cute.arch.mbarrier_arrive(empty_k + s)

        if cutlass.const_expr(masked):
            cS = cute.local_tile(cute.make_identity_tensor((seqlen_q, seqlen_k)), (self.m_block, self.n_block),
                                 (m_block, n))
            mask_scores(acc_s, thr_mma.partition_C(cS), seqlen_k, self.causal)
        online_softmax_step(acc_s, acc_o, row_max, row_sum, scale_log2, first)
        rP = cute.make_fragment_like(acc_s, rQ.element_type)
        rP.store(acc_s.load().to(rQ.element_type))
        tOrP = acc_as_a_operand(rP)

        cute.arch.mbarrier_wait(full_v + s, phase)
        ldmatrix_gemm(mma, acc_o, tOrP, rVt, ld_v, sVt_ld, rVt_ld, stage=s)
        cute.arch.mbarrier_arrive(empty_v + s)
