"""How much of the replay's excess over the workload is launch lead? (issue 15's fidelity; docs/notes.md §15.)

The recording and the replay queue an empty kernel after every kernel they time (`ab.timing.time_empty_kernel`)
and keep its time: `Signature.empty_ms` inside the workload, the worker's `empty_ms` in the replay. This records
`queued_adds.py` (a launch-bound add and one queued behind a spin), `small_adds.py` and the transformer's training
step in this process, replays the signatures making 90% of each one's GPU time in-process (`--l2 measured`), and
prints per signature: the kernel's and the empty kernel's times inside the workload and in the replay (µs),
replay / workload as it is and with the empty kernel's difference taken out; then per workload how many are within
±10% each way.

    cd experiments && PYTHONPATH=.. python fidelity_net.py [--steps 10] [--rounds 7] [--without-too [--passes 2]]

`--without-too`: each workload is also recorded and replayed with no empty kernel anywhere (the product's
`time_empty_kernel` patched to queue nothing), alternately with it, so that what the empty kernel itself does to
replay / workload shows side by side.

The figures of docs/notes.md §15 that precede commit af7d18d came from an earlier form of this script, which
patched the empty kernel into the recorder and the replay's loop itself (then also as a 20,000-cycle spin, to
read the SM clock).
"""

from __future__ import annotations

import contextlib
import statistics
import tempfile
from pathlib import Path

import torch

from tritonhook.ab import timing
from tritonhook.sweep import record, worker
from tritonhook.sweep.result import FIDELITY_TOLERANCE

from fidelity_common import making_most_time, parser, record_in_process, record_transformer, replay_job
import queued_adds  # noqa: E402  (fidelity_common put experiments/sweep_workloads on the path)
import small_adds  # noqa: E402


@contextlib.contextmanager
def without_empty_kernel():
    """The recorder and the replay's timer queue no empty kernel after the kernels they time."""
    original = timing.time_empty_kernel
    timing.time_empty_kernel = record.time_empty_kernel = lambda torch_: None
    try:
        yield
    finally:
        timing.time_empty_kernel = record.time_empty_kernel = original


def compare(name: str, work: Path, store, recording, rounds: int) -> None:
    chosen, job = replay_job(work, store, recording, making_most_time(recording), rounds, l2="measured")
    print(f"\n== {name}")
    print(f"{'kernel':40} {'share':>5} {'rec':>6} {'rec e':>6} {'rep':>6} {'rep e':>6} {'raw':>6} {'net':>6}")
    raw, net = [], []
    for signature, entry in zip(chosen, job["signatures"]):
        replayed = worker.replay_signature(torch, job, entry, store, work)
        kernel_ms = statistics.median(replayed["samples"]["plain"])
        recorded_empty_ms, replayed_empty_ms = signature.empty_ms or 0.0, replayed["empty_ms"] or 0.0
        recorded_ms, lead_ms = signature.time_per_launch_ms, replayed_empty_ms - recorded_empty_ms
        raw.append(kernel_ms / recorded_ms)
        net.append((kernel_ms - lead_ms) / recorded_ms)
        print(f"{signature.kernel[:40]:40} {100 * recording.share(signature):5.1f} {recorded_ms * 1e3:6.2f} "
              f"{recorded_empty_ms * 1e3:6.2f} {kernel_ms * 1e3:6.2f} {replayed_empty_ms * 1e3:6.2f} "
              f"{raw[-1]:6.3f} {net[-1]:6.3f}", flush=True)
    for label, ratios in (("raw", raw), ("net", net)):
        within = sum(abs(r - 1) <= FIDELITY_TOLERANCE for r in ratios)
        print(f"{name} {label}: {within} of {len(ratios)} within ±{FIDELITY_TOLERANCE:.0%}, "
              f"median {statistics.median(ratios):.3f}", flush=True)


def main() -> None:
    ap = parser(__doc__, rounds=7)
    ap.add_argument("--without-too", action="store_true")
    ap.add_argument("--passes", type=int, default=1, help="with --without-too: each pass flips the order")
    args = ap.parse_args()
    ways = [("", contextlib.nullcontext)] + ([(" without", without_empty_kernel)] if args.without_too else [])
    with tempfile.TemporaryDirectory(prefix="fidelity-net-") as work:
        for name, run in (("queued_adds", queued_adds.main), ("small_adds", small_adds.main),
                          ("transformer", None)):
            runs = [way for flip in range(args.passes) for way in (ways[::-1] if flip % 2 else ways)]
            for index, (suffix, way) in enumerate(runs):
                folder = Path(work) / f"{name}{index}"
                with way():
                    store, recorder = (record_transformer(folder, args.steps) if run is None
                                       else record_in_process(folder, run))
                    compare(name + suffix, folder, store, recorder.recording, args.rounds)


if __name__ == "__main__":
    main()
