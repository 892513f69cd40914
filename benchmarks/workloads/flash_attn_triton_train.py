"""FlashAttention-2's interface on Triton kernels, from flash-attn-triton (`pip install flash-attn-triton`, 0.1.1:
pure Python, needs torch, Triton, einops and pytest, which the GPU machine has; its `flash_attn_func` is FA2's
call): causal attention trained forward and backward at head dim 128, fp16, batch 4 x 16 heads x 4,096 tokens,
dropout 0.1. Its forward autotunes over up to 30 tile configs (`triton.autotune`, keyed by length and head dim), some
of which hold more accumulator than a thread's registers at head dim 128; its backward runs fixed tiles.

    python benchmarks/workloads/flash_attn_triton_train.py [STEPS] [--profile OUT.json]

`--profile OUT.json`: `torch.profiler`'s kernel table of the steps after the first two (`steady_profile`).
"""

import functools

import torch
from flash_attn_triton import flash_attn_func

import steady_profile

BATCH, HEADS, TOKENS, HEAD_DIM = 4, 16, 4096, 128


def build():
    torch.manual_seed(0)
    q, k, v = (torch.randn(BATCH, TOKENS, HEADS, HEAD_DIM, device="cuda", dtype=torch.float16).requires_grad_()
               for _ in range(3))
    grad = torch.randn(BATCH, TOKENS, HEADS, HEAD_DIM, device="cuda", dtype=torch.float16)
    return (q, k, v), grad


def step(inputs, grad):
    flash_attn_func(*inputs, dropout_p=0.1, causal=True).backward(grad)
    for tensor in inputs:
        tensor.grad = None


def main():
    steady_profile.main(lambda: functools.partial(step, *build()))


if __name__ == "__main__":
    main()
