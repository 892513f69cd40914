"""The CUDA event timer's quantum on this GPU, measured: the steps that two loads of one short kernel land apart by,
below the verdicts' µs floor (`config.ab.MIN_EFFECT_US`, docs/check.md#the-us-floor).

Times a short kernel (a 4096-element add, torch's) with the project's timer (`measure.timing.bench_interleaved`,
the one the replay and the gate time with: CUDA events around each call, the stream held) and prints JSON: the
distinct per-call times, the smallest gap between two of them (the quantum, where the times take several values)
and the share of all times lying on whole multiples of it.

    python benchmarks/event_tick.py [--calls 2000]
"""

import argparse
import contextlib
import json

import torch

from tritonhook.measure.timing import bench_interleaved


def elapsed_ms(calls: int) -> list[float]:
    """`calls` per-call event times of the add, ms (after the timer's warm-up)."""
    a, b = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    (result,) = bench_interleaved([(contextlib.nullcontext, torch.add)], inputs=(a, b), rep_ms=0.0, min_reps=calls)
    return result.samples_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    times = elapsed_ms(parser.parse_args().calls)
    distinct = sorted(set(round(t * 1e6, 1) for t in times))  # ns, to a tenth
    gaps = [b - a for a, b in zip(distinct, distinct[1:]) if b - a > 0.5]
    quantum = min(gaps) if gaps else None
    on_grid = sum(abs(t * 1e6 / quantum - round(t * 1e6 / quantum)) < 0.01 for t in times) / len(times) \
        if quantum else None
    print(json.dumps({"device": torch.cuda.get_device_name(), "calls": len(times), "distinct_ns": distinct[:40],
                      "quantum_ns": quantum, "share_on_quantum_grid": on_grid}, indent=1))


if __name__ == "__main__":
    main()
