"""A small cuTile kernel (y = 2x, one 128-float tile per block), exported ahead of time with no GPU.

Run as a script by the `tritonhook capture` test: `python tile_scale.py --out DIR sm_90 sm_120` writes the cubin
cuTile exports for each arch to DIR/<arch>.cubin (cuTile's `tileiras` runs the ptxas of the nvidia-cuda-nvcc wheel).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import cuda.tile as ct
from cuda.tile.compilation import ArrayConstraint, CallingConvention, KernelSignature, export_kernel

TILE = 128


@ct.kernel
def scale_tile(x, y):
    block = ct.bid(0)
    ct.store(y, index=(block,), tile=ct.load(x, index=(block,), shape=(TILE,)) * 2.0)


def _float_vector() -> ArrayConstraint:
    return ArrayConstraint(ct.float32, 1, index_dtype=ct.int32, stride_lower_bound_incl=0, alias_groups=(),
                           may_alias_internally=False)


def signature() -> KernelSignature:
    """scale_tile's one exported signature: two float32 vectors."""
    return KernelSignature([_float_vector(), _float_vector()], CallingConvention.cutile_python_v1())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("archs", nargs="+")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for arch in args.archs:
        export_kernel(scale_tile, [signature()], args.out / f"{arch}.cubin", gpu_code=arch, output_format="cubin")


if __name__ == "__main__":
    main()
