"""Quantized GEMM / GEMV Triton kernels nobody here wrote, autotuned per batch size, with split-K at small batch:
torchao 0.18.0 (PyTorch's quantization library, `pip install torchao`; only its Triton kernels run here, its C++
extensions are not needed). Llama-3-8B linear shapes (N x K): qkv 6144 x 4096, gate_up 28672 x 4096, down
4096 x 14336; batch M = 1, 16 and 512 (decode GEMV, small-batch decode, prefill). Per step, per M:

1. W8A16 int8 (weight-only): fp16 activations x int8 weights (per-channel scale applied after, in torch), by
   `torchao.prototype.common.triton.matmul.matmul` (the kernel `_kernel`, from triton-lang/kernels' matmul with
   mixed input types): `@triton.autotune` over 418 configs with SPLIT_K in {1, 2, 4, 8, 16} (split-K ones zero C in
   a pre_hook and accumulate with tl.atomic_add), key M, N, K, pruned by `early_config_prune` and the perf model
   `estimate_matmul_time` to the 10 it predicts fastest, which are benchmarked. Checked on CPU with H200-like device
   properties, at M = 1 and 16 the 10 candidates are: qkv all split-K (SPLIT_K 2 and 4), down all split-K (4, 8,
   16), gate_up (N = 28672 has tiles enough) 4 with SPLIT_K 2 and 6 without; at M = 512 all 10 are SPLIT_K = 1.
   Its pruning keeps split-K only for fp16 / fp32 activations, hence fp16 here (bf16 or int8 activations leave
   SPLIT_K = 1 only).
2. W8A16 fp8: the same kernel, fp16 activations x float8_e4m3fn weights (per-channel scale). Launched here as its
   wrapper `_matmul._call` launches it (same arguments, AB_DTYPE fp16): the wrapper itself rejects torch's fp8
   dtypes (`upcast_if_fp8` looks for "fp8" in "torch.float8_e4m3fn", then `get_higher_dtype` asserts).
3. W8A8 int8: per-token int8 activations x int8 weights with both scales fused, `torch.ops.torchao.scaled_int8_mm`
   (torchao.prototype.quantized_training.int8_mm, `_scaled_int8_mm_kernel`: 27 configs, key M, N, K, strides; no
   split-K). The op is called directly because the Python wrapper's shape assert rejects M = 1.
4. W8A8 fp8, DeepSeek-V3-style 128-block scales: `fp8_blockwise_act_quant` + `blockwise_fp8_gemm`
   (torchao.kernel.blockwise_quantization: 48 configs, key N, K, M_BUCKET = ceil(log2 M), N and K constexpr), on the
   qkv shape only (each shape x M bucket compiles all 48 configs).

Autotuning happens on the first step for each (kernel, M, shape); the summary line gives each family's largest
relative error against a torch fp32 reference at M = 16, and the SPLIT_K the W8A16 autotuner picked per M.

    python benchmarks/workloads/torchao_quant_gemm.py [STEPS [FAMILIES]]   # default 10 steps, all four families
                                                                           # (FAMILIES: comma-separated names)
"""

import sys

import torch
import torchao
import triton
import triton.language as tl
import torchao.prototype.quantized_training.int8_mm  # noqa: F401  (registers torch.ops.torchao.scaled_int8_mm)
from torchao.kernel.blockwise_quantization import blockwise_fp8_gemm, fp8_blockwise_act_quant, \
    fp8_blockwise_weight_quant
from torchao.prototype.common.triton.matmul import _kernel as w8a16_kernel
from torchao.prototype.common.triton.matmul import matmul as mixed_matmul

SHAPES = {"qkv": (6144, 4096), "gate_up": (28672, 4096), "down": (4096, 14336)}  # N x K
BATCHES = (1, 16, 512)
FP8_BLOCK_SHAPE = "qkv"
FP8_MAX = torch.finfo(torch.float8_e4m3fn).max


def build(device="cuda"):
    """Per shape: the quantized weights and scales of one random bf16 weight; per M: activations. Seeded."""
    torch.manual_seed(0)
    layers = {}
    for name, (n, k) in SHAPES.items():
        w = torch.randn(n, k, device=device) * 0.02
        i8_scale = w.abs().amax(1) / 127
        f8_scale = w.abs().amax(1) / FP8_MAX
        layer = dict(w=w.bfloat16(), w_i8=(w / i8_scale[:, None]).round().to(torch.int8),
                     i8_scale=i8_scale, f8=(w / f8_scale[:, None]).to(torch.float8_e4m3fn), f8_scale=f8_scale)
        if name == FP8_BLOCK_SHAPE:
            layer["blk"], layer["blk_scale"] = fp8_blockwise_weight_quant(w.bfloat16().contiguous(), 128)
        layers[name] = layer
    acts = {m: {k: torch.randn(m, k, device=device) for k in {k for _, k in SHAPES.values()}} for m in BATCHES}
    return layers, acts


def w8a16_fp8_matmul(a, b):
    """fp16 [M, K] x float8_e4m3fn [K, N] -> fp16, by torchao's autotuned `_kernel`, as `_matmul._call` launches it."""
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), device=a.device, dtype=torch.float16)
    grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]), meta["SPLIT_K"])  # noqa
    w8a16_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                       acc_dtype=tl.float32, input_precision=None, fp8_fast_accum=True, GROUP_M=8, AB_DTYPE=tl.float16)
    return c


def quantize_rows_int8(x):
    """Per-token symmetric int8 (in torch: the activation side of W8A8)."""
    scale = x.abs().amax(1).clamp(min=1e-8) / 127
    return (x / scale[:, None]).round().to(torch.int8), scale


FAMILIES = ("w8a16_int8", "w8a16_fp8", "w8a8_int8", "w8a8_fp8_block")


def run_layer(layer, x, name, families=FAMILIES):
    """The `families` (default all four) on one layer and one activation batch; a dict of outputs."""
    x16, out = x.half(), {}
    if "w8a16_int8" in families:
        out["w8a16_int8"] = mixed_matmul(x16, layer["w_i8"].t()) * layer["i8_scale"].half()
    if "w8a16_fp8" in families:
        out["w8a16_fp8"] = w8a16_fp8_matmul(x16, layer["f8"].t()) * layer["f8_scale"].half()
    if "w8a8_int8" in families:
        xq, xs = quantize_rows_int8(x)
        out["w8a8_int8"] = torch.ops.torchao.scaled_int8_mm(xq, layer["w_i8"].t(), xs.bfloat16(),
                                                            layer["i8_scale"].bfloat16())
    if "w8a8_fp8_block" in families and name == FP8_BLOCK_SHAPE:
        aq, a_s = fp8_blockwise_act_quant(x.bfloat16().contiguous(), 128)
        out["w8a8_fp8_block"] = blockwise_fp8_gemm(aq, a_s, layer["blk"], layer["blk_scale"], 128)
    return out


def step(layers, acts, families=FAMILIES):
    """Every family, shape and batch size once; returns the last output."""
    for m in BATCHES:
        for name, (n, k) in SHAPES.items():
            out = run_layer(layers[name], acts[m][k], name, families)
    return out


def check(layers, acts, families=FAMILIES, m=16):
    """Largest relative error of each family against x @ w.T in fp32 (the unquantized bf16 weight)."""
    errors = {}
    for name, (n, k) in SHAPES.items():
        x = acts[m][k]
        ref = x @ layers[name]["w"].float().t()
        for family, y in run_layer(layers[name], x, name, families).items():
            err = ((y.float() - ref).abs().max() / ref.abs().max()).item()
            errors[family] = max(errors.get(family, 0.0), err)
    return errors


def split_k_picks():
    """{M: sorted SPLIT_K values the W8A16 autotuner chose across shapes and weight types}."""
    picks = {}
    for key, config in w8a16_kernel.cache.items():
        picks.setdefault(key[0], set()).add(config.kwargs["SPLIT_K"])
    return {m: sorted(v) for m, v in sorted(picks.items())}


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    families = tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else FAMILIES
    layers, acts = build()
    with torch.no_grad():
        for _ in range(steps):
            step(layers, acts, families)
        torch.cuda.synchronize()
        errors = check(layers, acts, families)
    print(f"torchao {torchao.__version__}: {steps} steps x M {BATCHES} x {len(SHAPES)} shapes; max rel err "
          + ", ".join(f"{f} {e:.3g}" for f, e in errors.items()) + f"; W8A16 SPLIT_K picked per M {split_k_picks()}")


if __name__ == "__main__":
    main()
