"""The recording's kernel shares net of the launch lead, against `torch.profiler`'s, from a results file of
`benchmarks/sweep_against_profiler.py` (its per-kernel launches and mean sampled time a launch).

    python benchmarks/shares_net_of_lead.py RESULTS.json [--lead-us 3.6]

Each held kernel's recorded GPU time becomes (mean sample - lead) x launches, as `Signature.gpu_ms` now takes it
(there the lead is each signature's own empty-kernel time; a file recorded before that was kept per kernel takes
`--lead-us`, one figure for all). Prints, for no lead and for the lead, how many of the held kernels come within 2
percentage points of their profiler share and the widest difference; `--json` for the same as data."""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sweep_against_profiler import SHARE_POINTS  # noqa: E402


def within(kernels: list[dict], lead_ms: float | None) -> dict:
    """Held kernels within `SHARE_POINTS` of the profiler's share when each sample is taken net of `lead_ms`
    (None: each kernel's own recorded lead)."""
    timed = [k for k in kernels if k.get("recorded_mean_ms") is not None]
    lead = {k["kernel"]: (k.get("recorded_lead_ms") or 0.0) if lead_ms is None else lead_ms for k in timed}
    net = {k["kernel"]: max(k["recorded_mean_ms"] - lead[k["kernel"]], 0.0) * k["recorded_launches"] for k in timed}
    total = sum(net.values())
    apart = [abs(net[k["kernel"]] / total - k["profiler_share"]) for k in timed if k["held"]]
    return {"lead_ms": lead_ms, "held": len(apart), "within": sum(d <= SHARE_POINTS for d in apart),
            "max_share_points": max(apart, default=None)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("results")
    parser.add_argument("--lead-us", type=float, default=None, help="one lead for every kernel (µs)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    kernels = json.loads(Path(args.results).read_text())["against_profiler"]["kernels"]
    found = [within(kernels, 0.0), within(kernels, None if args.lead_us is None else args.lead_us / 1000)]
    if args.json:
        print(json.dumps(found, indent=1))
        return
    for row in found:
        lead = "each kernel's own" if row["lead_ms"] is None else f"{row['lead_ms'] * 1000:.1f} µs"
        print(f"lead {lead}: {row['within']} of {row['held']} held kernels within {SHARE_POINTS:.0%} of their "
              f"profiler share (widest {row['max_share_points']:.4f})")


if __name__ == "__main__":
    main()
