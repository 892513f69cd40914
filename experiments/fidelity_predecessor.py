"""What in the workload lowers a small kernel's event-timed time by ~0.5 µs below any replay of it? (issue 15's
fidelity; docs/notes.md §10-§14.) The recording and the replay time a call alike: a stream hold (a one-CTA spin),
the start event, the kernel, the end event. This records experiments/sweep_workloads/inductor_transformer.py's
training step, then replays its small signatures (recorded median under `--under-us`) cold in this process with
something else queued between the hold and the start event, or a longer hold:

    none     the replay as it is
    long     the hold 400 µs longer
    fill     a 64 MiB fill on every SM (a large memory-bound predecessor)
    tiny     a 512-element add (a one-CTA predecessor)
    gemm     a 2048^2 bf16 matmul (a compute-bound predecessor, every SM at full power)
    busy     an 8192^2 bf16 matmul before the hold (the GPU busy as in a training step; busy3: three)

and prints per signature the recorded median and each condition's replayed median, µs, and CUPTI's hold end ->
kernel start.

    PYTHONPATH=$PWD python experiments/fidelity_predecessor.py [--under-us 8] [--rounds 7]
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from tritonhook.ab import timing
from tritonhook.ab.stats import median
from tritonhook.sweep import select_signatures, worker

from fidelity_common import after_holds, median_or_nan, parser, record_transformer, replay_job


def predecessors() -> dict:
    """name -> (what to queue, before the hold or after it)."""
    fill = torch.empty(16 << 20, device="cuda")
    small = torch.zeros(512, device="cuda")
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    return {"none": (lambda: None, "after"), "long": (None, "after"), "fill": (lambda: fill.fill_(1.0), "after"),
            "tiny": (lambda: small.add_(1.0), "after"), "gemm": (lambda: a @ a, "after"),
            "busy": (lambda: b @ b, "before"), "busy3": (lambda: [b @ b for _ in range(3)], "before")}


def replay_with(condition: str, queued, job, entry, store, work) -> tuple[float, float]:
    """The replay's median time and CUPTI's median hold end -> kernel start, µs."""
    original_hold, original_extra = timing.hold_stream, timing.HOLD_EXTRA_US
    before, where = queued

    def hold(torch_, microseconds):
        if where == "before":
            before()
        done = original_hold(torch_, microseconds)
        if where == "after":
            before()
        return done

    if condition == "long":
        timing.HOLD_EXTRA_US = original_extra + 400.0
    else:
        timing.hold_stream = hold
    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            samples = worker.replay_signature(torch, job, entry, store, work)["samples"]["plain"]
        leads = [lead for lead, _ in after_holds(prof, entry["kernel"])]
        return median(samples) * 1e3, median_or_nan(leads)
    finally:
        timing.hold_stream, timing.HOLD_EXTRA_US = original_hold, original_extra


def main() -> None:
    ap = parser(__doc__, rounds=7)
    ap.add_argument("--under-us", type=float, default=8.0)
    args = ap.parse_args()
    conditions = predecessors()
    with tempfile.TemporaryDirectory(prefix="fidelity-predecessor-") as work:
        store, recorder = record_transformer(Path(work), args.steps)
        recording = recorder.recording
        chosen = [s for s in select_signatures(recording, top=40)
                  if s.time_per_launch_ms and s.time_per_launch_ms * 1e3 < args.under_us][:8]
        chosen, job = replay_job(Path(work), store, recording, chosen, args.rounds)
        print(f"{'kernel':50} {'recorded':>8} " + " ".join(f"{c:>7}" for c in conditions), flush=True)
        for signature, entry in zip(chosen, job["signatures"]):
            times = [replay_with(c, queued, job, entry, store, Path(work)) for c, queued in conditions.items()]
            print(f"{signature.kernel[:50]:50} {signature.time_per_launch_ms * 1e3:8.2f} "
                  + " ".join(f"{t:7.2f}" for t, _ in times), flush=True)
            print(f"{'  lead (hold end -> kernel start)':50} {'':8} " + " ".join(f"{lead:7.2f}" for _, lead in times),
                  flush=True)


if __name__ == "__main__":
    main()
