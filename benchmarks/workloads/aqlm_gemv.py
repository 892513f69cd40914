"""Decoding through 2-bit additive-quantized linear layers from a library nobody here wrote: AQLM 1.1.7
(`pip install aqlm`, Yandex/ISTA's Additive Quantization of Language Models). Its Triton GEMV
(`_aqlm_gemv_simple`: one program per output unit, the weight rebuilt from codebooks by each input group's codes)
serves every code layout without a CUDA kernel of its own (here 4 codebooks of 8 bits over groups of 8 inputs: 4
bits a weight), for inputs of at most 6 rows, launched once per row; it is autotuned over 20 configs (stages x
warps) keyed by the layer's shape. µs-scale kernels.

Per step, per batch size below, every linear layer of `BLOCKS` TinyLlama-1.1B-shaped blocks (q, k, v, o, gate,
up, down; random codes, codebooks and scales, seeded) once on fp16 inputs; the summary line gives each batch size's
relative error (norm) of the last layer against the dequantized weight's matmul in fp32.

    python benchmarks/workloads/aqlm_gemv.py [STEPS [BATCHES]]   # default 10 steps, batches 1 and 4
"""

import sys
from importlib.metadata import version

import torch
from aqlm import QuantizedLinear

from training import run

HIDDEN, KV, INTERMEDIATE, BLOCKS = 2048, 256, 5632, 4
LAYERS = [(HIDDEN, HIDDEN), (HIDDEN, KV), (HIDDEN, KV), (HIDDEN, HIDDEN),
          (HIDDEN, INTERMEDIATE), (HIDDEN, INTERMEDIATE), (INTERMEDIATE, HIDDEN)]
CODEBOOKS, BITS, GROUP = 4, 8, 8


def quantized(in_features, out_features, device="cuda"):
    """A QuantizedLinear with seeded random codes, codebooks and per-row scales."""
    layer = QuantizedLinear(in_features, out_features, in_group_size=GROUP, out_group_size=1, num_codebooks=CODEBOOKS,
                            nbits_per_codebook=BITS, bias=False, device=device, dtype=torch.float16)
    layer.codes.data = torch.randint(-128, 128, layer.codes.shape, dtype=torch.int8, device=device)
    layer.codebooks.data = torch.randn(layer.codebooks.shape, dtype=torch.float16, device=device) / CODEBOOKS
    layer.scales.data = torch.rand(layer.scales.shape, dtype=torch.float16, device=device) / in_features ** 0.5
    return layer


def build(batches):
    torch.manual_seed(0)
    layers = [quantized(i, o) for _ in range(BLOCKS) for i, o in LAYERS]
    inputs = {batch: {i: torch.randn(batch, i, dtype=torch.float16, device="cuda") for i in {HIDDEN, INTERMEDIATE}}
              for batch in batches}
    return layers, inputs


def step(layers, inputs):
    """Every layer once per batch size; {batch: the last layer's output}."""
    with torch.no_grad():
        return {batch: [layer(x[layer.in_features]) for layer in layers][-1] for batch, x in inputs.items()}


def rel_error(layer, x, output):
    """Against x @ W.T in fp32, W rebuilt from the codes (int8 read as unsigned), codebooks and scales."""
    codes = layer.codes.long() % (1 << BITS)                                   # (out, groups, codebooks)
    books = layer.codebooks.float()[:, :, 0, :]                                # (codebooks, size, GROUP)
    weight = sum(books[c][codes[:, :, c]] for c in range(CODEBOOKS))          # (out, groups, GROUP)
    weight = weight.reshape(layer.out_features, -1) * layer.scales.float().reshape(-1, 1)
    reference = x.float() @ weight.T
    return ((output.float() - reference).norm() / reference.norm()).item()


def main():
    batches = [int(b) for b in sys.argv[2].split(",")] if len(sys.argv) > 2 else [1, 4]
    layers, inputs = build(batches)
    steps, outputs = run(lambda: (layers, inputs), step)
    last = layers[-1]
    errors = ", ".join(f"batch {batch} {rel_error(last, inputs[batch][last.in_features], outputs[batch]):.4f}"
                       for batch in batches)
    print(f"aqlm {version('aqlm')}: {steps} steps x {len(layers)} layers x {len(batches)} batch sizes; rel err: "
          f"{errors}")


if __name__ == "__main__":
    main()
