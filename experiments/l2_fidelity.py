"""Which replay mode brings replayed kernel times closest to their times inside the workload? (issue 15's
fidelity; docs/notes.md §13: `--l2 cold` against `--l2 measured`.)

Records a workload once (the L2 probe is on by default), then replays it plain vs plain in each of `--modes`
(default cold,measured) alternately, `--pairs` times each, so that the replay-to-replay drift of small kernels
(several % between two replays of one recording) falls on all modes alike. Per signature of those making 90% of
the recorded GPU time: its share, its time inside the workload, how far the GPU ran behind at it (ms), replayed /
in-workload per replay and mode, and the median per mode; last, how many are within ±10% per replay and on the
medians, the same with the launch-lead difference taken out of each replayed time ("net": `SweepRow.net_fidelity`,
docs/notes.md §15 and §17), and the A/A "no difference" count per replay. Writes a compact JSON (`--out`), and with
`--keep DIR` each replay's own `--json` as DIR/<mode>_<i>.json (what `--summarize` reads back). A mode named
`<mode>-clean` replays without the L2-sized write before each call (`TRITONHOOK_SWEEP_DIRTY_L2=0`; docs/notes.md
§18): `--modes measured,measured-clean` compares the two on one recording.

    PYTHONPATH=$PWD python experiments/l2_fidelity.py [--workload transformer|both] [--modes cold,measured]
        [--pairs 3] [--inductor-cache warm|cold] [--out l2.json] [--keep DIR]
    python experiments/l2_fidelity.py --summarize cold_1.json measured_1.json ... [--out l2.json]  # saved replays
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tritonhook.config import SWEEP_DIRTY_L2, SWEEP_L2_MODES
from tritonhook.sweep.result import FIDELITY_COVERAGE, FIDELITY_TOLERANCE, SweepResult

MODES = {mode: ["--l2", mode] for mode in SWEEP_L2_MODES}
"""Replay modes by name: the `tritonhook replay` options each adds. Each also as "<mode>-few": only the timer's
fewest repetitions (`replay.MIN_REPS`) timed a round after the warm-up (docs/notes.md §14's "few")."""
FEW = "-few"
CLEAN = "-clean"
"""A mode's suffix: the replay leaves the L2 clean before each call (`TRITONHOOK_SWEEP_DIRTY_L2=0`;
docs/notes.md §18), as it did before the dirty write."""
FEW_CALLS = ("import sys, tritonhook.sweep.replay as replay; replay.REP_MS = 1e-3; "
             "from tritonhook.cli import main; sys.exit(main())")
"""`tritonhook` with the replay's repetitions cut to its fewest: an experiment's switch, not a product option."""
WORKLOADS = {
    "transformer": "python3 experiments/sweep_workloads/inductor_transformer.py 10",
    "both": "python3 experiments/sweep_workloads/inductor_transformer.py 10 && "
            "python3 experiments/sweep_workloads/liger_ops.py 10",
    "queued": "python3 experiments/sweep_workloads/queued_adds.py 100",
    "small_adds": "python3 experiments/sweep_workloads/small_adds.py 100",
}


def _base(mode: str) -> str:
    """The `--l2` mode of a mode name with its suffixes (FEW, CLEAN) taken off."""
    return mode.removesuffix(FEW).removesuffix(CLEAN)


def replays(workload: str, modes: list[str], pairs: int, work: Path, inductor_cache: str = "warm"
            ) -> dict[str, list[dict]]:
    """Record `workload` into a store under `work`, then replay it in each of `modes`, alternately. The workload
    runs with Inductor's and Triton's caches in `work`, empty when it is recorded (`inductor_cache` "cold": Inductor
    autotunes its kernels inside the recording, as on a machine that never ran it) or filled by one run first
    ("warm": the steady state; docs/notes.md §16)."""
    store = str(work / "store")
    tritonhook = [sys.executable, "-m", "tritonhook"]
    caches = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(work / "inductor-cache"),
              "TRITON_CACHE_DIR": str(work / "triton-cache")}
    if inductor_cache == "warm":
        subprocess.run(["bash", "-c", WORKLOADS[workload]], check=True, env=caches)
    subprocess.run(tritonhook + ["record", "--store", store, "--", "bash", "-c", WORKLOADS[workload]], check=True,
                   env=caches)
    results: dict[str, list[dict]] = {mode: [] for mode in modes}
    for _ in range(pairs):
        for mode in modes:
            program = [sys.executable, "-c", FEW_CALLS] if mode.endswith(FEW) else tritonhook
            done = subprocess.run(program + ["replay", "--store", store, *MODES[_base(mode)],
                                             "--variants", "plain,plain", "--json"],
                                  check=True, capture_output=True, text=True,
                                  env={**os.environ, SWEEP_DIRTY_L2.name: "0" if CLEAN in mode else "1"})
            results[mode].append(json.loads(done.stdout))
    return results


def summarize(results: dict[str, list[dict]]) -> dict:
    """The signatures making 90% of the recorded GPU time, each with its replayed / in-workload ratios per mode, as
    measured and net of the launch-lead difference."""
    first = next(iter(results.values()))[0]["rows"]
    parsed = {mode: [{r.signature: r for r in SweepResult.from_json(result).rows} for result in runs]
              for mode, runs in results.items()}  # SweepRow: its fidelity, net too for replays saved before it
    rows, covered = [], 0.0
    for row in sorted((r for r in first if r["share"]), key=lambda r: -r["share"]):
        if covered >= FIDELITY_COVERAGE - 1e-9:
            break
        covered += row["share"]
        replayed = {mode: [by_signature[row["signature"]] for by_signature in runs] for mode, runs in parsed.items()}
        ratios = {mode: [r.fidelity for r in rs] for mode, rs in replayed.items()}
        nets = {mode: [r.net_fidelity for r in rs] for mode, rs in replayed.items()}
        rows.append({"kernel": row["kernel"], "share": row["share"], "recorded_us": row["recorded_ms"] * 1e3,
                     "behind_ms": row.get("behind_ms"),
                     "ratios": ratios, "median": {m: statistics.median(r) for m, r in ratios.items()},
                     "net": nets})
    within = lambda ratio: abs(ratio - 1) <= FIDELITY_TOLERANCE  # noqa: E731
    aa = {m: [sum(r["variants"][1]["verdict"] == "no difference" for r in result["rows"] if len(r["variants"]) > 1)
              for result in runs] for m, runs in results.items()}
    return {"signatures": len(rows), "share": covered, "aa_no_difference": aa, "rows_replayed": len(first),
            "per_replay_within": {m: [sum(within(r["ratios"][m][i]) for r in rows) for i in range(len(runs))]
                                  for m, runs in results.items()},
            "median_within": {m: sum(within(r["median"][m]) for r in rows) for m in results},
            "median_within_share": {m: sum(r["share"] for r in rows if within(r["median"][m])) for m in results},
            "net_per_replay_within": {m: [sum(r["net"][m][i] is not None and within(r["net"][m][i]) for r in rows)
                                          for i in range(len(runs))] for m, runs in results.items()},
            "rows": rows}


def show(summary: dict) -> None:
    modes = list(summary["median_within"])
    print(f"{'kernel':48s} {'share':>6s} {'µs':>7s} {'behind':>7s}  " + "  ".join(f"{m} (median)" for m in modes))
    for row in summary["rows"]:
        cells = "  ".join(" ".join(f"{x:.3f}" for x in row["ratios"][m]) + f" ({row['median'][m]:.3f}) net "
                          + " ".join("-" if x is None else f"{x:.3f}" for x in row["net"][m]) for m in modes)
        behind = "-" if row["behind_ms"] is None else f"{row['behind_ms']:.2f}"
        print(f"{row['kernel'][:48]:48s} {row['share']:6.1%} {row['recorded_us']:7.2f} {behind:>7s}  {cells}")
    print(f"within ±{FIDELITY_TOLERANCE:.0%}, of the {summary['signatures']} signatures making "
          f"{summary['share']:.1%} of the GPU time: per replay {summary['per_replay_within']}; on the medians "
          + ", ".join(f"{m} {summary['median_within'][m]} ({summary['median_within_share'][m]:.1%} of the time)"
                      for m in modes))
    print(f"net of the launch lead, per replay: {summary['net_per_replay_within']}")
    print(f"A/A 'no difference' per replay, of {summary['rows_replayed']} rows: {summary['aa_no_difference']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", choices=sorted(WORKLOADS), default="transformer")
    ap.add_argument("--modes", default="cold,measured",
                    help=f"of {', '.join(MODES)}, each also as <mode>{CLEAN}, <mode>{FEW}")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--inductor-cache", choices=("warm", "cold"), default="warm",
                    help="warm: the workload runs once before it is recorded (default); cold: recorded first")
    ap.add_argument("--summarize", nargs="+", type=Path, metavar="REPLAY_JSON",
                    help="saved `tritonhook replay --json` results, named <mode>_<i>.json")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--keep", type=Path, metavar="DIR", help="write each replay's --json here as <mode>_<i>.json")
    args = ap.parse_args()
    modes = args.modes.split(",")
    if unknown := {_base(mode) for mode in modes} - set(MODES):
        ap.error(f"--modes: unknown {', '.join(sorted(unknown))}")
    if args.summarize:
        results = {mode: [json.loads(p.read_text()) for p in sorted(args.summarize) if p.name.split("_")[-2] == mode]
                   for mode in modes}
    else:
        with tempfile.TemporaryDirectory(prefix="l2-fidelity-") as work:
            results = replays(args.workload, modes, args.pairs, Path(work), args.inductor_cache)
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for mode, runs in results.items():
                for i, result in enumerate(runs, 1):
                    (args.keep / f"{mode}_{i}.json").write_text(json.dumps(result) + "\n")
    summary = summarize(results)
    show(summary)
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
