"""A calibration workload for the sweep's fidelity: our add kernel in two contexts, as separate signatures.
4096 elements in a launch-bound loop (the GPU waits for the host at every launch) and 16384 elements each queued
behind a ~1 ms spin (`torch.cuda._sleep`: the GPU runs milliseconds behind the host, as inside a GPU-bound
training step). The recording's `behind_ms` tells them apart (docs/sweep_fidelity.md#how-far-the-gpu-runs-behind).

    tritonhook sweep --l2 measured -- python benchmarks/workloads/queued_adds.py [STEPS]
"""

import sys

import torch
import triton

from tritonhook.samples import add_kernel

PACED, QUEUED = 4096, 16384
SPIN_CYCLES = 2_000_000
"""~1 ms at the H200's ~2 GHz."""


def add(x, out):
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, x, out, x.numel(), BLOCK=1024)


def main(steps: int = 100):
    torch.manual_seed(0)
    paced, queued = torch.randn(PACED, device="cuda"), torch.randn(QUEUED, device="cuda")
    for _ in range(steps):
        add(paced, torch.empty_like(paced))
    for _ in range(steps):
        torch.cuda._sleep(SPIN_CYCLES)
        add(queued, torch.empty_like(queued))
    torch.cuda.synchronize()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
