"""An Inductor-compiled language model from a library nobody here wrote: Hugging Face transformers' Qwen3 (the GPU
machine has transformers 5.17; `pip install transformers`), built from a config with random weights (nothing
downloaded), under torch.compile (default mode), bf16 autocast, a training step: forward, the causal-LM loss over
Qwen3's 151,936-token vocabulary, backward (no optimizer, the gradients dropped).

The model is Qwen3's architecture at a small size: 4 decoder layers, hidden 1024, 16 query and 8 key-value heads of
128, MLP 3072, batch 8 x 1024 tokens. Inductor writes its Triton kernels: RMSNorm (also on every head's queries
and keys, Qwen3's QK-norm), rotary embeddings, SiLU-and-multiply, residual adds, the loss's log-softmax over the
vocabulary, and all their backward reductions; the matmuls are cuBLAS, attention is SDPA.

    python benchmarks/workloads/hf_qwen3_compiled.py [STEPS]   # default 10 steps
"""

import sys

import torch
import transformers

BATCH, TOKENS = 8, 1024


def config(**sizes):
    """Qwen3's config at this workload's size; `sizes` overrides (a smaller one checks the step on a CPU)."""
    shape = dict(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=4,
                 num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=4096)
    shape.update(sizes)
    return transformers.Qwen3Config(**shape, attn_implementation="sdpa", use_cache=False)


def build(device="cuda", compile=True, batch=BATCH, tokens=TOKENS, **sizes):
    """(model, its compiled, token ids), seeded; the ids are their own labels (the loss shifts them)."""
    torch.manual_seed(0)
    model = transformers.Qwen3ForCausalLM(config(**sizes)).to(device).train()
    ids = torch.randint(0, model.config.vocab_size, (batch, tokens), device=device)
    return model, torch.compile(model) if compile else model, ids


def step(model, compiled, ids):
    """One training step: forward and loss under bf16 autocast, backward; returns the loss."""
    with torch.autocast(ids.device.type, dtype=torch.bfloat16):
        loss = compiled(input_ids=ids, labels=ids).loss
    loss.backward()
    model.zero_grad(set_to_none=True)
    return loss


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    workload = build()
    for _ in range(steps):
        loss = step(*workload)
    torch.cuda.synchronize()
    print(f"transformers {transformers.__version__} Qwen3 (4 layers, hidden 1024): {steps} steps; "
          f"loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
