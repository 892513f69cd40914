"""A sweep spread over GPUs (issue 17), on a machine with two GPUs: the same recording replayed on 1 GPU, on 2 GPUs,
through a two-node Ray cluster, and on 2 GPUs with one worker killed mid-sweep. Prints a table and writes JSON.

What must hold: identical verdicts (per signature: status, outputs, each variant's verdict), nothing lost (every
signature replayed in every run, the killed worker's kernel retried), and a speed-up >= 1.8x of the replay on 2 GPUs
over 1 GPU for a recording of >= 50 signatures (benchmarks/workloads/many_shapes.py records 65). The replay
time includes starting the workers (torch, a CUDA context: seconds), which 2 GPUs do not halve: 21 rounds keep
the per-kernel work large beside it.

    python benchmarks/sweep_scaling.py [--store DIR] [--rounds 21] [--ray ADDRESS | --ray-local] [--out FILE]

--ray-local starts the two-node cluster on this host (docs/gpu_machine.md#ray-on-one-host): a head owning GPU 0 and a second node
owning GPU 1 (`ray start`, each pinned with CUDA_VISIBLE_DEVICES), and stops it at the end. Every Ray step runs
under a timeout.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tritonhook import config, sweep
from tritonhook.errors import TritonhookError
from tritonhook.measure.variants import parse_variants
from tritonhook.store import Store

WORKLOAD = Path(__file__).resolve().parent.parent / "benchmarks" / "workloads" / "many_shapes.py"
RAY_PORT = 6380
RAY_STEP_TIMEOUT_S = 90
MIN_SIGNATURES, MIN_SPEEDUP = 50, 1.8


def recording_of(store: Store) -> sweep.Recording:
    """The store's newest recording, else a fresh one of the many-shapes workload."""
    if store.results("recording", limit=1):
        return sweep.load(store, None)
    recorded = sweep.record_command([sys.executable, str(WORKLOAD)], store)
    if recorded.recording is None:
        raise SystemExit(f"recording failed: {recorded.failure()}")
    return recorded.recording


def verdicts(result: sweep.SweepResult) -> dict[int, tuple]:
    """Per signature: what a sweep concludes (status, outputs, each variant's verdict), not its timings."""
    return {row.signature: (row.status, row.outputs, tuple(v.verdict for v in row.variants[1:]))
            for row in result.rows}


def worker_pids() -> list[int]:
    """This process's replay workers (its children running tritonhook.sweep.worker)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if parent == os.getpid() and b"tritonhook.sweep.worker" in command:
            pids.append(int(entry.name))
    return sorted(pids)


def kill_one_worker_after(seconds: float, killed: list) -> threading.Thread:
    def kill() -> None:
        time.sleep(seconds)
        pids = worker_pids()
        if pids:
            os.kill(pids[0], signal.SIGKILL)
            killed.append({"pid": pids[0], "after_s": round(seconds, 1), "workers_seen": len(pids)})

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread


def ray_command(*args: str, gpu: str) -> None:
    env = {**os.environ, config.sweep.CUDA_VISIBLE_DEVICES.name: gpu}
    subprocess.run(["timeout", str(RAY_STEP_TIMEOUT_S), sys.executable, "-m", "ray.scripts.scripts", *args],
                   env=env, check=True, stdout=subprocess.DEVNULL)


def start_local_ray() -> str:
    """A two-node Ray cluster on this host, one GPU each; the address a driver here joins it with ("auto": the
    cluster this machine started, whichever interface its head listens on)."""
    ray_command("start", "--head", "--port", str(RAY_PORT), "--num-gpus", "1", "--include-dashboard", "false",
                gpu="0")
    ray_command("start", "--address", f"127.0.0.1:{RAY_PORT}", "--num-gpus", "1", gpu="1")
    return "auto"


def stop_local_ray() -> None:
    subprocess.run(["timeout", str(RAY_STEP_TIMEOUT_S), sys.executable, "-m", "ray.scripts.scripts", "stop",
                    "--force"], stdout=subprocess.DEVNULL, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="sweep-scaling-store")
    parser.add_argument("--rounds", type=int, default=21)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--ray", default=None, metavar="ADDRESS", help="an existing Ray cluster with 2 GPUs")
    where.add_argument("--ray-local", action="store_true", help="start a two-node Ray cluster on this host")
    parser.add_argument("--out", default="sweep_scaling.json")
    args = parser.parse_args()
    os.environ.setdefault(config.sweep.RAY_USAGE_STATS_ENABLED.name, "0")
    os.environ.setdefault(config.sweep.RAY_AUTH_MODE.name, "disabled")

    store = Store(args.store)
    began = time.time()
    recording = recording_of(store)
    record_s = time.time() - began
    variants = parse_variants("plain,cutlass_")
    runs: dict[str, dict] = {}

    def run(name: str, **where) -> sweep.SweepResult:
        began = time.time()
        result = sweep.replay(recording, store, variants, sweep.ReplayPlan(rounds=args.rounds),
                              workers=sweep.Workers.at(**where, progress=True))
        runs[name] = {"wall_s": time.time() - began, "replay_s": result.times_s["replay"],
                      "build_s": result.times_s["build"], "result_id": result.id, "verdicts": verdicts(result),
                      "devices": sorted({row.replayed_on for row in result.rows}),
                      "retried": [row.signature for row in result.rows if row.retried_after],
                      "not_ok": [row.signature for row in result.rows if row.status != "ok"]}
        print(f"{name}: replay {runs[name]['replay_s']:.1f} s on {', '.join(runs[name]['devices'])}",
              file=sys.stderr)
        return result

    run("1 GPU", gpus=[0])
    run("2 GPUs", gpus=[0, 1])
    address, ray_error = args.ray, None
    try:
        if args.ray_local:
            address = start_local_ray()
        if address:
            run("Ray, 2 nodes", ray=address)
    except (subprocess.CalledProcessError, TritonhookError) as exc:  # reported; the killed-worker run still goes on
        ray_error = str(exc)
        print(f"Ray run failed: {exc}", file=sys.stderr)
    finally:
        if args.ray_local:
            stop_local_ray()
    killed: list = []
    kill_one_worker_after(runs["2 GPUs"]["build_s"] + runs["2 GPUs"]["replay_s"] / 2, killed)
    run("2 GPUs, 1 worker killed", gpus=[0, 1])
    runs["2 GPUs, 1 worker killed"]["killed"] = killed

    reference = runs["1 GPU"]["verdicts"]
    base = runs["1 GPU"]["replay_s"]
    print(f"\nrecording {recording.id}: {len(recording.signatures)} signatures (recorded in {record_s:.0f} s), "
          f"{args.rounds} rounds, plain vs cutlass_")
    print(f"{'run':26} {'replay s':>9} {'speed-up':>9} {'same verdicts':>14} {'lost':>5} {'retried':>8}  devices")
    for name, data in runs.items():
        same = sum(data["verdicts"].get(sid) == verdict for sid, verdict in reference.items())
        lost = len(set(reference) - set(data["verdicts"])) + len(data["not_ok"])
        data.update(speedup=base / data["replay_s"], same_verdicts=same, lost=lost)
        print(f"{name:26} {data['replay_s']:9.1f} {data['speedup']:8.2f}x {same:>6}/{len(reference):<7} {lost:>5} "
              f"{len(data['retried']):>8}  {', '.join(data['devices'])}")
    print(f"killed: {killed or 'no worker was running at the kill time'}")
    checks = {"signatures >= 50": len(recording.signatures) >= MIN_SIGNATURES,
              "speed-up on 2 GPUs >= 1.8x": runs["2 GPUs"]["speedup"] >= MIN_SPEEDUP,
              "identical verdicts in every run": all(d["same_verdicts"] == len(reference) for d in runs.values()),
              "nothing lost": all(d["lost"] == 0 for d in runs.values()),
              "a worker was killed mid-sweep": bool(killed),
              "Ray run done": any(name.startswith("Ray") for name in runs)}
    for check, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}: {check}")
    for data in runs.values():
        data["verdicts"] = {str(k): list(v) for k, v in data["verdicts"].items()}
    Path(args.out).write_text(json.dumps({"signatures": len(recording.signatures), "rounds": args.rounds,
                                          "record_s": record_s, "runs": runs, "checks": checks,
                                          "ray_error": ray_error}, indent=1))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
