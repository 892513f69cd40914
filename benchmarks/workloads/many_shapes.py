"""Workload of benchmarks/sweep_scaling.py: our sample kernels at many shapes, so that one recording holds more
than 50 launch signatures (issue 17 asks for >= 50 to measure a sweep spread over GPUs).

Per M in 256..2048 (step 128, N = K = 1024): the fp32 `ieee` FFMA matmul (slower renamed on the H200), the fp32
`tf32` matmul and the fp8 wgmma matmul (SASS identical renamed on sm_90a); and the elementwise add at 20 sizes.
Each launched LAUNCHES times on fixed inputs, no timing code.

    python benchmarks/workloads/many_shapes.py
"""

import torch

from tritonhook.samples import add_kernel, matmul_kernel

N = K = 1024
ROWS = range(256, 2049, 128)
ADD_SIZES = [1024 * 256 * step for step in range(1, 21)]
LAUNCHES = 3


def main():
    torch.manual_seed(0)
    b32 = torch.randn(K, N, device="cuda")
    b8 = b32.to(torch.float8_e4m3fn)
    for m in ROWS:
        a32 = torch.randn(m, K, device="cuda")
        a8 = a32.to(torch.float8_e4m3fn)
        c32 = torch.empty(m, N, device="cuda")
        c16 = torch.empty(m, N, device="cuda", dtype=torch.float16)
        for _ in range(LAUNCHES):
            for a, b, c, block_k, precision in ((a32, b32, c32, 32, "ieee"), (a32, b32, c32, 32, "tf32"),
                                                (a8, b8, c16, 128, "tf32")):
                matmul_kernel[(m // 128, N // 128)](a, b, c, m, N, K, K, N, N, BLOCK_M=128, BLOCK_N=128,
                                                    BLOCK_K=block_k, PRECISION=precision, num_warps=8, num_stages=3)
    for size in ADD_SIZES:
        x, y = torch.randn(size, device="cuda"), torch.randn(size, device="cuda")
        out = torch.empty_like(x)
        for _ in range(LAUNCHES):
            add_kernel[(size // 1024,)](x, y, out, size, BLOCK=1024)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
