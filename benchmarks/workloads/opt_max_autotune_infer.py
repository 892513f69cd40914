"""Inference of Hugging Face transformers' OPT (Meta's decoder; random weights from a config: nothing downloaded)
compiled under `torch.compile(mode="max-autotune-no-cudagraphs")`, GEMMs from Inductor's Triton templates only
(`max_autotune_gemm_backends="TRITON"`) and coordinate-descent tuning on, as `bert_max_autotune.py` compiles BERT.
OPT's linears carry biases and its MLP a ReLU: epilogues Inductor's scheduler may fuse into a GEMM template or
keep apart, by a benchmark while it compiles. 2 layers, hidden 256, 4 heads, MLP 1024, 4,096-token vocabulary;
batch 8 x 256 tokens; bf16 weights, forward only under `torch.inference_mode()`. Small: a cold max-autotune compile
is minutes.

    python benchmarks/workloads/opt_max_autotune_infer.py [STEPS] [--profile OUT.json]

`--profile OUT.json`: `torch.profiler`'s kernel table of the steps after the first two (`steady_profile`).
"""

import transformers

import steady_profile

BATCH, TOKENS = 8, 256


def build():
    config = transformers.OPTConfig(vocab_size=4096, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                                    ffn_dim=1024, max_position_embeddings=TOKENS, word_embed_proj_dim=256,
                                    use_cache=False)
    return steady_profile.causal_lm_inference(transformers.OPTForCausalLM, config, BATCH, TOKENS)


if __name__ == "__main__":
    steady_profile.inference_main(build)
