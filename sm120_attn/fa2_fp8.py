"""FlashAttentionSm120Fp8: FlashAttention-2 forward with e4m3 Q, K, V through `mma.sync ... kind::f8f6f4.m16n8k32`.

SM120's tensor cores take FP8 through the block-scale-capable `mma.sync.aligned.kind::f8f6f4` family (PTX ISA
8.7+, sm_120a / sm_121a; ptxas rejects it for sm_90a and sm_100a). The DSL has no atom for it, so the MMAs are
inline PTX and the fragments are handled by hand (the m16n8k32 register layouts of the PTX ISA):

    A (16 x 32, row): reg0 = row g, k 4t..4t+3 | reg1 = row g+8, same k | reg2, reg3: k + 16
    B (32 x 8, col):  reg0 = col g, k 4t..4t+3 | reg1: k + 16
    C (16 x 8, f32):  c0, c1 = row g, cols 2t, 2t+1 | c2, c3 = row g+8        (g = lane / 4, t = lane % 4)

Q and K fragments are single 32-bit shared-memory loads (rows padded by 16 B against bank conflicts). For P V, the
S accumulator is re-packed in registers with no shuffles: a dot product does not care about the order of its k
terms as long as A and B agree, so lane (g, t)'s A register for k-slot 4t..4t+3 takes its own P columns
{2t, 2t+1, 8+2t, 9+2t} (+16 for the second register) and its B register gathers the V rows with the same
indices. P is rounded to e4m3 (cvt.rn.satfinite.e4m3x2.f32), O accumulates in FP32, and is written as FP32 or
BF16 (the type of the O tensor).

`arch` selects the MMA: for sm_120a / sm_121a the real f8f6f4 instruction; for other arches (the H200 in CI's
absence of an SM120 card) an exact emulation: each e4m3 pair is widened to f16x2 (cvt.rn.f16x2.e4m3x2, exact) and
one m16n8k32 becomes two m16n8k16 f16 MMAs with the same k permutation in A and B. That path exists only to test
this kernel's data movement, masking and softmax on a GPU that has no f8f6f4; its speed means nothing.

Structure: 4 warps x 16 query rows (m_block 64), n_block 64, cp.async tiles, the FA2 load interleave of the
cp.async kernel (V(n) streams during Q K^T, K(n-1) during softmax and P V). Written for this package.
"""

import cutlass
import cutlass.cute as cute
from cutlass._mlir.dialects import llvm
from cutlass.cute.nvgpu import cpasync
from cutlass.cutlass_dsl import T, dsl_user_op

from .common import FlashAttentionForward, load_kv_tile, load_rows

F8F6F4_ARCHES = ("sm_120a", "sm_121a")
PAD = 16  # bytes of padding per shared-memory row


@dsl_user_op
def _mma_f8(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3, emulate: bool, *, loc=None, ip=None):
    """D = A(16x32 e4m3) B(32x8 e4m3) + C(f32); returns the 4 f32 accumulator values."""
    ops = [cutlass.Int32(x).ir_value(loc=loc, ip=ip) for x in (a0, a1, a2, a3, b0, b1)]
    ops += [cutlass.Float32(x).ir_value(loc=loc, ip=ip) for x in (c0, c1, c2, c3)]
    if not emulate:
        asm = ("mma.sync.aligned.kind::f8f6f4.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
               "{$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};")
    else:
        asm = ("{\n.reg .b16 h<12>;\n.reg .b32 x<12>;\n"
               "mov.b32 {h0, h1}, $4;\nmov.b32 {h2, h3}, $5;\nmov.b32 {h4, h5}, $6;\nmov.b32 {h6, h7}, $7;\n"
               "mov.b32 {h8, h9}, $8;\nmov.b32 {h10, h11}, $9;\n"
               "cvt.rn.f16x2.e4m3x2 x0, h0;\ncvt.rn.f16x2.e4m3x2 x1, h1;\ncvt.rn.f16x2.e4m3x2 x2, h2;\n"
               "cvt.rn.f16x2.e4m3x2 x3, h3;\ncvt.rn.f16x2.e4m3x2 x4, h4;\ncvt.rn.f16x2.e4m3x2 x5, h5;\n"
               "cvt.rn.f16x2.e4m3x2 x6, h6;\ncvt.rn.f16x2.e4m3x2 x7, h7;\ncvt.rn.f16x2.e4m3x2 x8, h8;\n"
               "cvt.rn.f16x2.e4m3x2 x9, h9;\ncvt.rn.f16x2.e4m3x2 x10, h10;\ncvt.rn.f16x2.e4m3x2 x11, h11;\n"
               # k 4t,4t+1 -> slot 2t,2t+1 ; k 4t+2,4t+3 -> slot 2t+8,2t+9 (same in A and B)
               "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {$0, $1, $2, $3}, {x0, x2, x1, x3}, {x8, x9}, "
               "{$10, $11, $12, $13};\n"
               "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {$0, $1, $2, $3}, {x4, x6, x5, x7}, {x10, x11}, "
               "{$0, $1, $2, $3};\n}")
    struct = llvm.StructType.get_literal([T.f32(), T.f32(), T.f32(), T.f32()])
    res = llvm.inline_asm(struct, ops, asm, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", has_side_effects=False,
                          is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip)
    return tuple(cutlass.Float32(llvm.extractvalue(T.f32(), res, [i], loc=loc, ip=ip)) for i in range(4))


@dsl_user_op
def _pack_e4m3x4(x0, x1, x2, x3, *, loc=None, ip=None):
    """Four f32 -> four e4m3 bytes in one b32, x0 in the lowest byte (round to nearest, saturate)."""
    ops = [cutlass.Float32(x).ir_value(loc=loc, ip=ip) for x in (x0, x1, x2, x3)]
    asm = ("{\n.reg .b16 lo, hi;\ncvt.rn.satfinite.e4m3x2.f32 lo, $2, $1;\n"
           "cvt.rn.satfinite.e4m3x2.f32 hi, $4, $3;\nmov.b32 $0, {lo, hi};\n}")
    return cutlass.Int32(llvm.inline_asm(T.i32(), ops, asm, "=r,f,f,f,f", has_side_effects=False,
                                         is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT,
                                         loc=loc, ip=ip))


def _byte(x):
    """A shared-memory byte as the low 8 bits of an Int32. The mask matters: the widening of the 8-bit load may
    sign-extend, and a negative e4m3 value would then smear 0xFF (an e4m3 NaN) over the packed word's other
    bytes (seen on the H200: NaN everywhere with random V, right answers with all-positive V)."""
    return cutlass.Int32(x) & 0xFF


class FlashAttentionSm120Fp8(FlashAttentionForward):
    variant = "fp8"
    dtypes = (cutlass.Float8E4M3FN,)

    def __init__(self, head_dim: int, causal: bool = False, arch: str = "sm_120a", n_block: int = 64,
                 num_warps: int = 4, **_unused):
        super().__init__(head_dim, causal, 16 * num_warps, n_block, 32 * num_warps)
        self.arch = arch
        self.emulate = arch not in F8F6F4_ARCHES
        self.num_warps = num_warps
        self.row_bytes = head_dim + PAD

    @staticmethod
    def smem_bytes(head_dim: int, num_warps: int = 4, n_block: int = 64, **_unused) -> int:
        return (16 * num_warps + 2 * n_block) * (head_dim + PAD)

    @classmethod
    def tile_fits(cls, head_dim: int, n_block: int = 64, **_unused) -> bool:
        return n_block % 32 == 0

    @cute.jit
    def __call__(self, mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mO: cute.Tensor,
                 scale_log2: cutlass.Float32, stream):
        if cutlass.const_expr(not (mQ.element_type == mK.element_type == mV.element_type == cutlass.Float8E4M3FN)):
            raise TypeError("FlashAttentionSm120Fp8 takes Float8E4M3FN Q, K, V")
        if cutlass.const_expr(mO.element_type not in (cutlass.Float32, cutlass.BFloat16)):
            raise TypeError("O must be Float32 or BFloat16")
        d = self.head_dim
        sQ_layout = cute.make_layout((self.m_block, d), stride=(self.row_bytes, 1))
        sKV_layout = cute.make_layout((self.n_block, d), stride=(self.row_bytes, 1))

        @cute.struct
        class Smem:
            q: cute.struct.Align[cute.struct.MemRange[cutlass.Float8E4M3FN, self.m_block * self.row_bytes], 128]
            k: cute.struct.Align[cute.struct.MemRange[cutlass.Float8E4M3FN, self.n_block * self.row_bytes], 128]
            v: cute.struct.Align[cute.struct.MemRange[cutlass.Float8E4M3FN, self.n_block * self.row_bytes], 128]

        cols = d // 16
        g2s = cute.make_tiled_copy_tv(
            cute.make_copy_atom(cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.GLOBAL), cutlass.Float8E4M3FN,
                                num_bits_per_copy=128),
            cute.make_layout((self.num_threads // cols, cols), stride=(cols, 1)), cute.make_layout((1, 16)))
        num_m = cute.ceil_div(mQ.shape[1], self.m_block)
        self.kernel(mQ, mK, mV, mO, scale_log2, sQ_layout, sKV_layout, g2s, Smem).launch(
            grid=(num_m, cute.size(mQ.shape[2]), cute.size(mQ.shape[0])), block=(self.num_threads, 1, 1),
            stream=stream)

    @cute.kernel
    def kernel(self, mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mO: cute.Tensor,
               scale_log2: cutlass.Float32, sQ_layout: cute.Layout, sKV_layout: cute.Layout, g2s: cute.TiledCopy,
               Smem: cutlass.Constexpr):
        tidx, _, _ = cute.arch.thread_idx()
        m_block, head, batch = self.query_tile()
        d = self.head_dim
        nb = self.n_block
        seqlen_q = mQ.shape[1]
        seqlen_k = mK.shape[1]
        lane = tidx % 32
        g = lane // 4
        t = lane % 4
        row0 = (tidx // 32) * 16  # this warp's first row in the tile
        words = self.row_bytes // 4

        n_tiles, last = self.key_tiles(m_block, seqlen_k)

        alloc = cutlass.utils.SmemAllocator()
        smem = alloc.allocate(Smem)
        sQ = smem.q.get_tensor(sQ_layout)
        sK = smem.k.get_tensor(sKV_layout)
        sV = smem.v.get_tensor(sKV_layout)
        # 32-bit views of Q and K rows, a byte view of V
        sQ32 = cute.make_tensor(cute.recast_ptr(sQ.iterator, dtype=cutlass.Int32),
                                cute.make_layout((self.m_block, words), stride=(words, 1)))
        sK32 = cute.make_tensor(cute.recast_ptr(sK.iterator, dtype=cutlass.Int32),
                                cute.make_layout((nb, words), stride=(words, 1)))
        sV8 = cute.make_tensor(cute.recast_ptr(sV.iterator, dtype=cutlass.Uint8),
                               cute.make_layout((nb, self.row_bytes), stride=(self.row_bytes, 1)))

        gQ = cute.local_tile(mQ[batch, None, head, None], (self.m_block, d), (m_block, 0))
        gK = cute.local_tile(mK[batch, None, head, None], (nb, d), (None, 0))
        gV = cute.local_tile(mV[batch, None, head, None], (nb, d), (None, 0))
        cQ = cute.local_tile(cute.make_identity_tensor((seqlen_q, d)), (self.m_block, d), (m_block, 0))
        cKV = cute.local_tile(cute.make_identity_tensor((seqlen_k, d)), (nb, d), (None, 0))
        thr = g2s.get_slice(tidx)
        tQg, tQs, tQc = thr.partition_S(gQ), thr.partition_D(sQ), thr.partition_S(cQ)
        tKg, tKs = thr.partition_S(gK), thr.partition_D(sK)
        tVg, tVs = thr.partition_S(gV), thr.partition_D(sV)
        tKVc = thr.partition_S(cKV)

        load_rows(g2s, tQg, tQs, tQc, seqlen_q)
        load_kv_tile(g2s, tKg, tKs, tKVc, last, seqlen_k, True)
        cute.arch.cp_async_commit_group()

        kq = d // 32          # k32 blocks of the first GEMM
        nj = nb // 8          # n8 atoms of S
        nd = d // 8           # n8 atoms of O
        acc_o = cute.make_rmem_tensor((nd * 4,), cutlass.Float32)
        acc_o.fill(0.0)
        row_max = cute.make_rmem_tensor((2,), cutlass.Float32)
        row_sum = cute.make_rmem_tensor((2,), cutlass.Float32)
        row_max.fill(-cutlass.Float32.inf)
        row_sum.fill(0.0)
        rQ = cute.make_rmem_tensor((kq * 4,), cutlass.Int32)

        mask_tiles = self.mask_tiles
        for i in cutlass.range_constexpr(mask_tiles):
            if i < n_tiles:
                self.step(last - i, m_block, seqlen_k, scale_log2, g, t, row0, sQ32, sK32, sV8, rQ, acc_o,
                          row_max, row_sum, g2s, tKg, tKs, tVg, tVs, tKVc, first=(i == 0), masked=True)
        for i in range(mask_tiles, n_tiles, 1):
            self.step(last - i, m_block, seqlen_k, scale_log2, g, t, row0, sQ32, sK32, sV8, rQ, acc_o,
                      row_max, row_sum, g2s, tKg, tKs, tVg, tVs, tKVc, first=False, masked=False)

        # epilogue: full row sums, normalise, direct stores (row-predicated)
        o_dtype = mO.element_type
        for h in cutlass.range_constexpr(2):
            total = row_sum[h]
            total = total + cute.arch.shuffle_sync_bfly(total, offset=2, mask=-1, mask_and_clamp=31)
            total = total + cute.arch.shuffle_sync_bfly(total, offset=1, mask=-1, mask_and_clamp=31)
            inv = 0.0 if total == 0.0 else cute.arch.rcp_approx(total)
            row = m_block * self.m_block + row0 + g + 8 * h
            if row < seqlen_q:
                for j in cutlass.range_constexpr(nd):
                    for e in cutlass.range_constexpr(2):
                        mO[batch, row, head, 8 * j + 2 * t + e] = (acc_o[4 * j + 2 * h + e] * inv).to(o_dtype)

    @cute.jit
    def step(self, n, m_block, seqlen_k, scale_log2: cutlass.Float32, g, t, row0, sQ32: cute.Tensor,
             sK32: cute.Tensor, sV8: cute.Tensor, rQ: cute.Tensor, acc_o: cute.Tensor, row_max: cute.Tensor,
             row_sum: cute.Tensor, g2s: cute.TiledCopy, tKg, tKs, tVg, tVs, tKVc, first: cutlass.Constexpr,
             masked: cutlass.Constexpr):
        d = self.head_dim
        nb = self.n_block
        kq = d // 32
        nj = nb // 8
        nd = d // 8
        cute.arch.cp_async_wait_group(0)
        cute.arch.sync_threads()
        load_kv_tile(g2s, tVg, tVs, tKVc, n, seqlen_k, first)
        cute.arch.cp_async_commit_group()
        if cutlass.const_expr(first):
            for kb in cutlass.range_constexpr(kq):
                rQ[4 * kb + 0] = sQ32[row0 + g, 8 * kb + t]
                rQ[4 * kb + 1] = sQ32[row0 + g + 8, 8 * kb + t]
                rQ[4 * kb + 2] = sQ32[row0 + g, 8 * kb + 4 + t]
                rQ[4 * kb + 3] = sQ32[row0 + g + 8, 8 * kb + 4 + t]

        # S = Q K^T
        acc_s = cute.make_rmem_tensor((nj * 4,), cutlass.Float32)
        acc_s.fill(0.0)
        for j in cutlass.range_constexpr(nj):
            for kb in cutlass.range_constexpr(kq):
                b0 = sK32[8 * j + g, 8 * kb + t]
                b1 = sK32[8 * j + g, 8 * kb + 4 + t]
                c = _mma_f8(rQ[4 * kb], rQ[4 * kb + 1], rQ[4 * kb + 2], rQ[4 * kb + 3], b0, b1,
                            acc_s[4 * j], acc_s[4 * j + 1], acc_s[4 * j + 2], acc_s[4 * j + 3], self.emulate)
                for e in cutlass.range_constexpr(4):
                    acc_s[4 * j + e] = c[e]

        cute.arch.cp_async_wait_group(0)
        cute.arch.sync_threads()
        if n > 0:
            load_kv_tile(g2s, tKg, tKs, tKVc, n - 1, seqlen_k, False)
            cute.arch.cp_async_commit_group()

        # mask + online softmax on this thread's two rows (g and g+8), 2 * nj columns each
        for h in cutlass.range_constexpr(2):
            row = m_block * self.m_block + row0 + g + 8 * h
            if cutlass.const_expr(masked):
                limit = seqlen_k
                if cutlass.const_expr(self.causal):
                    limit = cutlass.min(row + 1, seqlen_k)
                for j in cutlass.range_constexpr(nj):
                    for e in cutlass.range_constexpr(2):
                        if n * nb + 8 * j + 2 * t + e >= limit:
                            acc_s[4 * j + 2 * h + e] = -cutlass.Float32.inf
            m_new = acc_s[2 * h]
            for j in cutlass.range_constexpr(nj):
                for e in cutlass.range_constexpr(2):
                    m_new = cute.arch.fmax(m_new, acc_s[4 * j + 2 * h + e])
            m_new = cute.arch.fmax(m_new, cute.arch.shuffle_sync_bfly(m_new, offset=2, mask=-1, mask_and_clamp=31))
            m_new = cute.arch.fmax(m_new, cute.arch.shuffle_sync_bfly(m_new, offset=1, mask=-1, mask_and_clamp=31))
            m_old = row_max[h]
            if cutlass.const_expr(not first):
                m_new = cute.arch.fmax(m_old, m_new)
            base = 0.0 if m_new == -cutlass.Float32.inf else m_new * scale_log2
            psum = cutlass.Float32(0.0)
            for j in cutlass.range_constexpr(nj):
                for e in cutlass.range_constexpr(2):
                    p = cute.math.exp2(acc_s[4 * j + 2 * h + e] * scale_log2 - base, fastmath=True)
                    acc_s[4 * j + 2 * h + e] = p
                    psum = psum + p
            if cutlass.const_expr(first):
                row_sum[h] = psum
            else:
                corr = cute.math.exp2(m_old * scale_log2 - base, fastmath=True)
                row_sum[h] = row_sum[h] * corr + psum
                for j in cutlass.range_constexpr(nd):
                    for e in cutlass.range_constexpr(2):
                        acc_o[4 * j + 2 * h + e] = acc_o[4 * j + 2 * h + e] * corr
            row_max[h] = m_new

        # O += P V, k = this tile's keys in 32-key slices; the permuted k order described in the module doc
        for kb in cutlass.range_constexpr(nb // 32):
            j0 = 4 * kb
            a0 = _pack_e4m3x4(acc_s[4 * j0], acc_s[4 * j0 + 1], acc_s[4 * j0 + 4], acc_s[4 * j0 + 5])
            a1 = _pack_e4m3x4(acc_s[4 * j0 + 2], acc_s[4 * j0 + 3], acc_s[4 * j0 + 6], acc_s[4 * j0 + 7])
            a2 = _pack_e4m3x4(acc_s[4 * j0 + 8], acc_s[4 * j0 + 9], acc_s[4 * j0 + 12], acc_s[4 * j0 + 13])
            a3 = _pack_e4m3x4(acc_s[4 * j0 + 10], acc_s[4 * j0 + 11], acc_s[4 * j0 + 14], acc_s[4 * j0 + 15])
            r0 = 32 * kb + 2 * t
            for j in cutlass.range_constexpr(nd):
                col = 8 * j + g
                b0 = (_byte(sV8[r0, col]) | (_byte(sV8[r0 + 1, col]) << 8)
                      | (_byte(sV8[r0 + 8, col]) << 16) | (_byte(sV8[r0 + 9, col]) << 24))
                b1 = (_byte(sV8[r0 + 16, col]) | (_byte(sV8[r0 + 17, col]) << 8)
                      | (_byte(sV8[r0 + 24, col]) << 16) | (_byte(sV8[r0 + 25, col]) << 24))
                c = _mma_f8(a0, a1, a2, a3, b0, b1, acc_o[4 * j], acc_o[4 * j + 1], acc_o[4 * j + 2],
                            acc_o[4 * j + 3], self.emulate)
                for e in cutlass.range_constexpr(4):
                    acc_o[4 * j + e] = c[e]
