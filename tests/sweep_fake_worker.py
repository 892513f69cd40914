"""A replay worker for tests of the sweep's scheduling on a machine with no GPU (tests/test_sweep_scale.py).

It speaks the real worker protocol (`tritonhook.sweep.worker.serve`, `hello`, `protocol`) over the real job, and
"replays" a signature by reading every file and snapshot blob the real worker would (so a missing or corrupt one
fails the signature) and returning fixed timings. Told to, it dies on a signature, as a faulting kernel does:

    python sweep_fake_worker.py [--die ID] [--die-once MARKER ID] [--kill-parent] [--hang ID] [--slow ID S]
        [--seconds-per-signature S] [--refuse WHY]
        [--expect KEY=JSON] JOB

--die ID: SIGKILL itself on signature ID, every time; --die-once MARKER ID: only when MARKER does not exist yet
(it creates it); --kill-parent: SIGKILL its parent too (in a Ray task: the Ray worker process); --hang ID: sleep;
--slow ID SECONDS: take SECONDS longer over signature ID (a kernel whose replay outlasts the others');
--seconds-per-signature SECONDS: take SECONDS over every signature (workers busy side by side, as the scheduling
tests need; none by default: a test of what a replay measures waits for nothing);
--refuse WHY: refuse the job as a worker on a GPU of another architecture does; --expect KEY=JSON: every
signature fails unless the job's KEY holds that value; --time-by-text: each variant "takes" a time inversely
proportional to its kernel's .text size (the larger build is the faster one: a ranking a test computes from the
cubins alone); --time-with-text: proportional to it (a kernel whose code grew got slower: the gate's tests);
--differ ENTRY: the outputs of the signatures whose variants run ENTRY "differ" (a change that altered a kernel's
results); --interpret KERNELS: outputs judged as the real worker judges them (`measure.outputs.check_outputs`), on
real bytes: each variant's kernel, known by its cubin's sha256 in the JSON file KERNELS (-> a version of
tests/check_kernels.py's `scale_kernel`), run by Triton's interpreter on the CPU from the signature's recorded
inputs (a cubin needs a GPU); --time-by-l2 MODE=MS,...: every variant "takes" MS under the job's L2 rule MODE, or
under "MODE clean" or "MODE dirtied" where given and the job cleans or dirties the L2, or under "zeros-filled" where
given and the job fills synthetic inputs with zeros (a kernel whose time moves with what it finds in L2, with the
dirt it evicts and with its data: the miss check's tests); --slow-once MARKER ENTRY FACTOR: the first worker
process (MARKER does not exist yet: it creates it) times the second variant of ENTRY's signatures FACTOR times
slower, the processes after it do not (a short kernel's steady offset within one process, drawn afresh in the next:
the gate's retest); --started FILE: append its pid to FILE (how many workers a replay started); --log FILE: append
a JSON line per signature replayed, its job's path, id and the seconds it began and ended (which jobs ran side by
side).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import time
from pathlib import Path

from tritonhook.cubin import Cubin
from tritonhook.measure.outputs import check_outputs
from tritonhook.measure.sequential import FIXED, StopRule, rounds_stop
from tritonhook.store import Store
from tritonhook.sweep.job import ReplayJob
from tritonhook.sweep.misses import DIRT_WORDS
from tritonhook.sweep.recording import tensors_of
from tritonhook.sweep.worker import BASELINE_RUNS, REFUSED_EXIT, _arguments, _buffers, hello, protocol, serve

def _text_size(cubin: Path, entry: str) -> int:
    return Cubin.from_bytes(cubin.read_bytes(), label=str(cubin)).summary(entry)["text_size"]


def _one_round(args, job: dict, job_path: Path, variant: dict, index: int, round_: int) -> float:
    """What variant number `index` "takes" in round `round_`, by the flags' rule (default: 100 µs + 1 µs per
    index and per round: differences above the verdicts' µs floor, `config.ab.MIN_EFFECT_US`), times this
    process's offset (`--slow-once`)."""
    slowed = args.slow_process and index == 1 and variant["entry"] == args.slow_once[1]
    return _round_ms(args, job, job_path, variant, index, round_) * (float(args.slow_once[2]) if slowed else 1.0)


def _round_ms(args, job: dict, job_path: Path, variant: dict, index: int, round_: int) -> float:
    if args.time_by_text:
        return 1e4 / _text_size(job_path.parent / variant["cubin"], variant["entry"]) * (1 + 1e-4 * round_)
    if args.time_with_text:
        return 1e-4 * _text_size(job_path.parent / variant["cubin"], variant["entry"]) * (1 + 1e-4 * round_)
    if args.time_by_l2:
        by_condition = dict(part.split("=") for part in args.time_by_l2.split(","))
        named = f"{job['l2']} {DIRT_WORDS.get(job['l2_dirt'], '')}".strip()
        if job["synthetic_fill"] == "zeros" and "zeros-filled" in by_condition:
            named = "zeros-filled"
        return float(by_condition.get(named, by_condition[job["l2"]]))
    return 0.100 + 0.001 * (index + round_)


def _interpreted_check(kernels: Path, job: dict, job_path: Path, signature: dict, store: Store):
    """`--interpret`: the `OutputCheck` of the signature's variants, each run by Triton's interpreter from the
    recorded inputs (every variant from the same copy of them), the first (the baseline) `BASELINE_RUNS` times."""
    import torch
    from check_kernels import scale_kernel  # tests/check_kernels.py, beside this file

    versions = json.loads(kernels.read_text())
    pristine = _buffers(torch, signature["args"], store, torch.device("cpu"), job["synthetic_fill"])

    def outputs(variant: dict) -> dict:
        kernel = scale_kernel(versions[hashlib.sha256((job_path.parent / variant["cubin"]).read_bytes()).hexdigest()])
        buffers = {index: buffer.clone() for index, buffer in pristine.items()}
        values = _arguments(torch, signature["args"], buffers)  # the launcher's: None for a compile-time argument
        kernel[tuple(signature["grid"])](*(arg["value"] if arg["kind"] == "constexpr" else value
                                          for arg, value in zip(signature["args"], values)))
        return buffers

    baseline, *others = signature["variants"]
    return check_outputs(torch, (outputs(baseline) for _ in range(BASELINE_RUNS)),
                         ((variant["label"], outputs(variant)) for variant in others))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--die", type=int, default=None)
    parser.add_argument("--die-once", nargs=2, default=None, metavar=("MARKER", "ID"))
    parser.add_argument("--kill-parent", action="store_true")
    parser.add_argument("--hang", type=int, default=None)
    parser.add_argument("--slow", nargs=2, default=None, metavar=("ID", "SECONDS"))
    parser.add_argument("--seconds-per-signature", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--refuse", default=None)
    parser.add_argument("--expect", default=None, metavar="KEY=JSON")
    parser.add_argument("--time-by-text", action="store_true")
    parser.add_argument("--time-with-text", action="store_true")
    parser.add_argument("--differ", default=None, metavar="ENTRY")
    parser.add_argument("--interpret", default=None, metavar="KERNELS")
    parser.add_argument("--time-by-l2", default=None, metavar="MODE=MS,...")
    parser.add_argument("--slow-once", nargs=3, default=None, metavar=("MARKER", "ENTRY", "FACTOR"))
    parser.add_argument("--started", default=None, metavar="FILE", help="append this process's pid to FILE")
    parser.add_argument("--log", default=None, metavar="FILE", help="append a line per signature replayed to FILE")
    parser.add_argument("job")
    args = parser.parse_args()
    if args.started:
        with open(args.started, "a") as started:
            started.write(f"{os.getpid()}\n")
    if args.interpret:
        os.environ["TRITON_INTERPRET"] = "1"  # read when `triton.jit` makes the kernel: an interpreted one
    args.slow_process = bool(args.slow_once) and not Path(args.slow_once[0]).exists()
    if args.slow_process:
        Path(args.slow_once[0]).touch()
    job_path = Path(args.job)
    job = json.loads(job_path.read_text())
    store = Store(job["store"], readonly=True)

    def die() -> None:
        if args.kill_parent:
            os.kill(os.getppid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)

    def replay_one(current: ReplayJob, job_path: Path, signature: dict) -> dict:
        job = current.to_json()
        if signature["id"] == args.die:
            die()
        if args.die_once and int(args.die_once[1]) == signature["id"] and not Path(args.die_once[0]).exists():
            Path(args.die_once[0]).touch()
            die()
        if args.expect:
            key, value = args.expect.split("=", 1)
            if job.get(key) != json.loads(value):
                return {"id": signature["id"], "status": "error", "message": f"job {key}: {job.get(key)!r}"}
        if signature["id"] == args.hang:
            time.sleep(3600)
        if args.slow is not None and signature["id"] == int(args.slow[0]):
            time.sleep(float(args.slow[1]))
        for variant in signature["variants"]:
            (job_path.parent / variant["metadata"]).read_bytes()
            (job_path.parent / variant["cubin"]).read_bytes()
        for tensor in tensors_of(signature["args"]):
            if tensor.get("blob"):
                store.read_blob(tensor["blob"])
        time.sleep(args.seconds_per_signature)
        timed = [v for v in signature["variants"] if v["timed"]]
        rule = StopRule(**signature["stop"]) if signature.get("stop") else None
        samples, stopped = {v["label"]: [] for v in timed}, FIXED
        for round_ in range(rule.cap if rule else job["rounds"]):
            for index, v in enumerate(timed):
                samples[v["label"]].append(_one_round(args, job, job_path, v, index, round_))
            if rule is not None and timed and (stopped := rounds_stop(samples, [v["label"] for v in timed], rule)):
                break
        rounds = len(next(iter(samples.values()), []))
        if args.interpret:
            check = _interpreted_check(Path(args.interpret), job, job_path, signature, store)
            return {"id": signature["id"], "status": "ok", "samples": samples, "outputs": check.verdict,
                    "output_check": check.to_json(), "written": check.written, "rounds": rounds, "stopped": stopped}
        differ = any(v["entry"] == args.differ for v in signature["variants"])
        return {"id": signature["id"], "status": "ok", "samples": samples, "outputs": "differ" if differ else "bitwise",
                "written": 1, "rounds": rounds, "stopped": stopped}

    with protocol() as emit:
        if args.refuse:
            emit({"status": "refused", "message": args.refuse})
            return REFUSED_EXIT
        emit(hello(device="fake", capability=job["arch"]))
        return serve(job_path, emit, logged(args.log, replay_one) if args.log else replay_one)


def logged(log: str, replay_one):
    """`replay_one` that appends what it replayed, and when, to the file `log`."""
    def replay_logged(current: ReplayJob, job_path: Path, signature: dict) -> dict:
        began = time.time()
        record = replay_one(current, job_path, signature)
        with open(log, "a") as lines:
            lines.write(json.dumps({"job": str(job_path), "id": signature["id"], "began": began,
                                    "ended": time.time()}) + "\n")
        return record
    return replay_logged


if __name__ == "__main__":
    raise SystemExit(main())
