"""The mLSTM's chunkwise kernels from NX-AI's mlstm_kernels (the xLSTM 7B model's Triton kernels; `pip install
mlstm_kernels`, 2.0.6: Triton in Python, needs torch, einops, numpy, PyYAML and matplotlib, which the GPU machine
has), trained as the model trains them: the chunkwise forward and its backward (`triton_xl_chunk`: the parallel
part within chunks, the recurrent part across them) at the 7B model's head sizes, 8 heads of 256 (queries and keys)
by 512 (values), bf16 kernels, batch 2 x 4,096 tokens, chunks of 128. Its large per-program tiles make the
backward's kernels spill registers on an H100.

    python benchmarks/workloads/mlstm_chunkwise.py [STEPS] [--profile OUT.json]

`--profile OUT.json`: `torch.profiler`'s kernel table of the steps after the first two (`steady_profile`).
"""

import functools

import torch
from mlstm_kernels.torch.chunkwise.triton_xl_chunk import mlstm_chunkwise__xl_chunk

import steady_profile

BATCH, HEADS, TOKENS, QK_DIM, V_DIM = 2, 8, 4096, 256, 512


def build():
    torch.manual_seed(0)

    def leaf(*shape, scale=1.0):
        return (torch.randn(*shape, device="cuda") * scale).to(torch.bfloat16).requires_grad_()

    q, k = leaf(BATCH, HEADS, TOKENS, QK_DIM), leaf(BATCH, HEADS, TOKENS, QK_DIM)
    v = leaf(BATCH, HEADS, TOKENS, V_DIM)
    input_gate, forget_gate = leaf(BATCH, HEADS, TOKENS), leaf(BATCH, HEADS, TOKENS, scale=3.0)
    grad = torch.randn(BATCH, HEADS, TOKENS, V_DIM, device="cuda", dtype=torch.bfloat16)
    return (q, k, v, input_gate, forget_gate), grad


def step(inputs, grad):
    out = mlstm_chunkwise__xl_chunk(*inputs, chunk_size=128, autocast_kernel_dtype=torch.bfloat16)
    out.backward(grad)
    for tensor in inputs:
        tensor.grad = None


def main():
    steady_profile.main(lambda: functools.partial(step, *build()))


if __name__ == "__main__":
    main()
