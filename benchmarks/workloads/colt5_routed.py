"""CoLT5 attention (lucidrains' `colt5-attention`, 0.11.2: conditional computation for long inputs, after Ainslie et
al.'s CoLT5): training steps of two stacked `ConditionalRoutedTransformerBlock`s with its Triton router
(`use_triton=True`), random weights and input, nothing downloaded. Each block has a routed attention (local
attention over every token, plus full attention among the routed tokens) and a routed feed-forward (a narrow MLP over
every token, plus a wide one over the routed tokens). Its three routers (feed-forward, attention queries, attention
keys and values) pick their tokens with a differentiable top-k, coordinate descent, and that is the Triton part:
`coor_descent_kernel_forward` and `coor_descent_kernel_backward` (in `colt5_attention.triton_coor_descent`), one
program per row of router scores (4: one per sequence), the whole row of 4,096 tokens in one block (16 warps), no
autotuning. Their 20 iterations run in 4 checkpointed segments, one launch each: per step 6 routers x 4 = 24 launches
of each kernel. The rest (linears, local and heavy attention, top-k, gathers and scatters) is PyTorch's own kernels.

Batch 4 x 4,096 tokens, dim 512; 1,024 routed tokens (a quarter) for the attention's queries, for its keys and values
and for the feed-forward; 8 heads of 64 in both attentions, the local one in 64-token windows that each see one window
either side; AdamW. fp32: the kernels' log and exp take fp32 only, and the router's scores keep the input's dtype
(under bf16 autocast they would reach the kernels as bf16). Carried wheels (`.wheels/colt5`, `carry.sh colt5`):
colt5-attention, local-attention, hyper-connections and torch-einops-utils.

    python benchmarks/workloads/colt5_routed.py [STEPS] [--profile OUT.json]

`--profile OUT.json`: `torch.profiler`'s kernel table of the steps after the first two (`steady_profile`).
"""

import functools

import torch
from colt5_attention import ConditionalRoutedTransformerBlock

import steady_profile

BATCH, TOKENS, DIM, BLOCKS = 4, 4096, 512, 2
ROUTED = TOKENS // 4


def build():
    torch.manual_seed(0)
    model = torch.nn.Sequential(*(
        ConditionalRoutedTransformerBlock(DIM, num_heavy_attn_tokens_q=ROUTED, num_heavy_attn_tokens_kv=ROUTED,
                                          num_heavy_ff_tokens=ROUTED, use_triton=True)
        for _ in range(BLOCKS))).cuda()
    x = torch.randn(BATCH, TOKENS, DIM, device="cuda")
    return model, x, torch.optim.AdamW(model.parameters(), lr=1e-4)


def main():
    steady_profile.main(lambda: functools.partial(steady_profile.training_step, *build()))


if __name__ == "__main__":
    main()
