"""Host side shared by the Hopper and Blackwell Gluon attention wrappers: the dtype tables, the input checks, the
TMA descriptors (on tensors, and as signature strings for compiles with no GPU), the persistent grid, the compile
call. torch is imported lazily: the AOT compile helpers run on a machine with Triton and no torch/GPU.

Both kernels take Q, K, V, O as (B, H, S, D) contiguous tensors viewed as 2-D (B*H*S, D) for TMA.
"""
from __future__ import annotations

from functools import lru_cache

from ._compat import GluonASTSource, TensorDescriptor, gl, nvmma_shared_layout, tensordesc_signature

LOG2E = 1.4426950408889634
"""log2(e): the kernels run a base-2 softmax on scores pre-multiplied by sm_scale * LOG2E."""

GL_DTYPES = {"fp16": gl.float16, "bf16": gl.bfloat16, "fp8e4nv": gl.float8e4nv, "fp8e5": gl.float8e5}
"""Triton's short name -> Gluon dtype, for every input dtype of either kernel."""

TORCH_DTYPE_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2"}
"""Triton's short name -> the torch dtype's attribute name."""

DTYPE_ALIASES = {"float16": "fp16", "half": "fp16", "bfloat16": "bf16", "e4m3": "fp8e4nv", "fp8": "fp8e4nv",
                 "float8_e4m3fn": "fp8e4nv", "e5m2": "fp8e5", "float8_e5m2": "fp8e5", "fp8e4m3": "fp8e4nv",
                 "fp8e5m2": "fp8e5"}
"""Other spellings of the input dtypes (torch's names among them) -> Triton's short name."""


def is_fp8(dtype: str) -> bool:
    return dtype.startswith("fp8")


def out_dtype(dtype: str) -> str:
    """The output dtype of an input dtype: the same for 16-bit inputs, bf16 for fp8 (fp8 in, bf16 out)."""
    return "bf16" if is_fp8(dtype) else dtype


def short_dtype(dtype) -> str:
    """Triton's short name of a dtype given as that name, another spelling or a torch dtype; a name it does not
    know comes back as given (the caller checks it against the dtypes its kernel takes)."""
    name = str(dtype).removeprefix("torch.")
    return DTYPE_ALIASES.get(name, name)


def torch_dtype(dtype: str):
    import torch

    return getattr(torch, TORCH_DTYPE_NAMES[dtype])


def check_qkv(q, k, v) -> None:
    """Q, K, V of one (B, H, S, D) shape and one dtype; ValueError otherwise."""
    if q.dim() != 4 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError(f"q, k, v must have the same (B, H, S, D) shape; got {tuple(q.shape)}, {tuple(k.shape)}, "
                         f"{tuple(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError("q, k, v must have the same dtype")


def output(q, dtype: str, out=None):
    """The output tensor: ``out`` checked (contiguous, q's shape, the output dtype of ``dtype``), or a new one."""
    import torch

    o_dtype = torch_dtype(out_dtype(dtype))
    if out is None:
        return torch.empty(q.shape, dtype=o_dtype, device=q.device)
    if out.shape != q.shape or out.dtype != o_dtype or not out.is_contiguous():
        raise ValueError(f"out must be a contiguous {tuple(q.shape)} tensor of {o_dtype}")
    return out


def rows(t):
    """A contiguous (..., D) tensor as the 2-D (rows, D) view TMA reads (a copy first when not contiguous)."""
    return t.contiguous().view(-1, t.shape[-1])


def descriptor(t2d, dtype: str, block):
    """A TMA descriptor over a 2-D tensor for ``block`` tiles in the default NVMMA shared layout."""
    return TensorDescriptor.from_tensor(t2d, block, nvmma_shared_layout(block, GL_DTYPES[dtype]))


def descriptor_signature(dtype: str, block) -> str:
    """The kernel-signature string of the descriptor ``descriptor`` builds, for compiles with no GPU."""
    return tensordesc_signature(dtype, block, nvmma_shared_layout(block, GL_DTYPES[dtype]))


@lru_cache(maxsize=None)
def num_sms(device_index: int) -> int:
    import torch

    return torch.cuda.get_device_properties(device_index).multi_processor_count


def persistent_grid(device, tiles: int) -> tuple[int]:
    """One program per SM, at most one per tile, at least one."""
    return (max(1, min(num_sms(device.index or 0), tiles)), )


def compile_for(kernel, signature: dict, constexprs: dict, num_warps: int, capability: int, options: dict):
    """``triton.compile`` of a Gluon kernel for ``capability`` with no GPU; returns the ``CompiledKernel``."""
    import triton
    from triton.backends.compiler import GPUTarget

    src = GluonASTSource(kernel, signature, constexprs)
    return triton.compile(src, target=GPUTarget("cuda", capability, 32), options={"num_warps": num_warps, **options})
