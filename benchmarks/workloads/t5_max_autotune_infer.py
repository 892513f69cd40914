"""Inference of Hugging Face transformers' T5 (Google's encoder-decoder, v1.1's gated-GELU MLP; random weights from
a config: nothing downloaded) compiled under `torch.compile(mode="max-autotune-no-cudagraphs")`, GEMMs from
Inductor's Triton templates only and coordinate-descent tuning on, as `bert_max_autotune.py` compiles BERT. T5 adds
what BERT and OPT lack: RMS norms without a mean, a relative position bias computed from bucketed distances, and
cross-attention from the decoder into the encoder. 1 encoder and 1 decoder layer, d_model 256, 4 heads of 64, MLP
1024, 4,096-token vocabulary; batch 8, 256 source and 128 target tokens; bf16 weights, forward only under
`torch.inference_mode()`. Small: a cold max-autotune compile is minutes.

    python benchmarks/workloads/t5_max_autotune_infer.py [STEPS] [--profile OUT.json]

`--profile OUT.json`: `torch.profiler`'s kernel table of the steps after the first two (`steady_profile`).
"""

import torch
import transformers

import steady_profile

BATCH, SOURCE_TOKENS, TARGET_TOKENS = 8, 256, 128


def build():
    config = transformers.T5Config(vocab_size=4096, d_model=256, d_kv=64, d_ff=1024, num_layers=1,
                                   num_decoder_layers=1, num_heads=4, feed_forward_proj="gated-gelu", use_cache=False)
    torch.manual_seed(0)
    model = transformers.T5ForConditionalGeneration(config).cuda().to(torch.bfloat16).eval()
    source = torch.randint(0, config.vocab_size, (BATCH, SOURCE_TOKENS), device="cuda")
    target = torch.randint(0, config.vocab_size, (BATCH, TARGET_TOKENS), device="cuda")
    return torch.compile(model, mode="max-autotune-no-cudagraphs"), {"input_ids": source, "decoder_input_ids": target}


if __name__ == "__main__":
    steady_profile.inference_main(build)
