"""Workload (c) of the sweep proofs: the Triton ops of a published kernel library, Liger-Kernel (LinkedIn;
`pip install liger-kernel`), used the way a Llama-style training step uses them: RMSNorm, RoPE, SwiGLU, LayerNorm,
GEGLU, DyT (autotuned over 18 configs) and the fused cross-entropy, forward and backward, bf16, random weights.
The matmuls are torch's (cuBLAS); every Triton kernel is Liger's. Nobody here wrote them.

    python benchmarks/workloads/liger_ops.py [STEPS]
"""

import sys

import torch
from liger_kernel.ops import (LigerCrossEntropyFunction, LigerDyTFunction, LigerGELUMulFunction,
                              LigerLayerNormFunction, LigerRMSNormFunction, LigerRopeFunction, LigerSiLUMulFunction)

BATCH, SEQ, HIDDEN, HEADS, HEAD_DIM, FFN, VOCAB = 4, 1024, 2048, 16, 128, 5632, 32000


def rope_tables(device):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2, device=device).float() / HEAD_DIM))
    angles = torch.outer(torch.arange(SEQ, device=device).float(), inv_freq)
    angles = torch.cat([angles, angles], dim=-1)[None]
    return angles.cos().bfloat16(), angles.sin().bfloat16()


def step(params, x, target, cos, sin):
    norm_w, ln_w, ln_b, dyt_alpha, dyt_gamma, dyt_beta, w_qkv, w_gate, w_up, w_down, w_out = params
    h = LigerRMSNormFunction.apply(x, norm_w, 1e-6)
    q, k, _v = (h @ w_qkv).view(BATCH, SEQ, 3, HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4).unbind(0)
    q, k = LigerRopeFunction.apply(q.contiguous(), k.contiguous(), cos, sin)
    h = h + (q + k).transpose(1, 2).reshape(BATCH, SEQ, HIDDEN)
    h = LigerDyTFunction.apply(h, dyt_alpha, dyt_gamma, dyt_beta)
    h = h + LigerSiLUMulFunction.apply(h @ w_gate, h @ w_up) @ w_down
    h = LigerLayerNormFunction.apply(h, ln_w, ln_b, 1e-5)
    h = h + LigerGELUMulFunction.apply(h @ w_gate, h @ w_up) @ w_down
    logits = (h @ w_out).view(-1, VOCAB)
    loss, *_ = LigerCrossEntropyFunction.apply(logits, target.view(-1), None)  # (loss, z_loss, accuracy, tokens)
    return loss


def build(device="cuda"):
    """(params, x, target, cos, sin), seeded: the arguments of `train_step`."""
    torch.manual_seed(0)

    def weight(*shape, scale=0.02, value=None):
        data = torch.full(shape, value, device=device) if value is not None else torch.randn(shape, device=device)
        return (data if value is not None else data * scale).bfloat16().requires_grad_()

    params = [weight(HIDDEN, value=1.0), weight(HIDDEN, value=1.0), weight(HIDDEN, value=0.0),
              weight(1, value=0.5), weight(HIDDEN, value=1.0), weight(HIDDEN, value=0.0),
              weight(HIDDEN, 3 * HIDDEN), weight(HIDDEN, FFN), weight(HIDDEN, FFN), weight(FFN, HIDDEN),
              weight(HIDDEN, VOCAB)]
    cos, sin = rope_tables(device)
    x = torch.randn(BATCH, SEQ, HIDDEN, device=device).bfloat16().requires_grad_()
    target = torch.randint(0, VOCAB, (BATCH, SEQ), device=device)
    return params, x, target, cos, sin


def train_step(params, x, target, cos, sin):
    """`step`, then its backward; the gradients dropped. Returns the loss."""
    loss = step(params, x, target, cos, sin)
    loss.backward()
    for p in params:
        p.grad = None
    return loss


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    workload = build()
    for _ in range(steps):
        loss = train_step(*workload)
    torch.cuda.synchronize()
    print(f"loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
