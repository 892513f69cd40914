"""Do a kernel's first launches, the ones a recording times (launches 2-9), run as fast as its later ones inside
the workload? A sweep's fidelity compares replays with those first launches; if the workload's early steps differ
(clocks, allocator, caches), the fidelity measures that, not the replay.

Runs the Inductor transformer workload in this process under `tritonhook.sweep.record`, with the recorder timing
launches 2-9 and then every 4th (`config.RECORD_TIME_EVERY`, set before the recorder module binds its defaults),
and prints per signature (those with at least 4 late samples, by GPU time) the median of the early samples, of the
late ones, and late / early; `--json PATH` writes the rows.

    PYTHONPATH=$PWD python experiments/record_early_late.py [STEPS] [--json PATH]     # a GPU; default 40 steps
"""

import argparse
import json
import runpy
import statistics
import sys
import tempfile
from pathlib import Path

from tritonhook import config

config.RECORD_TIME_EVERY = 4

from tritonhook import sweep  # noqa: E402  (after the setting above)

WORKLOAD = Path(__file__).parent / "sweep_workloads" / "inductor_transformer.py"


def early_late(signatures, early: int = config.RECORD_TIMED_FIRST, min_late: int = 4) -> list[dict]:
    """Per signature: the medians of its first `early` timed samples and of the rest (times_ms is in launch order)."""
    rows = []
    for signature in sorted(signatures, key=lambda s: -s.gpu_ms):
        first, rest = signature.times_ms[:early], signature.times_ms[early:]
        if len(first) == early and len(rest) >= min_late:
            rows.append({"label": signature.label(), "launches": signature.launches,
                         "early_us": statistics.median(first) * 1e3, "late_us": statistics.median(rest) * 1e3,
                         "late_over_early": statistics.median(rest) / statistics.median(first)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("steps", nargs="?", type=int, default=40)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as store:
        with sweep.record(store) as recorder:
            sys.argv = [str(WORKLOAD), str(args.steps)]
            runpy.run_path(str(WORKLOAD), run_name="__main__")
        rows = early_late(recorder.recording.signatures)
    ratios = [row["late_over_early"] for row in rows]
    print(f"{'early us':>9} {'late us':>9} {'late/early':>10}  kernel")
    for row in rows:
        print(f"{row['early_us']:9.2f} {row['late_us']:9.2f} {row['late_over_early']:10.3f}  {row['label'][:70]}")
    print(f"{len(rows)} signatures: late/early median {statistics.median(ratios):.3f}, "
          f"range {min(ratios):.3f}-{max(ratios):.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
