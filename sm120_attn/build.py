"""Compile the kernels with no GPU (fake tensors) and keep PTX + cubin (``compile_variant``). The whole grid, with
what the cubins say and a capture into a tritonhook store: ``benchmarks/sm120_build.py``.

Every kernel is compiled for each arch it supports (FP8 only for sm_120a / sm_121a: ptxas rejects `kind::f8f6f4`
elsewhere). With no driver the DSL would assume sm_100a, so the arch is always given (docs/capture_beyond_triton.md#cute-dsl-as-it-behaves).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field

from . import kernel_class

FP8_ARCHES = ("sm_120a", "sm_121a")
BF16_ARCHES = ("sm_120a", "sm_121a", "sm_90a")


@dataclass
class Built:
    variant: str
    arch: str
    head_dim: int
    causal: bool
    compiled: object
    ptx: str
    cubin: bytes
    ptxas_log: str = ""
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.variant}-d{self.head_dim}-{'causal' if self.causal else 'full'}-{self.arch}"


def supported_arches(variant: str) -> tuple[str, ...]:
    return FP8_ARCHES if variant == "fp8" else BF16_ARCHES


def fake_qkvo(variant: str, head_dim: int, dtype=None, out_dtype=None):
    """Fake (B, S, H, D) tensors: B, S, H dynamic, D static, D contiguous, 16 B aligned."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_compact_tensor

    if variant == "fp8":
        dtype = dtype or cutlass.Float8E4M3FN
        out_dtype = out_dtype or cutlass.BFloat16
    else:
        dtype = dtype or cutlass.BFloat16
        out_dtype = out_dtype or dtype
    order = (3, 2, 1, 0)

    def make(dt, tag):
        shape = (cute.sym_int(), cute.sym_int(), cute.sym_int(), head_dim)
        return make_fake_compact_tensor(dt, shape, stride_order=order, assumed_align=16)

    return make(dtype, "q"), make(dtype, "k"), make(dtype, "v"), make(out_dtype, "o")


@contextlib.contextmanager
def _fd2_captured():
    """Capture what the in-process ptxas writes to file descriptor 2 (its log)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        box = {}
        try:
            yield box
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            box["text"] = tmp.read().decode("utf-8", "replace")


def compile_variant(variant: str, arch: str, head_dim: int, causal: bool, *, verbose_ptxas: bool = True,
                    out_dtype=None, **kw) -> Built:
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_stream

    cls = kernel_class(variant)
    if variant == "fp8" and arch not in FP8_ARCHES:
        raise ValueError(f"FP8 (mma kind::f8f6f4) needs sm_120a/sm_121a, not {arch}")
    kernel = cls(head_dim, causal=causal, arch=arch, **kw) if variant == "fp8" else cls(head_dim, causal=causal, **kw)
    q, k, v, o = fake_qkvo(variant, head_dim, out_dtype=out_dtype)
    start = time.perf_counter()
    # --keep-* writes files too: into a throw-away dump dir, never the current directory
    with tempfile.TemporaryDirectory(prefix="sm120_attn_dump_") as dump, _fd2_captured() as log:
        opts = f"--gpu-arch {arch} --keep-ptx --keep-cubin --dump-dir {dump}"
        if verbose_ptxas:
            opts += " --ptxas-options=-v"
        compiled = cute.compile(kernel, q, k, v, o, cutlass.Float32(0.125), make_fake_stream(), options=opts)
    elapsed = time.perf_counter() - start
    ptx = compiled.__ptx__
    ptx = ptx if isinstance(ptx, str) else bytes(ptx).decode()
    return Built(variant, arch, head_dim, causal, compiled, ptx.rstrip("\0"), bytes(compiled.__cubin__),
                 ptxas_log=log.get("text", ""), seconds=elapsed)
