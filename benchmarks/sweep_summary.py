"""Summarise benchmarks/sweep_h200.sh's JSON results: the tables the issue's proofs ask for, and summary.json."""

import dataclasses
import json
import sys
from pathlib import Path

from tritonhook.format import show
from tritonhook.sweep.result import SweepResult


def load(path: Path):
    try:
        return SweepResult.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"{path.name}: no result ({type(exc).__name__}: {exc})")
        return None


def main(out: Path) -> None:
    summary = {}
    for name in ("own", "transformer", "transformer_aa", "liger", "own_ptxas", "both", "both_warm", "both_aa",
                 "both_inputs", "both_inputs_aa", "both_measured", "both_measured_aa"):
        result = load(out / f"{name}.out")
        if result is None:
            continue
        print(f"\n#### {name}")
        show(result)
        verdicts = [r.variants[1].verdict for r in result.rows if r.status == "ok" and len(r.variants) > 1]
        summary[name] = {"signatures": len(result.rows), "ok": sum(r.status == "ok" for r in result.rows),
                         "verdicts": {v: verdicts.count(v) for v in set(verdicts)},
                         "no_difference_fraction": (verdicts.count("no difference") + verdicts.count("SASS identical"))
                         / len(verdicts) if verdicts else None,
                         "times_s": result.times_s, "l2": result.l2,
                         "fidelity": dataclasses.asdict(result.fidelity),
                         "replayed": len(result.rows) + len(result.candidates),
                         "estimates": [e.__dict__ for e in result.estimates],
                         "rows": {r.label: {"status": r.status, "outputs": r.outputs,
                                            "verdict": r.variants[1].verdict if len(r.variants) > 1 else None,
                                            "ratio": r.variants[1].ratio if len(r.variants) > 1 else None}
                                  for r in result.rows}}
        print(json.dumps({k: v for k, v in summary[name].items() if k != "rows"}, indent=1, default=str))
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
