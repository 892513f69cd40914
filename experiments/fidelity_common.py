"""What the fidelity experiments share (issue 15; docs/notes.md sections 10-14): the transformer's training step
(experiments/sweep_workloads/inductor_transformer.py) recorded in this process, and recorded signatures built and
written as a job for the replay worker's own `replay_signature`, so that an experiment replays them in-process,
under a profiler or with a part of the timer swapped; and what CUPTI saw around the stream holds."""

from __future__ import annotations

import argparse
import collections
import contextlib
import statistics
import sys
import types
from pathlib import Path

import torch

from tritonhook._triton import inductor_launches_through_triton
from tritonhook.ab.variants import Variant
from tritonhook.store import Store
from tritonhook.sweep import record
from tritonhook.sweep.recording import Recording, Signature
from tritonhook.sweep.replay import _build_all, _write_job
from tritonhook.sweep.result import FIDELITY_COVERAGE

sys.path.insert(0, str(Path(__file__).parent / "sweep_workloads"))
import inductor_transformer  # noqa: E402


def transformer(warmup: int = 3):
    """The transformer built and warmed up (`warmup` steps, outside any recording; with 0 it compiles in its first
    recorded step, as under `tritonhook record`): a `step()` to record."""
    with inductor_launches_through_triton():  # Inductor's static launcher would bypass the recorder's tracer
        workload = inductor_transformer.build()
        for _ in range(warmup):
            inductor_transformer.step(*workload)
        torch.cuda.synchronize()
    return lambda: inductor_transformer.step(*workload)


def parser(doc: str, rounds: int | None) -> argparse.ArgumentParser:
    """The options the transformer experiments share: steps recorded and (unless `rounds` is None, for one that
    does not replay in rounds) replay rounds, default `rounds`."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=10)
    if rounds is not None:
        ap.add_argument("--rounds", type=int, default=rounds)
    return ap


def record_transformer(work: Path, steps: int, *, beside=None, warmup: int = 3):
    """The transformer built and warmed up (`transformer`), then `steps` of its training steps recorded into a store
    under `work` (`record_in_process`); the store and the recorder."""
    step = transformer(warmup)
    return record_in_process(work, lambda: [step() for _ in range(steps)], beside=beside)


def record_in_process(work: Path, run, *, beside=None):
    """Record `run()` into a store under `work` (with `beside`, another context manager such as a profiler, open
    around the same run); the store and the recorder."""
    store = Store(work / "store")
    with record(store) as recorder, (beside if beside is not None else contextlib.nullcontext()):
        run()
        torch.cuda.synchronize()
    return store, recorder


def replay_job(work: Path, store: Store, recording: Recording, signatures: list[Signature], rounds: int,
               l2: str = "cold") -> tuple[list[Signature], dict]:
    """The signatures that built (plain only) and their replay job, entries in the same order."""
    built = _build_all(store, signatures, [Variant("plain", None)], (), collections.defaultdict(types.SimpleNamespace))
    chosen = [s for s in signatures if s.id in built]
    job = _write_job(work, recording, store, chosen, built, rounds)
    job["l2"] = l2
    return chosen, job


def making_most_time(recording: Recording, coverage: float = FIDELITY_COVERAGE) -> list[Signature]:
    """The signatures making `coverage` of the recorded GPU time, largest share first (the fidelity bar's set)."""
    chosen, covered = [], 0.0
    for signature in sorted((s for s in recording.signatures if recording.share(s)), key=lambda s: -recording.share(s)):
        if covered >= coverage - 1e-9:
            break
        covered += recording.share(signature)
        chosen.append(signature)
    return chosen


def after_holds(prof, kernel: str) -> list[tuple[float, float]]:
    """Each launch of `kernel` that CUPTI (a torch.profiler `prof`) saw right after a stream hold (torch's
    `spin_kernel`, `ab.timing.hold_stream`): (its lead, hold end -> its start; its own duration), µs."""
    kernels = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                     key=lambda e: e.time_range.start)
    return [(this.time_range.start - hold.time_range.end, this.time_range.elapsed_us())
            for hold, this in zip(kernels, kernels[1:]) if this.name == kernel and "spin" in hold.name.lower()]


def median_or_nan(values) -> float:
    return statistics.median(values) if values else float("nan")
