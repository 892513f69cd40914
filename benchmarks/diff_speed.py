"""How fast `tritonhook diff` parses and diffs two ~300 KB sm_100a cubins, with and without SASS.

The inputs are real: Triton's fp32 FFMA matmul (its PTX from `tritonhook.samples`) assembled for sm_100a by
Triton's Blackwell ptxas, plain and renamed `cutlass_` (the ptxas "cutlass" path gives a different cubin).
Targets (issue 3): median <= 100 ms without SASS, <= 1.5 s with SASS (nvdisasm on both, run in parallel).

    python benchmarks/diff_speed.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import re

from tritonhook.measure.timing import median_wall_seconds
from tritonhook.cubin import Cubin
from tritonhook.diff import Input, diff_cubins, disassemble_both
from tritonhook._triton import triton_ptxas
from tritonhook.binaries import assemble
from tritonhook.binaries import TRITON_PTXAS_FLAGS
from tritonhook.rename import rename_ptx
from tritonhook.samples import compile_sample
from scratch import scratch_dir


def inputs() -> tuple[bytes, bytes]:
    import os

    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    os.environ["TRITON_CACHE_DIR"] = str(scratch_dir("tritonhook-bench-"))
    ptx = compile_sample("matmul_fp32_ieee", 100, ptx_version=87).asm["ptx"]
    ptx = re.sub(r"^\.target\s+\S+", ".target sm_100a", ptx, count=1, flags=re.MULTILINE)
    ptxas = triton_ptxas("sm_100a")
    return tuple(assemble(text, ptxas, "sm_100a", TRITON_PTXAS_FLAGS).cubin for text in (ptx, rename_ptx(ptx)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    data_a, data_b = inputs()

    def plain():
        a, b = Cubin.from_bytes(data_a, label="a"), Cubin.from_bytes(data_b, label="b")
        return diff_cubins(a, b)

    def with_sass():
        a, b = Cubin.from_bytes(data_a, label="a"), Cubin.from_bytes(data_b, label="b")
        sass_a, sass_b = disassemble_both(Input("a", data_a, a, "cubin"), Input("b", data_b, b, "cubin"))
        return diff_cubins(a, b, sass_a=sass_a, sass_b=sass_b)

    print(f"cubins: {len(data_a):,} B and {len(data_b):,} B (sm_100a); {len(with_sass().sass_diff):,} diff lines")
    print(f"parse + diff, no SASS : median {median_wall_seconds(plain, args.repeat) * 1000:7.1f} ms (target <= 100 ms)")
    print(f"parse + diff, --sass  : median {median_wall_seconds(with_sass, max(3, args.repeat // 3)) * 1000:7.1f} ms "
          f"(target <= 1500 ms)")


if __name__ == "__main__":
    main()
