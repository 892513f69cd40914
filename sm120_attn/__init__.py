"""sm120_attn: CuTe DSL FlashAttention-2 forward kernels designed for SM120 (consumer Blackwell), also run on Hopper.

Kernels (each in its own module, imported lazily: the DSL takes seconds to import):

* `FlashAttentionSm120` (variant "cpasync"): BF16/FP16, cp.async + ldmatrix + mma.sync m16n8k16.
* `FlashAttentionSm120Tma` (variant "tma"): BF16/FP16, warp-specialized: 1 DMA warp issuing 4-D TMA loads, 8 MMA
  warps, separate multi-stage K and V mbarrier pipelines, setmaxnreg register rebalancing that takes effect.
* `FlashAttentionSm120Fp8` (variant "fp8"): e4m3 Q/K/V, mma.sync kind::f8f6f4 m16n8k32 (sm_120a / sm_121a).

Entry point: `attention(q, k, v, causal=False, variant="cpasync")` on torch CUDA tensors laid out (B, S, H, D).
"""

from __future__ import annotations

import importlib

from .constants import DSL_DTYPES, LOG2E

# variant -> (module, class): the one table behind `kernel_class` and the lazy package attributes
_KERNELS = {"cpasync": ("fa2_cpasync", "FlashAttentionSm120"), "tma": ("fa2_tma", "FlashAttentionSm120Tma"),
            "fp8": ("fa2_fp8", "FlashAttentionSm120Fp8")}
VARIANTS = tuple(_KERNELS)

_CACHE: dict = {}


def kernel_class(variant: str):
    """The kernel class of a variant, its module imported on first use (the DSL takes seconds to import)."""
    if variant not in _KERNELS:
        raise ValueError(f"unknown variant {variant!r} (one of {VARIANTS})")
    module, name = _KERNELS[variant]
    return getattr(importlib.import_module(f".{module}", __name__), name)


def __getattr__(name):
    for variant, (_, cls_name) in _KERNELS.items():
        if cls_name == name:
            return kernel_class(variant)
    raise AttributeError(name)


def device_arch(device=None) -> str:
    import torch

    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}a"


def to_cute(t, dtype_override=None):
    """A torch (B, S, H, D) tensor as a CuTe DSL tensor with dynamic B, S, H (D contiguous, 16 B aligned)."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    src = t.view(torch.uint8) if dtype_override is not None else t
    width = 8 if dtype_override is not None else t.element_size() * 8
    ct = from_dlpack(src, assumed_align=16).mark_layout_dynamic(leading_dim=3)
    ct = ct.mark_compact_shape_dynamic(mode=3, stride_order=src.dim_order(), divisibility=128 // width)
    if dtype_override is not None:
        ct.element_type = dtype_override
    return ct


def compiled_kernel(variant: str, q, k, v, o, causal: bool, arch: str | None = None, options: str = "", **kw):
    """Compile (once per variant / dtypes / head dim / causal / arch / options) and return (fn, cute args).
    `options`: extra `cute.compile` options after `--gpu-arch` (e.g. `--keep-ptx --dump-dir D`)."""
    import cutlass
    import cutlass.cute as cute
    import torch
    from cuda.bindings import driver as cuda

    arch = arch or device_arch(q.device)
    head_dim = q.shape[-1]
    fp8 = q.dtype == torch.float8_e4m3fn
    cq = [to_cute(x, cutlass.Float8E4M3FN if fp8 else None) for x in (q, k, v)]
    co = to_cute(o)
    key = (variant, q.dtype, o.dtype, head_dim, causal, arch, options, tuple(sorted(kw.items())))
    fn = _CACHE.get(key)
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    if fn is None:
        cls = kernel_class(variant)
        arch_kw = {"arch": arch} if variant == "fp8" else {}
        kernel = cls(head_dim, causal=causal, **arch_kw, **kw)
        dtype = getattr(cutlass, DSL_DTYPES[str(q.dtype).removeprefix("torch.")])
        if not cls.can_implement(dtype, head_dim):
            raise ValueError(f"{cls.__name__} cannot implement dtype={q.dtype} head_dim={head_dim}")
        fn = cute.compile(kernel, *cq, co, cutlass.Float32(1.0), stream, options=f"--gpu-arch {arch} {options}".strip())
        _CACHE[key] = fn
    return fn, (*cq, co), stream


def attention(q, k, v, causal: bool = False, variant: str = "cpasync", scale: float | None = None, out=None,
              out_dtype=None, **kw):
    """softmax(q k^T * scale [+ causal mask]) v for (B, S, H, D) torch CUDA tensors; returns O as (B, Sq, H, D).

    Causal is top-left aligned (query i sees keys 0..i), as torch SDPA's is_causal. variant "fp8" takes
    torch.float8_e4m3fn Q/K/V and returns bf16 (or float32 with out_dtype=torch.float32).
    """
    import math

    import torch

    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}")
    if not (q.dim() == k.dim() == v.dim() == 4):
        raise ValueError("q, k, v must be (B, S, H, D)")
    if k.shape != v.shape or q.shape[0] != k.shape[0] or q.shape[2] != k.shape[2] or q.shape[3] != k.shape[3]:
        raise ValueError(f"shape mismatch: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}")
    q, k, v = (x.contiguous() for x in (q, k, v))
    if out is None:
        if variant == "fp8":
            out_dtype = out_dtype or torch.bfloat16
        out = torch.empty(q.shape, dtype=out_dtype or q.dtype, device=q.device)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    fn, args, stream = compiled_kernel(variant, q, k, v, out, causal, **kw)
    fn(*args, scale * LOG2E, stream)
    return out
