"""Autotune picks across the ranks and cold runs of a torchrun job, pinned once, then confirmed; and `tune` on two
GPUs against one.

    python benchmarks/divergence_across_ranks.py --out div.json --runs 3 --nproc 2 -- WORKLOAD.py [ARGS...]
    ... --tune-top 16: also `tune` the last cold run's recording on GPU 0 and on GPUs 0 and 1 (ABBA)
    ... --scratch DIR --stages runs,reports (one call), then --stages pinned,confirm,tune (the next, same DIR)

Stages, each with cold Triton and Inductor caches of its own (a folder per run, shared by the run's ranks as one
machine's ranks share theirs):
1. `--runs` cold runs of `torchrun --standalone --nproc-per-node N WORKLOAD` under `tritonhook record` (one store);
2. `tritonhook decisions divergence` over them: the tuning keys, the divergent ones, their flip rates and the cost
   inside the workload; `--replay --top K` (`--replay-top`, default 5): the rival picks of the K costliest
   divergent keys timed on one GPU, with intervals; `--pin`: one pick a key, every divergent key's rivals replayed
   first (a rival faster beyond doubt is the pin);
3. `--pinned-runs` cold runs under `tritonhook record --apply` (a second store), and the divergence among them
   (a pinned key should agree everywhere);
4. `tritonhook decisions confirm --decision ID ... --runs --confirm-runs` of the pins in the job (ABBA, fresh
   processes): per kernel and for the step;
5. with `--tune-top K`: `tritonhook tune --top K` on the last run's recording, on GPU 0 and on GPUs 0 and 1 in ABBA
   order (`TUNE_ORDER`): candidates a minute per GPU, two GPUs over one per pair, the confirmed winners.
Every stage is timed and bounded (`--stage-timeout`), its standard error kept beside --out; the JSON is written after
each stage (and read back by a later call with the same --out), so a run cut short keeps what it finished. `--stages`
(runs, reports, pinned, confirm, tune; default all) splits the work over calls that share `--scratch` (kept when
given; else a temporary folder removed at exit). Prints a table last.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scratch import cold_env, scratch_dir

TRITONHOOK = [sys.executable, "-m", "tritonhook"]


def run_stage(command: list[str], env: dict, log: Path, timeout_s: float) -> tuple[float, int, str]:
    """`command` timed under a limit: (seconds, exit status, standard output); its stderr into `log`. A stage cut
    off by the limit exits 124, as `timeout` says it, after tritonhook has passed SIGTERM on."""
    began = time.perf_counter()
    with open(log, "w") as stderr:
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True)
        try:
            out, _ = process.communicate(timeout=timeout_s)
            status = process.returncode
        except subprocess.TimeoutExpired:
            process.terminate()
            out, _ = process.communicate()
            status = 124
    seconds = time.perf_counter() - began
    print(f"{log.stem}: exit {status} in {seconds:.1f} s", flush=True)
    return seconds, status, out


def divergence(store: Path, env: dict, log: Path, timeout_s: float, *flags: str) -> dict | None:
    """`decisions divergence` of every recording in `store` (with `flags`), as JSON; None where it failed."""
    _, status, out = run_stage([*TRITONHOOK, "decisions", "divergence", "--store", str(store), "--json", *flags],
                               env, log, timeout_s)
    return json.loads(out) if status == 0 and out.strip() else None


def summary(found: dict | None) -> dict | None:
    """The divergence report's figures: keys, divergent keys, and per divergent key its flip rate, spread, cost and
    replayed rivals."""
    if found is None:
        return None
    divergent = [key for key in found["keys"] if key["divergent"]]
    return {"keys": len(found["keys"]), "divergent": len(divergent),
            "divergent_keys": [{field: key.get(field) for field in ("kernel", "key", "tuner", "configs", "flip_rate",
                                                                     "spread", "cost", "replayed")}
                               for key in divergent]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pinned-runs", type=int, default=2)
    parser.add_argument("--confirm-runs", type=int, default=2)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--tune-top", type=int, default=0)
    parser.add_argument("--replay-top", type=int, default=5, help="replay the rival picks of this many costliest keys")
    parser.add_argument("--stage-timeout", type=float, default=400.0)
    parser.add_argument("--stages", default="runs,reports,pinned,confirm,tune")
    parser.add_argument("--scratch", default=None, help="stores and caches here, kept (default: a temporary folder)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    workload = args.command[1:] if args.command[:1] == ["--"] else args.command
    job = ["torchrun", "--standalone", f"--nproc-per-node={args.nproc}", *workload]
    out, stages = Path(args.out), args.stages.split(",")
    logs = out.parent
    scratch = Path(args.scratch) if args.scratch else scratch_dir("divergence-")
    results: dict = json.loads(out.read_text()) if out.is_file() else {"job": job, "runs": [], "pinned_runs": []}

    def save() -> None:
        out.write_text(json.dumps(results, indent=1))

    store, pinned_store = scratch / "store", scratch / "pinned"
    env = cold_env(scratch, "reports")
    if "runs" in stages:
        for run in range(args.runs):
            seconds, status, _ = run_stage([*TRITONHOOK, "record", "--store", str(store), "--", *job],
                                           cold_env(scratch, f"run{run}"), logs / f"record_{run}.stderr",
                                           args.stage_timeout)
            results["runs"].append({"seconds": seconds, "exit": status})
            save()
    if "reports" in stages:
        results["divergence"] = summary(divergence(store, env, logs / "divergence.stderr", args.stage_timeout))
        results["replayed"] = summary(divergence(store, env, logs / "replayed.stderr", args.stage_timeout,
                                                 "--replay", "--top", str(args.replay_top)))
        pinned = divergence(store, env, logs / "pin.stderr", args.stage_timeout, "--pin")
        results["pins"] = [d["id"] for d in ((pinned or {}).get("pins") or {}).get("decisions", [])]
        save()
    pins = results.get("pins") or []
    if "pinned" in stages and pins:
        for run in range(args.pinned_runs):
            seconds, status, _ = run_stage([*TRITONHOOK, "record", "--store", str(pinned_store), "--apply",
                                            str(store), "--", *job], cold_env(scratch, f"pinned{run}"),
                                           logs / f"pinned_{run}.stderr", args.stage_timeout)
            results["pinned_runs"].append({"seconds": seconds, "exit": status})
            save()
        results["divergence_pinned"] = summary(divergence(pinned_store, env, logs / "divergence_pinned.stderr",
                                                          args.stage_timeout))
        save()
    if "confirm" in stages and pins:
        decisions = [flag for pin in pins for flag in ("--decision", str(pin))]
        _, status, confirmed = run_stage([*TRITONHOOK, "decisions", "confirm", "--store", str(store), *decisions,
                                          "--runs", str(args.confirm_runs), "--json", "--", *job],
                                         cold_env(scratch, "confirm"), logs / "confirm.stderr", args.stage_timeout)
        results["confirmation"] = json.loads(confirmed) if status == 0 and confirmed.strip() else {"exit": status}
        save()
    if "tune" in stages and args.tune_top:
        tune(results, store, env, logs, args)
        save()
    show(results)


TUNE_ORDER = ("0", "0,1", "0,1", "0")
"""`tune`'s GPUs in ABBA order: each two-GPU search beside a one-GPU search, so that a drift of the machine over the
four (clocks, caches, the host's load) falls on both sides alike."""


def tune(results: dict, store: Path, env: dict, logs: Path, args) -> None:
    """`tune --top K` of the last cold run's recording (tune's default, the store's newest) on one GPU and on two,
    in `TUNE_ORDER`: candidates a minute per GPU, 2 GPUs over 1 for each adjacent pair, the median search seconds,
    and the winners each search confirmed (a kernel's best that its confirmation found faster than plain)."""
    runs = []
    for at, gpus in enumerate(TUNE_ORDER):
        log = logs / f"tune_{at}_gpus_{gpus.replace(',', '_')}.stderr"
        _, status, out = run_stage([*TRITONHOOK, "tune", "--store", str(store), "--top", str(args.tune_top),
                                    "--gpus", gpus, "--json"], env, log, args.stage_timeout)
        tuned = json.loads(out) if status == 0 and out.strip() else None
        runs.append({"gpus": gpus, "exit": status} if tuned is None else {
            "gpus": gpus, "candidates_per_minute_per_gpu": tuned["candidates_per_minute_per_gpu"],
            "totals": tuned["totals"], "times_s": tuned["times_s"],
            "confirmed_winners": sorted([k["signature"], k["winner"]] for k in tuned["kernels"]
                                        if k["winner"] and (k.get("vs_plain") or {}).get("verdict") == "faster")})
    results["tune"] = {"top": args.tune_top, "runs": runs, **tune_summary(runs)}


def tune_summary(runs: list[dict]) -> dict:
    """Two GPUs over one: per adjacent pair of `TUNE_ORDER` (the first two runs, the last two), the median search
    seconds of each side, and whether every run confirmed the same winners."""
    if any("times_s" not in run for run in runs):
        return {}
    rate = [run["candidates_per_minute_per_gpu"] for run in runs]
    one, two = ([run["times_s"]["search"] for run in runs if run["gpus"] == gpus] for gpus in ("0", "0,1"))
    return {"rate_ratio_pairs": [2 * rate[1] / rate[0], 2 * rate[2] / rate[3]],
            "search_s_median_1_gpu": statistics.median(one), "search_s_median_2_gpus": statistics.median(two),
            "same_confirmed_winners": all(run["confirmed_winners"] == runs[0]["confirmed_winners"] for run in runs)}


def show(results: dict) -> None:
    print("\nstage                      result")
    for index, run in enumerate(results["runs"]):
        print(f"cold run {index}                 exit {run['exit']} in {run['seconds']:.1f} s")
    found = results.get("divergence") or {}
    print(f"divergence                 {found.get('divergent')} of {found.get('keys')} key(s) divergent")
    for key in found.get("divergent_keys", [])[:10]:
        print(f"  {key['kernel'][:50]:50} flip {key['flip_rate']:.2f} configs {len(key['configs'])} "
              f"cost {key['cost'] and round(key['cost']['excess_ms'], 3)} ms")
    print(f"pins                       {results.get('pins')}")
    after = results.get("divergence_pinned") or {}
    print(f"pinned runs: divergence    {after.get('divergent')} of {after.get('keys')} key(s) divergent")
    step = (results.get("confirmation") or {}).get("step")
    print(f"confirmed step             {step}")
    tuned = results.get("tune") or {}
    for run in tuned.get("runs", []):
        print(f"tune on GPUs {run['gpus']:5}         {run.get('candidates_per_minute_per_gpu', 'failed')} candidates a "
              f"minute per GPU")
    if tuned.get("rate_ratio_pairs"):
        print(f"tune, 2 GPUs over 1          {', '.join(f'{r:.2f}x' for r in tuned['rate_ratio_pairs'])}; the same "
              f"confirmed winners: {tuned['same_confirmed_winners']}")


if __name__ == "__main__":
    main()
