"""What CUDA events read around a held µs kernel with and without `torch.profiler` tracing the process.

    python benchmarks/profiler_event_timing.py [--out results.json]

The recorder times a workload's kernels with CUDA events behind a stream hold (`measure.timing.hold_stream`); a user
may profile some steps of the same workload. This times a 4,096-element add 200 times, each held (a 50 µs spin
queued first) and followed by the trailing empty kernel the recorder queues, before, under and after a
`torch.profiler.profile` of CPU and CUDA activity, and prints the median of each: the add's time and the empty
kernel's (the launch lead; queued after the add, it is not covered by the hold where the host takes longer than it).
"""

import argparse
import json

import torch

from tritonhook.measure import timing

PHASES = ("before the profiler", "under torch.profiler", "after it")


def held_add_medians(x: torch.Tensor, calls: int = 200) -> dict:
    """The median µs of a held add and of the empty kernel queued after it, over `calls`, each call synchronized."""
    adds, empties = [], []
    for _ in range(calls):
        timing.hold_stream(torch, 50.0)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        x.add_(1)
        end.record()
        empty = timing.time_empty_kernel(torch)
        torch.cuda.synchronize()
        adds.append(start.elapsed_time(end) * 1e3)
        empties.append(empty[0].elapsed_time(empty[1]) * 1e3)
    return {"add_us": sorted(adds)[calls // 2], "empty_us": sorted(empties)[calls // 2]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    x = torch.zeros(4096, device="cuda")
    torch.cuda.synchronize()
    timing.hold_cycles_per_us(torch)
    found = {PHASES[0]: held_add_medians(x)}
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities):
        found[PHASES[1]] = held_add_medians(x)
    found[PHASES[2]] = held_add_medians(x)
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "phases": found}
    if args.out:
        with open(args.out, "w") as out:
            json.dump(results, out, indent=1)
    print(f"{'phase':<24}{'held add µs':>12}{'empty µs':>10}")
    for phase, medians in found.items():
        print(f"{phase:<24}{medians['add_us']:>12.2f}{medians['empty_us']:>10.2f}")


if __name__ == "__main__":
    main()
