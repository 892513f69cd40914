"""Host side of the Blackwell (sm_100a) Gluon attention (``blackwell_fa``): configurations, the torch entry point,
the compile helper for machines with no GPU. torch is imported lazily. Never run (no Blackwell GPU here):
docs/blackwell_attention.md."""
from __future__ import annotations

import math

from .blackwell_fa import blackwell_attention_kernel
from .host import (
    LOG2E, check_qkv, compile_for, descriptor, descriptor_signature, out_dtype, output, persistent_grid, rows,
    is_fp8, short_dtype,
)

KERNEL_NAME = "blackwell_attention_kernel"
"""The kernel's entry name: plain; the ``cutlass_`` variant comes from tritonhook's rename (docs/ptxas_cutlass.md#the-cutlass-name-path)."""
DTYPES = ("fp16", "bf16", "fp8e4nv", "fp8e5")
"""Input dtypes, as Triton's short names (``normalize_dtype`` also takes torch's and other spellings); fp8 inputs
give a bf16 output. The dtype tables are in gluon_kernels/host.py, shared with the Hopper kernel."""
HEAD_DIMS = (64, 128)
"""Head dims of the configurations (``config`` refuses others): one or two 64-column slices of O in TMEM for the
correction warps."""


def normalize_dtype(dtype) -> str:
    """Triton's short name ("fp16", "bf16", "fp8e4nv", "fp8e5") of a dtype given as a string or torch dtype."""
    name = short_dtype(dtype)
    if name not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES} (or float16, bfloat16, float8_e4m3fn, float8_e5m2), "
                         f"not {dtype!r}")
    return name


def config(dtype, head_dim: int, causal: bool = False, kv_stages: int | None = None,
           softmax_regs: int | None = None, worker_regs: int | None = None) -> dict:
    """Tile sizes and launch options of one configuration; shared by the wrapper and the AOT helper."""
    dtype = normalize_dtype(dtype)
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head_dim must be one of {HEAD_DIMS}, not {head_dim}")
    fp8 = is_fp8(dtype)
    block_m, block_n = 128, 128
    tile_bytes = block_n * head_dim * (1 if fp8 else 2)
    if kv_stages is None:  # fill ~160 KB of shared memory with K/V slots (Q takes one more tile)
        kv_stages = max(2, min(8, (160 * 1024) // tile_bytes - 1))
    if kv_stages < 2:
        raise ValueError("kv_stages must be >= 2 (K and V of one block are in flight together)")
    # O is rescaled and stored in column slices: 64 fp32 columns per slice keeps the correction warps' registers low
    o_split = head_dim // 64
    return dict(constexprs=dict(HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, KV_STAGES=kv_stages,
                                O_SPLIT=o_split, CAUSAL=bool(causal), SOFTMAX_REGS=softmax_regs or 232,
                                WORKER_REGS=worker_regs or 24),
                num_warps=4, dtype=dtype)


def _desc_blocks(cfg: dict):
    c = cfg["constexprs"]
    return [c["BLOCK_M"], c["HEAD_DIM"]], [c["BLOCK_N"], c["HEAD_DIM"]]


def signature(cfg: dict) -> dict:
    dtype = cfg["dtype"]
    q_block, kv_block = _desc_blocks(cfg)
    kv_sig = descriptor_signature(dtype, kv_block)
    sig = {
        "q_desc": descriptor_signature(dtype, q_block),
        "k_desc": kv_sig,
        "v_desc": kv_sig,
        "o_ptr": "*" + out_dtype(dtype),
        "qk_scale": "fp32",
        "seq_len": "i32",
        "num_bh": "i32",
    }
    for name in cfg["constexprs"]:
        sig[name] = "constexpr"
    sig["num_warps"] = "constexpr"
    return sig


def compile_blackwell_attention(dtype="fp16", head_dim: int = 128, causal: bool = False, *, capability: int = 100,
                                kv_stages: int | None = None, softmax_regs: int | None = None,
                                worker_regs: int | None = None, **options):
    """Compile one configuration for sm_100a (``capability`` 100) with no GPU; returns Triton's ``CompiledKernel``
    (``.asm["ptx"]``, ``.asm["cubin"]``, ``.metadata.name``). The entry name is always the plain
    ``blackwell_attention_kernel``: for the ``cutlass_`` variant compile under ``tritonhook.enable(rename=
    "cutlass_")`` or rename the PTX with ``tritonhook.rename.rename_ptx``. Extra keyword arguments are Triton
    compile options (e.g. ``ptx_version=87``, ``maxnreg``)."""
    cfg = config(dtype, head_dim, causal, kv_stages, softmax_regs, worker_regs)
    constexprs = dict(cfg["constexprs"], num_warps=cfg["num_warps"])
    return compile_for(blackwell_attention_kernel, signature(cfg), constexprs, cfg["num_warps"], capability, options)


def blackwell_attention(q, k, v, causal: bool = False, sm_scale: float | None = None, *, out=None,
                        kv_stages: int | None = None):
    """softmax(Q K^T * sm_scale [+ causal mask]) V for (B, H, S, D) tensors, like
    ``torch.nn.functional.scaled_dot_product_attention`` (no dropout, no attention mask), on an sm_100 GPU.

    dtype float16, bfloat16, float8_e4m3fn or float8_e5m2 (fp8 returns bfloat16); D in {64, 128}; any S.
    Never run by this project (no Blackwell GPU was available): see docs/blackwell_attention.md."""
    import torch

    check_qkv(q, k, v)
    if not q.is_cuda or torch.cuda.get_device_capability(q.device)[0] != 10:
        raise RuntimeError("blackwell_attention needs a compute capability 10.x GPU (sm_100a)")
    dtype = normalize_dtype(q.dtype)
    B, H, S, D = q.shape
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    cfg = config(dtype, D, causal, kv_stages)
    q_block, kv_block = _desc_blocks(cfg)
    out = output(q, dtype, out)
    q_desc = descriptor(rows(q), dtype, q_block)
    k_desc = descriptor(rows(k), dtype, kv_block)
    v_desc = descriptor(rows(v), dtype, kv_block)
    n_tiles = -(-S // cfg["constexprs"]["BLOCK_M"]) * B * H
    blackwell_attention_kernel[persistent_grid(q.device, n_tiles)](
        q_desc, k_desc, v_desc, out, float(sm_scale) * LOG2E, S, B * H, **cfg["constexprs"],
        num_warps=cfg["num_warps"])
    return out
