"""Host side of the Hopper Gluon attention (``hopper_fa``): configurations from the knobs and the tuning tables,
the torch entry point, the compile helper for machines with no GPU. torch is imported lazily."""
from __future__ import annotations

import math

from .host import (
    LOG2E, check_qkv, compile_for, descriptor, descriptor_signature, out_dtype, output, persistent_grid, rows,
    short_dtype,
)
from .hopper_fa import _attn_fwd_simple, _attn_fwd_ws
from .tuning import WS_KNOBS, tuned_knobs, ws_defaults


VARIANTS = ("ws", "simple")
HOPPER_DTYPES = ("fp16", "bf16", "fp8e4nv")


def _config(dtype: str, head_dim: int, variant: str = "ws", causal: bool = False, seq_len: int | None = None,
            **knobs) -> dict:
    """Tile sizes and launch options for one (dtype, head dim, variant[, seq_len]); shared by the wrapper and the
    AOT helper. ``knobs``: the ``WS_KNOBS`` names (None = default), over the ``TUNED_WS`` (``TUNED_WS_FP8``) entry
    for seq_len (with no knob set, possibly a whole one: ``THREE_OVERLAPPED_FROM``)."""
    if dtype not in HOPPER_DTYPES:
        raise ValueError(f"dtype must be one of {sorted(HOPPER_DTYPES)}, not {dtype!r}")
    if head_dim not in (64, 128):
        raise ValueError(f"head_dim must be 64 or 128, not {head_dim}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    allowed = WS_KNOBS if variant == "ws" else ("block_n", "stages")
    unknown = sorted(set(knobs) - set(allowed))
    if unknown:
        raise ValueError(f"unknown {variant} knob(s) {unknown}; known: {sorted(allowed)}")
    knobs = {k: v for k, v in knobs.items() if v is not None}
    fp8 = dtype == "fp8e4nv"
    if variant == "ws":
        tuned = tuned_knobs(causal, head_dim, seq_len, fp8, whole=not knobs)
        consumers = knobs.get("consumers", tuned.get("consumers", 2))
        if tuned.get("consumers", 2) != consumers:  # the table holds two-consumer builds (and whole ones)
            tuned = {}
        if consumers not in (2, 3):
            raise ValueError(f"consumers must be 2 or 3 (consumer warpgroups a tile), not {consumers}")
        if consumers == 3 and head_dim != 64:
            raise ValueError("consumers=3 is built for head_dim 64: with 512 threads a consumer has 128 registers, "
                             "and D=128's O accumulator spills")
        chosen = {**ws_defaults(head_dim, fp8, consumers), **tuned, **knobs}
        if consumers == 3 and chosen["block_n"] > 128:
            raise ValueError("consumers=3 takes block_n <= 128: at 160 registers a consumer, 256-key blocks do not "
                             "compile (ptxas asks for 154 at the 128 a thread that 512 threads start with)")
        smem = _ws_shared_bytes(head_dim, chosen["block_n"], chosen["stages"], fp8, o_buffer=fp8,
                                ones=chosen["tc_rowsum"], consumers=consumers)
        if chosen["tma_store"] is None:  # fp8: where its O buffer fits (16-bit: on by default, O staged in Q's)
            chosen["tma_store"] = smem <= SM90_SHARED_BYTES
        elif fp8 and chosen["tma_store"] and smem > SM90_SHARED_BYTES:
            raise ValueError(f"tma_store: fp8 needs its own O buffer, and with block_n={chosen['block_n']}, "
                             f"stages={chosen['stages']} the kernel would need {smem} B of shared memory "
                             f"(sm_90: {SM90_SHARED_BYTES})")
        if chosen["dynamic_tiles"] and not chosen["persistent"]:
            if knobs.get("dynamic_tiles"):
                raise ValueError("dynamic_tiles hands tiles to resident programs: it needs persistent=True")
            chosen["dynamic_tiles"] = False  # the table's choice yields to the caller's persistent
        flags = ("pingpong", "overlap", "tma_store", "defer_wait", "tc_rowsum", "diagonal_halves", "masked_first",
                 "thread_rowsum", "peel_diagonal", "late_pv_wait", "dynamic_tiles")
        consts = {WS_KNOBS[k]: (bool(v) if k in flags else int(v)) for k, v in chosen.items() if WS_KNOBS[k]}
        return dict(constexprs=dict(HEAD_DIM=head_dim, BLOCK_M=64, CAUSAL=bool(causal), V_TRANSPOSED=fp8,
                                    O_SEPARATE=fp8, **consts), num_warps=4, block_m_cta=64 * consumers,
                    persistent=bool(chosen["persistent"]))
    bn = knobs.get("block_n") or (128 if head_dim == 64 or fp8 else 64)
    st = knobs.get("stages") or 2
    return dict(constexprs=dict(HEAD_DIM=head_dim, BLOCK_M=128, BLOCK_N=bn, STAGES=st, CAUSAL=bool(causal),
                                V_TRANSPOSED=fp8), num_warps=8, block_m_cta=128)


SM90_SHARED_BYTES = 232448
"""Shared memory one block may opt into on sm_90 (227 KB)."""


def _ws_shared_bytes(head_dim: int, block_n: int, stages: int, fp8: bool, o_buffer: bool, ones: bool = False,
                     consumers: int = 2) -> int:
    """The ws kernel's shared memory: 2 x `consumers` Q tiles of 64 rows, `stages` K and V (V^T) tiles, one bf16 O
    tile a consumer when fp8 stages O apart from Q, the [8, block_n] ones of the row-sum GEMM (`tc_rowsum`), and
    1 KB for barriers and alignment."""
    elem = 1 if fp8 else 2
    o_tiles = consumers * 64 * head_dim * 2 if o_buffer else 0
    ones_tile = 8 * block_n * elem if ones else 0
    return 2 * consumers * 64 * head_dim * elem + stages * 2 * block_n * head_dim * elem + o_tiles + ones_tile + 1024


def _launch_constexprs(cfg: dict, write_lse: bool) -> dict:
    """The kernel's constexprs for one call. With the LSE asked for, the row sums are taken on the FMA pipe
    whatever `tc_rowsum` says: the tensor-core sums are of P as rounded for the P V GEMM, which for e4m3 puts the
    LSE up to 1.6e-2 off where the exact sums give 9e-5 (fp8, D=64, S=4k, H200). O is as accurate either way."""
    consts = dict(cfg["constexprs"], WRITE_LSE=bool(write_lse))
    if write_lse and "TC_ROWSUM" in consts:
        consts["TC_ROWSUM"] = False
    return consts


def _desc_blocks(cfg: dict):
    c = cfg["constexprs"]
    d, bn = c["HEAD_DIM"], c["BLOCK_N"]
    q_block = [c["BLOCK_M"], d]
    k_block = [bn, d]
    v_block = [d, bn] if c["V_TRANSPOSED"] else [bn, d]
    return q_block, k_block, v_block


def _kernel(variant: str):
    return _attn_fwd_ws if variant == "ws" else _attn_fwd_simple


def compile_hopper_attention(dtype: str = "bf16", head_dim: int = 128, causal: bool = False, variant: str = "ws",
                             write_lse: bool = False, capability: int = 90, seq_len: int | None = None, **kwargs):
    """Compile one configuration for sm_90a with no GPU; returns Triton's ``CompiledKernel``.

    ``dtype``: "fp16", "bf16" or "fp8e4nv". ``seq_len``: build what the wrapper launches at that S (its
    ``TUNED_WS`` entry). Extra keyword arguments: the ``WS_KNOBS`` (tile/schedule choices such as ``block_n``,
    ``stages``, ``pingpong``, ``head_group``, ``tc_rowsum``, ``diagonal_halves``) and Triton compile options (e.g.
    ``maxnreg``)."""
    tile_keys = {k: kwargs.pop(k) for k in WS_KNOBS if k in kwargs}
    cfg = _config(dtype, head_dim, variant, causal, seq_len, **tile_keys)
    q_block, k_block, v_block = _desc_blocks(cfg)
    sig = {
        "q_desc": descriptor_signature(dtype, q_block),
        "k_desc": descriptor_signature(dtype, k_block),
        "v_desc": descriptor_signature(dtype, v_block),
        "o_ptr": "*" + out_dtype(dtype),
    }
    if variant == "ws":
        sig["o_desc"] = descriptor_signature(out_dtype(dtype), q_block)
    sig.update(lse_ptr="*fp32", qk_scale="fp32", seq_len="i32")
    constexprs = dict(_launch_constexprs(cfg, write_lse), num_warps=cfg["num_warps"])
    if variant == "ws":
        sig["num_bh"] = "i32"
        if constexprs["DYNAMIC_TILES"]:
            sig["tile_counter"] = "*i32"
        else:
            constexprs["tile_counter"] = None
    for name in constexprs:
        sig[name] = "constexpr"
    return compile_for(_kernel(variant), sig, constexprs, cfg["num_warps"], capability, kwargs)


def transpose_v_for_fp8(v):
    """The V layout the fp8 kernel reads: (B, H, D, S_pad) contiguous, S padded with zeros to a multiple of 16, and
    the keys renumbered within each group of 16: column 16c + 4t + 2h + e holds key 16c + 8h + 2t + e
    (t < 4, h < 2, e < 2).

    wgmma takes fp8 B operands only K-major; for PV the reduction runs over S, so V must be S-contiguous. The
    renumbering matches the one the kernel applies to P for free in registers (``_p_operand``): P V is a sum over
    keys, so renumbering both sides alike leaves it unchanged. Callers that keep an fp8 KV cache can store V this way
    once and pass it as ``hopper_attention(..., v_t=...)``."""
    import torch

    B, H, S, D = v.shape
    s_pad = (S + 15) // 16 * 16
    if s_pad != S:
        v_pad = torch.zeros((B, H, s_pad, D), dtype=v.dtype, device=v.device)
        v_pad[:, :, :S].copy_(v)
        v = v_pad
    # one strided copy: key 16c + 8h + 2t + e goes to column 16c + 4t + 2h + e (see _p_operand)
    vt = torch.empty((B, H, D, s_pad), dtype=v.dtype, device=v.device)
    src = v.reshape(B, H, s_pad // 16, 2, 4, 2, D).permute(0, 1, 6, 2, 4, 3, 5)  # (B, H, D, c, t, h, e)
    vt.view(B, H, D, s_pad // 16, 4, 2, 2).copy_(src)
    return vt


def _v_rows(v, v_t, q, fp8: bool):
    """V as the 2-D view the kernel's V descriptor reads: V^T rows for fp8 (``v_t`` checked, or made here), else
    V's rows."""
    B, H, S, D = q.shape
    if fp8:
        if v_t is None:
            v_t = transpose_v_for_fp8(v)
        elif v_t.dim() != 4 or v_t.shape[:3] != (B, H, D) or v_t.shape[3] < S or v_t.shape[3] % 16 \
                or not v_t.is_contiguous() or v_t.dtype != q.dtype:
            raise ValueError("v_t must be transpose_v_for_fp8(v): contiguous (B, H, D, S_pad), S_pad % 16 == 0")
        return v_t.view(B * H * D, v_t.shape[3])
    if v_t is not None:
        raise ValueError("v_t (pre-transposed V) is only used by the fp8 kernel")
    return rows(v)


def hopper_attention(q, k, v, causal: bool = False, sm_scale: float | None = None, return_lse: bool = False,
                     variant: str = "ws", out=None, v_t=None, **tile_kwargs):
    """softmax(Q K^T * sm_scale [+ causal mask]) V for (B, H, S, D) tensors, like SDPA (no dropout, no attn mask).

    q, k, v: same shape (B, H, S, D), dtype float16, bfloat16 or float8_e4m3fn, D in {64, 128}, on an sm_90 GPU.
    Returns O (B, H, S, D) in the input dtype (bf16 for fp8 inputs) and, with ``return_lse=True``, also the
    log-sum-exp (B, H, S) float32 in natural log of the scaled scores. For fp8, V is copied transposed (B*H, D, S)
    because wgmma reads fp8 B operands only K-major (a full pass over V, timed separately in the benchmark); pass
    ``v_t=transpose_v_for_fp8(v)`` (and ``v=None``) to skip that copy. ``out``: an optional contiguous (B, H, S, D)
    output tensor.
    ``variant``: "ws" (persistent, warp-specialized; default) or "simple" (baseline). ``tile_kwargs``: the
    ``WS_KNOBS`` (None or absent: the ``TUNED_WS`` entry for S, else the default).
    """
    import torch
    import triton

    if v is None and v_t is not None:
        v = v_t.transpose(-1, -2)[..., :q.shape[2], :]  # shape/dtype checks only
    check_qkv(q, k, v)
    dtype = short_dtype(q.dtype)
    if dtype not in HOPPER_DTYPES:
        raise ValueError(f"unsupported dtype {q.dtype}; use float16, bfloat16 or float8_e4m3fn")
    B, H, S, D = q.shape
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    cfg = _config(dtype, D, variant, causal, S, **tile_kwargs)
    q_block, k_block, v_block = _desc_blocks(cfg)
    BH = B * H
    v2 = _v_rows(v, v_t, q, cfg["constexprs"]["V_TRANSPOSED"])
    o = output(q, dtype, out)
    lse = torch.empty((B, H, S), dtype=torch.float32, device=q.device) if return_lse else o  # dummy when unused
    q_desc, k_desc, v_desc = (descriptor(t, dtype, block)
                              for t, block in ((rows(q), q_block), (rows(k), k_block), (v2, v_block)))
    qk_scale = float(sm_scale) * LOG2E
    consts = _launch_constexprs(cfg, return_lse)
    n_m = triton.cdiv(S, cfg["block_m_cta"])
    if variant == "ws":
        # persistent: one program an SM walking its tiles; otherwise one a tile, handed out as SMs come free
        grid = persistent_grid(q.device, n_m * BH) if cfg["persistent"] else (n_m * BH, )
        o_desc = descriptor(rows(o), out_dtype(dtype), q_block)
        tile_counter = torch.zeros(1, dtype=torch.int32, device=q.device) if consts["DYNAMIC_TILES"] else None
        _attn_fwd_ws[grid](q_desc, k_desc, v_desc, o, o_desc, lse, qk_scale, S, BH, tile_counter, **consts,
                           num_warps=cfg["num_warps"])
    else:
        grid = (n_m, BH)
        _attn_fwd_simple[grid](q_desc, k_desc, v_desc, o, lse, qk_scale, S, **consts, num_warps=cfg["num_warps"])
    return (o, lse) if return_lse else o
