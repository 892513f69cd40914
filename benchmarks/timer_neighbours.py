"""How the call just before a timed call moves its time, read from the samples of a multi-arm run, no GPU needed.

    python benchmarks/timer_neighbours.py bench.json --pairs ws:fp8=ws-aa:fp8,fa4=fa4-nocutlass --out nb.json

`bench.json` is what `benchmarks/hopper_attention.py --out` writes: per shape, per run, every arm's samples, one a
round. Each call's predecessor is known from the order its timer gave the arms: `--order williams` for this tree's
`round_order`, `--order shifted` for the one before it (the list shifted by one place every two rounds, reversed
every other: each arm behind its two list neighbours alone). Printed per shape and arm: the median of its calls
behind each predecessor ("hold": first in its round) over the arm's median, and the ratio of each `--pairs` pair's
medians (two arms that should read alike: the same build twice, or FlashAttention-4 with and without `cutlass` in
its name; read with their predecessors as the timer gave them).
"""
from __future__ import annotations

import argparse
import json


def shifted_order(round_index: int, arms: int) -> list[int]:
    """The order of arms that `round_order` gave before it became a Williams design (tritonhook 95e9064)."""
    start = (round_index // 2) % arms
    order = [(start + place) % arms for place in range(arms)]
    return order[::-1] if round_index % 2 else order


def by_predecessor(runs: list[dict], order) -> dict:
    """{arm: {predecessor: median ms of the arm's calls right behind it}} over all runs of one shape; "hold" for
    the first call of a round. `order(round_index, arms)`: the timer's order of the run."""
    from tritonhook.measure.stats import median

    names = list(runs[0])
    calls = {name: {} for name in names}
    for run in runs:
        for round_index in range(len(run[names[0]])):
            arms = order(round_index, len(names))
            for place, arm in enumerate(arms):
                before = names[arms[place - 1]] if place else "hold"
                calls[names[arm]].setdefault(before, []).append(run[names[arm]][round_index])
    return {name: {before: median(ms) for before, ms in sorted(behind.items())} for name, behind in calls.items()}


def neighbours_row(row: dict, order, pairs: list[tuple[str, str]]) -> dict:
    """One shape of a hopper_attention.py run: each arm's medians by predecessor over its own median (the spread
    the predecessor makes), and each pair's median ratio (second / first: > 1 where the second is slower)."""
    from tritonhook.measure.stats import median

    pooled = {name: median([ms for run in row["runs"] for ms in run[name]]) for name in row["runs"][0]}
    behind = by_predecessor(row["runs"], order)
    relative = {name: {before: ms / pooled[name] for before, ms in medians.items()} for name, medians in behind.items()}
    ratios = {f"{b}/{a}": pooled[b] / pooled[a] for a, b in pairs if a in pooled and b in pooled}
    return dict(D=row["D"], causal=row["causal"], S=row["S"], median_ms=pooled, by_predecessor=relative,
                pair_ratios=ratios)


def format_rows(rows: list[dict]) -> str:
    lines = []
    for row in rows:
        lines.append(f"D={row['D']} causal={int(row['causal'])} S={row['S']}  "
                     + "  ".join(f"{pair} {ratio:.3f}" for pair, ratio in row["pair_ratios"].items()))
        for name, relative in row["by_predecessor"].items():
            cells = " ".join(f"{before}:{value:.3f}" for before, value in relative.items())
            lines.append(f"  {name:>16}  {cells}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench", help="a JSON file written by benchmarks/hopper_attention.py --out")
    ap.add_argument("--order", choices=("williams", "shifted"), default="williams",
                    help="the order the run's timer gave its arms (default: this tree's round_order)")
    ap.add_argument("--pairs", default="", help="comma-separated a=b: arms whose medians should read alike")
    ap.add_argument("--out", default=None, help="write the rows as JSON here")
    args = ap.parse_args(argv)
    from tritonhook.measure.timing import round_order

    try:
        with open(args.bench) as f:
            bench = json.load(f)
        pairs = [tuple(pair.split("=", 1)) for pair in args.pairs.split(",") if pair]
        order = round_order if args.order == "williams" else shifted_order
        rows = [neighbours_row(row, order, pairs) for row in bench["rows"]]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise SystemExit(f"{args.bench}: not a hopper_attention.py --out file with samples "
                         f"({type(error).__name__}: {error})")
    print(format_rows(rows))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(bench=args.bench, order=args.order, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
