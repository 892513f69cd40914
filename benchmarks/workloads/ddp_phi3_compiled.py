"""A second data-parallel training job, of another model nobody here wrote: Hugging Face transformers' Phi-3 (random
weights from a config; 2 layers, hidden 512, 8 query and 4 key-value heads, MLP 1,536, 32,064-token vocabulary as
Phi-3's), trained as `ddp_mistral_compiled.py` trains Mistral: DDP over NCCL, `torch.compile` (default mode) with
coordinate-descent tuning, every rank tuning from its own cold caches. Phi-3 projects queries, keys and values in one
fused matrix and the MLP's gate and up in another, so Inductor generates other kernels, at other shapes, from it.

    torchrun --standalone --nproc-per-node 2 benchmarks/workloads/ddp_phi3_compiled.py [STEPS]
"""

import transformers

from ddp_mistral_compiled import TOKENS, main


def phi3_config():
    return transformers.Phi3Config(vocab_size=32064, hidden_size=512, intermediate_size=1536, num_hidden_layers=2,
                                   num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=TOKENS)


if __name__ == "__main__":
    main(phi3_config())
