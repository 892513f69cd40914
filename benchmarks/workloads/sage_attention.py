"""Quantized attention from a library nobody here wrote: SageAttention 1.0.6 (Tsinghua, `pip install
sageattention==1.0.6`, its Triton release; video diffusion models such as CogVideoX and HunyuanVideo run on it),
which quantizes Q and K to int8 per block (128 query rows, 64 key rows, one fp32 scale each: a µs-scale memory-bound
Triton kernel, `quant_per_block_int8_kernel`), computes QK^T on int8 tensor cores and PV in fp16
(`_attn_fwd`, causal or not). K is first smoothed (its mean over the sequence subtracted, in place) and V cast to
fp16 by torch. No autotuning: the kernels' configs are fixed by the head dimension.

Per step, per shape below, one `sageattn` call on bf16 inputs in the HND layout; the summary line gives each shape's
relative error (norm) against torch's SDPA in fp32 on the same inputs.

    python benchmarks/workloads/sage_attention.py [STEPS [SHAPES]]   # default 10 steps, every shape
"""

import sys
from importlib.metadata import version

import torch
from sageattention import sageattn

from training import run

# name: (batch, heads, sequence, head dim, causal): a language model's prefill and a video diffusion model's frames
SHAPES = {"prefill": (4, 32, 2048, 128, True), "video": (2, 24, 8192, 64, False),
          "short": (8, 16, 512, 128, False)}


def build(shapes=tuple(SHAPES), device="cuda"):
    """{shape: (q, k, v)} in bf16, seeded."""
    torch.manual_seed(0)
    return {name: tuple(torch.randn(*SHAPES[name][:4], device=device, dtype=torch.bfloat16) for _ in range(3))
            for name in shapes}


def step(inputs):
    """Every shape's attention once; {shape: output}."""
    return {name: sageattn(q, k, v, is_causal=SHAPES[name][4]) for name, (q, k, v) in inputs.items()}


def rel_error(output, q, k, v, causal):
    """Relative error (norm) against torch's SDPA in fp32 (SageAttention's smoothing of K leaves softmax unchanged)."""
    reference = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    return ((output.float() - reference).norm() / reference.norm()).item()


def main():
    shapes = tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else tuple(SHAPES)
    inputs = build(shapes)
    steps, outputs = run(lambda: (inputs,), step)
    errors = ", ".join(f"{name} {rel_error(outputs[name], *inputs[name], SHAPES[name][4]):.4f}" for name in inputs)
    print(f"sageattention {version('sageattention')}: {steps} steps x {len(inputs)} shapes; rel err: {errors}")


if __name__ == "__main__":
    main()
