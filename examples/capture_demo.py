"""Compile the bundled sample kernels for Hopper, Blackwell and RTX 50-series targets (no GPU needed).

Run it under `tritonhook run -- python examples/capture_demo.py`: the script has no tritonhook import, yet every
compile lands in the store. Pass kernel names to compile a subset; `--exit-code N` exits with N (used by tests).
"""

import argparse
import sys

from tritonhook.samples import SAMPLES, compile_sample

TARGETS = (90, 100, 120)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("kernels", nargs="*", default=["add", "matmul_fp16", "matmul_fp8", "tma_copy"])
    parser.add_argument("--exit-code", type=int, default=0)
    args = parser.parse_args()
    for capability in TARGETS:
        for name in args.kernels:
            if capability >= SAMPLES[name].min_capability:
                kernel = compile_sample(name, capability)
                print(f"sm_{capability}: {kernel.metadata.name} ({len(kernel.asm['cubin'])} B cubin)")
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
