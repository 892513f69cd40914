"""AdaSplash-2 (Sardine Lab / deep-spin's adaptive sparse attention: causal attention with entmax-1.5 in place of
softmax; `pip install adasplash`, 0.2.2: pure Python, Triton kernels, needs torch, Triton and numpy, which the GPU
machine has): one attention training step, forward and backward, fp16, as a user runs it (the library's own
autotuning). Batch 1 x 8 heads x 4,096 tokens, head dim 256, random q, k and v. The forward runs four passes over the causal scores:
`_get_tau` (row maxima), `_get_tau_v2` (a histogram that initializes each row's entmax threshold), `_get_tau_v3` (a
Halley-bisection step and the 64 x 64 block mask of blocks with any nonzero weight) and `_get_output` (the masked
blocks only); the backward runs `_bwd_preprocess`, `_bwd_q_kernel`, `transpose_bmask` and `_bwd_kv_kernel`, all but
those two autotuned (about 60 variants compiled and timed in the first step).

At head dim 256 every config of `_bwd_kv_kernel` and `_get_output` that fits in shared memory spills: ptxas (Triton
3.6's, sm_90a, compiled ahead of time at these shapes) writes about 3.2 KB of spill stores a thread at 4 warps and
up to 75 KB at 2 warps for `_bwd_kv_kernel`, about 3.1 KB for `_get_output` (at head dim 128 the 4-warp configs
spill nothing).

    python benchmarks/workloads/adasplash_train.py [STEPS] [--profile OUT.json]

`--profile OUT.json`: `torch.profiler`'s kernel table of the steps after the first two (`steady_profile`).
"""

import functools

import torch
from adasplash import adasplash_v2

import steady_profile

BATCH, HEADS, TOKENS, HEAD_DIM = 1, 8, 4096, 256


def build():
    torch.manual_seed(0)
    return [torch.randn(BATCH, HEADS, TOKENS, HEAD_DIM, device="cuda", dtype=torch.float16, requires_grad=True)
            for _ in "qkv"]


def step(q, k, v):
    adasplash_v2(q, k, v).float().square().mean().backward()
    q.grad = k.grad = v.grad = None


def main():
    steady_profile.main(lambda: functools.partial(step, *build()))


if __name__ == "__main__":
    main()
