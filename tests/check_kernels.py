"""Three versions of one kernel, `scale_kernel` (same name, arguments and specialization), for tests of the
regression gate (tests/test_check.py): "v1" the baseline; "grown", the same computation with a loop unrolled in
front of it, so its code is larger (the fake worker's --time-with-text makes it slower by exactly its .text size
ratio); "changed", another constant (same size, different machine code and results: the fake worker's --interpret
runs both in Triton's interpreter). Templates of one name whose code differs, as Inductor generates
(`compile_template`); kernels numbered in their graph, as Inductor names them (`compile_numbered`). And a dropout kernel taking a fresh seed at each launch (`compile_dropout`). Compiled for
sm_90a with no GPU."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
CONSTEXPRS = {"BLOCK": 1024}


def scale_kernel(version: str):
    """`scale_kernel` `version`, as `triton.jit` makes it (under TRITON_INTERPRET=1: for Triton's interpreter, which
    runs it on CPU tensors)."""
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
    return triton.compile(ASTSource(scale_kernel(version), SIGNATURE, CONSTEXPRS), target=GPUTarget("cuda", 90, 32))


TEMPLATE = '''import triton
import triton.language as tl


@triton.jit
def triton_tem_fused_0(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    x = {modifier}
    tl.store(out_ptr + offsets, x, mask=mask)
'''
MODIFIERS = {"causal": "tl.where(offsets % 2 == 0, x, 0.0)",
             "softcap": "30.0 * tl.sigmoid(tl.sqrt(tl.abs(x)) / 30.0) + tl.exp(x * 0.5)",
             "softcap2": "20.0 * tl.sigmoid(tl.sqrt(tl.abs(x)) / 20.0) + tl.exp(x * 0.25)"}
"""The modifiers an attention template inlines (a mask, a score_mod); "softcap2" is "softcap" edited."""


def compile_template(folder: Path, modifier: str):
    """`triton_tem_fused_0` with `modifier` (`MODIFIERS`) inlined, as Inductor generates a template: its own module
    file (in `folder`, named by its text), the same kernel name, arguments and specialization whatever the
    modifier. Triton's CompiledKernel for sm_90a (captured by an active session)."""
    text = TEMPLATE.format(modifier=MODIFIERS[modifier])
    path = folder / f"c{hashlib.sha256(text.encode()).hexdigest()[:16]}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return triton.compile(ASTSource(module.triton_tem_fused_0, SIGNATURE, CONSTEXPRS), target=GPUTarget("cuda", 90, 32))


NUMBERED = '''import triton
import triton.language as tl


@triton.jit
def {name}(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * {factor}, mask=mask)
'''


def compile_numbered(folder: Path, name: str, factor: float):
    """A pointwise kernel as Inductor generates one, `name` numbered in its graph (`triton_poi_fused_mul_3`), its
    own module file in `folder`: the same `factor` under two numbers is the same machine code. Triton's
    CompiledKernel for sm_90a (captured by an active session)."""
    text = NUMBERED.format(name=name, factor=factor)
    path = folder / f"c{hashlib.sha256(text.encode()).hexdigest()[:16]}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return triton.compile(ASTSource(getattr(module, name), SIGNATURE, CONSTEXPRS), target=GPUTarget("cuda", 90, 32))


@triton.jit
def dropout_kernel(x_ptr, out_ptr, n, seed, p, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    kept = tl.rand(seed, offsets) > p
    tl.store(out_ptr + offsets, tl.where(kept, tl.load(x_ptr + offsets, mask=mask) / (1 - p), 0.0), mask=mask)


DROPOUT_SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "seed": "i32", "p": "fp32"}


def compile_dropout(seed_divisible_by_16: bool):
    """`dropout_kernel` as a launch specializes it: pointers and `n` divisible by 16, and the seed too when
    `seed_divisible_by_16` (one launch in 16 of a random seed): another build whose code is the same."""
    divisible = [["tt.divisibility", 16]]
    attrs = {(at,): divisible for at in (0, 1, 2, 3) if at != 3 or seed_divisible_by_16}
    return triton.compile(ASTSource(dropout_kernel, DROPOUT_SIGNATURE, CONSTEXPRS, attrs),
                          target=GPUTarget("cuda", 90, 32))
