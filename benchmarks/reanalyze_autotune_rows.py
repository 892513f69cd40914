"""The autotuned rows of a saved sweep or replay result (its `--json`) analysed again by this tritonhook's
`sweep.autotune.analyze_group`, from the candidates' own rounds in the file: how a change of the analysis reads on
measured data without a GPU. Prints each autotuned row's verdicts before and after, and the count of "no
difference" among them (an A/A's rows should all read so).

    python benchmarks/reanalyze_autotune_rows.py RESULT.json
"""

from __future__ import annotations

import json
import sys
import types

from tritonhook.sweep.autotune import AutotuneGroup, analyze_group
from tritonhook.sweep.result import SweepResult, SweepRow


def _config(text: str) -> dict:
    return dict(part.split("=", 1) for part in text.split(", ") if "=" in part)


def reanalyze(result: SweepResult) -> list[tuple[str, list[str], list[str]]]:
    """(row label, verdicts as saved, verdicts now) of every autotuned row."""
    by_signature = {c.signature: c for c in result.candidates}
    found = []
    for row in result.rows:
        tune = row.autotune or {}
        if not tune.get("configs") or row.status != "ok":
            continue
        members = [by_signature[sid] for sid in tune["replayed"] if sid in by_signature]
        stubs = [types.SimpleNamespace(id=c.signature, launches=int(c.launches or 0),
                                       autotune={"config": _config(c.autotune["config"])}) for c in members]
        group = AutotuneGroup(tune["group"], row.kernel, stubs, _config(tune["workload"]), {})
        samples = {c.signature: {v.label: v.samples for v in c.variants if v.samples} for c in members}
        fresh = SweepRow(row.signature, row.kernel, row.label, row.share, row.launches, row.recorded_ms, row.inputs,
                         "ok")
        again = analyze_group(fresh, group, members, samples, result.variants, result.min_effect)
        found.append((row.label, [v.verdict for v in row.variants[1:]], [v.verdict for v in again.variants[1:]]))
    return found


def main(path: str) -> None:
    found = reanalyze(SweepResult.from_json(json.loads(open(path).read()), source=path))
    for label, before, after in found:
        print(f"{label[:60]:<60} saved {', '.join(before):<16} now {', '.join(after)}")
    quiet = lambda verdicts: sum(v in ("no difference", "SASS identical") for v in verdicts)  # noqa: E731
    print(f"no difference: saved {sum(quiet(b) for _, b, _ in found)}, now {sum(quiet(a) for _, _, a in found)} "
          f"of {sum(len(b) for _, b, _ in found)} autotuned variant verdicts")


if __name__ == "__main__":
    main(sys.argv[1])
