"""Does an event-timed small kernel take longer while more work is queued behind it? (issue 15's fidelity;
docs/notes.md §17.) Queues `--per` calls of an empty kernel (a one-cycle spin), each between two CUDA events,
behind a ~1 ms stream hold that covers the host's queuing, `--batches` times, and prints the median time per
position in the batch. On the H200 (two runs) the last 8-9 positions read 2.7-2.9 µs and every earlier one
3.2-3.6 µs: a call with more than about eight calls queued behind it pays ~0.5 µs. Then the A/B timer
(`ab.timing.bench_interleaved`, which waits for each round to finish before queuing the next) on a 2048-element
add, for comparison.

    python experiments/fidelity_queue_depth.py [--per 8,12,24] [--batches 150]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics

import torch

from tritonhook.ab.timing import bench_interleaved, hold_stream, time_empty_kernel


def per_position_us(per: int, batches: int) -> list[float]:
    """Median µs of the empty kernel at each position of a batch of `per` queued behind one hold."""
    times: list[list[float]] = [[] for _ in range(per)]
    for _ in range(batches):
        hold_stream(torch, 1000.0)
        pairs = [time_empty_kernel(torch) for _ in range(per)]
        torch.cuda.synchronize()
        for position, (start, end) in enumerate(pairs):
            times[position].append(start.elapsed_time(end) * 1e3)
    return [statistics.median(t) for t in times]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per", default="8,12,24")
    ap.add_argument("--batches", type=int, default=150)
    args = ap.parse_args()
    per_position_us(8, 5)  # warm-up
    for per in map(int, args.per.split(",")):
        print(f"{per:3d} calls behind one hold, µs per position: "
              + " ".join(f"{t:.2f}" for t in per_position_us(per, args.batches)))
    x, y = torch.randn(2048, device="cuda"), torch.randn(2048, device="cuda")
    results = bench_interleaved([(contextlib.nullcontext, torch.add)] * 2, inputs=[x, y], trailing_empty=True)
    print("A/B timer, 2048-element add, two arms: "
          + ", ".join(f"{r.median_ms * 1e3:.2f} µs (empty after it {statistics.median(r.empty_samples_ms) * 1e3:.2f})"
                      for r in results))


if __name__ == "__main__":
    main()
