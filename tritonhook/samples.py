"""Small real Triton and Gluon kernels, and an ahead-of-time compiler for them (no GPU needed).

They are the subjects of the tests, the benchmarks and the README's capture example: each one exercises a
different part of the compiler (an elementwise kernel, fp16 and fp8 `tl.dot` loops that become wgmma /
tcgen05 / mma.sync depending on the target, an fp32 FFMA dot, device-side and host-side TMA descriptors, a Gluon kernel).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from .errors import TritonhookError


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  PRECISION: tl.constexpr):
    """C = A @ B with A row-major (M, K) and B row-major (K, N); K a multiple of BLOCK_K."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rows[:, None] * stride_am + (k + ks)[None, :], mask=rows[:, None] < M, other=0.0)
        b = tl.load(b_ptr + (k + ks)[:, None] * stride_bk + cols[None, :], mask=cols[None, :] < N, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], acc.to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def tma_copy_kernel(src_ptr, dst_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Copy an (M, N) fp16 matrix tile by tile through device-side TMA descriptors."""
    src = tl.make_tensor_descriptor(src_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    dst = tl.make_tensor_descriptor(dst_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    m, n = tl.program_id(0) * BLOCK_M, tl.program_id(1) * BLOCK_N
    dst.store([m, n], src.load([m, n]))


@triton.jit
def tma_copy_host_desc_kernel(src_desc, dst_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """The same copy through host-side descriptors (`triton.tools.tensor_descriptor.TensorDescriptor` arguments)."""
    m, n = tl.program_id(0) * BLOCK_M, tl.program_id(1) * BLOCK_N
    dst_desc.store([m, n], src_desc.load([m, n]))


def _gluon_scale_kernel():
    """A Gluon elementwise kernel (explicit BlockedLayout); built lazily since Gluon is experimental."""
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl

    @gluon.jit
    def gluon_scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: gl.constexpr):
        layout: gl.constexpr = gl.BlockedLayout([4], [32], [4], [0])
        offsets = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
        mask = offsets < n
        gl.store(out_ptr + offsets, gl.load(x_ptr + offsets, mask=mask) * scale, mask=mask)

    return gluon_scale_kernel


@dataclasses.dataclass(frozen=True)
class Sample:
    """How to compile one sample kernel: the kernel, its signature and constexprs, and Triton options."""

    kernel: Callable[[], object]
    signature: dict
    constexprs: dict
    options: dict = dataclasses.field(default_factory=dict)
    gluon: bool = False
    min_capability: int = 80


def _matmul(dtype: str, precision: str, block_k: int, min_capability: int = 80) -> Sample:
    out = "fp32" if dtype == "fp32" else "fp16"
    return Sample(lambda: matmul_kernel,
                  {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{out}", "M": "i32", "N": "i32",
                   "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"},
                  {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": block_k, "PRECISION": precision},
                  {"num_warps": 8, "num_stages": 3}, min_capability=min_capability)


SAMPLES: dict[str, Sample] = {
    "add": Sample(lambda: add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                  {"BLOCK": 1024}),
    "matmul_fp16": _matmul("fp16", "tf32", 64),
    "matmul_fp8": _matmul("fp8e4nv", "tf32", 128, min_capability=89),  # fp8e4nv needs sm_89
    "matmul_fp32_ieee": _matmul("fp32", "ieee", 32),
    "tma_copy": Sample(lambda: tma_copy_kernel, {"src_ptr": "*fp16", "dst_ptr": "*fp16", "M": "i32", "N": "i32"},
                       {"BLOCK_M": 64, "BLOCK_N": 64}, min_capability=90),
    "tma_copy_host_desc": Sample(lambda: tma_copy_host_desc_kernel,
                                 {"src_desc": "tensordesc<fp16[64, 64]>", "dst_desc": "tensordesc<fp16[64, 64]>"},
                                 {"BLOCK_M": 64, "BLOCK_N": 64}, min_capability=90),
    "gluon_scale": Sample(_gluon_scale_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "scale": "fp32"},
                          {"BLOCK": 512}, gluon=True),
}


def compile_sample(name: str, capability: int, **options):
    """Compile sample `name` for `sm_<capability>` with no GPU; returns Triton's CompiledKernel."""
    try:
        sample = SAMPLES[name]
    except KeyError:
        raise TritonhookError(f"unknown sample kernel {name!r}; choose from {', '.join(SAMPLES)}") from None
    if capability < sample.min_capability:
        raise TritonhookError(f"sample {name!r} needs sm_{sample.min_capability} or newer, not sm_{capability}")
    kernel = sample.kernel()
    if sample.gluon:
        from triton.experimental.gluon._runtime import GluonASTSource as source_class
    else:
        source_class = ASTSource
    source = source_class(kernel, sample.signature, sample.constexprs)
    return triton.compile(source, target=GPUTarget("cuda", capability, 32), options={**sample.options, **options})
