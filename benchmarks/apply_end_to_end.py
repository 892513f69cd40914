"""Does applying decisions give the workload what the sweep predicted? (issue 40, on a GPU)

    tritonhook sweep --store S --json -- python benchmarks/apply_end_to_end.py --workload 10 > sweep.json
    tritonhook decisions from-result --store S ID && tritonhook decisions export --store S decisions.json
    python benchmarks/apply_end_to_end.py --decisions decisions.json --sweep sweep.json [--rounds 40] [--steps 8]
        [--out apply_end_to_end.json]

The workload is the sweep proofs' transformer + Liger step (benchmarks/workloads/: Inductor's kernels for an
nn.TransformerEncoder trained under torch.compile, then Liger-Kernel's ops) in one process: `--workload N` runs N
steps, and is what the sweep records, so that the decisions' keys are those of the compiles timed here (a Liger
kernel compiled after Inductor's import is assembled by torch's ptxas, from another PTX ISA: another key).

Three long-lived processes build it, each under `tritonhook run` into a store of its own, with its own Triton and
Inductor caches: `plain`, `plain2` (an A/A arm: what two processes of the same build differ by) and `applied`
(`run --apply FILE`). After warm-up (every compile and autotune done) each pins all its threads to the same CPU
cores, and the parent asks them in turn, over many rounds in the timer's order (`measure.timing.round_order`),
to run `--steps` steps, timed two ways: with CUDA events around the steps (the step as the user waits for it), and
under torch.profiler (the GPU time of every kernel, and of the Triton kernels its own store captured). Only one
process runs at a time. Ratios are per round, with the intervals `tritonhook ab` uses.

The prediction: the sweep's workload estimate is a ratio of the recorded *Triton* GPU time, which the profiled
Triton time checks directly; the step also runs cuBLAS and PyTorch's own kernels and may wait on the CPU, so its
predicted ratio is 1 - (Triton share of the GPU time) x (1 - estimate). The applied arm's store says how many
compiles applied a decision. Prints a table; writes every figure to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from scratch import scratch_dir

HERE = Path(__file__).resolve().parent
ARMS = ("plain", "plain2", "applied")
PINNED_CORES = 4


def workload():
    """(run_steps, torch): the transformer + Liger step built, seeded; `run_steps(n)` runs n steps."""
    sys.path.insert(0, str(HERE / "workloads"))
    import inductor_transformer
    import liger_ops
    import torch

    transformer, liger = inductor_transformer.build(), liger_ops.build()

    def run_steps(count: int) -> None:
        for _ in range(count):
            inductor_transformer.step(*transformer)
            liger_ops.train_step(*liger)

    return run_steps, torch


def child(store: str, steps: int, warmup: int) -> None:
    """One arm: build the workload, warm it up, pin its threads, then answer each `go` line with the time of
    `steps` steps (ms) and each `profile` line with their kernels' GPU time (all, and Triton's)."""
    run_steps, torch = workload()
    run_steps(warmup)
    torch.cuda.synchronize()
    _pin_threads()
    triton_names = {capture.entry: capture.original_entry or capture.entry for capture in _store(store).captures()}
    _answer("ready")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for line in sys.stdin:
        if line.startswith("go"):
            start.record()
            run_steps(steps)
            end.record()
            end.synchronize()
            _answer(f"{start.elapsed_time(end)}")
        elif line.startswith("profile"):
            _answer(json.dumps(_kernel_times(torch, triton_names, lambda: run_steps(steps))))
        else:
            break


def _store(path: str):
    from tritonhook.store import Store

    return Store.of(path, create=False)


def _pin_threads() -> None:
    """Every thread of this process (the autograd engine's included) on the same cores as the other arms: the arms
    then differ by their builds, not by which cores the scheduler gave them."""
    cores = sorted(os.sched_getaffinity(0))[:PINNED_CORES]
    for task in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(task), cores)


def _kernel_times(torch, triton_names: dict[str, str], work) -> dict:
    """GPU time of the kernels `work` runs (µs), of those whose name the arm's store captured (Triton's), and of
    each of those by its name before any rename."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profile:
        work()
        torch.cuda.synchronize()
    total = 0.0
    by_kernel: dict[str, float] = {}
    for event in profile.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            total += event.device_time_total
            if event.name in triton_names:
                name = triton_names[event.name]
                by_kernel[name] = by_kernel.get(name, 0.0) + event.device_time_total
    return {"gpu_us": total, "triton_us": sum(by_kernel.values()), "by_kernel": by_kernel}


def _answer(text: str) -> None:
    print(f"@@ {text}", flush=True)


class Arm:
    """A child process under `tritonhook run`, spoken to over its stdin/stdout."""

    def __init__(self, name: str, work: Path, decisions: str | None, steps: int, warmup: int):
        self.name, self.store = name, work / f"store-{name}"
        env = {**os.environ, "TRITON_CACHE_DIR": str(work / f"triton-{name}"),
               "TORCHINDUCTOR_CACHE_DIR": str(work / f"inductor-{name}")}
        apply = ["--apply", decisions] if decisions else []
        command = [sys.executable, "-m", "tritonhook", "run", "--store", str(self.store), *apply, "--",
                   sys.executable, __file__, "--child", str(self.store), "--steps", str(steps),
                   "--warmup", str(warmup)]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def ask(self, what: str) -> str:
        self.process.stdin.write(what + "\n")
        self.process.stdin.flush()
        return self.answer()

    def answer(self) -> str:
        for line in self.process.stdout:
            if line.startswith("@@ "):
                return line[3:].strip()
        raise SystemExit(f"arm {self.name}: the process ended (exit {self.process.wait()})")

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def applied_compiles(store: Path) -> dict:
    """How many of the arm's compiles applied a decision, and which kernels."""
    from tritonhook.decisions.apply import APPLIED_KEY

    captures = _store(str(store)).captures()
    applied = [capture for capture in captures if (capture.metadata or {}).get(APPLIED_KEY)]
    return {"captures": len(captures), "applied": len(applied), "kernels": sorted({c.entry for c in applied}),
            "originals": sorted({c.original_entry or c.entry for c in applied})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", type=int, metavar="STEPS", help="only run the workload STEPS steps (to record)")
    parser.add_argument("--decisions", help="the decisions file (`tritonhook decisions export`)")
    parser.add_argument("--sweep", help="the sweep's --json output, for its workload estimate")
    parser.add_argument("--variant", default="cutlass_", help="the sweep variant whose estimate is predicted")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=6)
    parser.add_argument("--out", default="apply_end_to_end.json")
    parser.add_argument("--child", metavar="STORE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.workload:
        run_steps, torch = workload()
        run_steps(args.workload)
        torch.cuda.synchronize()
    elif args.child:
        child(args.child, args.steps, args.warmup)
    else:
        compare(args)


def compare(args) -> None:
    from tritonhook import format
    from tritonhook.measure.stats import ratio_interval
    from tritonhook.measure.timing import round_order

    work = scratch_dir("apply-e2e-")
    started = time.time()
    arms = {name: Arm(name, work, args.decisions if name == "applied" else None, args.steps, args.warmup)
            for name in ARMS}
    for arm in arms.values():
        arm.answer()  # ready: built and warmed up (the three compile side by side)
    step_ms = {name: [] for name in ARMS}
    kernels = {name: [] for name in ARMS}
    for round_ in range(args.rounds):
        order = [ARMS[a] for a in round_order(round_, len(ARMS))]
        for name in order:
            step_ms[name].append(float(arms[name].ask("go")) / args.steps)
        for name in order:
            kernels[name].append(json.loads(arms[name].ask("profile")))
    for arm in arms.values():
        arm.close()
    measures = {"step (CUDA events)": step_ms,
                "GPU time, all kernels": {n: [k["gpu_us"] for k in kernels[n]] for n in ARMS},
                "GPU time, Triton kernels": {n: [k["triton_us"] for k in kernels[n]] for n in ARMS}}
    rows = []
    for measure, samples in measures.items():
        for name in ("plain2", "applied"):
            ratio, low, high = ratio_interval(samples["plain"], samples[name])
            rows.append({"measure": measure, "arm": name, "ratio": ratio, "low": low, "high": high})
    applied = applied_compiles(arms["applied"].store)
    for kernel in applied["originals"]:
        samples = {n: [k["by_kernel"].get(kernel, 0.0) for k in kernels[n]] for n in ARMS}
        for name in ("plain2", "applied"):
            ratio, low, high = ratio_interval(samples["plain"], samples[name])
            rows.append({"measure": f"GPU time, {kernel}", "arm": name, "ratio": ratio, "low": low, "high": high})
    estimate = _estimate(args.sweep, args.variant)
    plain_gpu = measures["GPU time, all kernels"]["plain"]
    triton_fraction = (sorted(measures["GPU time, Triton kernels"]["plain"])[len(plain_gpu) // 2]
                       / sorted(plain_gpu)[len(plain_gpu) // 2])
    predicted = {"GPU time, Triton kernels": estimate,
                 "GPU time, all kernels": None if estimate is None else 1 - triton_fraction * (1 - estimate)}
    predicted["step (CUDA events)"] = predicted["GPU time, all kernels"]
    for row in rows:
        expected = predicted.get(row["measure"]) if row["arm"] == "applied" else 1.0
        row["predicted"] = expected
        row["difference_pp"] = None if expected is None else (row["ratio"] - expected) * 100
    result = {"command": " ".join(sys.argv), "rounds": args.rounds, "steps": args.steps,
              "seconds": time.time() - started, "sweep_estimate": estimate,
              "triton_fraction_of_gpu_time": triton_fraction, "rows": rows,
              "applied": applied, "plain": applied_compiles(arms["plain"].store),
              "step_ms": step_ms, "kernels_us": {n: [_kept(k, applied["originals"]) for k in kernels[n]] for n in ARMS}}
    Path(args.out).write_text(json.dumps(result, indent=1))
    format.print_table(
        ["measure", "arm / plain", "ratio", "95% interval", "predicted", "measured - predicted"],
        [[row["measure"], row["arm"], f"{row['ratio']:.4f}", f"[{row['low']:.4f}, {row['high']:.4f}]",
          "-" if row["predicted"] is None else f"{row['predicted']:.4f}",
          "-" if row["difference_pp"] is None else f"{row['difference_pp']:+.2f} pp"] for row in rows])
    print(f"plain step {sorted(step_ms['plain'])[len(step_ms['plain']) // 2]:.3f} ms; Triton kernels "
          f"{triton_fraction * 100:.1f}% of the GPU time; sweep estimate x{estimate}; applied "
          f"{result['applied']['applied']} of {result['applied']['captures']} compiles "
          f"({', '.join(result['applied']['kernels'])}); plain arm applied {result['plain']['applied']}")


def _kept(times: dict, kernels: list[str]) -> dict:
    """A round's profile as the results file keeps it: the totals and the applied kernels' own times."""
    return {"gpu_us": times["gpu_us"], "triton_us": times["triton_us"],
            "by_kernel": {kernel: times["by_kernel"].get(kernel, 0.0) for kernel in kernels}}


def _estimate(sweep_json: str | None, variant: str) -> float | None:
    """The sweep's workload estimate for `variant` (a ratio of the recorded Triton GPU time)."""
    if not sweep_json:
        return None
    data = json.loads(Path(sweep_json).read_text())
    for estimate in data.get("estimates") or []:
        if estimate.get("variant") == variant:
            return estimate["ratio"]
    return None


if __name__ == "__main__":
    main()
