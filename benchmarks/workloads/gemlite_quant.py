"""Low-bit GEMM / GEMV Triton kernels nobody here wrote, autotuned per batch size, split-K with atomics at small
batch: GemLite 0.6.0.post2 (Mobius Labs / Dropbox, `pip install gemlite`; the kernels HQQ, vLLM, SGLang and torchao
call for 4-bit weights). Llama-3-8B linear shapes (N x K): qkv 6144 x 4096 and down 4096 x 14336; batch M = 1, 16
and 512 (decode GEMV, small-batch decode, prefill). Per step, per M, per shape:

1. A16W4: fp16 activations x 4-bit weights packed 8 to an int32, asymmetric, group 64 (HQQ's format,
   `helper.A16W4_HQQ_INT`). GemLite picks the kernel by M: at M = 1 `gemv_INT_revsplitK_kernel`, at 16
   `gemm_INT_splitK_kernel` (SPLIT_K 1-8, the output zeroed by a `pre_hook` and summed with `tl.atomic_add`), at 512
   `gemm_INT_kernel`.
2. A8W8 int8 dynamic: per-token int8 activations (quantized by GemLite's own Triton kernel) x per-channel int8
   weights (`helper.A8W8_int8_dynamic`): at M = 1 `gemv_INT_splitK_kernel`, at 16 the split-K GEMM, at 512 the GEMM.

Every kernel is `@triton.autotune` over GemLite's "fast" config list (its default; 22 configs for the split-K GEMM),
pruned per shape by its own `early_config_prune`, keyed on M rounded to a bucket (`M_CLOSEST`), N, K and the
quantization. GemLite ships tuned configs for some GPUs and loads them at import when the device name matches (an
H100's would skip autotuning): they are dropped here (`gemlite.reset_config()`), so every key autotunes. Autotuning
happens on the first step; the summary line gives each family's largest relative error at M = 16 against torch in
fp32 on the dequantized weights.

    python benchmarks/workloads/gemlite_quant.py [STEPS [FAMILIES]]   # default 10 steps, both families (a16w4,a8w8)
"""

import sys

import gemlite
import torch
from gemlite.helper import A8W8_int8_dynamic, A16W4_HQQ_INT

SHAPES = {"qkv": (6144, 4096), "down": (4096, 14336)}  # N x K
BATCHES = (1, 16, 512)
GROUP = 64
FAMILIES = ("a16w4", "a8w8")


def a16w4_layer(n, k, device):
    """(GemLite layer, its dequantized weight in fp32): random 4-bit codes, per-group scales and zero points."""
    codes = torch.randint(0, 16, (n, k), dtype=torch.uint8, device=device)
    scales = (torch.rand(n, k // GROUP, device=device) * 0.02 + 0.001).half()
    zeros = (torch.rand(n, k // GROUP, device=device) * 15).half()
    weight = (codes.float().view(n, -1, GROUP) - zeros.float()[..., None]) * scales.float()[..., None]
    layer = A16W4_HQQ_INT(device=device, dtype=torch.float16).from_weights(codes, scales, zeros)
    return layer, weight.view(n, k)


def a8w8_layer(n, k, device):
    """(GemLite layer, the fp32 weight it quantized): GemLite quantizes per output channel to int8 itself."""
    weight = torch.randn(n, k, device=device, dtype=torch.float16) * 0.02
    layer = A8W8_int8_dynamic(device=device, dtype=torch.float16).from_weights(weight.clone())
    return layer, weight.float()


BUILDERS = {"a16w4": a16w4_layer, "a8w8": a8w8_layer}


def build(families=FAMILIES, device="cuda"):
    """({(family, shape): (layer, reference weight)}, {M: {K: activations}}), seeded."""
    torch.manual_seed(0)
    gemlite.reset_config()
    layers = {(family, name): BUILDERS[family](n, k, device)
              for family in families for name, (n, k) in SHAPES.items()}
    acts = {m: {k: torch.randn(m, k, device=device, dtype=torch.float16) for k in {k for _, k in SHAPES.values()}}
            for m in BATCHES}
    return layers, acts


def step(layers, acts):
    """Every layer at every M once; the outputs at M = 16 (for the check)."""
    outputs = {}
    for m in BATCHES:
        for (family, name), (layer, _) in layers.items():
            out = layer(acts[m][SHAPES[name][1]])
            if m == 16:
                outputs[family, name] = out
    return outputs


def max_rel_errors(layers, acts, outputs):
    """{family: largest relative error (norm) at M = 16 over its shapes} against torch in fp32."""
    errors = {}
    for (family, name), (_, weight) in layers.items():
        reference = acts[16][SHAPES[name][1]].float() @ weight.t()
        error = ((outputs[family, name].float() - reference).norm() / reference.norm()).item()
        errors[family] = max(errors.get(family, 0.0), error)
    return errors


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    families = tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else FAMILIES
    layers, acts = build(families)
    for _ in range(steps):
        outputs = step(layers, acts)
    torch.cuda.synchronize()
    errors = ", ".join(f"{family} {error:.4f}" for family, error in max_rel_errors(layers, acts, outputs).items())
    print(f"gemlite {gemlite.__version__}: {steps} steps x M {BATCHES} x {len(SHAPES)} shapes; "
          f"max rel err at M=16: {errors}")


if __name__ == "__main__":
    main()
