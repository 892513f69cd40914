"""A sequence-to-sequence training step of Hugging Face transformers' T5 (random weights from a config: nothing
downloaded) under the max-autotune settings of `bert_max_autotune.py` (Inductor's Triton GEMM templates chosen at
compile time, coordinate-descent tuning on). Unlike BERT: an encoder and a decoder with cross-attention, relative
position buckets instead of position embeddings, an RMS norm without bias, gated GELU feed-forward (T5 v1.1) and a
language-model head tied to nothing. One encoder and one decoder layer (more layers repeat the same GEMM shapes:
compile time, not decisions), d_model 256, 4 heads of 64, feed-forward 1024, 8,192-token vocabulary; batch 16 x 128
source and 64 target tokens; AdamW, bf16 autocast.

    python benchmarks/workloads/t5_max_autotune.py [STEPS] [--profile OUT.json]
"""

import torch
import transformers

from bert_max_autotune import train

BATCH, SOURCE, TARGET = 16, 128, 64


def build():
    config = transformers.T5Config(vocab_size=8192, d_model=256, d_kv=64, d_ff=1024, num_layers=1,
                                   num_decoder_layers=1, num_heads=4, feed_forward_proj="gated-gelu",
                                   tie_word_embeddings=False, decoder_start_token_id=0, pad_token_id=0)
    torch.manual_seed(0)
    model = transformers.T5ForConditionalGeneration(config).cuda()
    ids = torch.randint(1, config.vocab_size, (BATCH, SOURCE), device="cuda")
    labels = torch.randint(1, config.vocab_size, (BATCH, TARGET), device="cuda")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    return model, torch.compile(model, mode="max-autotune-no-cudagraphs"), ids, labels, optimizer


if __name__ == "__main__":
    train(build)
