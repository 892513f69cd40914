"""A transformer MLP block's element-wise and quantization ops from a library nobody here wrote: Stack AV's Conch
1.3 (`pip install conch-triton-kernels`), pure-Triton stand-ins for vLLM's CUDA kernels. Per step, at Llama-3-8B's
sizes (hidden 4096, MLP 14336) for 4096 tokens in bf16: the residual add fused into RMS norm
(`fused_add_rms_norm`, in place), the gate/up projection by torch, `silu_and_mul` (SwiGLU), the activations
quantized to fp8 e4m3 with a per-tensor scale (`scaled_fp8_quant`, static: the scale from torch's max, Conch's
dynamic path is not implemented), the down projection by torch from the dequantized activations, and a plain
`rms_norm`.
The summary line gives the largest relative error of the block's output against torch in fp32.

    python benchmarks/workloads/conch_ops.py [STEPS]   # default 10
"""

from importlib.metadata import version

import torch
from conch.ops.activation.silu_and_mul import silu_and_mul
from conch.ops.normalization.rms_norm import fused_add_rms_norm, rms_norm
from conch.ops.quantization.fp8 import scaled_fp8_quant

from training import run

TOKENS, HIDDEN, MLP = 4096, 4096, 14336
EPS = 1e-6
FP8_MAX = 448.0  # e4m3's largest finite value


def build(device="cuda"):
    """(hidden states, residual, norm weight, gate/up weight, down weight), seeded, bf16."""
    torch.manual_seed(0)
    make = lambda *shape, scale=1.0: (torch.randn(*shape, device=device) * scale).bfloat16()
    return (make(TOKENS, HIDDEN), make(TOKENS, HIDDEN), make(HIDDEN, scale=0.1) + 1,
            make(2 * MLP, HIDDEN, scale=HIDDEN ** -0.5), make(HIDDEN, MLP, scale=MLP ** -0.5))


def step(x, residual, norm_weight, gate_up, down):
    """One block on copies of x and the residual (the ops work in place); returns its output."""
    x, residual = x.clone(), residual.clone()
    normed, residual = fused_add_rms_norm(x, residual, norm_weight, EPS)
    hidden = silu_and_mul(normed @ gate_up.t())
    quantized, scale = scaled_fp8_quant(hidden, (hidden.abs().amax().float() / FP8_MAX).reshape(1))
    out = (quantized.to(torch.bfloat16) * scale.to(torch.bfloat16)) @ down.t()
    return rms_norm(out + residual, norm_weight, EPS)


def reference(x, residual, norm_weight, gate_up, down):
    """The same block in torch, fp32, without the fp8 round trip."""
    def norm(t):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + EPS) * norm_weight.float()

    residual = x.float() + residual.float()
    gate, up = (norm(residual) @ gate_up.float().t()).chunk(2, dim=-1)
    out = (torch.nn.functional.silu(gate) * up) @ down.float().t()
    return norm(out + residual)


def main():
    tensors = build()  # step works on copies, so the run leaves them as built for the check
    steps, _ = run(lambda: (tensors,), lambda built: step(*built))
    ref = reference(*tensors)
    error = ((step(*tensors).float() - ref).norm() / ref.norm()).item()
    print(f"conch-triton-kernels {version('conch-triton-kernels')}: {steps} steps, block rel err {error:.2e}")


if __name__ == "__main__":
    main()
