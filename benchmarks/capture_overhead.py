"""What does capture cost a compile? Cold-cache compile time with and without tritonhook, interleaved.

Every sample kernel for every target it supports (>= 20 distinct kernels) is compiled `--rounds` times in each
mode, each compile into a fresh, empty Triton cache directory, the two modes alternating order from kernel to
kernel so drift (thermal, page cache) falls on both. Reported: the median compile time per kernel in each mode,
the per-kernel ratio (with / without) and its median and spread, and the store bytes per captured kernel.
Target: median ratio <= 1.03.

    python benchmarks/capture_overhead.py [--rounds 3] [--out capture_overhead.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

import triton  # noqa: E402

import tritonhook  # noqa: E402
from tritonhook import format  # noqa: E402
from tritonhook.samples import SAMPLES, compile_sample  # noqa: E402

TARGETS = (80, 90, 100, 120)


def kernels() -> list[tuple[str, int]]:
    return [(name, cap) for cap in TARGETS for name, sample in SAMPLES.items() if cap >= sample.min_capability]


def timed_compile(name: str, capability: int, cache_root: Path, store: tritonhook.Store | None) -> float:
    """Seconds for one compile into a fresh cache, with capture around it when `store` is given."""
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(dir=cache_root)
    if store is not None:
        tritonhook.enable(store, subprocesses=False)
    try:
        start = time.perf_counter()
        compile_sample(name, capability)
        return time.perf_counter() - start
    finally:
        tritonhook.disable()


def measure(rounds: int, work: Path) -> dict:
    store = tritonhook.Store(work / "store")
    subjects = kernels()
    for name, capability in subjects:  # warm-up: imports, libdevice, first-use costs out of the figures
        timed_compile(name, capability, work, None)
    times = {subject: {"plain": [], "capture": []} for subject in subjects}
    for round_index in range(rounds):
        for index, subject in enumerate(subjects):
            modes = ("plain", "capture") if (round_index + index) % 2 == 0 else ("capture", "plain")
            for mode in modes:
                times[subject][mode].append(timed_compile(*subject, work, store if mode == "capture" else None))
    captured = len(store.captures())
    rows = []
    for (name, capability), by_mode in times.items():
        plain, capture = statistics.median(by_mode["plain"]), statistics.median(by_mode["capture"])
        rows.append({"kernel": name, "target": f"sm_{capability}", "plain_s": plain, "capture_s": capture,
                     "ratio": capture / plain})
    ratios = sorted(row["ratio"] for row in rows)
    return {
        "triton": triton.__version__, "rounds": rounds, "kernels": len(subjects), "rows": rows,
        "median_ratio": statistics.median(ratios), "ratio_min": ratios[0], "ratio_max": ratios[-1],
        "total_plain_s": sum(r["plain_s"] for r in rows), "total_capture_s": sum(r["capture_s"] for r in rows),
        "store_bytes_per_kernel": store.size_bytes() / captured, "captures": captured,
    }


def print_result(result: dict) -> None:
    format.print_table(
        ("kernel", "target", "plain ms", "capture ms", "ratio"),
        [(r["kernel"], r["target"], f"{r['plain_s'] * 1e3:.1f}", f"{r['capture_s'] * 1e3:.1f}", f"{r['ratio']:.3f}")
         for r in result["rows"]],
        title=f"cold-cache compile, median of {result['rounds']} per mode (Triton {result['triton']})",
        right_align=("plain ms", "capture ms", "ratio"))
    total_ratio = result["total_capture_s"] / result["total_plain_s"]
    print(f"kernels: {result['kernels']}   median per-kernel ratio: {result['median_ratio']:.3f} "
          f"(spread {result['ratio_min']:.3f}..{result['ratio_max']:.3f})   total ratio: {total_ratio:.3f}   "
          f"store: {format.human_bytes(int(result['store_bytes_per_kernel']))} per kernel   target: <= 1.03")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("capture_overhead.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tritonhook-bench-") as work:
        result = measure(args.rounds, Path(work))
    args.out.write_text(json.dumps(result, indent=2))
    print_result(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
