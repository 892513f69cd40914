"""Triangle attention from a library nobody here wrote: trifast 0.1.13 (`pip install trifast`; the Triton triangle
attention that AlphaFold3-style protein models such as Boltz run over their pair representation), forward and
backward. Four Triton kernels (`_fwd`, `_bwd_q`, `_bwd_kv`, `_bwd_b`), each autotuned over 10-20 configs keyed by
the heads, the head dimension and the sequence length rounded up to a power of two, the backward kernels zeroing
their outputs before every config's benchmark (`reset_to_zero`). trifast tunes with an autotuner of its own, a
subclass of Triton's `Autotuner` whose `run` keeps its picks under a key text of its own and in a file under the
user's config folder (read back by the next run, which then tunes nothing): `XDG_CONFIG_HOME` is set to a fresh
folder here unless the caller set one, so every run tunes as a cold one does.

Per step, per shape below, one triangle attention (bf16 q, k, v, the pair bias, a mask hiding each sequence's
padding) and its backward with a seeded upstream gradient; the summary line gives each shape's relative error (norm)
against attention computed in fp32 by torch.

    python benchmarks/workloads/trifast_triangle.py [STEPS [SHAPES]]   # default 10 steps, every shape
"""

import os
import sys
import tempfile
from importlib.metadata import version

if "XDG_CONFIG_HOME" not in os.environ:  # before trifast reads its folder of picks, at import
    os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="trifast-config-")

import torch
from trifast import triangle_attention

from training import run

# name: (batch, heads, tokens, head dim, padded tokens): a Boltz-like pair stack's starting-node attention
SHAPES = {"n128": (2, 4, 128, 32, 8), "n256": (1, 4, 256, 32, 16), "n384": (1, 4, 384, 32, 40),
          "n512": (1, 4, 512, 32, 48)}


def build(shapes=tuple(SHAPES), device="cuda"):
    """{shape: (q, k, v, bias, mask, upstream gradient)}, seeded; q, k, v and the bias require gradients."""
    torch.manual_seed(0)
    built = {}
    for name in shapes:
        batch, heads, n, dim, padded = SHAPES[name]
        bf16 = dict(device=device, dtype=torch.bfloat16)
        q, k, v = (torch.randn(batch, heads, n, n, dim, **bf16, requires_grad=True) for _ in range(3))
        bias = torch.randn(batch, heads, n, n, **bf16, requires_grad=True)
        mask = torch.zeros(batch, n, n, dtype=torch.bool, device=device)
        mask[:, :, n - padded:] = True   # trifast's mask: True where a key is hidden
        built[name] = (q, k, v, bias, mask, torch.randn(batch, heads, n, n, dim, **bf16))
    return built


def step(inputs):
    """Every shape's triangle attention and its backward once; {shape: output}."""
    outputs = {}
    for name, (q, k, v, bias, mask, grad) in inputs.items():
        for tensor in (q, k, v, bias):
            tensor.grad = None
        outputs[name] = triangle_attention(q, k, v, bias, mask)
        outputs[name].backward(grad)
    return outputs


def rel_error(output, q, k, v, bias, mask, grad):
    """Relative error (norm) against fp32 attention over the last axis, the bias added, hidden keys left out."""
    scores = torch.einsum("bhijd,bhikd->bhijk", q.float(), k.float()) / q.shape[-1] ** 0.5 + bias.float()[:, :, None]
    scores = scores.masked_fill(mask[:, None, :, None, :], float("-inf"))
    reference = torch.einsum("bhijk,bhikd->bhijd", scores.softmax(-1), v.float())
    return ((output.float() - reference).norm() / reference.norm()).item()


def main():
    shapes = tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else tuple(SHAPES)
    inputs = build(shapes)
    steps, outputs = run(lambda: (inputs,), step)
    with torch.no_grad():
        errors = ", ".join(f"{name} {rel_error(outputs[name], *inputs[name]):.4f}" for name in inputs)
    print(f"trifast {version('trifast')}: {steps} steps x {len(inputs)} shapes, forward and backward; "
          f"rel err: {errors}")


if __name__ == "__main__":
    main()
