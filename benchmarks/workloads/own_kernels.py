"""Workload (a) of benchmarks/sweep_h200.sh: our own sample kernels, launched as a model would, no timing code.

The fp32 `ieee` FFMA matmul (benchmarks/ab_noise.py measured it ~1.04x slower renamed on the H200), the fp8 wgmma
matmul (SASS identical renamed on sm_90a) and the elementwise add, each launched repeatedly on fixed inputs."""

import torch

from tritonhook.samples import add_kernel, matmul_kernel

SIZE, STEPS = 4096, 20


def matmul(a, b, c, block_k, precision):
    matmul_kernel[(SIZE // 128, SIZE // 128)](a, b, c, SIZE, SIZE, SIZE, SIZE, SIZE, SIZE, BLOCK_M=128, BLOCK_N=128,
                                              BLOCK_K=block_k, PRECISION=precision, num_warps=8, num_stages=3)


def main():
    torch.manual_seed(0)
    a32, b32 = torch.randn(SIZE, SIZE, device="cuda"), torch.randn(SIZE, SIZE, device="cuda")
    c32 = torch.empty(SIZE, SIZE, device="cuda")
    a8, b8 = a32.to(torch.float8_e4m3fn), b32.to(torch.float8_e4m3fn)
    c16 = torch.empty(SIZE, SIZE, device="cuda", dtype=torch.float16)
    x, y = torch.randn(1 << 24, device="cuda"), torch.randn(1 << 24, device="cuda")
    out = torch.empty_like(x)
    for _ in range(STEPS):
        matmul(a32, b32, c32, 32, "ieee")
        matmul(a8, b8, c16, 128, "tf32")
        add_kernel[(x.numel() // 1024,)](x, y, out, x.numel(), BLOCK=1024)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
