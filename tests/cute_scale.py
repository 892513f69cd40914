"""A small CuTe DSL kernel (y = 2x over 1024 floats), compiled with no GPU through fake tensors.

Imported by the CuTe DSL tests, and run as a script by the `tritonhook capture` test:
`python cute_scale.py --out DIR sm_90a sm_120a` compiles for each arch (keep options only from the environment)
and writes what the DSL itself holds (`__cubin__`, `__ptx__`) to DIR/<arch>.cubin / .ptx for comparison.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_compact_tensor

THREADS = 128
N = 1024


@cute.kernel
def scale_kernel(src: cute.Tensor, dst: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    dst[bidx * THREADS + tidx] = src[bidx * THREADS + tidx] * 2.0


@cute.jit
def scale(src: cute.Tensor, dst: cute.Tensor):
    scale_kernel(src, dst).launch(grid=(N // THREADS, 1, 1), block=(THREADS, 1, 1))


def compile_scale(arch: str, options: str = ""):
    """The compiled function for `arch`; the arch is always given (with no driver the DSL assumes sm_100a)."""
    fake = make_fake_compact_tensor(cutlass.Float32, (N,))
    return cute.compile(scale, fake, fake, options=f"--gpu-arch {arch} {options}".strip())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("arches", nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for arch in args.arches:
        compiled = compile_scale(arch)
        (args.out / f"{arch}.cubin").write_bytes(compiled.__cubin__)
        (args.out / f"{arch}.ptx").write_text(compiled.__ptx__)


if __name__ == "__main__":
    main()
