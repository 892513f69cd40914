"""A data-parallel training job as torchrun runs one: Hugging Face transformers' Mistral (random weights from a
config, nothing downloaded; 2 layers, hidden 512, 8 query and 4 key-value heads, MLP 1,536, 16,000-token vocabulary,
sliding window 4,096) in PyTorch's DistributedDataParallel over NCCL, one GPU a rank, compiled with `torch.compile`
(default mode) and Inductor's coordinate-descent tuning on: every process tunes its own pointwise and reduction
kernels at their first launch (Inductor's runtime autotuner and coordinate descent), from its own cold caches, so
two ranks can pick differently at one kernel. bf16 autocast, batch 8 x 512 tokens a rank (each rank its own
tokens), AdamW. Small, because every run compiles and tunes from cold caches: at hidden 1,024 and 1,024 tokens a
cold run under `tritonhook record` took more than 150 s on an H200.

    torchrun --standalone --nproc-per-node 2 benchmarks/workloads/ddp_mistral_compiled.py [STEPS]

Prints, from rank 0, the steady-state step time (the median of the steps after the first two, each synchronised).
"""

import os
import statistics
import sys
import time

import torch
import torch._inductor.config as inductor_config
import torch.distributed as dist
import transformers
from torch.nn.parallel import DistributedDataParallel

BATCH, TOKENS = 8, 512
WARM_STEPS = 2


def mistral_config():
    return transformers.MistralConfig(vocab_size=16000, hidden_size=512, intermediate_size=1536, num_hidden_layers=2,
                                      num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=TOKENS,
                                      sliding_window=4096)


def build(rank: int, config):
    """The DDP-wrapped model of `config` compiled, this rank's tokens, its optimizer."""
    torch.manual_seed(0)  # one model on every rank
    model = transformers.AutoModelForCausalLM.from_config(config).cuda()
    generator = torch.Generator(device="cuda").manual_seed(1 + rank)  # each rank its own tokens
    ids = torch.randint(0, config.vocab_size, (BATCH, TOKENS), device="cuda", generator=generator)
    wrapped = DistributedDataParallel(model, device_ids=[torch.cuda.current_device()])
    return torch.compile(wrapped), ids, torch.optim.AdamW(model.parameters(), lr=1e-4)


def step(compiled, ids, optimizer) -> None:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = compiled(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def main(config) -> None:
    """Train the causal LM of `config` (a transformers config) for argv[1] steps on this torchrun rank."""
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl")
    with inductor_config.patch({"coordinate_descent_tuning": True}):
        workload = build(rank, config)
        times = []
        for _ in range(steps):
            began = time.perf_counter()
            step(*workload)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - began)
    if rank == 0 and len(times) > WARM_STEPS:
        print(f"steady step {statistics.median(times[WARM_STEPS:]) * 1e3:.2f} ms", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(mistral_config())
