"""Which workload context shortens a small kernel's launch? (issue 15's fidelity; docs/notes.md §14.) Inside the
transformer's training step the time from the recorder's stream hold to a small kernel's start is ~2.5 µs; in
every replay of it, ~3.2 µs. This records our 512-element add (`tritonhook.samples.add_kernel`) in several
contexts, one recording each, under torch.profiler, and replays each recording's add (cold, in this process)
under it too: as the replay runs (paced), with each batch of its timed calls queued behind a 50 ms spin (behind),
and with only `MIN_REPS` timed calls a round (few). Per context: the recorded and replayed event times, µs, and
CUPTI's hold end -> kernel start.

    adds         the add alone, 400 times
    gemm+add     an 8192^2 bf16 matmul then the add, 60 times
    behind       400 adds queued behind a 50 ms spin: the GPU far behind the host
    step+adds    the transformer's training step, then 20 adds, 8 times

    PYTHONPATH=$PWD python experiments/fidelity_context.py
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from tritonhook.ab import timing
from tritonhook.samples import add_kernel
from tritonhook.sweep import worker

from fidelity_common import after_holds, median_or_nan, record_in_process, replay_job, transformer

MODES = ("paced", "behind", "few")


def leads(prof) -> list[float]:
    return [lead for lead, _ in after_holds(prof, "add_kernel")]


def replay(job, store, work, *, mode: str):
    """The add's replay: "paced" as the replay runs; "behind": each batch of timed calls queued behind a 50 ms spin;
    "few": paced, with only the minimum of timed calls per round (`MIN_REPS`)."""
    original, rep_ms = timing._timed_calls, job["rep_ms"]

    def late(torch_, *args, **kwargs):
        torch_.cuda._sleep(100_000_000)
        return original(torch_, *args, **kwargs)

    timing._timed_calls = late if mode == "behind" else original
    job["rep_ms"] = 1e-3 if mode == "few" else rep_ms
    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            outcome = worker.replay_signature(torch, job, job["signatures"][0], store, work)
    finally:
        timing._timed_calls, job["rep_ms"] = original, rep_ms
    return statistics.median(outcome["samples"]["plain"]) * 1e3, prof


def main() -> None:
    x, y, out = (torch.randn(512, device="cuda") for _ in range(3))
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    step = transformer()

    def add():
        add_kernel[(1,)](x, y, out, 512, BLOCK=1024)

    def adds():
        for _ in range(400):
            add()

    def gemm_add():
        for _ in range(60):
            b @ b
            add()

    def behind():
        torch.cuda._sleep(100_000_000)
        adds()

    def step_adds():
        for _ in range(8):
            step()
            for _ in range(20):
                add()

    add()
    torch.cuda.synchronize()
    print(f"{'context':12} {'recorded':>8} {'lead':>6} | " + " | ".join(f"{m:>8} {'lead':>6}" for m in MODES),
          flush=True)
    for name, run in {"adds": adds, "gemm+add": gemm_add, "behind": behind, "step+adds": step_adds}.items():
        with tempfile.TemporaryDirectory(prefix="fidelity-context-") as work:
            prof = profile(activities=[ProfilerActivity.CUDA])
            store, recorder = record_in_process(Path(work), run, beside=prof)
            recording = recorder.recording
            (signature,), job = replay_job(Path(work), store, recording,
                                           [s for s in recording.signatures if s.kernel == "add_kernel"], 5)
            cells = [signature.time_per_launch_ms * 1e3, median_or_nan(leads(prof))]
            for mode in MODES:
                replayed, replay_prof = replay(job, store, Path(work), mode=mode)
                cells += [replayed, median_or_nan(leads(replay_prof))]
            print(f"{name:12} " + " | ".join(f"{cells[i]:8.2f} {cells[i + 1]:6.2f}" for i in range(0, len(cells), 2)),
                  flush=True)


if __name__ == "__main__":
    main()
