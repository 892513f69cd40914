"""Three versions of one kernel, `scale_kernel` (same name, arguments and specialization), for tests of the
regression gate (tests/test_check.py): "v1" the baseline; "grown", the same computation with a loop unrolled in
front of it, so its code is larger (the fake worker's --time-with-text makes it slower by exactly its .text size
ratio); "changed", another constant (same size, different machine code and results). Compiled for sm_90a with no
GPU."""

from __future__ import annotations

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
CONSTEXPRS = {"BLOCK": 1024}


def _kernel(version: str):
    if version == "v1":
        @triton.jit
        def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n
            tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)
    elif version == "grown":
        @triton.jit
        def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n
            x = tl.load(x_ptr + offsets, mask=mask)
            for _ in tl.static_range(24):
                x = x * 1.0001 + tl.sqrt(tl.abs(x))
            tl.store(out_ptr + offsets, x * 2.0, mask=mask)
    elif version == "changed":
        @triton.jit
        def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n
            tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 3.0, mask=mask)
    else:
        raise ValueError(version)
    return scale_kernel


def compile_scale(version: str):
    """Triton's CompiledKernel of `scale_kernel` `version` for sm_90a (captured by an active session)."""
    return triton.compile(ASTSource(_kernel(version), SIGNATURE, CONSTEXPRS), target=GPUTarget("cuda", 90, 32))
