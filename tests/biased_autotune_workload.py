"""A workload whose autotuner leaves time on the table, on purpose: a memory-bound copy-add under
`triton.autotune` whose benchmark timer (Triton's public `do_bench` argument) is broken: it reports the first config
(64-element blocks, one warp) as the fastest without timing anything, so the autotuner keeps that config where a
1024-element block is several times faster. It stands for an autotuner whose ranking times something besides the
kernel (pre-hooks, clones, noise at µs scale). Run as `python tests/biased_autotune_workload.py [STEPS]` on a CUDA
GPU; `tests/test_sweep_gpu.py` sweeps it, pins the faster config found and confirms it inside the workload."""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl

CONFIGS = [triton.Config({"BLOCK": 64}, num_warps=1), triton.Config({"BLOCK": 1024}, num_warps=4),
           triton.Config({"BLOCK": 2048}, num_warps=8)]


def _broken_bench(kernel_call, quantiles):
    """Each config launched once, then reported at 1 µs for the first and 1 ms for the others: which config
    `kernel_call` runs is read from its closure (Triton's `_bench` closes over the config it benchmarks)."""
    kernel_call()
    config = next(cell.cell_contents for cell in kernel_call.__closure__
                  if isinstance(cell.cell_contents, triton.Config))
    return [0.001 if config is CONFIGS[0] else 1.0] * len(quantiles)


@triton.autotune(CONFIGS, key=["n"], do_bench=_broken_bench)
@triton.jit
def scaled_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0 + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


def main(steps: int) -> None:
    n = 1 << 22
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    for _ in range(steps):
        scaled_add[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    torch.cuda.synchronize()
    assert torch.allclose(out, x * 2 + y)
    print(f"biased_autotune_workload: {steps} steps, config {scaled_add.best_config}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
