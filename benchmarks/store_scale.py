"""How the capture store behaves with 100,000 captures: `ls`, filtered queries, `get`, and adds under 8 writers.

The rows are synthetic, built from ONE real capture (Triton's add kernel compiled for sm_90a): its record and
artifacts are copied with 200 kernel names, three targets and both events, so the blobs are shared (as identical
artifacts are in a real store) and the index is what grows. Targets: `tritonhook --version` <= 0.15 s and `ls`
(with or without `--kernel`) <= 0.3 s, the whole command (the CLI imports only the command group it runs); the
`--kernel`/`--arch`/`--event` queries and `get(id)` <= 0.2 s; one add <= 2 ms with 8 writers.

    python benchmarks/store_scale.py [--captures 100000] [--writers 8] [--out store_scale.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tritonhook
from tritonhook.measure.timing import median_wall_seconds
from tritonhook.samples import compile_sample
from tritonhook.store import NewCapture, Store

KERNEL_NAMES = 200
ARCHS = ("sm_90a", "sm_100a", "sm_120a")
ADDS_PER_WRITER = 100


def template(work: Path) -> NewCapture:
    """The one real capture every synthetic row is copied from."""
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache")
    with tritonhook.session(work / "template-store", subprocesses=False) as session:
        compile_sample("add", 90)
    (capture,) = session.captures()
    fields = {f.name: getattr(capture, f.name) for f in dataclasses.fields(NewCapture) if f.name != "artifacts"}
    artifacts = {stage: session.store.read(capture, stage) for stage in capture.artifacts}
    return NewCapture(**fields, artifacts=artifacts)


def synthetic(base: NewCapture, index: int) -> NewCapture:
    name = f"kernel_{index % KERNEL_NAMES}"
    return dataclasses.replace(base, kernel=name, entry=name, original_entry=name, arch=ARCHS[index % len(ARCHS)],
                               event="cache_hit" if index % 4 == 0 else "compile")


def fill(store: Store, base: NewCapture, count: int, batch: int = 5000) -> float:
    start = time.perf_counter()
    for first in range(0, count, batch):
        store.add_many(synthetic(base, i) for i in range(first, min(count, first + batch)))
    return time.perf_counter() - start


def _writer(path: str, base: NewCapture, start, results) -> None:
    store = Store(path)
    start.wait()
    times = []
    for i in range(ADDS_PER_WRITER):
        began = time.perf_counter()
        store.add(synthetic(base, i))
        times.append(time.perf_counter() - began)
    results.put(times)


def concurrent_adds(path: Path, base: NewCapture, writers: int) -> list[float]:
    """Per-add seconds of `writers` processes adding at once (released together)."""
    context = multiprocessing.get_context("spawn")
    start, results = context.Event(), context.Queue()
    processes = [context.Process(target=_writer, args=(str(path), base, start, results)) for _ in range(writers)]
    for process in processes:
        process.start()
    time.sleep(2)  # let every writer import and open the store
    start.set()
    times = [t for _ in processes for t in results.get(timeout=600)]
    for process in processes:
        process.join()
    return times


def cli_seconds(*args: str, repeat: int = 3) -> float:
    """The whole `tritonhook ...` command as a user runs it (Python start-up and imports included)."""
    def run():
        subprocess.run([sys.executable, "-m", "tritonhook", *args], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return median_wall_seconds(run, repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--captures", type=int, default=100_000)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--out", type=Path, default=Path("store_scale.json"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tritonhook-store-scale-"))
    base = template(work)
    path = work / "store"
    store = Store(path)
    fill_s = fill(store, base, args.captures)
    store.close()
    reader = Store(path, readonly=True)
    some_id = random.Random(0).randrange(1, args.captures)
    rows = [
        ("tritonhook --version (whole command: start-up and imports)", cli_seconds("--version", repeat=9), 0.15),
        ("tritonhook ls (newest 50, whole command)", cli_seconds("ls", "--store", str(path), repeat=9), 0.3),
        ("tritonhook ls --kernel kernel_7$ (whole command)", cli_seconds("ls", "--store", str(path), "--kernel",
                                                                         "kernel_7$", repeat=9), 0.3),
        ("Store.captures(limit=50)", median_wall_seconds(lambda: reader.captures(limit=50)), 0.2),
        ("Store.captures(kernel='kernel_7$', limit=50) + count", median_wall_seconds(
            lambda: (reader.captures(kernel="kernel_7$", limit=50), reader.count(kernel="kernel_7$"))), 0.2),
        ("Store.captures(kernel='kernel_7$') (all 500 rows)", median_wall_seconds(
            lambda: reader.captures(kernel="kernel_7$")), 0.2),
        ("Store.captures(arch='sm_90', limit=50) + count", median_wall_seconds(
            lambda: (reader.captures(arch="sm_90", limit=50), reader.count(arch="sm_90"))), 0.2),
        ("Store.captures(event='cache_hit', limit=50) + count", median_wall_seconds(
            lambda: (reader.captures(event="cache_hit", limit=50), reader.count(event="cache_hit"))), 0.2),
        (f"Store.get({some_id})", median_wall_seconds(lambda: reader.get(some_id)), 0.2),
        ("Store.captures() (every row, for reference)", median_wall_seconds(reader.captures, repeat=1), None),
    ]
    reader.close()
    adds = sorted(concurrent_adds(path, base, args.writers))
    index_bytes = sum(p.stat().st_size for p in path.glob("index.sqlite*"))
    total = args.captures + args.writers * ADDS_PER_WRITER
    rows += [(f"one add, {args.writers} writers at once: median", statistics.median(adds), 0.002),
             (f"one add, {args.writers} writers at once: p95", adds[int(len(adds) * 0.95)], None)]

    print(f"store of {args.captures:,} synthetic captures (filled in {fill_s:.1f} s); {os.cpu_count()} CPUs")
    print(f"{'operation':58} {'seconds':>9} {'target':>8}")
    for name, seconds, target in rows:
        verdict = "-" if target is None else ("ok" if seconds <= target else "MISSED")
        print(f"{name:58} {seconds:9.4f} {'-' if target is None else target:>8} {verdict}")
    print(f"index files: {index_bytes:,} B for {total:,} captures = {index_bytes / total:,.0f} B per capture")
    args.out.write_text(json.dumps({
        "captures": args.captures, "writers": args.writers, "cpus": os.cpu_count(), "fill_seconds": fill_s,
        "operations": [{"name": n, "seconds": s, "target": t} for n, s, t in rows],
        "index_bytes": index_bytes, "index_bytes_per_capture": index_bytes / total,
        "synthetic": "rows copied from one real capture (Triton add kernel, sm_90a) with 200 names, 3 targets",
    }, indent=2))
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
