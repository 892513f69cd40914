"""How the capture store behaves with 100,000 captures: `ls`, filtered queries, `get`, and adds under 8 writers.

The rows are synthetic, built from ONE real capture (Triton's add kernel compiled for sm_90a): its record and
artifacts are copied with 200 kernel names, three targets and both events, so the blobs are shared (as identical
artifacts are in a real store) and the index is what grows. Targets: `tritonhook --version` <= 0.15 s and `ls`
(with or without `--kernel`, or a keyset page `--after ID`) <= 0.3 s, the whole command (the CLI imports only the
command group it runs); the `--kernel`/`--arch`/`--event` queries and `get(id)` <= 0.2 s; one add <= 2 ms with 8
writers.

The commands are timed start to exit (`--repeat` runs each, median and spread, and the CPU time the child used),
idle and again under load: `--load` busy-loop processes (default 3) run beside them, as on a user's 2-core machine
with a build or a training job beside it, and are stopped after. stdout goes to a pipe (the plain listing); `ls` on
a terminal (a pty: the rich table) is timed idle for reference. The children run with bytecode written and read
(PYTHONDONTWRITEBYTECODE dropped, one run first to write it), as an installed package has it.

    python benchmarks/store_scale.py [--captures 100000] [--writers 8] [--repeat 15] [--load 3] [--out store_scale.json]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import json
import multiprocessing
import os
import pty
import random
import resource
import statistics
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import tritonhook
from tritonhook.measure.timing import median_wall_seconds
from tritonhook.samples import compile_sample
from tritonhook.store import NewCapture, Store
from scratch import scratch_dir

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


CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _pty_drained(args: list[str]) -> None:
    """Run with stdout on a 200-column pseudo-terminal, read while it writes (a full pty would block it)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))

    def drain():
        with contextlib.suppress(OSError):
            while os.read(master, 65536):
                pass

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        subprocess.run(args, check=True, stdout=slave, stderr=subprocess.DEVNULL, env=CHILD_ENV)
    finally:
        os.close(slave)
        reader.join()
        os.close(master)


def cli_runs(*args: str, repeat: int = 15, terminal: bool = False) -> dict:
    """The whole `tritonhook ...` command as a user runs it (Python start-up and imports included), stdout to a
    pipe (or a pty): `repeat` runs after one that writes the bytecode, each start to exit, with the CPU time the
    child used (user + system)."""
    command = [sys.executable, "-m", "tritonhook", *args]

    def once():
        if terminal:
            _pty_drained(command)
        else:
            subprocess.run(command, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=CHILD_ENV)

    once()
    walls, cpus = [], []
    for _ in range(repeat):
        cpu, start = _child_cpu(), time.perf_counter()
        once()
        walls.append(time.perf_counter() - start)
        cpus.append(_child_cpu() - cpu)
    walls.sort()
    return {"median": statistics.median(walls), "min": walls[0], "max": walls[-1],
            "p90": walls[min(len(walls) - 1, int(len(walls) * 0.9))], "cpu_median": statistics.median(cpus),
            "runs": len(walls), "seconds": walls}


@contextlib.contextmanager
def runnable_sampled():
    """Samples, every 50 ms, how many tasks the kernel counts as runnable (/proc/loadavg's fourth field; the
    sampler itself is one of them): what the commands really ran beside, other work on the machine included (the
    1-minute load average lags behind phases this short)."""
    samples: list[int] = []
    stop = threading.Event()

    def sample():
        while not stop.wait(0.05):
            with contextlib.suppress(OSError, ValueError, IndexError):
                samples.append(int(Path("/proc/loadavg").read_text().split()[3].split("/")[0]))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield samples
    finally:
        stop.set()
        sampler.join()


@contextlib.contextmanager
def busy_load(count: int):
    """`count` processes spinning on the CPU beside what runs inside (stopped and reaped after)."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(1.0)  # let them all be running
        yield
    finally:
        for spinner in spinners:
            spinner.terminate()
        for spinner in spinners:
            spinner.wait()


def _runnable(samples: list[int]) -> dict:
    return {"runnable_median": statistics.median(samples) if samples else None,
            "runnable_max": max(samples, default=None), "samples": len(samples)}


def cli_table(path: Path, repeat: int, load: int, some_id: int) -> tuple[list[dict], dict]:
    """Each command idle, then the same under `load` busy loops; `ls` on a terminal idle (reference)."""
    commands = [("tritonhook --version", ("--version",), 0.15),
                ("tritonhook ls (newest 50)", ("ls", "--store", str(path)), 0.3),
                ("tritonhook ls --kernel 'kernel_7$'", ("ls", "--store", str(path), "--kernel", "kernel_7$"), 0.3),
                (f"tritonhook ls --after {some_id} (a keyset page)", ("ls", "--store", str(path), "--after",
                                                                     str(some_id)), 0.3)]
    rows = []
    loads = {"cpus": os.cpu_count(), "busy_loops": load, "loadavg_1min_before": os.getloadavg()[0]}
    with runnable_sampled() as idle:
        for name, args, target in commands:
            rows.append({"command": name, "condition": "idle", "target": target, **cli_runs(*args, repeat=repeat)})
        rows.append({"command": "tritonhook ls (newest 50) on a terminal: rich table", "condition": "idle",
                     "target": None, **cli_runs("ls", "--store", str(path), repeat=repeat, terminal=True)})
    with busy_load(load), runnable_sampled() as loaded:
        for name, args, target in commands:
            rows.append({"command": name, "condition": f"load {load}", "target": target,
                         **cli_runs(*args, repeat=repeat)})
        loads["loadavg_1min_at_end"] = os.getloadavg()[0]
    loads.update(idle=_runnable(idle), loaded=_runnable(loaded))
    return rows, loads


def print_cli_table(rows: list[dict], loads: dict) -> None:
    print(f"whole commands, start to exit, stdout to a pipe; {loads['cpus']} CPUs; runnable tasks (median, max; "
          f"the sampler is one): idle {loads['idle']['runnable_median']}, {loads['idle']['runnable_max']}; with "
          f"{loads['busy_loops']} busy loops {loads['loaded']['runnable_median']}, {loads['loaded']['runnable_max']}; "
          f"1-min load average before {loads['loadavg_1min_before']:.2f}, at the end {loads['loadavg_1min_at_end']:.2f}")
    print(f"{'command':52} {'condition':9} {'median s':>9} {'min':>7} {'p90':>7} {'max':>7} {'CPU s':>7} "
          f"{'target':>7}")
    for row in rows:
        target = row["target"]
        verdict = "-" if target is None else ("ok" if row["median"] <= target else "MISSED")
        print(f"{row['command']:52} {row['condition']:9} {row['median']:9.3f} {row['min']:7.3f} {row['p90']:7.3f} "
              f"{row['max']:7.3f} {row['cpu_median']:7.3f} {'-' if target is None else target:>7} {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--captures", type=int, default=100_000)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=15, help="runs of each whole command, per condition")
    parser.add_argument("--load", type=int, default=3, help="busy-loop processes beside the loaded runs")
    parser.add_argument("--out", type=Path, default=Path("store_scale.json"))
    args = parser.parse_args()
    work = scratch_dir("tritonhook-store-scale-")
    base = template(work)
    path = work / "store"
    store = Store(path)
    fill_s = fill(store, base, args.captures)
    store.close()
    reader = Store(path, readonly=True)
    some_id = random.Random(0).randrange(1, args.captures)
    cli_rows, loads = cli_table(path, args.repeat, args.load, some_id)
    rows = [
        ("Store.captures(limit=50)", median_wall_seconds(lambda: reader.captures(limit=50)), 0.2),
        ("Store.captures(kernel='kernel_7$', limit=50) + count", median_wall_seconds(
            lambda: (reader.captures(kernel="kernel_7$", limit=50), reader.count(kernel="kernel_7$"))), 0.2),
        ("Store.captures(kernel='kernel_7$') (all 500 rows)", median_wall_seconds(
            lambda: reader.captures(kernel="kernel_7$")), 0.2),
        ("Store.captures(arch='sm_90', limit=50) + count", median_wall_seconds(
            lambda: (reader.captures(arch="sm_90", limit=50), reader.count(arch="sm_90"))), 0.2),
        ("Store.captures(event='cache_hit', limit=50) + count", median_wall_seconds(
            lambda: (reader.captures(event="cache_hit", limit=50), reader.count(event="cache_hit"))), 0.2),
        ("Store.page(kernel='kernel_7$', limit=50) + page_count (ls)", median_wall_seconds(
            lambda: (reader.page(kernel="kernel_7$", limit=50), reader.page_count(kernel="kernel_7$"))), 0.2),
        (f"Store.page(after={some_id}, limit=50) + page_count (ls --after)", median_wall_seconds(
            lambda: (reader.page(after=some_id, limit=50), reader.page_count(after=some_id))), 0.2),
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
    print()
    print_cli_table(cli_rows, loads)
    args.out.write_text(json.dumps({
        "captures": args.captures, "writers": args.writers, "cpus": os.cpu_count(), "fill_seconds": fill_s,
        "python": sys.version.split()[0], "commands": cli_rows, "load": loads,
        "operations": [{"name": n, "seconds": s, "target": t} for n, s, t in rows],
        "index_bytes": index_bytes, "index_bytes_per_capture": index_bytes / total,
        "synthetic": "rows copied from one real capture (Triton add kernel, sm_90a) with 200 names, 3 targets",
    }, indent=2))
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
