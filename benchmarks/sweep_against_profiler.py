"""What the sweep says a workload runs, against what `torch.profiler` says its steady-state steps run.

    python benchmarks/sweep_against_profiler.py --out results.json --steps 6 -- python WORKLOAD.py
    ... --stages plain,profile --profile-out P.json; then --stages sweep,aa --profile-in P.json (two calls)
    ... --stages sweep[,aa]: the swept workload profiles its own steady state (one cold compile; the profiler's
        CUPTI timings beside the recording's hooks)
    ... --stages aa --store-in S: the A/A replay of the sweep's recording in store S, in a later call
    ... --stages check --store-in S: the gate of a second cold run against the sweep's recording in store S (its
        checked share: another compile may pick other templates), when the sweep's store is still there
    ... --confirm N: the sweep ends by confirming its decisions in the workload (`sweep --confirm N`: N runs an
        arm, ABBA in fresh processes), and the confirmation is kept
    ... --caches DIR: each stage's caches in DIR/STAGE, kept after the run (`decisions confirm` of the sweep's
        decisions in a later call, warm as a user's second run is)

The workload takes STEPS as its first argument and `--profile OUT.json` (its own `torch.profiler` table of the steps
after its warm-up: `benchmarks/workloads/bert_max_autotune.py`). Each stage runs in a fresh process with cold
Triton and Inductor caches of its own: the plain run (timed), the profiled run, `tritonhook sweep` (record and
replay, timed), an A/A replay of its recording (`plain,plain`, timed) and the gate (`tritonhook check` of a second
cold run against the sweep's recording: what it checked and the share it left unchecked). Then, per kernel making
the profiler's Triton GPU time (kernels named `triton_*`, or recorded as Triton kernels), its share there against its
share of the recording's workload launches: matched or not, and the difference in percentage points, for the kernels
making 90% of the profiler's time. Prints a table last and writes the JSON.
"""

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scratch import cold_env, scratch_dir  # noqa: E402

from tritonhook.check.result import CheckResult  # noqa: E402
from tritonhook.store import Store  # noqa: E402
from tritonhook.sweep.recording import RESULT_KIND as RECORDING  # noqa: E402

COVERAGE, SHARE_POINTS = 0.9, 0.02
"""The kernels held to the check (those making 90% of the profiler's Triton time) and how far apart their shares may
be (2 percentage points)."""


LOGS = Path(".")
"""Where each stage's standard error goes as it runs (beside --out): a stage cut off by a time limit still says how
far it got."""


def timed(command: list[str], env: dict, what: str) -> tuple[float, subprocess.CompletedProcess]:
    began = time.perf_counter()
    log = LOGS / f"{what.replace(' ', '_').replace('/', '')}.stderr"
    with open(log, "w") as stderr:
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True)
    seconds = time.perf_counter() - began
    print(f"{what}: exit {done.returncode} in {seconds:.1f} s", flush=True)
    if done.returncode != 0:
        print(done.stdout[-3000:], log.read_text()[-6000:], sep="\n", flush=True)
    return seconds, done


def shares(table: dict[str, float]) -> dict[str, float]:
    total = sum(table.values())
    return {name: value / total for name, value in table.items()} if total else {}


def per_launch(profiled: tuple[float, int], signatures: list) -> dict:
    """Where a kernel's two shares part: the profiler's launches and mean time a launch against the recording's
    launches (all steps), timed samples, their mean and median, and the launch lead its shares are net of."""
    us, launches = profiled
    times = sorted(t for s in signatures for t in s.times_ms)
    return {"profiler_launches": launches, "profiler_ms_per_launch": us / 1000 / launches if launches else None,
            "recorded_launches": sum(s.launches for s in signatures), "recorded_samples": len(times),
            "recorded_mean_ms": sum(times) / len(times) if times else None,
            "recorded_median_ms": times[len(times) // 2] if times else None,
            "recorded_max_ms": times[-1] if times else None,
            "recorded_lead_ms": max((s.empty_ms for s in signatures if s.empty_ms is not None), default=None)}


def compare(profiled: dict, recording) -> dict:
    """The profiler's Triton kernels against the recording's workload launches, per kernel name."""
    recorded_names = {s.kernel for s in recording.signatures}
    truth = shares({name: us for name, (us, _) in profiled["kernels"].items()
                    if name.startswith("triton_") or name in recorded_names})
    workload: dict[str, float] = {}
    launched: dict[str, list] = {}
    for signature in recording.signatures:
        if signature.launches:
            workload[signature.kernel] = workload.get(signature.kernel, 0.0) + signature.gpu_ms
            launched.setdefault(signature.kernel, []).append(signature)
    recorded = shares(workload)
    rows, covered = [], 0.0
    for name, share in sorted(truth.items(), key=lambda item: item[1], reverse=True):
        held = covered < COVERAGE - 1e-9
        covered += share
        rows.append({"kernel": name, "profiler_share": share, "recorded_share": recorded.get(name),
                     "held": held, "matched": name in recorded,
                     "within": name in recorded and abs(recorded[name] - share) <= SHARE_POINTS,
                     **per_launch(profiled["kernels"][name], launched.get(name, []))})
    held = [row for row in rows if row["held"]]
    benchmarked = [s for s in recording.signatures if not s.launches and s.tuning_launches]
    tuners: dict[str, int] = {}
    for decision in recording.autotune:
        tuners[decision.get("tuner") or "?"] = tuners.get(decision.get("tuner") or "?", 0) + 1
    return {"kernels": rows, "held": len(held), "held_matched": sum(r["matched"] for r in held),
            "held_within": sum(r["within"] for r in held),
            "max_share_points": max((abs(r["recorded_share"] - r["profiler_share"]) for r in held if r["matched"]),
                                    default=None),
            "recorded_only": sorted(set(recorded) - set(truth)),
            "benchmark_only_signatures": len(benchmarked),
            "benchmark_only_launches": sum(s.tuning_launches for s in benchmarked),
            "workload_signatures": sum(1 for s in recording.signatures if s.launches),
            "decisions_by_tuner": tuners}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--stages", default="plain,profile,sweep,aa", help="which stages to run now")
    parser.add_argument("--profile-out", default=None, help="keep the profiler's table here")
    parser.add_argument("--profile-in", default=None, help="the profiler's table of an earlier --stages profile")
    parser.add_argument("--store-in", default=None, help="the store of an earlier --stages sweep (for check alone)")
    parser.add_argument("--confirm", type=int, default=None, help="the sweep's --confirm N")
    parser.add_argument("--caches", default=None, help="each stage's Triton and Inductor caches here, kept")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    workload = [*command, str(args.steps)]
    scratch = scratch_dir("sweep-vs-profiler-")
    caches = Path(args.caches) if args.caches else scratch
    store = Path(args.store_in) if args.store_in else scratch / "store"
    stages = args.stages.split(",")
    out = Path(args.out)
    global LOGS
    LOGS = out.parent
    results: dict = json.loads(out.read_text()) if out.is_file() else {"command": workload}
    results.setdefault("versions", versions())

    def save():
        out.write_text(json.dumps(results, indent=1))

    if "plain" in stages:
        results["plain_s"], _ = timed(workload, cold_env(caches, "plain"), "plain run")
        save()
    profile = Path(args.profile_in or args.profile_out or scratch / "profile.json")
    if "profile" in stages:
        profile.unlink(missing_ok=True)  # the workload keeps a table already there (steady_profile.steps)
        _, done = timed([*workload, "--profile", str(profile)], cold_env(caches, "profile"), "profiled run")
        results["profiled_steps"] = json.loads(profile.read_text())["steps"]
        save()
    tritonhook = [sys.executable, "-m", "tritonhook"]
    if "sweep" not in stages:
        if "aa" in stages:
            run_aa(results, tritonhook, store, cold_env(caches, "sweep"))
            save()
        if "check" in stages:
            run_check(results, tritonhook, store, workload, cold_env(caches, "check"))
            save()
        return
    # no profiled run of its own: the swept workload profiles its own steady state (one cold compile, not two)
    inside = "profile" not in stages and args.profile_in is None
    results["profiled_inside_sweep"] = inside
    swept_command = [*workload, "--profile", str(profile)] if inside else workload
    if inside:
        profile.unlink(missing_ok=True)
    confirm = ["--confirm", str(args.confirm)] if args.confirm else []
    results["sweep_s"], done = timed([*tritonhook, "sweep", "--store", str(store), "--json", *confirm, "--",
                                      *swept_command], cold_env(caches, "sweep"), "tritonhook sweep")
    profiled = json.loads(profile.read_text())
    swept = json.loads(done.stdout)
    if args.confirm:  # the sweep's result, then what the workload said of its decisions
        results["confirmation"] = {"runs": args.confirm, "of": swept["confirmation"], "nothing": swept["nothing"]}
        swept = swept["result"]
    results["sweep"] = {"rows": len(swept["rows"]), "candidates": len(swept["candidates"]),
                        "fidelity": swept["fidelity"], "times_s": swept["times_s"], "warnings": swept["warnings"],
                        "estimates": swept["estimates"],
                        "rounds": {kind: rounds_spent(swept[kind]) for kind in ("rows", "candidates")}}
    results["recording_id"] = swept["recording_id"]  # the sweep's: with --confirm, the newest is a confirming run's
    recording = Store(store, create=False).result(swept["recording_id"])
    results["device"] = recording.device
    results["against_profiler"] = compare(profiled, recording)
    save()
    if "aa" in stages:
        run_aa(results, tritonhook, store, cold_env(caches, "sweep"))
    save()
    if "check" in stages:
        run_check(results, tritonhook, store, workload, cold_env(caches, "check"))
        save()
    show(results)


def versions() -> str:
    """torch, Triton, the GPU and its driver, as this machine has them (a results file names them)."""
    python = subprocess.run([sys.executable, "-c", "import torch, triton; print('torch', torch.__version__, 'triton', "
                             "triton.__version__, torch.cuda.get_device_name())"], capture_output=True, text=True)
    driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                            capture_output=True, text=True) if shutil.which("nvidia-smi") else None
    return " ".join(part for part in (python.stdout.strip() or python.stderr.strip()[-200:],
                                      f"driver {driver.stdout.split()[0]}" if driver and driver.stdout.strip() else "")
                    if part)


def run_aa(results: dict, tritonhook: list[str], store: Path, env: dict) -> None:
    """An A/A replay of the sweep's recording (`plain,plain`), timed, with its verdicts."""
    key = f"aa_rep_{os.environ['TRITONHOOK_REPLAY_REP_MS']}_ms" if os.environ.get("TRITONHOOK_REPLAY_REP_MS") else "aa"
    results[f"{key}_s"], done = timed([*tritonhook, "replay", "--store", str(store), "--variants", "plain,plain",
                                   "--json"], env, "A/A replay")
    if done.returncode == 0:
        aa = json.loads(done.stdout)
        verdicts = {kind: [row["variants"][1]["verdict"] for row in aa[kind] if len(row.get("variants", [])) > 1]
                    for kind in ("rows", "candidates")}
        results[key] = {"rows": len(aa["rows"]), "no_difference": sum(v in ("no difference", "SASS identical")
                                                                        for v in verdicts["rows"]),
                        "candidates": len(aa["candidates"]),
                        "candidates_no_difference": sum(v in ("no difference", "SASS identical")
                                                        for v in verdicts["candidates"]),
                        "verdicts": collections.Counter(verdicts["rows"] + verdicts["candidates"]),
                        "fidelity": aa["fidelity"], "times_s": aa["times_s"],
                        "rounds": {kind: rounds_spent(aa[kind]) for kind in ("rows", "candidates")}}


def rounds_spent(rows: list[dict]) -> dict:
    """Where an A/A replay's rounds went: how many signatures, their rounds in all, and why their rounds stopped
    (decided, precise enough, cap)."""
    return {"signatures": len(rows), "rounds": sum(row.get("rounds") or 0 for row in rows),
            "stopped": dict(collections.Counter(str(row.get("stopped")) for row in rows))}


def run_check(results: dict, tritonhook: list[str], store: Path, workload: list[str], env: dict) -> None:
    """The gate: a second cold run of the workload against the sweep's recording (`results["recording_id"]`; from an
    earlier run's results file without one, the newest in `store`), timed, with how many signatures it checked, the
    share of the GPU time it left unchecked and its exit status; the kernels it failed, and each current signature
    it could not match with its share and why."""
    baseline = results.get("recording_id") or Store(store, create=False).results(RECORDING, limit=1)[0].id
    results["check_s"], done = timed([*tritonhook, "check", "--store", str(store), "--baseline", str(baseline),
                                      "--json", "--", *workload], env, "tritonhook check")
    if done.stdout.strip():
        gate = CheckResult.from_json(json.loads(done.stdout))
        results["check"] = {"exit_code": done.returncode, "signatures": len(gate.kernels),
                            "checked": sum(k.checked for k in gate.kernels),
                            "failures": len(gate.failures), "unchecked_share": gate.unchecked_share,
                            "unmatched": len(gate.unmatched),
                            "failed": [{"label": k.label, "share": k.share, "ratio": k.ratio, "low": k.low,
                                        "high": k.high, "verdict": k.verdict} for k in gate.failures],
                            "unmatched_current": sorted(({"label": u.label, "share": u.share, "why": u.why}
                                                         for u in gate.unmatched if u.signature is not None),
                                                        key=lambda u: -(u["share"] or 0.0)),
                            "unmatched_baseline_why": sorted({u.why.split(",")[0] for u in gate.unmatched
                                                              if u.signature is None})}


def show(results: dict) -> None:
    """The table and the summary lines, last."""
    against = results["against_profiler"]
    print(f"\n{'kernel':48} {'profiler':>9} {'recorded':>9}")
    for row in against["kernels"][:20]:
        recorded = f"{row['recorded_share']:.4f}" if row["recorded_share"] is not None else "-"
        print(f"{row['kernel'][:48]:48} {row['profiler_share']:9.4f} {recorded:>9}{'' if row['held'] else '  (tail)'}")
    print(f"device {results['device']}; held kernels {against['held']}: matched {against['held_matched']}, within "
          f"{SHARE_POINTS:.0%} {against['held_within']} (max {against['max_share_points']}); benchmark-only "
          f"signatures {against['benchmark_only_signatures']} ({against['benchmark_only_launches']} launches); "
          f"decisions {against['decisions_by_tuner']}")
    plain = results.get("plain_s")
    if "check" in results:
        print(f"gate: {results['check']}")
    print(f"plain {plain or 0:.1f} s, sweep {results['sweep_s']:.1f} s "
          f"({results['sweep_s'] / plain if plain else 0:.2f}x), A/A {results.get('aa_s', 0):.1f} s; "
          f"sweep rows {results['sweep']['rows']}, fidelity {results['sweep']['fidelity']}; A/A {results.get('aa')}")


if __name__ == "__main__":
    main()
