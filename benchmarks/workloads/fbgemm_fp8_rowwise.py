"""FP8 row-wise quantized GEMM from a library nobody here wrote: FBGEMM GenAI 1.9.0's Triton kernels (Meta,
`pip install fbgemm-gpu-genai`; the fp8 inference path of Llama serving stacks), autotuned per batch bucket.
Llama-3-8B linear shapes (N x K): qkv 6144 x 4096 and down 4096 x 14336; batch M = 1, 16, 512 and 768. Per step,
per M, per shape:

1. `triton_quantize_fp8_row`: bf16 activations to e4m3 with one scale a row (`_kernel_quantize_fp8_row`, autotuned
   on K).
2. `matmul_fp8_row(..., tma_persistent=False)`: e4m3 activations x e4m3 weights (quantized once, the same way),
   scales applied in the epilogue, bf16 out: `_kernel_matmul_fp8_row`, a persistent kernel `@triton.autotune`d over
   all 100 of FBGEMM's `MATMUL_CONFIGS` (no pruning), keyed on `get_matmul_tune`'s (m_key, n_key, k_key): M itself
   below 256, 256 + M // 1024 from there, so M = 512 and 768 share one key and the pick made at the first runs
   at the second (a key that buckets the batch, as serving loops see). The TMA-descriptor path FBGEMM runs by
   default (`tma_persistent=True`, 8 configs) is left out: its `TmaAutoTuneHelper` calls the driver's
   `fill_1d_tma_descriptor` / `fill_2d_tma_descriptor`, which Triton 3.6's NVIDIA driver no longer has.

Only the Triton modules are used: FBGEMM's package import loads the CUDA libraries its `docs/target.*.json.py`
names (built for torch 2.14); `benchmarks/workloads/carry.sh` leaves those files out, so none loads. Autotuning
happens on the first step; the summary line gives the largest relative error at M = 16 against torch in fp32 on the
dequantized operands.

    python benchmarks/workloads/fbgemm_fp8_rowwise.py [STEPS]   # default 10 steps
"""

import sys

import torch
from fbgemm_gpu.experimental.gemm.triton_gemm.fp8_gemm import matmul_fp8_row, triton_quantize_fp8_row

SHAPES = {"qkv": (6144, 4096), "down": (4096, 14336)}  # N x K
BATCHES = (1, 16, 512, 768)


def build(device="cuda"):
    """({shape: (e4m3 weight, its row scales)}, {M: {K: bf16 activations}}), seeded."""
    torch.manual_seed(0)
    weights = {name: triton_quantize_fp8_row(torch.randn(n, k, device=device, dtype=torch.bfloat16) * 0.02)
               for name, (n, k) in SHAPES.items()}
    acts = {m: {k: torch.randn(m, k, device=device, dtype=torch.bfloat16) for k in {k for _, k in SHAPES.values()}}
            for m in BATCHES}
    return weights, acts


def linear(x, weight):
    """x (bf16, [M, K]) through the e4m3 weight as FBGEMM's fp8 row-wise path runs it: quantize, GEMM."""
    xq, x_scale = triton_quantize_fp8_row(x)
    wq, w_scale = weight
    return matmul_fp8_row(xq, wq, x_scale, w_scale, tma_persistent=False), (xq, x_scale)


def step(weights, acts):
    """Every shape at every M once; the M = 16 outputs with their quantized inputs (for the check)."""
    outputs = {}
    for m in BATCHES:
        for name, (_, k) in SHAPES.items():
            out, quantized = linear(acts[m][k], weights[name])
            if m == 16:
                outputs[name] = out, quantized
    return outputs


def max_rel_error(weights, outputs) -> float:
    """The largest relative error (norm) at M = 16 over the shapes, against torch in fp32 on the dequantized
    operands (what the kernel computes, up to its accumulation order and bf16 output)."""
    worst = 0.0
    for name, (out, (xq, x_scale)) in outputs.items():
        wq, w_scale = weights[name]
        reference = (xq.float() * x_scale[:, None]) @ (wq.float() * w_scale[:, None]).t()
        worst = max(worst, ((out.float() - reference).norm() / reference.norm()).item())
    return worst


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    weights, acts = build()
    for _ in range(steps):
        outputs = step(weights, acts)
    torch.cuda.synchronize()
    print(f"fbgemm fp8 row-wise: {steps} steps x M {BATCHES} x {len(SHAPES)} shapes; max rel err at M=16: "
          f"{max_rel_error(weights, outputs):.4f}")


if __name__ == "__main__":
    main()
