"""The A/B noise floor and the fp8 question, on one GPU (written for the H200, Triton 3.6, torch).

    python benchmarks/ab_noise.py [--size 8192] [--rounds 15] [--out ab_noise.json]

1. A/A: the same fp8 8192^3 TMA matmul as two arms ("plain", "plain#2"). |ratio - 1| and the interval's
   half-width are the noise floor every other verdict is read against (target: half-width <= 0.5%).
2. plain vs cutlass_ on that matmul (wgmma on sm_90a: docs/ptxas_cutlass.md#the-cutlass-name-path expects identical SASS, no difference).
3. plain vs cutlass_ on the fp32 FFMA matmul sample (`input_precision="ieee"`), whose SASS does change with the
   name on sm_90a: the measured ratio, whatever it is.
Prints a table last; writes every report as JSON to --out. Runs in about a minute.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from tritonhook import ab, format
from tritonhook.samples import matmul_kernel


@triton.jit
def fp8_matmul_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """C = A @ B^T with A (M, K) and B (N, K) both K-major fp8 (what wgmma wants), tiles through TMA,
    programs grouped along M so neighbouring programs share B tiles in L2."""
    pid = tl.program_id(0)
    num_m, num_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    group_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % group_m
    pid_n = (pid % group) // group_m
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([pid_n * BLOCK_N, k])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.float16))


FP8_TILE = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "GROUP_M": 8, "num_warps": 8, "num_stages": 4}


def fp8_workload(size: int):
    """(run, inputs, flops) for the fp8 matmul; `run(a, b, c)` returns c."""
    a = torch.randn(size, size, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(size, size, device="cuda").to(torch.float8_e4m3fn)
    c = torch.empty(size, size, device="cuda", dtype=torch.float16)
    tile = FP8_TILE

    def fp8_matmul(a, b, c):
        a_desc = TensorDescriptor.from_tensor(a, [tile["BLOCK_M"], tile["BLOCK_K"]])
        b_desc = TensorDescriptor.from_tensor(b, [tile["BLOCK_N"], tile["BLOCK_K"]])
        c_desc = TensorDescriptor.from_tensor(c, [tile["BLOCK_M"], tile["BLOCK_N"]])
        grid = (triton.cdiv(size, tile["BLOCK_M"]) * triton.cdiv(size, tile["BLOCK_N"]),)
        fp8_matmul_kernel[grid](a_desc, b_desc, c_desc, size, size, size, **tile)
        return c

    return fp8_matmul, (a, b, c), 2.0 * size**3


def ffma_workload(size: int):
    """(run, inputs, flops) for the fp32 `input_precision="ieee"` sample matmul (an FFMA loop)."""
    a, b = torch.randn(size, size, device="cuda"), torch.randn(size, size, device="cuda")
    c = torch.empty(size, size, device="cuda")

    def ffma_matmul(a, b, c):
        grid = (triton.cdiv(size, 128), triton.cdiv(size, 128))
        matmul_kernel[grid](a, b, c, size, size, size, size, size, size, BLOCK_M=128, BLOCK_N=128, BLOCK_K=32,
                            PRECISION="ieee", num_warps=8, num_stages=3)
        return c

    return ffma_matmul, (a, b, c), 2.0 * size**3


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=8192, help="fp8 matmul M = N = K (default 8192)")
    parser.add_argument("--ffma-size", type=int, default=4096, help="fp32 FFMA matmul size (default 4096)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--store", type=Path, default=Path("ab-noise-store"))
    parser.add_argument("--out", type=Path, default=Path("ab_noise.json"))
    args = parser.parse_args(argv)
    fp8_run, fp8_inputs, fp8_flops = fp8_workload(args.size)
    ffma_run, ffma_inputs, ffma_flops = ffma_workload(args.ffma_size)
    plans = [("A/A fp8", fp8_run, fp8_inputs, fp8_flops, ("plain", "plain")),
             ("fp8 wgmma", fp8_run, fp8_inputs, fp8_flops, ("plain", "cutlass_")),
             ("fp32 FFMA", ffma_run, ffma_inputs, ffma_flops, ("plain", "cutlass_"))]
    results, rows = {}, []
    for title, run, inputs, flops, variants in plans:
        result = ab.compare(run, variants, flops=flops, inputs=inputs, rounds=args.rounds, store=args.store,
                            check="allclose", name=title)
        results[title] = result.to_json()
        base, other = result.benchmarks[0].variants
        half_width = (other.ci_high - other.ci_low) / 2
        rows.append((title, f"{base.summary.median_ms:.4f}", f"{other.summary.median_ms:.4f}",
                     f"{base.tflops:.1f}", f"{other.tflops:.1f}", f"{other.ratio:.4f}",
                     f"{abs(other.ratio - 1) * 100:.2f}%", f"{half_width * 100:.2f}%", other.verdict,
                     result.benchmarks[0].correctness))
    try:
        args.out.write_text(json.dumps({"device": torch.cuda.get_device_name(), "triton": triton.__version__,
                                        "torch": torch.__version__, "size": args.size, "rounds": args.rounds,
                                        "results": results}, indent=2, default=str))
    except OSError as exc:
        print(f"ab_noise: cannot write {args.out} ({exc.strerror or exc})", file=sys.stderr)
        return 2
    format.print_table(("benchmark", "A ms", "B ms", "A TFLOPS", "B TFLOPS", "ratio B/A", "|ratio-1|",
                        "CI half-width", "verdict", "outputs"), rows,
                       title=f"ab_noise on {torch.cuda.get_device_name()} ({args.rounds} rounds; JSON: {args.out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
