"""Where do the transformer's small Inductor kernels gain ~0.5 µs inside the workload over any replay of them?
(issue 15's fidelity; docs/notes.md §10: a 1-CTA kernel's event-timed floor is ~3.8 µs in every replay and in a
light workload, ~3.2-3.4 µs inside the transformer's training step.)

Records experiments/sweep_workloads/inductor_transformer.py's training step with `tritonhook.sweep.record` while
torch.profiler (CUPTI) traces the same steps, then replays the top recorded signatures in this process (the replay
worker's own `replay_signature`, plain only, in each `--l2` mode of `--modes`) under torch.profiler again. CUPTI's
kernel duration runs from the kernel's start to its end on the GPU: it leaves out the launch latency and the events
that the recorder and the replay put around each timed call. Per signature (kernels recorded under one signature only,
so that CUPTI's per-name durations belong to it) it prints the medians, µs: events in the workload, CUPTI in the
workload, then events and CUPTI in each replay. If CUPTI agrees between workload and replay while the events do
not, the difference lies in what the events bracket besides the kernel; if CUPTI differs too, the kernel itself
runs faster inside the workload.

    PYTHONPATH=$PWD python experiments/fidelity_cupti.py [--steps 10] [--top 30] [--rounds 5] [--out cupti.json]
        [--modes cold,warm,measured]
"""

from __future__ import annotations

import collections
import json
import statistics
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from tritonhook.sweep import select_signatures
from tritonhook.sweep.worker import replay_signature

from fidelity_common import parser, record_transformer, replay_job


def cupti_us(prof) -> dict[str, list[float]]:
    """Kernel name -> CUPTI durations (µs) of every launch the profiler saw."""
    durations = collections.defaultdict(list)
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            durations[event.name].append(event.time_range.elapsed_us())
    return durations


def median_or_none(values):
    return statistics.median(values) if values else None


def main() -> None:
    ap = parser(__doc__, rounds=5)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--out", default="fidelity_cupti.json")
    ap.add_argument("--modes", default="cold,warm,measured", help="the replay's L2 modes (worker.py)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fidelity-cupti-") as work:
        prof = profile(activities=[ProfilerActivity.CUDA])
        store, recorder = record_transformer(Path(work), args.steps, beside=prof)
        recording = recorder.recording
        in_workload = cupti_us(prof)
        per_name = collections.Counter(s.kernel for s in recording.signatures)
        chosen = [s for s in select_signatures(recording, top=args.top) if per_name[s.kernel] == 1]
        built, job = replay_job(Path(work), store, recording, chosen, args.rounds)
        print(f"{len(recording.signatures)} signatures recorded, {len(chosen)} of the top {args.top} named by one "
              f"only, {len(built)} built; {sum(len(v) for v in in_workload.values())} kernels traced by CUPTI",
              flush=True)
        results = []
        for signature, entry in zip(built, job["signatures"]):
            row = dict(kernel=signature.kernel, share=recording.share(signature), launches=signature.launches,
                       workload_events_us=signature.time_per_launch_ms * 1e3,
                       workload_cupti_us=median_or_none(in_workload.get(signature.kernel, [])))
            for l2 in args.modes.split(","):
                job["l2"] = l2
                with profile(activities=[ProfilerActivity.CUDA]) as replay_prof:
                    outcome = replay_signature(torch, job, entry, store, Path(work))
                row[f"{l2}_events_us"] = statistics.median(outcome["samples"]["plain"]) * 1e3
                row[f"{l2}_cupti_us"] = median_or_none(cupti_us(replay_prof).get(signature.kernel, []))
            results.append(row)
            print_row(row, flush=True)
    Path(args.out).write_text(json.dumps(dict(device=torch.cuda.get_device_name(), steps=args.steps,
                                              rounds=args.rounds, rows=results), indent=1))
    print_summary(results, args.modes.split(","))


def print_row(row: dict, flush: bool = False) -> None:
    cells = [f"{value:7.2f}" if value is not None else "      -" for key, value in row.items() if key.endswith("_us")]
    print(f"{row['kernel'][:52]:52} {100 * (row['share'] or 0):5.1f}% " + " ".join(cells), flush=flush)


def print_summary(rows: list[dict], modes: list[str]) -> None:
    """Medians over the signatures of replay / workload, for the events and for CUPTI, and how many lie within
    ±10%."""
    print(f"{'kernel':52} {'share':>6} {'wl-ev':>7} {'wl-cu':>7} "
          + " ".join(f"{mode[:4] + '-' + what:>7}" for mode in modes for what in ("ev", "cu")))
    for row in rows:
        print_row(row)
    for l2 in modes:
        for what in ("events", "cupti"):
            ratios = [row[f"{l2}_{what}_us"] / row[f"workload_{what}_us"] for row in rows
                      if row[f"{l2}_{what}_us"] and row[f"workload_{what}_us"]]
            if ratios:
                within = sum(0.9 <= ratio <= 1.1 for ratio in ratios)
                print(f"{l2} replay / workload, {what}: median {statistics.median(ratios):.3f} over {len(ratios)} "
                      f"(range {min(ratios):.3f}-{max(ratios):.3f}), {within} within ±10%")
    first = modes[0]
    overheads = [(row["workload_events_us"] - row["workload_cupti_us"],
                  row[f"{first}_events_us"] - row[f"{first}_cupti_us"])
                 for row in rows if row["workload_cupti_us"] and row[f"{first}_cupti_us"]]
    if overheads:
        print(f"events - CUPTI, µs (what the events add to the kernel): workload median "
              f"{statistics.median(o[0] for o in overheads):.2f}, {first} replay median "
              f"{statistics.median(o[1] for o in overheads):.2f}")


if __name__ == "__main__":
    main()
