"""Which replay reproduces the transformer's small kernels' times inside the workload? (issue 15's fidelity;
docs/notes.md §14.) Records experiments/sweep_workloads/inductor_transformer.py's training step, then replays the
signatures making 90% of its GPU time in this process (the replay worker's `replay_signature`), `--l2` cold and
measured, each: as the replay runs ("paced": hundreds of timed calls a round, the host queueing as the GPU runs),
with only `MIN_REPS` timed calls a round ("few"), and cold with every batch of timed calls queued behind a 50 ms
spin ("behind"). Prints replay / workload per signature and mode, and how many are within ±10%. `--worker
subprocess` replays through the sweep's own worker processes instead (a fresh process, as `tritonhook replay`
does; "behind" needs this process).

    PYTHONPATH=$PWD python experiments/fidelity_queue.py [--steps 10] [--rounds 7] [--worker subprocess]
"""

from __future__ import annotations

import collections
import statistics
import tempfile
from pathlib import Path

import torch

from tritonhook.ab import timing
from tritonhook.sweep import worker
from tritonhook.sweep.schedule import run_workers
from tritonhook.sweep.result import FIDELITY_TOLERANCE

from fidelity_common import making_most_time, parser, record_transformer, replay_job


MODES = [("cold", "paced"), ("cold", "few"), ("cold", "behind"), ("measured", "paced"), ("measured", "few")]


def replayed_ms(job, entry, store, work, queue: str) -> float:
    original = timing._timed_calls

    def behind(torch_, *args, **kwargs):
        torch_.cuda._sleep(100_000_000)
        return original(torch_, *args, **kwargs)

    timing._timed_calls = behind if queue == "behind" else original
    rep_ms = job["rep_ms"]
    if queue == "few":  # paced, but only min_reps calls per round, as "behind" ends up with
        job["rep_ms"] = 1e-3
    try:
        return statistics.median(worker.replay_signature(torch, job, entry, store, work)["samples"]["plain"])
    finally:
        timing._timed_calls = original
        job["rep_ms"] = rep_ms


def subprocess_medians(work: Path, job: dict, l2: str, queue: str) -> dict[int, float]:
    """Signature id -> the plain variant's median ms, replayed by the sweep's worker processes (`run_workers`)."""
    results = run_workers(work, {**job, "l2": l2, "rep_ms": 1e-3 if queue == "few" else job["rep_ms"]})
    return {sid: statistics.median(result["samples"]["plain"]) for sid, result in results.items()
            if result["status"] == "ok"}


def main() -> None:
    ap = parser(__doc__, rounds=7)
    ap.add_argument("--worker", choices=("in-process", "subprocess"), default="in-process")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fidelity-queue-") as work:
        store, recorder = record_transformer(Path(work), args.steps)
        recording = recorder.recording
        chosen = making_most_time(recording)
        covered = sum(recording.share(s) for s in chosen)
        chosen, job = replay_job(Path(work), store, recording, chosen, args.rounds)
        modes = MODES if args.worker == "in-process" else [m for m in MODES if m[1] != "behind"]
        if args.worker == "subprocess":  # the sweep's own worker processes, one call per mode over all signatures
            replayed = {mode: subprocess_medians(Path(work), job, *mode) for mode in modes}
        print(f"{'kernel':46} {'share':>5} {'µs':>6} " + " ".join(f"{l2[:4]}/{q:6}" for l2, q in modes), flush=True)
        ratios = collections.defaultdict(list)
        for signature, entry in zip(chosen, job["signatures"]):
            cells = []
            for l2, queue in modes:
                job["l2"] = l2
                ms = (replayed_ms(job, entry, store, Path(work), queue) if args.worker == "in-process"
                      else replayed[(l2, queue)][signature.id])
                ratios[(l2, queue)].append(ms / signature.time_per_launch_ms)
                cells.append(ms / signature.time_per_launch_ms)
            print(f"{signature.kernel[:46]:46} {100 * recording.share(signature):5.1f} "
                  f"{signature.time_per_launch_ms * 1e3:6.2f} " + " ".join(f"{c:11.3f}" for c in cells), flush=True)
        for mode, values in ratios.items():
            within = sum(abs(r - 1) <= FIDELITY_TOLERANCE for r in values)
            print(f"{mode[0]:8} {mode[1]:6}: {within} of {len(values)} within ±{FIDELITY_TOLERANCE:.0%} "
                  f"({covered:.1%} of the GPU time), median {statistics.median(values):.3f}")


if __name__ == "__main__":
    main()
