"""Does the order of the replay's stream hold, L2 reads and start event explain the small kernels' gap? (issue 15's
fidelity; docs/notes.md §15.)

Inside the workload the recorder queues, per timed launch: the L2 probe, a stream hold, the start event, the kernel.
The replay (`ab.timing._timed_calls`, `--l2 measured`) queues one hold per round and then, per arm, the L2 reads
(`before_call`), the start event, the kernel: every timed kernel follows a read kernel (or the other arm's
kernel), never the hold. This records `small_adds.py` (launch-bound, inputs in L2) and the transformer's training
step in this process, and replays the signatures making 90% of each one's GPU time in-process (the worker's own
`replay_signature`, `--l2 measured`) with the timer's loop swapped:
- as is: the product's loop;
- reads first: each round's L2 reads, then the hold, then the arms' start event, kernel, end event;
- hold each: per call the L2 reads, a hold sized from that call's host time, start event, kernel, end event (the
  recorder's own order).
Prints replay / workload per signature and mode (median over `--passes`, modes alternating), how many are within
±10% and the median, per workload.

    PYTHONPATH=$PWD python experiments/fidelity_order.py [--steps 10] [--rounds 7] [--passes 2]
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import torch

from tritonhook.ab import timing
from tritonhook.sweep import worker
from tritonhook.sweep.result import FIDELITY_TOLERANCE

from fidelity_common import making_most_time, parser, record_in_process, record_transformer, replay_job
import small_adds  # noqa: E402  (fidelity_common put experiments/sweep_workloads on the path)


def reordered(hold_each: bool):
    """`_timed_calls` with the reads of a round before its hold (`hold_each` False) or a hold before every call,
    after that call's reads (True); the arms' order and input sets as the product's."""
    def timed_calls(torch_, arms, sets, count, before_call=None):
        events = [[(torch_.cuda.Event(enable_timing=True), torch_.cuda.Event(enable_timing=True)) for _ in arms]
                  for _ in range(count)]
        host_us = timing.HOLD_EXTRA_US
        stride = max(1, len(sets) // len(arms))
        for i, pairs in enumerate(events):
            order = list(range(len(arms))) if i % 2 == 0 else list(reversed(range(len(arms))))
            inputs = {arm: sets[(i + arm * stride) % len(sets)] for arm in order}
            if not hold_each:
                for arm in order:
                    if before_call is not None:
                        before_call(inputs[arm])
                timing.hold_stream(torch_, timing.HOLD_MARGIN * host_us + timing.HOLD_EXTRA_US)
            queued_from = time.perf_counter()
            for arm in order:
                (enter, fn), (begin, finish) = arms[arm], pairs[arm]
                if hold_each:
                    if before_call is not None:
                        before_call(inputs[arm])
                    queued_from = time.perf_counter()
                    timing.hold_stream(torch_, timing.HOLD_MARGIN * host_us + timing.HOLD_EXTRA_US)
                with enter():
                    begin.record()
                    fn(*inputs[arm])
                    finish.record()
                if hold_each:
                    host_us = (time.perf_counter() - queued_from) * 1e6
            if not hold_each:
                host_us = (time.perf_counter() - queued_from) * 1e6
        torch_.cuda.synchronize()
        return [[pairs[a][0].elapsed_time(pairs[a][1]) for pairs in events] for a in range(len(arms))]

    return timed_calls


MODES = {"as is": timing._timed_calls, "reads first": reordered(False), "hold each": reordered(True)}


def replayed_ms(job, entry, store, work, mode: str) -> float:
    original = timing._timed_calls
    timing._timed_calls = MODES[mode]
    try:
        return statistics.median(worker.replay_signature(torch, job, entry, store, work)["samples"]["plain"])
    finally:
        timing._timed_calls = original


def compare(name: str, work: Path, store, recording, rounds: int, passes: int) -> None:
    chosen = making_most_time(recording)
    covered = sum(recording.share(s) for s in chosen)
    chosen, job = replay_job(work, store, recording, chosen, rounds, l2="measured")
    ratios: dict[str, list[list[float]]] = {mode: [[] for _ in chosen] for mode in MODES}
    for index in range(passes):
        for mode in (list(MODES) if index % 2 == 0 else list(MODES)[::-1]):
            for at, (signature, entry) in enumerate(zip(chosen, job["signatures"])):
                ms = replayed_ms(job, entry, store, work, mode)
                ratios[mode][at].append(ms / signature.time_per_launch_ms)
    print(f"\n== {name}: {len(chosen)} signatures, {covered:.1%} of the GPU time")
    print(f"{'kernel':46} {'share':>5} {'µs':>6} {'behind':>6} " + " ".join(f"{m:>11}" for m in MODES))
    for at, signature in enumerate(chosen):
        cells = " ".join(f"{statistics.median(ratios[m][at]):11.3f}" for m in MODES)
        print(f"{signature.kernel[:46]:46} {100 * recording.share(signature):5.1f} "
              f"{signature.time_per_launch_ms * 1e3:6.2f} {signature.behind_ms or 0:6.2f} {cells}")
    for mode, per_signature in ratios.items():
        medians = [statistics.median(r) for r in per_signature]
        within = sum(abs(r - 1) <= FIDELITY_TOLERANCE for r in medians)
        print(f"{name} {mode:12}: {within} of {len(medians)} within ±{FIDELITY_TOLERANCE:.0%}, "
              f"median {statistics.median(medians):.3f}", flush=True)


def main() -> None:
    ap = parser(__doc__, rounds=7)
    ap.add_argument("--passes", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fidelity-order-") as work:
        adds = Path(work) / "adds"
        store, recorder = record_in_process(adds, small_adds.main)
        compare("small_adds", adds, store, recorder.recording, args.rounds, args.passes)
        step = Path(work) / "transformer"
        store, recorder = record_transformer(step, args.steps)
        compare("transformer", step, store, recorder.recording, args.rounds, args.passes)


if __name__ == "__main__":
    main()
