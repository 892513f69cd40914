"""A masked-language-model training step of Hugging Face transformers' BERT (random weights from a config: nothing
downloaded; the GPU machine has transformers 5.17) compiled as most PyTorch users tune their GEMMs:
`torch.compile(mode="max-autotune-no-cudagraphs")`, GEMMs from Inductor's Triton templates only
(`max_autotune_gemm_backends="TRITON"`: its compile-time choice benchmarks each template config), and
coordinate-descent tuning of the pointwise and reduction kernels on (`coordinate_descent_tuning`). 2 layers, hidden
256, 4 heads, MLP 1024, 8,192-token vocabulary; batch 16 x 128 tokens; AdamW. bf16 autocast. Small, because a cold
compile under these settings is minutes (4 layers at hidden 512 took 323 s on an H100).

    python benchmarks/workloads/bert_max_autotune.py [STEPS] [--profile OUT.json]

`--profile OUT.json`: `torch.profiler`'s CUDA kernel table of the steps after the first two (the steady state: the
first compiles and tunes), per kernel name its total time (µs) and launch count: the ground truth a user trusts for
what the workload runs.
"""

import functools

import torch
import torch._inductor.config as inductor_config
import transformers

import steady_profile

BATCH, TOKENS = 16, 128
WARM_STEPS = 2
"""Steps before the profiled steady state: the first compiles (template benchmarks) and tunes (coordinate
descent); the second runs what they chose."""


def build():
    config = transformers.BertConfig(vocab_size=8192, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=1024, max_position_embeddings=TOKENS)
    torch.manual_seed(0)
    model = transformers.BertForMaskedLM(config).cuda()
    ids = torch.randint(0, config.vocab_size, (BATCH, TOKENS), device="cuda")
    labels = torch.where(torch.rand(BATCH, TOKENS, device="cuda") < 0.15, ids, torch.full_like(ids, -100))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    return model, torch.compile(model, mode="max-autotune-no-cudagraphs"), ids, labels, optimizer


def step(model, compiled, ids, labels, optimizer):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = compiled(input_ids=ids, labels=labels).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def main():
    with inductor_config.patch({"max_autotune_gemm_backends": "TRITON", "coordinate_descent_tuning": True}):
        steady_profile.main(lambda: functools.partial(step, *build()), warm=WARM_STEPS)


if __name__ == "__main__":
    main()
