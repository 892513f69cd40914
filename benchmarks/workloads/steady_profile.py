"""`torch.profiler`'s CUDA kernel table of a workload's steady-state steps: the ground truth a user trusts for what a
workload runs, shared by the workloads that `benchmarks/sweep_against_profiler.py` holds the sweep against.

    steps(step, total, profile_path, warm=2)   # runs `total` steps; with a path, the steps after `warm` profiled
    main(make_step)                            # a workload's command line: [STEPS] [--profile OUT.json]
    inference_main(build)                      # main for a model's forward pass compiled under max-autotune
    training_step(model, x, optimizer)         # a model's training step on random data

The profiled steps are those after the warm-up (the first compiles and tunes, the second runs what they chose);
the table is {kernel name: [total µs, launches]}, saved as JSON with the profiled step count."""

import argparse
import json
from typing import Callable

import torch


def kernel_table(profiler) -> dict:
    """{kernel name: [total µs, launches]} of the CUDA kernels the profiler saw."""
    table = {}
    for event in profiler.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            total = table.setdefault(event.name, [0.0, 0])
            total[0] += event.device_time
            total[1] += 1
    return table


def steps(step, total: int, profile_path: str | None, warm: int = 2) -> None:
    """Run `step()` `total` times; with `profile_path`, the steps after the first `warm` under the profiler, and
    its kernel table written there unless a table is there already: a sweep with `--confirm` runs its command again
    in each arm, and the table the sweep is held against is its own run's."""
    for _ in range(min(warm, total) if profile_path else total):
        step()
    if profile_path:
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profiler:
            for _ in range(total - warm):
                step()
            torch.cuda.synchronize()
        try:
            with open(profile_path, "x") as out:
                json.dump({"steps": total - warm, "kernels": kernel_table(profiler)}, out)
        except FileExistsError:  # a later run of the same command (a sweep's --confirm runs): the first one's kept
            pass
    torch.cuda.synchronize()


def training_step(model, x, optimizer) -> None:
    """One training step of `model` on input `x` (a workload of random data: the loss, its output's mean square, is
    there to run the backward pass)."""
    model(x).square().mean().backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def main(make_step: Callable[[], Callable[[], None]], warm: int = 2) -> None:
    """A workload's command line, `[STEPS] [--profile OUT.json]` (6 steps by default): `make_step()` builds the
    workload and returns one step of it, then `steps` runs them."""
    parser = argparse.ArgumentParser()
    parser.add_argument("steps", type=int, nargs="?", default=6)
    parser.add_argument("--profile", default=None, help="torch.profiler's kernel table of the steady-state steps")
    args = parser.parse_args()
    steps(make_step(), args.steps, args.profile, warm)


MAX_AUTOTUNE_TRITON = {"max_autotune_gemm_backends": "TRITON", "coordinate_descent_tuning": True}
"""How the max-autotune inference workloads configure Inductor: GEMMs from its Triton templates alone (each a
compile-time choice among template configs), coordinate-descent tuning on."""


def causal_lm_inference(model_class, config, batch: int, tokens: int) -> tuple[Callable, dict]:
    """A transformers causal LM of `model_class` built from `config` (random weights, seed 0: nothing downloaded),
    bf16 on the GPU in eval mode, compiled under `mode="max-autotune-no-cudagraphs"`, and `batch` x `tokens` random
    token ids: what `inference_main`'s `build()` returns."""
    torch.manual_seed(0)
    model = model_class(config).cuda().to(torch.bfloat16).eval()
    ids = torch.randint(0, config.vocab_size, (batch, tokens), device="cuda")
    return torch.compile(model, mode="max-autotune-no-cudagraphs"), {"input_ids": ids}


def inference_main(build: Callable[[], tuple[Callable, dict]]) -> None:
    """`main` for a model's forward pass: `build()` returns the model compiled under
    `mode="max-autotune-no-cudagraphs"` and its keyword inputs; a step calls it under `torch.inference_mode()`,
    Inductor configured as `MAX_AUTOTUNE_TRITON` while it compiles."""
    import torch._inductor.config as inductor_config

    def make_step() -> Callable[[], None]:
        compiled, inputs = build()

        def step() -> None:
            with torch.inference_mode():
                compiled(**inputs)
        return step

    with inductor_config.patch(MAX_AUTOTUNE_TRITON):
        main(make_step)
