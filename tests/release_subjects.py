"""The kernels that tests/test_upgrade.py and tests/test_bisect.py capture and rebuild under other Triton releases
(tests/conftest.py captures them once per test session), and the capture itself."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

POINTERS_ALIGNED = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}  # as a JIT launch passes
SCALE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "scale": "fp32"}

UPGRADE_SUBJECTS = '''
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * scale, mask=mask)


@triton.jit
def advance_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Block pointers moved by tl.advance, which Triton 3.9 removed: 3.6 compiles it, 3.9 refuses it."""
    src = tl.advance(tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (BLOCK,), (0,)), (tl.program_id(0) * BLOCK,))
    dst = tl.advance(tl.make_block_ptr(out_ptr, (n,), (1,), (0,), (BLOCK,), (0,)), (tl.program_id(0) * BLOCK,))
    tl.store(dst, tl.load(src, boundary_check=(0,)), boundary_check=(0,))
'''
UPGRADE_COMPILES = {"scale_kernel": (SCALE, {"BLOCK": 256}, 90),  # name: signature, constexprs, arch
                    "advance_kernel": ({"x_ptr": "*fp16", "out_ptr": "*fp16", "n": "i32"}, {"BLOCK": 128}, 90)}

BISECT_SUBJECTS = '''
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * scale, mask=mask)


@triton.jit
def steady_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * scale, mask=mask)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    row = tl.program_id(0) * n
    x = tl.load(x_ptr + row + offsets, mask=offsets < n, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row + offsets, e / tl.sum(e, axis=0), mask=offsets < n)


@triton.jit
def advance_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Block pointers moved by tl.advance, which Triton 3.9 removed: 3.6 to 3.8 compile it, 3.9 refuses it."""
    src = tl.advance(tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (BLOCK,), (0,)), (tl.program_id(0) * BLOCK,))
    dst = tl.advance(tl.make_block_ptr(out_ptr, (n,), (1,), (0,), (BLOCK,), (0,)), (tl.program_id(0) * BLOCK,))
    tl.store(dst, tl.load(src, boundary_check=(0,)), boundary_check=(0,))
'''
BISECT_COMPILES = {
    "scale_kernel": (SCALE, {"BLOCK": 256}, 90),
    "steady_kernel": (SCALE, {"BLOCK": 256}, 80),
    "softmax_kernel": ({"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 256}, 90),
    "advance_kernel": ({"x_ptr": "*fp16", "out_ptr": "*fp16", "n": "i32"}, {"BLOCK": 128}, 90),
}


def capture_subjects(folder: Path, name: str, source: str, compiles: dict, *, keep: bool) -> Path:
    """Compile each kernel of `compiles` (name: signature, constexprs, arch) from `source`, written as module
    `name` in `folder`, under capture into `folder/store` (`compile_subjects`); returns the store's path."""
    return compile_subjects(folder, name, source, compiles, keep=keep)[0]


def compile_subjects(folder: Path, name: str, source: str, compiles: dict, *, keep: bool
                     ) -> tuple[Path, dict, list[int]]:
    """Compile each kernel of `compiles` (name: signature, constexprs, arch) from `source`, written as module
    `name` in `folder`, under capture into `folder/store` (the module file is deleted afterwards unless `keep`):
    the store's path, each compiled kernel by name and the captures' ids.
    Compiled with a Triton cache of its own: Triton's cache key ignores the file name its line info writes, so a
    kernel of the same text compiled elsewhere (both subject sets have a scale_kernel) would hand one set the
    other's PTX."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    import tritonhook

    path = folder / f"{name}.py"
    path.write_text(source)
    module = load_module(path)
    compiled = {}
    with pytest.MonkeyPatch.context() as patch, tritonhook.session(folder / "store") as session:
        patch.setenv("TRITON_CACHE_DIR", str(folder / "triton-cache"))
        for kernel, (signature, constexprs, arch) in compiles.items():
            compiled[kernel] = triton.compile(ASTSource(getattr(module, kernel), signature, constexprs,
                                                        POINTERS_ALIGNED),
                                              target=GPUTarget("cuda", arch, 32), options={"num_warps": 2})
    if not keep:
        path.unlink()
    return folder / "store", compiled, list(session.capture_ids)


def load_module(path: Path):
    """The module in the file `path`, imported under the file's name."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
