"""A language model's loss head from a library nobody here wrote, autotuned, with atomics and spin locks: Apple's Cut
Cross-Entropy 25.1.1 (`pip install cut-cross-entropy`), the fused linear + cross-entropy that never materializes the
logits (Liger, Unsloth and Axolotl train with it). Its Triton kernels are autotuned only under `CCE_AUTOTUNE=1`
(set here before the import; without it each runs one fixed config), each pruned by its own shared-memory rule and
a roofline model to the 10 (forward) or 5 (backward) configs Triton then benchmarks, keyed on V, D and B's bucket:

- `_cce_lse_forward_kernel`: the log-sum-exp over the vocabulary of `embeddings @ classifier.T`, and the average
  logit per vocabulary entry summed with `tl.atomic_add` (the backward's filter orders the vocabulary by it);
- `_indexed_neg_dot_forward_kernel`: each token's target logit;
- `_cce_backward_kernel`: both gradients, the logit blocks whose softmax gradient is below bf16's resolution
  skipped (data-dependent work), the rest accumulated into dE and dC under spin locks (`tl.atomic_cas`), dE and dC
  zeroed by the autotuner's `reset_to_zero` between benchmark runs;

and a `torch.compile`d argsort of the average logits (an Inductor kernel). Per step, per head shape below: the loss
forward and backward in bf16 with random embeddings, classifier and targets. The summary line gives the largest
relative error of the loss against torch's cross-entropy over the materialized logits in fp32.

    python benchmarks/workloads/cce_loss.py [STEPS [HEADS]]   # default 10 steps, every head (llama3,qwen3,gemma2)
"""

import os
import sys
from importlib.metadata import version

os.environ.setdefault("CCE_AUTOTUNE", "1")

import torch  # noqa: E402
from cut_cross_entropy import linear_cross_entropy  # noqa: E402  (after CCE_AUTOTUNE: read at import)

from training import run  # noqa: E402

# name: (tokens, hidden D, vocabulary V, logit softcap): the loss heads of Llama-3-8B, Qwen3-0.6B and Gemma-2-2B
HEADS = {"llama3": (2048, 4096, 128256, None), "qwen3": (4096, 1024, 151936, None),
         "gemma2": (2048, 2304, 256000, 30.0)}


def build(heads=tuple(HEADS), device="cuda"):
    """{head: (embeddings, classifier, targets)}, seeded; both bf16 tensors require gradients."""
    torch.manual_seed(0)
    inputs = {}
    for name in heads:
        tokens, hidden, vocab, _ = HEADS[name]
        embeddings = (torch.randn(tokens, hidden, device=device) * hidden ** -0.5).bfloat16().requires_grad_()
        classifier = (torch.randn(vocab, hidden, device=device) * 0.02).bfloat16().requires_grad_()
        inputs[name] = embeddings, classifier, torch.randint(0, vocab, (tokens,), device=device)
    return inputs


def step(inputs):
    """Every head's loss, forward and backward; {head: loss} (the gradients dropped)."""
    losses = {}
    for name, (embeddings, classifier, targets) in inputs.items():
        loss = linear_cross_entropy(embeddings, classifier, targets, softcap=HEADS[name][3])
        loss.backward()
        embeddings.grad = classifier.grad = None
        losses[name] = loss.detach()
    return losses


def reference_loss(embeddings, classifier, targets, softcap):
    """Torch's cross-entropy over the materialized logits, in fp32."""
    logits = embeddings.float() @ classifier.float().t()
    if softcap is not None:
        logits = softcap * torch.tanh(logits / softcap)
    return torch.nn.functional.cross_entropy(logits, targets)


def main():
    heads = tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else tuple(HEADS)
    inputs = build(heads)
    steps, losses = run(lambda: (inputs,), step)
    errors = ", ".join(
        f"{name} {abs(losses[name].item() / reference_loss(*tensors, HEADS[name][3]).item() - 1):.2e}"
        for name, tensors in inputs.items())
    print(f"cut-cross-entropy {version('cut-cross-entropy')}: {steps} steps x "
          f"{len(inputs)} heads; loss rel err: {errors}")


if __name__ == "__main__":
    main()
