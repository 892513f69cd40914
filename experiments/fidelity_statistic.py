"""Is the small kernels' fidelity bias (docs/notes.md §10-§13: 3-6 µs Inductor kernels replay 1.05-1.16x their
time inside the workload in every L2 mode) a mismatch of statistics? (issue 15.)

The recording's figure per signature is the median of its 8-16 sampled launches; the replay's is the median over
rounds of each round's interquartile mean. For a right-skewed sample (a floor and a tail of slower calls) the
interquartile mean sits above the median. This records experiments/sweep_workloads/inductor_transformer.py's
training step, replays its top signatures cold in this process (the replay worker's own `replay_signature`,
plain only) keeping every timed call, and prints per signature the recorded and replayed samples' quantiles and
the replay / workload ratio under four pairings of statistics, then how many of the signatures making 90% of the
GPU time fall within ±10% under each.

    PYTHONPATH=$PWD python experiments/fidelity_statistic.py [--steps 10] [--top 45] [--rounds 21] [--out stat.json]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

import torch

from tritonhook.ab.stats import interquartile_mean, median, quantile
from tritonhook.store import Store
from tritonhook.sweep import select_signatures, worker
from tritonhook.sweep.result import FIDELITY_COVERAGE, FIDELITY_TOLERANCE

from fidelity_common import parser, record_transformer, replay_job


PAIRINGS = {  # name -> (statistic of the recorded samples, statistic of the replay)
    "median / median-of-round-IQMs (today)": ("median", "rounds"),
    "median / pooled median": ("median", "median"),
    "IQM / pooled IQM": ("iqm", "iqm"),
    "mean / pooled mean": ("mean", "mean"),
}


def replayed_calls(job: dict, entry: dict, store: Store, work: Path) -> tuple[list[float], list[float]]:
    """Replay one signature cold; every timed call's ms (pooled over rounds) and each round's IQM."""
    kept: list[list[float]] = []

    def keeping(values):
        kept.append(list(values))
        return interquartile_mean(values)

    worker.interquartile_mean, original = keeping, worker.interquartile_mean
    try:
        outcome = worker.replay_signature(torch, job, entry, store, work)
    finally:
        worker.interquartile_mean = original
    return [x for values in kept for x in values], outcome["samples"]["plain"]


def statistic(name: str, values: list[float]) -> float:
    return {"median": median, "iqm": interquartile_mean, "mean": statistics.fmean}[name](values)


def main() -> None:
    ap = parser(__doc__, rounds=21)
    ap.add_argument("--top", type=int, default=45)
    ap.add_argument("--out", default="fidelity_statistic.json")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="fidelity-statistic-") as work:
        store, recorder = record_transformer(Path(work), args.steps)
        recording = recorder.recording
        chosen = select_signatures(recording, top=args.top)
        chosen, job = replay_job(Path(work), store, recording, chosen, args.rounds)
        for signature, entry in zip(chosen, job["signatures"]):
            calls, rounds = replayed_calls(job, entry, store, Path(work))
            rows.append(dict(kernel=signature.kernel, share=recording.share(signature),
                             recorded_ms=list(signature.times_ms), replayed_ms=calls, round_iqms_ms=rounds))
            print(signature.kernel[:60], len(signature.times_ms), len(calls), flush=True)
    Path(args.out).write_text(json.dumps(dict(device=torch.cuda.get_device_name(), steps=args.steps,
                                              rounds=args.rounds, rows=rows)))
    show(rows)


def ratio(row: dict, pairing: tuple[str, str]) -> float:
    recorded, replayed = pairing
    base = statistic(recorded, row["recorded_ms"])
    other = median(row["round_iqms_ms"]) if replayed == "rounds" else statistic(replayed, row["replayed_ms"])
    return other / base


def show(rows: list[dict]) -> None:
    rows = sorted(rows, key=lambda r: -(r["share"] or 0))
    covered, top = 0.0, []
    for row in rows:
        if covered >= FIDELITY_COVERAGE - 1e-9:
            break
        covered += row["share"] or 0
        top.append(row)
    q = lambda values: " ".join(f"{quantile(values, p) * 1e3:5.2f}" for p in (0.1, 0.25, 0.5, 0.75, 0.9))  # noqa: E731
    print(f"{'kernel':44} {'share':>5} {'n':>3}  recorded µs p10 p25 p50 p75 p90 | replayed µs p10 p25 p50 p75 p90 | "
          "ratios: " + ", ".join(PAIRINGS))
    for row in top:
        print(f"{row['kernel'][:44]:44} {100 * row['share']:5.1f} {len(row['recorded_ms']):3d}  "
              f"{q(row['recorded_ms'])} | {q(row['replayed_ms'])} | "
              + " ".join(f"{ratio(row, p):.3f}" for p in PAIRINGS.values()))
    for name, pairing in PAIRINGS.items():
        ratios = [ratio(row, pairing) for row in top]
        within = sum(abs(r - 1) <= FIDELITY_TOLERANCE for r in ratios)
        print(f"{name:40}: {within} of {len(top)} within ±{FIDELITY_TOLERANCE:.0%} ({covered:.1%} of the GPU time), "
              f"median ratio {median(ratios):.3f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--show"]:
        show(json.loads(Path(sys.argv[2]).read_text())["rows"])
    else:
        main()
