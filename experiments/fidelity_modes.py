"""Which part of the replay's timing makes small kernels slower than inside the workload? (issue 15's fidelity;
docs/notes.md §15.)

Records `small_adds.py` (launch-bound, inputs in L2) and the transformer's training step in this process, and
replays the signatures making 90% of each one's GPU time in-process (the worker's own `replay_signature`) in each
of `--modes`:
- measured, warm, cold: the product's `--l2` modes as they are;
- warm + reads: `--l2 measured`'s reads into L2 before each call, on one input set (no rotation through copies);
- 2 sets: `--l2 measured` rotating through at most 2 copies of the inputs (the product: enough for 4x the L2);
- reads first (`--l2 measured`): each round's L2 reads, then the stream hold, then the arms' start event, kernel
  and end event. The product holds the stream once a round and then, per arm, reads, start event, kernel: every
  timed kernel follows a read kernel (or the other arm's kernel), where inside the workload the recorder queues the
  L2 probe, a hold, the start event, the kernel;
- hold each (`--l2 measured`): per call the reads, a hold sized from that call's host time, start event, kernel,
  end event (the recorder's own order);
- reads + spin (`--l2 measured`): a one-cycle spin kernel queued after each call's reads, so that the kernel just
  before the start event is a spin, as in cold (the round's hold or the other arm's empty kernel) and inside the
  workload (the recorder's hold), not a read kernel (docs/notes.md §16).
Its figures in docs/notes.md §15 were taken before commit af7d18d, where the replay began to queue an empty kernel
after each call; its loops now do as the product's. Prints replay / workload per signature and mode (median over
`--passes`, modes alternating), how many are within ±10% and the median, per workload.

    cd experiments && PYTHONPATH=.. python fidelity_modes.py [--modes measured,warm] [--rounds 7] [--passes 2]
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
    def timed_calls(torch_, arms, sets, count, before_call=None, empties=None):
        events = [[(torch_.cuda.Event(enable_timing=True), torch_.cuda.Event(enable_timing=True)) for _ in arms]
                  for _ in range(count)]
        host_us = timing.HOLD_EXTRA_US
        stride = max(1, len(sets) // len(arms))
        after = []
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
                if empties is not None and (empty := timing.time_empty_kernel(torch_)) is not None:
                    after.append((arm, empty))
                if hold_each:
                    host_us = (time.perf_counter() - queued_from) * 1e6
            if not hold_each:
                host_us = (time.perf_counter() - queued_from) * 1e6
        torch_.cuda.synchronize()
        for arm, (begin, finish) in after:
            empties[arm].append(begin.elapsed_time(finish))
        return [[pairs[a][0].elapsed_time(pairs[a][1]) for pairs in events] for a in range(len(arms))]

    return timed_calls


PRODUCT_READS = worker._read_into_l2


def reads_then_spin(torch_, ranges, buffers) -> None:
    """The product's reads into L2 before a call, then a one-cycle spin kernel ("reads + spin")."""
    PRODUCT_READS(torch_, ranges, buffers)
    torch_.cuda._sleep(1)


MODES = {"measured": ("measured", None, True, None, None), "warm": ("warm", None, False, None, None),
         "cold": ("cold", None, True, None, None), "warm + reads": ("measured", None, False, None, None),
         "2 sets": ("measured", None, True, 2, None), "reads first": ("measured", reordered(False), True, None, None),
         "hold each": ("measured", reordered(True), True, None, None),
         "reads + spin": ("measured", None, True, None, reads_then_spin)}
"""name -> (the job's `l2`, the `_timed_calls` to use instead of the product's, whether inputs rotate, at most
how many input sets they rotate through, the reads into L2 to use instead of the product's)."""


def replayed_ms(job, entry, store, work, mode: str) -> float:
    l2, timed_calls, rotate, most_sets, reads = MODES[mode]
    original_calls, original_bench, original_sets = timing._timed_calls, worker.bench_interleaved, timing.rotation_sets
    worker._read_into_l2 = reads or PRODUCT_READS
    timing._timed_calls = timed_calls or original_calls
    worker.bench_interleaved = lambda *args, **kwargs: original_bench(*args, **{**kwargs, "rotate": rotate})
    if most_sets is not None:
        timing.rotation_sets = lambda *args, **kwargs: min(most_sets, original_sets(*args, **kwargs))
    job["l2"] = l2
    try:
        return statistics.median(worker.replay_signature(torch, job, entry, store, work)["samples"]["plain"])
    finally:
        timing._timed_calls, worker.bench_interleaved = original_calls, original_bench
        timing.rotation_sets, worker._read_into_l2 = original_sets, PRODUCT_READS


def compare(name: str, work: Path, store, recording, modes: list[str], rounds: int, passes: int) -> None:
    chosen = making_most_time(recording)
    covered = sum(recording.share(s) for s in chosen)
    chosen, job = replay_job(work, store, recording, chosen, rounds)
    ratios: dict[str, list[list[float]]] = {mode: [[] for _ in chosen] for mode in modes}
    for index in range(passes):
        for mode in (modes if index % 2 == 0 else modes[::-1]):
            for at, (signature, entry) in enumerate(zip(chosen, job["signatures"])):
                ms = replayed_ms(job, entry, store, work, mode)
                ratios[mode][at].append(ms / signature.time_per_launch_ms)
    print(f"\n== {name}: {len(chosen)} signatures, {covered:.1%} of the GPU time")
    print(f"{'kernel':46} {'share':>5} {'µs':>6} {'behind':>6} " + " ".join(f"{m:>12}" for m in modes))
    for at, signature in enumerate(chosen):
        cells = " ".join(f"{statistics.median(ratios[m][at]):12.3f}" for m in modes)
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
    ap.add_argument("--modes", default="measured,warm,cold,warm + reads", help=f"of: {', '.join(MODES)}")
    args = ap.parse_args()
    modes = args.modes.split(",")
    if unknown := set(modes) - set(MODES):
        ap.error(f"--modes: unknown {', '.join(sorted(unknown))}")
    with tempfile.TemporaryDirectory(prefix="fidelity-order-") as work:
        adds = Path(work) / "adds"
        store, recorder = record_in_process(adds, small_adds.main)
        compare("small_adds", adds, store, recorder.recording, modes, args.rounds, args.passes)
        step = Path(work) / "transformer"
        store, recorder = record_transformer(step, args.steps)
        compare("transformer", step, store, recorder.recording, modes, args.rounds, args.passes)


if __name__ == "__main__":
    main()
