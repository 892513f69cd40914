"""A calibration workload for the sweep's fidelity: our add kernel on four sizes (512 to 1M elements: 3-7 µs on an
H200), each launched on the same tensors over and over, so that inside the workload every launch finds its inputs
in L2. `tritonhook sweep --l2 warm` replays it in the same state; where the replay and the workload still disagree,
the difference lies in how the two are timed and launched, not in what the GPU caches.

    tritonhook sweep --l2 warm -- python benchmarks/workloads/small_adds.py [STEPS]
"""

import sys

import torch
import triton

from tritonhook.samples import add_kernel

SIZES = (512, 4096, 65536, 1 << 20)


def main(steps: int = 100):
    torch.manual_seed(0)
    buffers = [(torch.randn(n, device="cuda"), torch.randn(n, device="cuda"), torch.empty(n, device="cuda"))
               for n in SIZES]
    for _ in range(steps):
        for x, y, out in buffers:
            add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
