"""Does an empty kernel timed right after each timed kernel carry the same launch lead, so that kernel time less
empty time agrees between workload and replay where the raw times do not? (issue 15's fidelity; docs/notes.md
§15's next step.)

The recorder and the replay's timer are patched alike: after a timed kernel's end event they queue a start event,
an empty kernel (`torch.cuda._sleep(1)`: one spin cycle, not a Triton kernel, so neither traced nor recorded) and
an end event. Records `queued_adds.py` (a launch-bound add and one queued behind a spin), `small_adds.py` and the
transformer's training step in this process, replays the signatures making 90% of each one's GPU time in-process
(`--l2 measured`), and prints per signature: the kernel's and the empty kernel's times inside the workload and
in the replay (µs), replay / workload raw and net of the empty kernel; then per workload how many are within
±10% each way. `--spin-cycles N` times a spin of N cycles instead of the empty kernel and prints the SM clock
it implies (MHz = N / µs) inside the workload and in the replay.

    cd experiments && PYTHONPATH=.. python fidelity_net.py [--steps 10] [--rounds 7] [--spin-cycles 20000]

Its figures in docs/notes.md §15 were taken before commit af7d18d, where the recorder and the replay began to queue an empty
kernel after each timed kernel themselves (`ab.timing.time_empty_kernel`); on later code the recording carries
two empty kernels after each timed kernel, this script's and the recorder's.
"""

from __future__ import annotations

import collections
import statistics
import tempfile
import time
from pathlib import Path

import torch

from tritonhook.ab import timing
from tritonhook.sweep import worker
from tritonhook.sweep.record import Recorder
from tritonhook.sweep.result import FIDELITY_TOLERANCE

from fidelity_common import making_most_time, parser, record_in_process, record_transformer, replay_job
import queued_adds  # noqa: E402  (fidelity_common put experiments/sweep_workloads on the path)
import small_adds  # noqa: E402


SPIN_CYCLES = [1]
"""The spin timed after each kernel: 1 cycle (an empty kernel) unless `--spin-cycles` says otherwise."""


def timed_empty() -> tuple:
    """Queue start event, the spin (`SPIN_CYCLES`), end event; the event pair."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(SPIN_CYCLES[0])
    end.record()
    return start, end


def recorded_empty(run) -> tuple[dict, object]:
    """Run `run()` (which records) with the recorder timing an empty kernel after each timed kernel; signature id
    -> the empty kernel's event pairs, and what `run` returned."""
    empties, original = collections.defaultdict(list), Recorder.on_launched

    def on_launched(self, token):
        original(self, token)
        empties[token[0].signature.id].append(timed_empty())

    Recorder.on_launched = on_launched
    try:
        returned = run()
    finally:
        Recorder.on_launched = original
    torch.cuda.synchronize()
    return {sid: statistics.median(a.elapsed_time(b) for a, b in pairs) for sid, pairs in empties.items()}, returned


def timed_calls_with_empty(empties: list):
    """The product's `_timed_calls` loop (one hold a round, arms alternating) with an empty kernel timed after
    every call; its times go to `empties`."""
    def timed_calls(torch_, arms, sets, count, before_call=None, _product_empties=None):
        events = [[(torch_.cuda.Event(enable_timing=True), torch_.cuda.Event(enable_timing=True)) for _ in arms]
                  for _ in range(count)]
        after = []
        host_us = timing.HOLD_EXTRA_US
        stride = max(1, len(sets) // len(arms))
        for i, pairs in enumerate(events):
            timing.hold_stream(torch_, timing.HOLD_MARGIN * host_us + timing.HOLD_EXTRA_US)
            queued_from = time.perf_counter()
            for arm in (range(len(arms)) if i % 2 == 0 else reversed(range(len(arms)))):
                (enter, fn), (begin, finish) = arms[arm], pairs[arm]
                inputs = sets[(i + arm * stride) % len(sets)]
                if before_call is not None:
                    before_call(inputs)
                with enter():
                    begin.record()
                    fn(*inputs)
                    finish.record()
                after.append(timed_empty())
            host_us = (time.perf_counter() - queued_from) * 1e6
        torch_.cuda.synchronize()
        empties.extend(a.elapsed_time(b) for a, b in after)
        return [[pairs[a][0].elapsed_time(pairs[a][1]) for pairs in events] for a in range(len(arms))]

    return timed_calls


def replayed(job, entry, store, work) -> tuple[float, float]:
    """The kernel's replayed ms (median of the round figures, as the product) and the empty kernel's (median)."""
    empties, original = [], timing._timed_calls
    timing._timed_calls = timed_calls_with_empty(empties)
    try:
        samples = worker.replay_signature(torch, job, entry, store, work)["samples"]["plain"]
    finally:
        timing._timed_calls = original
    return statistics.median(samples), statistics.median(empties)


def compare(name: str, work: Path, store, recording, empty_ms: dict, rounds: int) -> None:
    chosen = making_most_time(recording)
    chosen, job = replay_job(work, store, recording, chosen, rounds, l2="measured")
    print(f"\n== {name}")
    print(f"{'kernel':40} {'share':>5} {'rec':>6} {'rec e':>6} {'rep':>6} {'rep e':>6} {'raw':>6} {'net':>6}")
    raw, net, replay_empties = [], [], []
    for signature, entry in zip(chosen, job["signatures"]):
        kernel_ms, replay_empty_ms = replayed(job, entry, store, work)
        replay_empties.append(replay_empty_ms)
        recorded_ms, recorded_empty_ms = signature.time_per_launch_ms, empty_ms.get(signature.id, float("nan"))
        raw.append(kernel_ms / recorded_ms)
        net.append((kernel_ms - replay_empty_ms) / (recorded_ms - recorded_empty_ms))
        print(f"{signature.kernel[:40]:40} {100 * recording.share(signature):5.1f} {recorded_ms * 1e3:6.2f} "
              f"{recorded_empty_ms * 1e3:6.2f} {kernel_ms * 1e3:6.2f} {replay_empty_ms * 1e3:6.2f} {raw[-1]:6.3f} "
              f"{net[-1]:6.3f}", flush=True)
    if SPIN_CYCLES[0] > 1:
        print(f"{name} SM clock from the spin, MHz: inside the workload "
              f"{SPIN_CYCLES[0] / (statistics.median(empty_ms.values()) * 1e3):.0f}, in the replay "
              f"{SPIN_CYCLES[0] / (statistics.median(replay_empties) * 1e3):.0f}")
    for label, ratios in (("raw", raw), ("net", net)):
        within = sum(abs(r - 1) <= FIDELITY_TOLERANCE for r in ratios)
        print(f"{name} {label}: {within} of {len(ratios)} within ±{FIDELITY_TOLERANCE:.0%}, "
              f"median {statistics.median(ratios):.3f}", flush=True)


def main() -> None:
    ap = parser(__doc__, rounds=7)
    ap.add_argument("--spin-cycles", type=int, default=1)
    args = ap.parse_args()
    SPIN_CYCLES[0] = args.spin_cycles
    with tempfile.TemporaryDirectory(prefix="fidelity-net-") as work:
        for name, run in (("queued_adds", queued_adds.main), ("small_adds", small_adds.main)):
            folder = Path(work) / name
            empty_ms, (store, recorder) = recorded_empty(lambda: record_in_process(folder, run))
            compare(name, folder, store, recorder.recording, empty_ms, args.rounds)
        folder = Path(work) / "transformer"
        empty_ms, (store, recorder) = recorded_empty(lambda: record_transformer(folder, args.steps))
        compare("transformer", folder, store, recorder.recording, empty_ms, args.rounds)


if __name__ == "__main__":
    main()
