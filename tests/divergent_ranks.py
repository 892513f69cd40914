"""One rank of a job whose autotuner picks per process: Triton's real Autotuner over the add kernel's three configs,
its benchmark (`do_bench`, Triton's own argument for it) giving this rank's timings, where BLOCK 256 and BLOCK 512
are a near-tie that each rank breaks its own way. No GPU: the launch after the pick fails, where this stops.

    python divergent_ranks.py record STORE RUN   # the AutotuneTracer's decisions saved as this process's recording
    python divergent_ranks.py apply STORE [FILE]  # under the store's decisions (or FILE's): what ran, what was timed
    python divergent_ranks.py workload           # on a GPU, under `tritonhook record`: the pick launched 50 times
    ... --agreed: record and apply also call the kernel at a second size, a tuning key where every rank picks alike


The rank is what torchrun sets (`RANK`), read as a recording reads it."""

import contextlib
import dataclasses
import json
import os
import sys

import torch
import triton

import tritonhook
from tritonhook import _triton
from tritonhook.samples import add_kernel
from tritonhook.store import Store
from tritonhook.sweep import recording as rec
from tritonhook.sweep.recorder import distributed_rank

CONFIGS = [triton.Config({"BLOCK": 256}, num_warps=2), triton.Config({"BLOCK": 512}, num_warps=4),
           triton.Config({"BLOCK": 1024}, num_warps=8)]
RANK_MS = {0: [0.0100, 0.0101, 0.0130], 1: [0.0101, 0.0100, 0.0130]}
"""Each rank's benchmark of the configs, in order: 256 and 512 within 1%, so the ranks pick differently."""
AGREED_MS = [0.0130, 0.0100, 0.0120]
"""Every rank's benchmark of the configs at the second size (`--agreed`): BLOCK 512, clearly."""
SIZES = {False: (4096,), True: (4096, 8192)}
GPU = "NVIDIA H200"


def autotuned(timed: list, launch: bool = False):
    """The add kernel autotuned with this rank's timings; `launch`: each benchmark also launches its config once,
    as a real benchmark does (on a GPU), so that a recording ties the config's kernel to the decision."""
    ms = RANK_MS[distributed_rank() or 0] + AGREED_MS  # a key's three benchmarks, then the next key's

    def do_bench(kernel_call, quantiles):
        if launch:
            kernel_call()
        value = ms[len(timed) % len(ms)]
        timed.append(value)
        return [value, value * 0.99, value * 1.01]

    return triton.autotune(CONFIGS, key=["n"], do_bench=do_bench)(add_kernel)


def call(kernel, agreed: bool) -> dict[str, dict]:
    """The config each size ran (the autotuner's key: n)."""
    picks = {}
    for n in SIZES[agreed]:
        x = torch.zeros(n)
        with contextlib.suppress(Exception):  # no GPU: the launch after the pick fails
            kernel[(1,)](x, x, x, n)
        picks[str(n)] = kernel.best_config.kwargs
    return picks


def record(store: str, run: str, agreed: bool = False) -> None:
    decided = []
    tracer = _triton.AutotuneTracer(decided.append)
    tracer.install()
    try:
        call(autotuned([]), agreed)
    finally:
        tracer.uninstall()
    recording = rec.Recording([], "sm_90a", GPU, triton.__version__, torch.__version__, os.getpid(), label=run,
                              autotune=[dataclasses.asdict(d) for d in decided], rank=distributed_rank())
    Store(store).add_result(rec.RESULT_KIND, recording.to_json())


def apply(store: str, source: str | None = None, agreed: bool = False) -> None:
    """What ran: the last pick's config; with `agreed`, each size's (`picks`)."""
    timed = []
    kernel = autotuned(timed)
    with tritonhook.session(store, apply=source or store, subprocesses=False):
        picks = call(kernel, agreed)
    print(json.dumps({"rank": distributed_rank(), "timed": len(timed), "ran": kernel.best_config.kwargs,
                      "picks": picks}))


def workload() -> None:
    """The rank's pick launched as a workload launches it: 50 adds of 2^20 floats on the GPU."""
    n = 1 << 20
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    kernel = autotuned([], launch=True)
    for _ in range(50):
        kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, x, out, n)
    torch.cuda.synchronize()


if __name__ == "__main__":
    args = [arg for arg in sys.argv[2:] if arg != "--agreed"]
    agreed = "--agreed" in sys.argv
    {"record": lambda: record(*args, agreed=agreed), "apply": lambda: apply(*args, agreed=agreed),
     "workload": workload}[sys.argv[1]]()
