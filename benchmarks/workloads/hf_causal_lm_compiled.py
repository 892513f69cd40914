"""Inductor-compiled language models from a library nobody here wrote: Hugging Face transformers (the GPU machine has
transformers 5.17; `pip install transformers`), built from a config with random weights (nothing downloaded), under
torch.compile (default mode), bf16 autocast, a training step: forward, the causal-LM loss over the model's
vocabulary, backward (no optimizer, the gradients dropped). Batch 8 x 1024 tokens. The matmuls are cuBLAS, attention
is SDPA; Inductor writes the rest as Triton kernels. Five architectures at a small size (4 layers, hidden 1024):

- `qwen3`: Qwen3's (16 query and 8 key-value heads of 128, MLP 3072, 151,936-token vocabulary): RMSNorm (also on
  every head's queries and keys, Qwen3's QK-norm), rotary embeddings, SiLU-and-multiply, residual adds, the loss's
  log-softmax over the vocabulary, and all their backward reductions;
- `gpt2`: GPT-2's (16 heads of 64, MLP 4096, learned positions, 50,257-token vocabulary tied to the embeddings):
  LayerNorm with biases, the tanh GELU, and dropout at 0.1 on embeddings, attention outputs and MLP outputs, so
  Inductor's Philox random-number kernels and their masks in the backward;
- `gemma3`: Gemma 3's text model (8 query and 4 key-value heads of 128, MLP 4096, 262,144-token vocabulary tied to
  the embeddings): embeddings scaled by the square root of the hidden size, RMSNorm scaled by (1 + weight) before and
  after both attention and MLP and on every head's queries and keys, the tanh-GELU-gated MLP, and sliding-window
  attention (512 tokens: an explicit mask for SDPA);
- `olmo2`: OLMo 2's (16 heads of 64, MLP 4096, 100,352-token vocabulary): RMSNorm after attention and after the MLP
  rather than before (each block's output normed before the residual add) and on the whole query and key
  projections (not per head), rotary embeddings, SiLU-and-multiply;
- `gpt_neox`: GPT-NeoX's, as the Pythia models run it (16 heads of 64, MLP 4096, 50,432-token vocabulary): the
  parallel residual (attention and MLP both read the block's input, each through its own LayerNorm, and are added
  to it together), rotary embeddings on the first quarter of each head only (the rest passed through: slices and
  a concatenation), fused QKV projection with biases, and the exact (erf) GELU.

    python benchmarks/workloads/hf_causal_lm_compiled.py [STEPS [MODEL]]   # default 10 steps, qwen3
"""

import sys

import torch
import transformers

from training import run, train_step

BATCH, TOKENS = 8, 1024


def qwen3_config(**sizes):
    """Qwen3's config at this workload's size; `sizes` overrides (a smaller one checks the step on a CPU)."""
    shape = dict(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=4,
                 num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=4096)
    return transformers.Qwen3Config(**{**shape, **sizes}, attn_implementation="sdpa", use_cache=False)


def gpt2_config(**sizes):
    """GPT-2's config at this workload's size (its dropouts at their default 0.1); `sizes` overrides."""
    shape = dict(vocab_size=50257, n_embd=1024, n_inner=4096, n_layer=4, n_head=16, n_positions=TOKENS)
    return transformers.GPT2Config(**{**shape, **sizes}, attn_implementation="sdpa", use_cache=False)


def gemma3_config(**sizes):
    """Gemma 3's text config at this workload's size (every layer sliding-window: the full-attention one is each
    sixth); `sizes` overrides."""
    shape = dict(vocab_size=262144, hidden_size=1024, intermediate_size=4096, num_hidden_layers=4,
                 num_attention_heads=8, num_key_value_heads=4, head_dim=128, max_position_embeddings=4096,
                 sliding_window=512)
    return transformers.Gemma3TextConfig(**{**shape, **sizes}, attn_implementation="sdpa", use_cache=False)


def olmo2_config(**sizes):
    """OLMo 2's config at this workload's size; `sizes` overrides."""
    shape = dict(vocab_size=100352, hidden_size=1024, intermediate_size=4096, num_hidden_layers=4,
                 num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=4096)
    return transformers.Olmo2Config(**{**shape, **sizes}, attn_implementation="sdpa", use_cache=False)


def gpt_neox_config(**sizes):
    """GPT-NeoX's config at this workload's size (rotary on 25% of each head, parallel residual: its defaults);
    `sizes` overrides."""
    shape = dict(vocab_size=50432, hidden_size=1024, intermediate_size=4096, num_hidden_layers=4,
                 num_attention_heads=16, max_position_embeddings=4096)
    return transformers.GPTNeoXConfig(**{**shape, **sizes}, attn_implementation="sdpa", use_cache=False)


MODELS = {"qwen3": (qwen3_config, transformers.Qwen3ForCausalLM),
          "gpt2": (gpt2_config, transformers.GPT2LMHeadModel),
          "gemma3": (gemma3_config, transformers.Gemma3ForCausalLM),
          "olmo2": (olmo2_config, transformers.Olmo2ForCausalLM),
          "gpt_neox": (gpt_neox_config, transformers.GPTNeoXForCausalLM)}


def build(model="qwen3", device="cuda", compile=True, batch=BATCH, tokens=TOKENS, **sizes):
    """(model, its compiled, token ids), seeded; the ids are their own labels (the loss shifts them)."""
    config, architecture = MODELS[model]
    torch.manual_seed(0)
    built = architecture(config(**sizes)).to(device).train()
    ids = torch.randint(0, built.config.vocab_size, (batch, tokens), device=device)
    return built, torch.compile(built) if compile else built, ids


def step(model, compiled, ids):
    """One training step: forward and loss under bf16 autocast, backward; returns the loss."""
    return train_step(model, ids.device.type, lambda: compiled(input_ids=ids, labels=ids).loss)


def main():
    name = sys.argv[2] if len(sys.argv) > 2 else "qwen3"
    steps, loss = run(lambda: build(name), step)
    print(f"transformers {transformers.__version__} {name} (4 layers, hidden 1024): {steps} steps; "
          f"loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
