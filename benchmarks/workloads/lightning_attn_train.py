"""Lightning Attention-2 (OpenNLPLab's linear attention with decay, as TransNormerLLM trains it; `pip install
lightning-attn`, 0.0.5: pure Python, Triton kernels, needs torch, Triton and einops, which the GPU machine has): a
token mixer step of one layer, forward and backward, bf16: the library's simple RMS norm (its Triton kernels), the
q, k and v projections (cuBLAS), causal linear attention with a per-head decay (the library's ALiBi-style slopes),
the output projection. Batch 4 x 16 heads x 4,096 tokens, head dim 128. No autotuner: fixed tiles, 64-token blocks;
the backward's inter-block kernel runs one program per batch and head, its blocks in sequence.

    python benchmarks/workloads/lightning_attn_train.py [STEPS] [--profile OUT.json]

`--profile OUT.json`: `torch.profiler`'s kernel table of the steps after the first two (`steady_profile`).
"""

import functools

import torch
from lightning_attn.ops import lightning_attn_func
from lightning_attn.ops.triton import SimpleRMSNorm
from lightning_attn.utils import _build_slope_tensor

import steady_profile

BATCH, HEADS, TOKENS, HEAD_DIM = 4, 16, 4096, 128
MODEL = HEADS * HEAD_DIM


def build():
    torch.manual_seed(0)
    layer = torch.nn.ModuleDict({"norm": SimpleRMSNorm(MODEL), "qkv": torch.nn.Linear(MODEL, 3 * MODEL, bias=False),
                                 "out": torch.nn.Linear(MODEL, MODEL, bias=False)}).cuda().to(torch.bfloat16)
    decay = _build_slope_tensor(HEADS).cuda().to(torch.float32)
    x = torch.randn(BATCH, TOKENS, MODEL, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    return layer, decay, x


def step(layer, decay, x):
    q, k, v = layer["qkv"](layer["norm"](x)).view(BATCH, TOKENS, 3, HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)
    mixed = lightning_attn_func(q, k, v, decay).transpose(1, 2).reshape(BATCH, TOKENS, MODEL)
    layer["out"](mixed).float().square().mean().backward()
    x.grad = None
    layer.zero_grad(set_to_none=True)


def main():
    steady_profile.main(lambda: functools.partial(step, *build()))


if __name__ == "__main__":
    main()
