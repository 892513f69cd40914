"""The adaptive-rounds rule (`tritonhook.measure.sequential`) on simulated timings, stopping allowed after every
round: its false-positive rate on A/A data (at most its nominal 5% by construction; measured here), its power on 1%,
3% and 10% effects, the rounds it spends and why it stops; beside it the fixed-n interval peeked at after every round
(what the rule replaces) and the fixed 21 rounds of today's replay. Noise models as measured kernels show them:
`quiet` (0.3% log-normal, a large kernel), `heavy` (1% log-normal and 5% of rounds hit by a hiccup up to +20%),
`ticks` (short kernels' A/A: each time one timer tick high or low, ratios at ~0.965 / ~1.035, docs/check.md).
Prints a table and writes JSON.

    python benchmarks/sequential_rule.py [--sims 1000] [--cap 50] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time

from tritonhook.measure.sequential import ratio_sequence, stop_reason
from tritonhook.measure.stats import ratio_interval, t_interval_ratio, verdict

MIN_EFFECT, PRECISION, FIXED_ROUNDS = 0.01, 0.01, 21


def noise(model: str, rng: random.Random) -> float:
    """One timing's relative error under `model`."""
    if model == "quiet":
        return math.exp(rng.gauss(0, 0.003))
    if model == "heavy":
        hiccup = abs(rng.gauss(0, 0.2)) if rng.random() < 0.05 else 0.0
        return math.exp(rng.gauss(0, 0.01) + hiccup)
    return (0.965 if rng.random() < 0.5 else 1.035) * math.exp(rng.gauss(0, 0.002))  # ticks


def one_sequence(model: str, effect: float, cap: int, rng: random.Random) -> dict:
    """One signature timed round by round: where the sequential rule stops and what it says, whether the peeked
    fixed-n interval ever called a difference, and the fixed-rounds verdict."""
    base, other = [], []
    peeked = False
    stopped = None
    while len(base) < cap:
        base.append(10.0 * noise(model, rng))
        other.append(10.0 * (1.0 + effect) * noise(model, rng))
        if stopped is None:
            interval = ratio_sequence(base, other)
            reason = stop_reason(interval, min_effect=MIN_EFFECT, precision=PRECISION, cap=cap)
            if reason is not None:
                stopped = {"rounds": len(base), "why": reason,
                           "verdict": verdict(interval.ratio, interval.low, interval.high, MIN_EFFECT)}
        if not peeked and len(base) >= 3 and (t := t_interval_ratio(base, other)) is not None:
            peeked = verdict(statistics.median(other) / statistics.median(base), *t, MIN_EFFECT) != "no difference"
        if len(base) == FIXED_ROUNDS:
            fixed = verdict(*ratio_interval(base, other), MIN_EFFECT)
    return {**stopped, "peeked_difference": peeked, "fixed": fixed}


def run(sims: int, cap: int, seed: int = 11) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for model in ("quiet", "heavy", "ticks"):
        for effect in (0.0, -0.01, -0.03, -0.10):
            runs = [one_sequence(model, effect, cap, rng) for _ in range(sims)]
            wanted = "no difference" if effect == 0 else "faster"
            rows.append({
                "model": model, "effect": effect, "sims": sims, "cap": cap,
                "sequential_correct": sum(r["verdict"] == wanted for r in runs) / sims,
                "sequential_false": sum(r["verdict"] not in (wanted, "no difference") for r in runs) / sims,
                "rounds_median": statistics.median(r["rounds"] for r in runs),
                "rounds_mean": statistics.fmean(r["rounds"] for r in runs),
                "why": {why: sum(r["why"] == why for r in runs) / sims for why in ("decided", "precise enough", "cap")},
                "peeked_fixed_n_false": (sum(r["peeked_difference"] for r in runs) / sims) if effect == 0 else None,
                "fixed_21_correct": sum(r["fixed"] == wanted for r in runs) / sims,
                "fixed_21_false": sum(r["fixed"] not in (wanted, "no difference") for r in runs) / sims,
            })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=1000)
    parser.add_argument("--cap", type=int, default=50)
    parser.add_argument("--out")
    args = parser.parse_args()
    began = time.time()
    rows = run(args.sims, args.cap)
    print(f"sequential rule, alpha 0.05, min-effect {MIN_EFFECT:.0%}, precision {PRECISION:.0%}, cap {args.cap} rounds; "
          f"{args.sims} simulated signatures per line ({time.time() - began:.0f} s)")
    print(f"{'noise':<6} {'effect':>6} {'seq. right':>10} {'seq. wrong':>10} {'rounds med/mean':>16} "
          f"{'decided/precise/cap':>20} {'peeked fixed-n wrong':>21} {'fixed 21 right/wrong':>21}")
    for r in rows:
        why = "/".join(f"{r['why'][k]:.2f}" for k in ("decided", "precise enough", "cap"))
        peeked = "-" if r["peeked_fixed_n_false"] is None else f"{r['peeked_fixed_n_false']:.3f}"
        print(f"{r['model']:<6} {r['effect']:>+6.0%} {r['sequential_correct']:>10.3f} {r['sequential_false']:>10.3f} "
              f"{r['rounds_median']:>7.0f}/{r['rounds_mean']:<8.1f} {why:>20} {peeked:>21} "
              f"{r['fixed_21_correct']:>10.3f}/{r['fixed_21_false']:.3f}")
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"command": f"python benchmarks/sequential_rule.py --sims {args.sims} --cap {args.cap}",
                       "min_effect": MIN_EFFECT, "precision": PRECISION, "alpha": 0.05, "rows": rows}, handle,
                      indent=1)


if __name__ == "__main__":
    main()
