"""The Hopper kernels' wgmma GEMMs and the register layouts they produce and consume.

Q K^T (issued async, or waited for), P as the register A operand of the P V GEMM (with the free key renumbering for
fp8), and P V itself, plus the accumulator/operand layouts every other Hopper helper builds on (masking works on
the score accumulator's key halves, the tensor-core row sums take P in the operand layout). Kept apart from the
kernels (``hopper_fa.py``) so that the math modules (``masking.py``, ``softmax.py``) can share the layouts without
importing the kernels.
"""
from __future__ import annotations

from ._compat import gl, gluon, warpgroup_mma, warpgroup_mma_wait


@gluon.constexpr_function
def _wgmma_layout(N, elem_bits, num_warps):
    """Register layout of a wgmma accumulator with N columns: warps stacked along M (16 rows each, so 64 rows per
    warpgroup), instruction shape m16 x N x (256 / bits) as in tutorial 05's pick_wgmma_layout."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                     instr_shape=[16, N, 256 // elem_bits])


@gluon.constexpr_function
def _p_operand_layout(o_layout, elem_bits):
    """P as the register (A) operand of the PV wgmma: k_width = elements per 32 bits."""
    return gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=32 // elem_bits)


@gluon.jit
def _qk(q_smem, k_smem, s_layout: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):
    """S = Q K^T for one K block, waited for."""
    s = _qk_async(q_smem, k_smem, s_layout, BLOCK_M, BLOCK_N)
    return warpgroup_mma_wait(num_outstanding=0, deps=(s, ))


@gluon.jit
def _qk_async(q_smem, k_smem, s_layout: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):
    """S = Q K^T for one K block, issued and left in flight (K smem is [BLOCK_N, D], D contiguous: K-major for the
    B operand)."""
    return warpgroup_mma(q_smem, k_smem.permute((1, 0)), gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout),
                         use_acc=False, is_async=True)


@gluon.jit
def _p_operand(p, dtype: gl.constexpr, p_layout: gl.constexpr, PERMUTE_KEYS: gl.constexpr):
    """P (fp32, wgmma accumulator layout) rounded to ``dtype`` in the A-operand register layout of the PV wgmma.

    16-bit: the accumulator layout already matches the A layout register for register. 8-bit (PERMUTE_KEYS): in
    each 16-key chunk a thread holds keys {2t, 2t+1, 8+2t, 9+2t} of the accumulator (t = lane % 4) but the 8-bit A
    operand wants keys {4t .. 4t+3}; moving them costs shuffles and byte permutes. Instead the keys are renumbered
    within each chunk, position 16c + 4t + 2h + e <- key 16c + 8h + 2t + e, which is a register-only relabelling
    (checked: assert_trivial), and V^T's columns carry the same renumbering (transpose_v_for_fp8), so P V is
    unchanged."""
    if PERMUTE_KEYS:
        M: gl.constexpr = p.shape[0]
        N: gl.constexpr = p.shape[1]
        pp = gl.reshape(p, [M, N // 16, 2, 4, 2])  # key = 16c + 8h + 2t + e
        pp = gl.permute(pp, (0, 1, 3, 2, 4))  # [M, c, t, h, e]
        pp = gl.reshape(pp, [M, N])  # position 16c + 4t + 2h + e
        pp = gl.convert_layout(pp, p_layout, assert_trivial=True)
        # 4 neighbouring registers = the 4 bytes of one A-operand register: two cvt's, one pack, no byte shuffles
        return gl.inline_asm_elementwise(
            "{ .reg .b16 lo, hi; cvt.rn.satfinite.e4m3x2.f32 lo, $2, $1; cvt.rn.satfinite.e4m3x2.f32 hi, $4, $3; "
            "mov.b32 $0, {lo, hi}; }", "=r,r,r,r,r", [pp], dtype=gl.float8e4nv, is_pure=True, pack=4)
    else:
        return gl.convert_layout(p.to(dtype), p_layout)


@gluon.jit
def _scheduling_fence(x):
    """`x` unchanged, behind a `bar.warp.sync` (one per element a thread holds): ptxas hoists a `wgmma.wait_group`
    above any arithmetic before it, as far up as the last barrier, so a wait for the previous P V GEMM written after
    the softmax issues before its first exponential, and the softmax overlaps only the next Q K^T. It does not hoist
    the wait above this; passing a value the softmax ends with (the row sums) through it keeps every exponential of
    the block ahead of the wait at D=128. The `bar.warp.sync` has no operand (ptxas makes it a `NOP`), so ptxas may
    move it up itself, as it does at D=64 (docs/hopper_attention.md#what-bounds-it). The empty asm alone (a volatile
    `mov`) does not hold the wait."""
    return gl.inline_asm_elementwise("bar.warp.sync -1; mov.b32 $0, $1;", "=r,r", [x], dtype=x.dtype, is_pure=False,
                                     pack=1)


@gluon.jit
def _pv(p, v_smem, acc, p_layout: gl.constexpr, V_TRANSPOSED: gl.constexpr):
    """acc += P V with P from registers (A operand) and V from shared memory (B operand, [BLOCK_N, D])."""
    p_op = _p_operand(p, v_smem.dtype, p_layout, V_TRANSPOSED)
    if V_TRANSPOSED:
        b = v_smem.permute((1, 0))  # smem holds V^T [D, BLOCK_N]: K-major view of V, needed for fp8
    else:
        b = v_smem
    acc = warpgroup_mma(p_op, b, acc, is_async=True)
    return warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
