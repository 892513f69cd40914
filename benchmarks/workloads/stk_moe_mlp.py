"""A MegaBlocks-style dropless mixture-of-experts MLP on Stanford's sparse toolkit (`pip install stanford-stk`, 0.7.1:
pure Python, Triton block-sparse matmuls with `triton.autotune`, needs torch and Triton): a training step of one
layer, forward and backward, fp16. The tokens come sorted by expert (8 experts, 1,024 tokens each); the hidden
activations are one block-sparse matrix (128 x 128 blocks) whose row blocks hold their expert's columns only:
`sdd` (dense x dense -> sparse) for the up projection, a tanh GELU on the blocks, `dsd` (sparse x dense -> dense)
for the down projection; the backward runs the three kernels with transposed operands (`dds` among them).

    python benchmarks/workloads/stk_moe_mlp.py [STEPS] [--profile OUT.json]

`--profile OUT.json`: `torch.profiler`'s kernel table of the steps after the first two (`steady_profile`).
"""

import functools

import stk
import torch

import steady_profile

EXPERTS, TOKENS_PER_EXPERT, MODEL, EXPERT_HIDDEN, BLOCK = 8, 1024, 1024, 2048, 128


def topology() -> stk.Matrix:
    """Which 128 x 128 blocks of the (tokens x experts' hidden) activations exist: each expert's token rows meet
    that expert's hidden columns only (tokens sorted by expert, as MegaBlocks' dMoE sorts them)."""
    rows, cols = EXPERTS * TOKENS_PER_EXPERT // BLOCK, EXPERTS * EXPERT_HIDDEN // BLOCK
    expert_of_row = torch.arange(rows, device="cuda") // (TOKENS_PER_EXPERT // BLOCK)
    expert_of_col = torch.arange(cols, device="cuda") // (EXPERT_HIDDEN // BLOCK)
    blocks = (expert_of_row[:, None] == expert_of_col[None, :]).to(torch.float16)
    dense = blocks.repeat_interleave(BLOCK, 0).repeat_interleave(BLOCK, 1)
    return stk.ops.to_sparse(dense, blocking=BLOCK)


def gelu(x: stk.Matrix) -> stk.Matrix:
    """A tanh GELU on the existing blocks only (the topology stays)."""
    return stk.Matrix(x.size(), torch.nn.functional.gelu(x.data, approximate="tanh"), x.row_indices,
                      x.column_indices, x.offsets, x.column_indices_t, x.offsets_t, x.block_offsets_t)


def build():
    torch.manual_seed(0)
    tokens = EXPERTS * TOKENS_PER_EXPERT
    x = torch.randn(tokens, MODEL, device="cuda", dtype=torch.float16, requires_grad=True)
    up = (torch.randn(MODEL, EXPERTS * EXPERT_HIDDEN, device="cuda", dtype=torch.float16) / MODEL ** 0.5)
    down = (torch.randn(EXPERTS * EXPERT_HIDDEN, MODEL, device="cuda", dtype=torch.float16) / EXPERT_HIDDEN ** 0.5)
    return x, up.requires_grad_(), down.requires_grad_(), topology()


def step(x, up, down, topo):
    hidden = gelu(stk.ops.sdd(x, up, topo))
    stk.ops.dsd(hidden, down).float().square().mean().backward()
    x.grad = up.grad = down.grad = None


def main():
    steady_profile.main(lambda: functools.partial(step, *build()))


if __name__ == "__main__":
    main()
