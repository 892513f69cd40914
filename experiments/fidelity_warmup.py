"""Do the in-process and the CLI fidelity figures differ because of when the recorder times, not the replay?
(issue 15's fidelity; docs/notes.md §16.)

The recorder times each signature's launches 2-9 (then one in 256). Under `tritonhook record` a 10-step run
compiles in its first step, so those launches fall in the first two or three steps; the in-process experiments warm
the transformer up for 3 steps before recording. This records the transformer's training step in this process once
per `--warmups` entry (steps run before the recording begins; 0 first, so that it compiles inside the recording as
the CLI's does), replays each recording's signatures making 90% of its GPU time in-process (`--l2 measured`), and
prints per signature found in every recording (by kernel, grid and tensor shapes): the recorded µs and replay /
workload per recording; then per recording how many are within ±10% and the median.

    cd experiments && PYTHONPATH=.. python fidelity_warmup.py [--warmups 0,3] [--steps 10] [--rounds 7]
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

import torch

from tritonhook.sweep import worker
from tritonhook.sweep.recording import tensors_of
from tritonhook.sweep.result import FIDELITY_TOLERANCE

from fidelity_common import making_most_time, parser, record_transformer, replay_job


def key(signature) -> tuple:
    """What identifies a signature across recordings: kernel, grid, tensor shapes."""
    return signature.kernel, tuple(signature.grid), tuple(tuple(t["shape"]) for t in tensors_of(signature.args))


def replayed(work: Path, warmup: int, steps: int, rounds: int) -> dict[tuple, tuple[float, float, float]]:
    """`key` -> (share, recorded ms, replayed ms) for the signatures making 90% of the GPU time of a recording made
    after `warmup` steps."""
    store, recorder = record_transformer(work, steps, warmup=warmup)
    recording = recorder.recording
    chosen, job = replay_job(work, store, recording, making_most_time(recording), rounds, l2="measured")
    return {key(signature): (recording.share(signature), signature.time_per_launch_ms,
                               statistics.median(worker.replay_signature(torch, job, entry, store, work)
                                                 ["samples"]["plain"]))
            for signature, entry in zip(chosen, job["signatures"])}


def main() -> None:
    ap = parser(__doc__, rounds=7)
    ap.add_argument("--warmups", default="0,3")
    args = ap.parse_args()
    warmups = [int(w) for w in args.warmups.split(",")]
    with tempfile.TemporaryDirectory(prefix="fidelity-warmup-") as work:
        runs = {w: replayed(Path(work) / f"warmup{w}", w, args.steps, args.rounds) for w in warmups}
    kernels = sorted(set.intersection(*(set(run) for run in runs.values())), key=lambda k: -runs[warmups[0]][k][0])
    print(f"{'kernel':46} {'share':>5} " + " ".join(f"{'rec µs w' + str(w):>10} {'ratio w' + str(w):>9}"
                                                    for w in warmups))
    for kernel in kernels:
        cells = " ".join(f"{runs[w][kernel][1] * 1e3:10.2f} {runs[w][kernel][2] / runs[w][kernel][1]:9.3f}"
                         for w in warmups)
        print(f"{kernel[0][:46]:46} {100 * runs[warmups[0]][kernel][0]:5.1f} {cells}")
    for w in warmups:
        ratios = [runs[w][k][2] / runs[w][k][1] for k in kernels]
        within = sum(abs(r - 1) <= FIDELITY_TOLERANCE for r in ratios)
        recorded = statistics.median(runs[w][k][1] / runs[warmups[0]][k][1] for k in kernels)
        print(f"warm-up {w}: {within} of {len(ratios)} within ±{FIDELITY_TOLERANCE:.0%}, median replay / workload "
              f"{statistics.median(ratios):.3f}; recorded time / warm-up {warmups[0]}'s: median {recorded:.3f}")


if __name__ == "__main__":
    main()
