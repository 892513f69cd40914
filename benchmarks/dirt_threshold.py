"""What each dirt threshold (`l2probe.DIRTY_AT`) would make of a workload's fidelity, from one recording replayed
twice, every row on a dirty L2 (`--l2-dirt dirty`) and every row on a clean one (`--l2-dirt clean`): a threshold
replays a row clean where its dirt probe read below it, so its ratio is the clean replay's there and the dirty
one's elsewhere. Nothing is estimated: both ratios of every row were measured on one recording.

    python benchmarks/dirt_threshold.py OUT.json NAME=DIRTY.json,CLEAN.json ...

Each pair: the `--json` of `tritonhook replay --variants plain,plain --l2-dirt dirty` and `... clean` over one
recording (the fidelity set: the rows replayed). Prints a table, writes OUT.json with the rows' figures.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

THRESHOLDS = (-0.1, 0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)
TOLERANCE = 0.1


def rows_of(dirty: dict, clean: dict) -> list[dict]:
    """Per row replayed in both: its probe figure and its ratio on each L2."""
    cleaned = {r["label"]: r for r in clean["rows"] if r["status"] == "ok"}
    return [{"kernel": r["label"], "probe": r["l2_dirt"], "share": r["share"], "dirty": r["fidelity"],
             "clean": cleaned[r["label"]]["fidelity"]}
            for r in dirty["rows"] if r["status"] == "ok" and r["label"] in cleaned]


def within_at(rows: list[dict], threshold: float) -> int:
    """Rows within ±10% where those whose probe read below `threshold` are replayed clean, the others dirty."""
    chosen = [r["clean"] if r["probe"] is not None and r["probe"] < threshold else r["dirty"] for r in rows]
    return sum(abs(ratio - 1.0) <= TOLERANCE for ratio in chosen)


def main() -> None:
    out, pairs = Path(sys.argv[1]), dict(arg.split("=", 1) for arg in sys.argv[2:])
    found = {}
    for name, files in pairs.items():
        dirty, clean = (json.loads(Path(f).read_text()) for f in files.split(","))
        rows = rows_of(dirty, clean)
        found[name] = {"recording": dirty["recording_id"], "rows": rows,
                       "within": {str(t): within_at(rows, t) for t in THRESHOLDS}}
    out.write_text(json.dumps({"what": __doc__.split("\n\n")[0], "tolerance": TOLERANCE, "workloads": found},
                              indent=1))
    print(f"{'threshold':>10} " + " ".join(f"{name:>12}" for name in found))
    for t in THRESHOLDS:
        print(f"{t:>10} " + " ".join(f"{w['within'][str(t)]:>9}/{len(w['rows']):<2}" for w in found.values()))


if __name__ == "__main__":
    main()
