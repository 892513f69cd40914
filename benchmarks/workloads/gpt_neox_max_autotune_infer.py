"""Inference of Hugging Face transformers' GPT-NeoX (EleutherAI's decoder, Pythia's architecture; random weights from
a config: nothing downloaded) compiled under `torch.compile(mode="max-autotune-no-cudagraphs")`, GEMMs from
Inductor's Triton templates only and coordinate-descent tuning on (`steady_profile.MAX_AUTOTUNE_TRITON`). Its
attention and MLP run in parallel from one layer norm (`use_parallel_residual`), its linears carry biases and its
MLP a GELU, its queries and keys a partial rotary embedding: epilogues Inductor's scheduler may fuse into a GEMM
template or keep apart, by a benchmark while it compiles. 2 layers, hidden 256, 4 heads, MLP 1024, 4,096-token
vocabulary; batch 8 x 256 tokens; bf16 weights, forward only under `torch.inference_mode()`.

    python benchmarks/workloads/gpt_neox_max_autotune_infer.py [STEPS] [--profile OUT.json]

`--profile OUT.json`: `torch.profiler`'s kernel table of the steps after the first two (`steady_profile`).
"""

import transformers

import steady_profile

BATCH, TOKENS = 8, 256


def build():
    config = transformers.GPTNeoXConfig(vocab_size=4096, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                                        intermediate_size=1024, max_position_embeddings=TOKENS, use_cache=False)
    return steady_profile.causal_lm_inference(transformers.GPTNeoXForCausalLM, config, BATCH, TOKENS)


if __name__ == "__main__":
    steady_profile.inference_main(build)
