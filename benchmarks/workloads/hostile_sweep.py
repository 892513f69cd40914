"""A workload written to break the sweep's output check and verdicts (issue 36), run as a user would:

    tritonhook sweep --variants plain,cutlass_ -- python benchmarks/workloads/hostile_sweep.py
    tritonhook sweep --variants plain,plain    -- python benchmarks/workloads/hostile_sweep.py   # the A/A

Its kernels, each a case the sweep once got wrong:
- `log_abs_kernel`: log(x) of normal random inputs, NaN wherever x < 0 (NaN from random inputs: the output check must
  compare NaN positions as data, and flag the inputs);
- `scale_kernel`: writes only its output, and is autotuned over 24 configs that all write the same result, so a
  candidate's snapshot already holds it (the "no output" trap);
- `racy_sum_kernel`: sums rows with float atomics, in whatever order the programs run: not run-to-run
  deterministic (plain vs plain differs: a variant is judged against that spread);
- `softmax_kernel`: autotune-heavy (48 configs, more than the sweep's old cap of 32) on 8 MiB inputs.

`--steps N` (default 20) repeats the step; `--check` prints what the kernels produced (NaN count, the sum's
run-to-run spread) so that a reader can see the traps are real.
"""

from __future__ import annotations

import argparse
import itertools

import torch
import triton
import triton.language as tl

ROWS, COLS = 2048, 1024  # 8 MiB of fp32 per tensor


@triton.jit
def log_abs_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.log(x) + tl.abs(x), mask=mask)


@triton.autotune(configs=[triton.Config({"BLOCK": block}, num_warps=warps, num_stages=stages)
                          for block, warps, stages in itertools.product((256, 512, 1024, 2048), (2, 4, 8), (1, 2))],
                 key=["n"])
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, 2.0 * tl.load(x_ptr + offsets, mask=mask) + 1.0, mask=mask)


@triton.jit
def racy_sum_kernel(x_ptr, out_ptr, rows, cols, ROWS_PER_PROGRAM: tl.constexpr, BLOCK: tl.constexpr):
    columns = tl.arange(0, BLOCK)
    first = tl.program_id(0) * ROWS_PER_PROGRAM
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for row in range(first, first + ROWS_PER_PROGRAM):
        acc += tl.load(x_ptr + row * cols + columns, mask=(columns < cols) & (row < rows), other=0.0)
    tl.atomic_add(out_ptr + columns, acc, mask=columns < cols)


@triton.autotune(configs=[triton.Config({"ROWS_PER_PROGRAM": rows}, num_warps=warps, num_stages=stages)
                          for rows, warps, stages in itertools.product((1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 3))],
                 key=["cols"])
@triton.jit
def softmax_kernel(x_ptr, out_ptr, rows, cols, ROWS_PER_PROGRAM: tl.constexpr, BLOCK: tl.constexpr):
    columns = tl.arange(0, BLOCK)
    for i in range(ROWS_PER_PROGRAM):
        row = tl.program_id(0) * ROWS_PER_PROGRAM + i
        mask = (columns < cols) & (row < rows)
        x = tl.load(x_ptr + row * cols + columns, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * cols + columns, e / tl.sum(e, axis=0), mask=mask)


def step(x: torch.Tensor, outs: dict[str, torch.Tensor]) -> None:
    n = x.numel()
    log_abs_kernel[(triton.cdiv(n, 1024),)](x, outs["log"], n, BLOCK=1024)
    scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, outs["scale"], n)
    outs["sum"].zero_()
    racy_sum_kernel[(ROWS // 16,)](x, outs["sum"], ROWS, COLS, ROWS_PER_PROGRAM=16, BLOCK=COLS)
    softmax_kernel[lambda meta: (triton.cdiv(ROWS, meta["ROWS_PER_PROGRAM"]),)](x, outs["softmax"], ROWS, COLS,
                                                                                BLOCK=COLS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--check", action="store_true", help="print what makes each kernel a trap")
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(ROWS, COLS, device="cuda")
    outs = {"log": torch.empty_like(x), "scale": torch.empty_like(x), "sum": torch.zeros(COLS, device="cuda"),
            "softmax": torch.empty_like(x)}
    for _ in range(args.steps):
        step(x, outs)
    torch.cuda.synchronize()
    if args.check:
        first = outs["sum"].clone()
        step(x, outs)
        print(f"log_abs: {int(outs['log'].isnan().sum())} NaN of {x.numel()}; racy_sum: "
              f"{int((outs['sum'] != first).sum())} of {COLS} sums changed bits between two runs")


if __name__ == "__main__":
    main()
