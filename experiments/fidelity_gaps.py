"""Where, around a small kernel, does the workload save the ~0.5 µs that every replay spends? (issue 15's
fidelity; docs/notes.md §10-§14.) The recorder and the replay both queue: a stream hold (a one-CTA spin kernel),
the start event, the kernel, the end event. CUPTI (torch.profiler) stamps each kernel's start and end on the GPU,
so for each timed call of a small kernel it gives the gap from the hold's end to the kernel's start (what the
start event and the launch cost) and the kernel's duration; the events' reading minus both is what the end side
costs. This records experiments/sweep_workloads/inductor_transformer.py's training step under the profiler, then
replays the small signatures cold in this process under it, and prints per signature the medians, µs, of: the
events' time, hold end -> kernel start, the kernel, for the workload and the replay.

    PYTHONPATH=$PWD python experiments/fidelity_gaps.py [--under-us 8]
"""

from __future__ import annotations

import collections
import statistics
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from tritonhook.sweep import select_signatures, worker

from fidelity_common import after_holds, median_or_nan, parser, record_transformer, replay_job


def medians(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    """The median lead and the median duration of `after_holds`' pairs (nan where none)."""
    return median_or_nan([lead for lead, _ in pairs]), median_or_nan([run for _, run in pairs])


def main() -> None:
    ap = parser(__doc__, rounds=5)
    ap.add_argument("--under-us", type=float, default=8.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fidelity-gaps-") as work:
        prof = profile(activities=[ProfilerActivity.CUDA])
        store, recorder = record_transformer(Path(work), args.steps, beside=prof)
        recording = recorder.recording
        names = collections.Counter(s.kernel for s in recording.signatures)
        chosen = [s for s in select_signatures(recording, top=40) if names[s.kernel] == 1
                  and s.time_per_launch_ms and s.time_per_launch_ms * 1e3 < args.under_us][:12]
        chosen, job = replay_job(Path(work), store, recording, chosen, args.rounds)
        spin = sorted({e.name for e in prof.events() if "spin" in e.name.lower()})
        print("hold kernels seen:", spin)
        print(f"{'kernel':46} {'events':>6} {'lead':>6} {'kernel':>6} | {'events':>6} {'lead':>6} {'kernel':>6}  "
              "(workload | replay, µs)", flush=True)
        for signature, entry in zip(chosen, job["signatures"]):
            with profile(activities=[ProfilerActivity.CUDA]) as replay_prof:
                outcome = worker.replay_signature(torch, job, entry, store, Path(work))
            cells = [signature.time_per_launch_ms * 1e3, *medians(after_holds(prof, signature.kernel)),
                     statistics.median(outcome["samples"]["plain"]) * 1e3,
                     *medians(after_holds(replay_prof, signature.kernel))]
            print(f"{signature.kernel[:46]:46} " + " ".join(f"{c:6.2f}" for c in cells[:3]) + " | "
                  + " ".join(f"{c:6.2f}" for c in cells[3:]), flush=True)


if __name__ == "__main__":
    main()
