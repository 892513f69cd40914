"""The gate's A/A false positives and power from `tritonhook check --time-identical --json` results (one per run,
benchmarks/gate_h200.sh): per run the A/A verdicts (every identical build), the false regressions, the seeded
kernel's ratio and status, the rounds spent, and what the rule would have said without the µs floor
(`config.ab.MIN_EFFECT_US`: the verdict of each result's ratio and interval at the threshold alone) and without
the second replay of a regression (the kernels it passed).
Prints a table; writes every figure to --out.

    python benchmarks/gate_summary.py DIR [--out gate_summary.json]
"""

import argparse
import json
from pathlib import Path

from tritonhook import config
from tritonhook.check import CheckResult
from tritonhook.measure.stats import verdict

def is_seeded(kernel) -> bool:
    """The seeded kernel (benchmarks/gate_seed.py): the fp32 FFMA build of own_kernels.py's matmul, by its key
    (the kernel's name before the rename and its constexprs; the signature's name is the renamed one)."""
    return kernel.key.startswith("matmul_kernel [") and "PRECISION=ieee" in kernel.key


def run_summary(result: CheckResult) -> dict:
    timed = [k for k in result.kernels if k.ratio is not None]
    aa = [k for k in timed if not is_seeded(k)]
    seeded = [k for k in timed if is_seeded(k)]
    floored = [k for k in aa if k.status == "passed" and k.ratio is not None and
               verdict(k.ratio, k.low, k.high, config.check.THRESHOLD) == "slower"]
    retested = [k for k in aa if k.status == "passed" and k.retest]
    return {
        "check_result": result.id,
        "aa_timed": len(aa),
        "false_regressions": [_kernel(k) for k in aa if k.status == "regressed"],
        "passed_by_the_floor": [_kernel(k) for k in floored],
        "passed_by_the_second_replay": [_kernel(k) for k in retested],
        "seeded": [_kernel(k) for k in seeded],
        "rounds": sorted(k.rounds or 0 for k in timed),
        "stopped": {why: sum(k.stopped == why for k in timed)
                    for why in sorted({k.stopped for k in timed if k.stopped})},
        "not_checked": [k.label for k in result.kernels if k.ratio is None and k.verdict != "SASS identical"],
    }


def _kernel(k) -> dict:
    return {"label": k.label, "ratio": k.ratio, "low": k.low, "high": k.high, "baseline_us": _us(k.baseline_ms),
            "current_us": _us(k.current_ms), "rounds": k.rounds, "stopped": k.stopped, "status": k.status,
            "verdict": k.verdict, "below_floor": _below_floor(k), "retest": k.retest}


def _below_floor(k) -> bool:
    """Whether the current build's median exceeds the baseline's by less than the µs floor."""
    return None not in (k.baseline_ms, k.current_ms) and (k.current_ms - k.baseline_ms) * 1e3 < config.ab.MIN_EFFECT_US


def _us(ms):
    return None if ms is None else ms * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--out", default="gate_summary.json")
    args = parser.parse_args()
    runs = []
    for path in sorted(Path(args.folder).glob("check_*.json"), key=lambda p: int(p.stem.split("_")[1])):
        try:
            runs.append(run_summary(CheckResult.from_json(json.loads(path.read_text()), source=str(path))))
        except (ValueError, KeyError) as exc:
            print(f"{path}: not read ({exc})")
    verdicts = sum(r["aa_timed"] for r in runs)
    false = sum(len(r["false_regressions"]) for r in runs)
    floored = sum(len(r["passed_by_the_floor"]) for r in runs)
    retested = sum(len(r.get("passed_by_the_second_replay", [])) for r in runs)
    caught = sum(any(s["status"] == "regressed" for s in r["seeded"]) for r in runs)
    summary = {"runs": len(runs), "aa_verdicts": verdicts, "false_regressions": false,
               "false_positive_rate": false / verdicts if verdicts else None,
               "false_regressions_without_the_floor": false + floored,
               "false_regressions_without_the_second_replay": false + retested, "seeded_caught": caught,
               "floor_us": config.ab.MIN_EFFECT_US, "per_run": runs}
    Path(args.out).write_text(json.dumps(summary, indent=1))
    print(f"{'run':>3} {'A/A':>4} {'false':>5} {'floor':>5} {'seeded ratio [95%]':>26} {'status':>9} "
          f"{'rounds (median, max)':>20}")
    for n, r in enumerate(runs, 1):
        seeded = r["seeded"][0] if r["seeded"] else None
        ratio = f"{seeded['ratio']:.4f} [{seeded['low']:.4f}, {seeded['high']:.4f}]" if seeded else "-"
        rounds = r["rounds"]
        print(f"{n:>3} {r['aa_timed']:>4} {len(r['false_regressions']):>5} {len(r['passed_by_the_floor']):>5} "
              f"{ratio:>26} {seeded['status'] if seeded else '-':>9} "
              f"{f'{rounds[len(rounds) // 2]}, {rounds[-1]}' if rounds else '-':>20}")
    print(f"A/A: {false} false regressions in {verdicts} verdicts over {len(runs)} runs "
          f"({false + floored} without the {summary['floor_us']} µs floor, {false + retested} without "
          f"the second replay); seeded slowdown caught in "
          f"{caught} of {len(runs)}")


if __name__ == "__main__":
    main()
