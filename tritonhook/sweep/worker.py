"""The replay worker: a child process that replays launch signatures on one GPU, one after another.

Run as `python -m tritonhook.sweep.worker JOB`. JOB (JSON) lists the signatures and, per signature, the variants
to load (metadata JSON + cubin files the parent built, paths relative to JOB's folder); a variant with `launch` is
another autotune config's build, launched as that config launched (its grid, its launch spec) on this signature's
inputs (`replay._compare_configs`). The protocol (`serve`):
the worker says hello (a JSON line with its host and `CUDA_VISIBLE_DEVICES`), then reads signature ids from stdin,
one a line (or `job PATH`: the next job of the same replay, its next stage), and for each writes one JSON line when
it starts and one with its result, on the stdout it was given (anything else written to stdout goes to stderr). So when a kernel faults and takes the CUDA context (and this
process) down, the parent (`schedule.py`) knows which one it was, and a fresh worker goes on with the rest.
stdin closed: the worker exits.

Per signature: rebuild the arguments (snapshot blobs, else synthetic data of the same dtype and shape), load every
variant through Triton's own launcher (`_triton.load_kernel`), find the buffers the kernel writes (`_written`), run
the baseline five times and every other variant once from the restored inputs and judge each variant's outputs
against the baseline's own run-to-run spread (`measure.outputs`: bitwise, within spread, differ, with ULPs), then
time the variants interleaved call by call with the A/B timer (`measure.timing.bench_interleaved`: CUDA events,
warm-up, L2 rotation), one median per variant per round, restoring the written buffers from the snapshot before
every round and the state the kernel may consume (`_state`: small integer buffers it writes, a tile counter) before
every call, with an empty kernel queued and timed after every call (`measure.timing.time_empty_kernel`, as the
recording does after each kernel it times). `l2` in the job: "cold" rotates the input sets through copies spanning
4x the L2; "warm" keeps one set (each call finds in L2 what the previous one read and wrote); "inputs" rotates, and
reads the buffers the kernel does not write just before each call, as a kernel inside a workload finds what its
producer has just written (its outputs not); "measured" rotates, and reads just before each call the parts of each
buffer that the recording's L2 probe found in L2 inside the workload (`l2probe`). `l2_dirt` in the job
(`config.sweep.L2_DIRT`): a buffer the size of the L2 is written (dirty), half copied onto its other half (half) or
read (clean) before each call, before those reads, under "measured" as the recording's dirt probe found the L2 for
the signature (`_L2Setup`). After the rounds the SM clock is read (`measure.timing.sm_clock_mhz`), as the recorder
reads it after the workload. `stop` in
a signature's entry (`measure.sequential.StopRule`): its rounds stop once the always-valid interval of every variant
against the baseline has decided or is precise enough, or at the cap; without it, `rounds` rounds (fixed).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import socket
import sys
import traceback
from pathlib import Path
from typing import Callable, Iterator

from .. import _triton, config
from ..errors import TritonhookError
from ..files import file_name
from ..measure.outputs import as_bits, check_outputs
from ..measure.sequential import FIXED, StopRule, rounds_stop
from ..measure.stats import interquartile_mean, median
from ..measure.timing import bench_interleaved, l2_bytes, round_order, sm_clock_mhz
from ..store import Store
from . import l2probe
from .job import ReplayJob
from .recording import check_arch, synthetic_fill, tensors_of

FAULT_EXIT = 3
"""Exit status of a worker that stopped after a kernel fault (the CUDA context is unusable afterwards)."""
REFUSED_EXIT = 4
"""Exit status of a worker that refused the job as a whole (a recording of another GPU architecture)."""


def _buffers(torch, args: list[dict], store: Store, device, fill: str) -> dict[int, object]:
    """One flat device buffer per distinct storage of the arguments: the snapshot, else synthetic data (floats as
    `fill` says: `recording.synthetic_fill`)."""
    buffers = {}
    for tensor in tensors_of(args):
        if tensor["alias"] is not None:
            continue
        dtype = getattr(torch, tensor["dtype"])
        span = tensor["span"]
        if tensor["blob"] is not None:
            raw = bytearray(store.read_blob(tensor["blob"], what=f"snapshot of {tensor.get('name', 'tensor')}"))
            data = torch.frombuffer(raw, dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
            buffers[tensor["buffer"]] = data.to(device).view(dtype)
        elif synthetic_fill(tensor["dtype"], fill) == "randn":
            buffers[tensor["buffer"]] = torch.randn(span, device=device).to(dtype)
        else:
            buffers[tensor["buffer"]] = torch.zeros(span, device=device, dtype=dtype)
    return buffers


def _view(torch, tensor: dict, buffers: dict):
    """A tensor argument as a view of its buffer (an alias: of the buffer of the argument it shares memory with)."""
    base = buffers[tensor["buffer"] if tensor["alias"] is None else tensor["alias"]]
    return base.as_strided(tensor["shape"], tensor["strides"], 0)


def _arguments(torch, args: list[dict], buffers: dict) -> list:
    built = []
    for arg in args:
        if arg["kind"] == "tensor":
            built.append(_view(torch, arg, buffers))
        elif arg["kind"] == "tensordesc":
            fields = {key: value for key, value in arg.items() if key not in ("kind", "name", "base")}
            built.append(_triton.make_tensor_descriptor(_view(torch, arg["base"], buffers), fields))
        elif arg["kind"] == "constexpr":
            built.append(None)  # the launcher skips compile-time arguments
        else:
            built.append(arg["value"])
    return built


def _measured_ranges(signature: dict, buffers: dict) -> list[tuple[int, list[tuple[int, int]]]]:
    """Per buffer (its position in `sorted(buffers)`), the byte ranges the recording's probe found in L2 at the
    kernel's timed launches (`l2probe.warm_ranges`); empty for a signature recorded without the probe."""
    position = {index: at for at, index in enumerate(sorted(buffers))}
    ranges: dict[int, list[tuple[int, int]]] = {}
    for tensor, fractions in zip(tensors_of(signature["args"]), signature.get("l2_resident") or ()):
        if fractions is not None:
            at = position[tensor["buffer"] if tensor["alias"] is None else tensor["alias"]]
            ranges.setdefault(at, []).extend(l2probe.warm_ranges(fractions, tensor["span"] * tensor["element_size"]))
    return sorted(ranges.items())


@dataclasses.dataclass
class _L2Setup:
    """What goes before each timed call, in this order: the L2's dirt (`dirt`: "dirty" writes `flood`, a buffer
    the size of the L2; "half" copies half of it onto the other half, interleaved; "clean" reads it; "none" leaves
    what the previous call left), the dirt probe's read where
    the recording probed (`probe`: it evicted that much just before the kernel there, so it does here), then byte
    ranges of the call's buffers (per buffer position) brought into L2, so that the call finds them there:
    `--l2 inputs` (the whole of every buffer the kernel does not write, as right after the kernel that produced
    them) and `--l2 measured` (`_measured_ranges`). Ranges of a buffer the kernel writes (positions in `written`)
    are rewritten with their own bytes, not read: inside a workload such lines are dirty (the buffer was written by
    the step before), and with them clean a kernel whose whole step fits in L2 replays slow
    (docs/sweep.md#hostile-fidelity).

    Why the dirt: every line a kernel evicts that is dirty must first go back to DRAM, on the bandwidth the kernel
    needs. A training step leaves its L2 full of lines it wrote, a workload streaming weights leaves it clean; a
    replay that leaves the lines of its previous call lets a memory-bound kernel run faster or slower than inside
    the workload, whatever the --l2 mode (docs/sweep_fidelity.md#a-dirty-l2)."""

    torch: object
    flood: object | None
    dirt: str
    probe: l2probe.DirtPool | None
    ranges: list[tuple[int, list[tuple[int, int]]]]
    written: frozenset[int]
    probe_cycles: object | None = None   # the dirt probe's cycles, written and never read here

    @property
    def needed(self) -> bool:
        return self.dirt != "none" or self.probe is not None or bool(self.ranges)

    def __call__(self, buffers: tuple) -> None:
        if self.dirt == "dirty":
            self.flood.zero_()
        elif self.dirt == "half":
            l2probe.dirty_half_of_l2(self.torch, self.flood)
        elif self.dirt == "clean":
            l2probe.read_into_l2(self.torch, self.flood)
        if self.probe is not None:
            self.probe_cycles = l2probe.probe_dirt(self.torch, self.probe, self.probe_cycles)
        for at, spans in self.ranges:
            raw = buffers[at].view(self.torch.uint8)
            for begin, end in spans:
                if end <= begin:
                    continue
                if at in self.written:
                    raw[begin:end].add_(0)
                else:
                    l2probe.read_into_l2(self.torch, raw[begin:end])


def replay_signature(torch, job: ReplayJob, signature: dict, store: Store, workdir: Path) -> dict:
    device = torch.device("cuda")
    launches = {v["label"]: {**signature, **v.get("launch", {})} for v in signature["variants"]}
    specs = {label: _triton.LaunchSpec(at["triton_hash"], at["kernel"], at["arg_names"], at["signature"],
                                       at["constexprs"]) for label, at in launches.items()}
    grids = {label: tuple(at["grid"]) for label, at in launches.items()}
    pristine = _buffers(torch, signature["args"], store, device, job.synthetic_fill)
    loaded = workdir / "kernels" / str(signature["id"])
    variants = {v["label"]: ((workdir / v["metadata"]).read_bytes(), (workdir / v["cubin"]).read_bytes(), v["entry"])
                for v in signature["variants"]}

    def load(labels) -> dict:
        """Each variant as a freshly loaded module (its code at an address of its own)."""
        return {label: _triton.load_kernel(loaded / file_name(label), specs[label], *variants[label])
                for label in labels}

    kernels = load(variants)
    buffers = {index: buffer.clone() for index, buffer in pristine.items()}

    def restore() -> None:
        for index, buffer in buffers.items():
            buffer.copy_(pristine[index])

    def run(label: str, poison=()) -> None:
        """One call of a variant from the snapshot (the buffers in `poison` first overwritten: `_written`)."""
        restore()
        for index in poison:
            _poison(torch, buffers[index])
        _triton.launch(kernels[label], grids[label], _arguments(torch, signature["args"], buffers))
        torch.cuda.synchronize()

    baseline, *others = kernels
    written = _written(torch, functools.partial(run, baseline), buffers, pristine)
    state = _state(buffers, written)

    def outputs_of(label: str, *, kept: bool = False) -> dict:
        """A variant's written buffers after one call from the snapshot: the buffers themselves, which
        `check_outputs` compares before the next call, or (`kept`) copies of them."""
        run(label)
        return {index: buffers[index].clone() if kept else buffers[index] for index in sorted(written)}

    # one baseline run kept, every other call compared as it comes: a copy per run would hold the written bytes
    # BASELINE_RUNS + variants times over (a 262k-token vocabulary's loss backward ran the H100 out of memory)
    check = check_outputs(torch, (outputs_of(baseline, kept=call == 0) for call in range(BASELINE_RUNS)),
                          ((label, outputs_of(label)) for label in others))
    timed = [v["label"] for v in signature["variants"] if v["timed"]]
    l2 = job.l2
    read_only = [(at, [(0, buffer.numel() * buffer.element_size())])
                 for at, (index, buffer) in enumerate(sorted(buffers.items())) if index not in written]
    ranges = read_only if l2 == "inputs" else _measured_ranges(signature, buffers) if l2 == "measured" else []
    dirt = l2probe.replayed_dirt(job.l2_dirt, signature.get("l2_dirt"))
    setup = _L2Setup(torch, torch.empty(l2_bytes(torch), dtype=torch.uint8, device=device) if dirt != "none" else None,
                     dirt, l2probe.DirtPool(torch) if l2 == "measured" and signature.get("l2_dirt") is not None
                     else None, ranges, frozenset(at for at, index in enumerate(sorted(buffers)) if index in written))
    reset = _ResetState([(at, pristine[index]) for at, index in enumerate(sorted(buffers)) if index in state])
    before_call = _each_before_call([reset] * bool(state) + [setup] * setup.needed)
    arms_args = {}

    def arm(label: str):
        def call(*rotated):
            key = tuple(id(buffer) for buffer in rotated)
            if key not in arms_args:
                arms_args[key] = _arguments(torch, signature["args"], dict(zip(sorted(buffers), rotated)))
            _triton.launch(kernels[label], grids[label], arms_args[key])

        return call

    samples, empty_rounds = {label: [] for label in timed}, []
    rule = StopRule(**signature["stop"]) if signature.get("stop") else None
    stopped = FIXED
    for round_index in range(rule.cap if rule else job.rounds):
        # each round loads the variants afresh, each at every place of the loading order alike (`round_order`):
        # two loads of one cubin can differ by a few percent for a small kernel for the module's whole life, so
        # where the code lands must vary between rounds for the interval to cover it
        # (docs/timing.md#input-sets-and-module-loads)
        kernels = load([timed[arm] for arm in round_order(round_index, len(timed))])
        restore()
        arms_args.clear()
        results = bench_interleaved([(contextlib.nullcontext, arm(label)) for label in timed],
                                    inputs=[buffers[index] for index in sorted(buffers)],
                                    warmup_ms=job.warmup_ms, rep_ms=job.rep_ms, min_reps=job.min_reps,
                                    rotate=l2 != "warm", before_call=before_call, trailing_empty=True)
        for label, result in zip(timed, results):  # one figure per round: see stats.interquartile_mean
            samples[label].append(interquartile_mean(result.samples_ms))
        empties = [ms for result in results for ms in result.empty_samples_ms or ()]
        if empties:  # the empty kernel after every call, all variants alike: the replay's launch lead
            empty_rounds.append(interquartile_mean(empties))
        if rule is not None and (stopped := rounds_stop(samples, timed, rule)) is not None:
            break
    return {"id": signature["id"], "status": "ok", "samples": samples, "outputs": check.verdict,
            "output_check": check.to_json(), "written": len(written), "reset_each_call": len(state),
            "empty_ms": median(empty_rounds) if empty_rounds else None, "clock_mhz": sm_clock_mhz(torch),
            "rounds": len(samples[timed[0]]), "stopped": stopped}


BASELINE_RUNS = 5
"""Runs of the baseline from the same inputs: its run-to-run spread, which a variant's outputs are judged against
(`measure.outputs`)."""


def _same_bytes(torch, a, b) -> bool:
    """Bitwise equality of two buffers (torch.equal says a NaN differs from itself)."""
    return torch.equal(a.view(torch.uint8), b.view(torch.uint8))


def _poison(torch, buffer) -> None:
    """Overwrite a float `buffer` with contents the kernel will not write by chance: its own values moved by one
    element (finite values stay finite), or, where that changes nothing (a constant buffer), NaN bytes. Integer
    buffers are never touched: they may hold indices or offsets, and a moved one could send the kernel out of
    bounds and take the CUDA context with it. The elements move as same-sized integers: torch has no roll for
    float8, and the bytes moved are the same for every float type."""
    elements = as_bits(torch, buffer.view(-1))
    moved = elements.roll(1)
    if elements.numel() > 1 and not _same_bytes(torch, elements, moved):
        elements.copy_(moved)
    else:
        elements.view(torch.uint8).fill_(0xFF)


def _written(torch, run, buffers: dict, pristine: dict) -> set:
    """The buffers the kernel writes. A call from the snapshot shows those whose bytes change; a buffer the
    snapshot caught already holding the kernel's result (an earlier autotune config wrote the same thing) does not
    change, so the other float buffers are poisoned (`_poison`) and a second call shows which of them it
    overwrites (an integer buffer so caught still reads as not written)."""
    run()
    written = {index for index, buffer in buffers.items() if not _same_bytes(torch, buffer, pristine[index])}
    unchanged = [index for index, buffer in buffers.items()
                 if index not in written and buffer.dtype.is_floating_point]
    if unchanged:
        run(poison=unchanged)
        written |= {index for index in unchanged
                    if not _same_bytes(torch, buffers[index], _poisoned(torch, pristine[index]))}
    return written


STATE_BYTES = 64 * 1024
"""The largest integer buffer a kernel writes that the replay takes for state it may consume (`_state`)."""


def _state(buffers: dict, written: set) -> set:
    """State the kernel may consume: the integer buffers it writes of at most `STATE_BYTES` (a tile counter it counts
    up, tickets or locks it may leave taken, flags). The workload's host resets such state before every launch (our
    Hopper attention's `dynamic_tiles` counter, zeroed by its wrapper); a timed call that found it spent would time
    a kernel doing none of its work, or wait on a lock forever. So every timed call starts from the snapshot's bytes
    of these (`_ResetState`); a small integer output is rewritten by the call anyway. Float outputs that a kernel
    accumulates into (split-K by atomics) do the same work whatever they hold, and larger integer buffers are
    outputs (indices): both are left alone, as a copy before every call would move the L2's state."""
    return {index for index in written if not buffers[index].dtype.is_floating_point
            and buffers[index].numel() * buffers[index].element_size() <= STATE_BYTES}


@dataclasses.dataclass
class _ResetState:
    """Before each timed call: the state the kernel may consume (`_state`, per buffer position) back to the
    snapshot's bytes, in whichever input set the call is given."""

    pristine: list[tuple[int, object]]

    def __call__(self, buffers: tuple) -> None:
        for at, source in self.pristine:
            buffers[at].copy_(source)


def _each_before_call(steps: list):
    """`bench_interleaved`'s `before_call` running `steps` in order (the state reset first, then the L2 setup,
    whose reads and dirt then come last before the call); None for none."""
    if not steps:
        return None

    def before_call(buffers: tuple) -> None:
        for step in steps:
            step(buffers)

    return before_call


def _poisoned(torch, buffer):
    """A poisoned copy of `buffer` (`_poison`): what a buffer poisoned so holds where the kernel did not write it.
    Made one at a time, as compared: copies of every input at once would double the replay's memory."""
    copy = buffer.clone()
    _poison(torch, copy)
    return copy


@contextlib.contextmanager
def protocol() -> Iterator[Callable[[dict], None]]:
    """`emit(record)` writes one JSON line to the stdout this process was given; everything else printed to stdout
    (Triton, torch, a kernel's printf) goes to stderr, so the parent reads only protocol lines."""
    stream = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        yield lambda record: (stream.write(json.dumps(record) + "\n"), stream.flush())
    finally:
        stream.close()


def hello(**facts) -> dict:
    """The first line a worker writes: where it runs (host, the GPU it was pinned to) and what it found."""
    return {"status": "worker", "host": socket.gethostname(), "gpu": config.sweep.CUDA_VISIBLE_DEVICES.raw() or "",
            **facts}


def serve(job_path: Path, emit: Callable[[dict], None],
          replay_one: Callable[[ReplayJob, Path, dict], dict], *,
          context_lost: Callable[[], bool] = lambda: False) -> int:
    """Replay the signatures whose ids arrive on stdin until it closes (the protocol in the module docstring):
    `replay_one(job, job_path, signature)`. A line `job PATH` switches to another job of the same replay (its next
    stage: a worker kept between them spares a start, torch and a CUDA context, seconds each). An exception is that
    signature's error; when it left the CUDA context unusable (`context_lost`), the error says so and the worker
    stops (FAULT_EXIT) so that the parent starts a fresh one."""
    job = ReplayJob.from_json(json.loads(job_path.read_text()))
    by_id = {signature["id"]: signature for signature in job.signatures}
    for line in sys.stdin:
        if not line.strip():
            continue
        if line.startswith(NEXT_JOB):
            job_path = Path(line[len(NEXT_JOB):].strip())
            job = ReplayJob.from_json(json.loads(job_path.read_text()))
            by_id = {signature["id"]: signature for signature in job.signatures}
            continue
        signature = by_id[int(line)]
        emit({"id": signature["id"], "status": "started"})
        try:
            emit(replay_one(job, job_path, signature))
        except Exception as exc:  # noqa: BLE001 - reported per kernel; the parent goes on with the others
            lost = context_lost()
            emit({"id": signature["id"], "status": "error", "message": _one_line(exc, lost),
                  "traceback": traceback.format_exc()[-4000:], "context_lost": lost})
            if lost:
                return FAULT_EXIT
    return 0


NEXT_JOB = "job "
"""The line that hands a kept worker its next job's path (`serve`)."""


def _one_line(exc: Exception, context_lost: bool) -> str:
    """A row's status line for a replay that raised: the exception's first line (torch follows a CUDA error with
    lines of advice; the traceback keeps them), and whether the fault took the CUDA context with it."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    message = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return message[:2000] + (" (the CUDA context is lost: a fresh worker goes on)" if context_lost else "")


def main(argv: list[str]) -> int:
    job_path = Path(argv[0])
    job = ReplayJob.from_json(json.loads(job_path.read_text()))
    with protocol() as emit:
        import torch

        capability = "sm_%d%d" % torch.cuda.get_device_capability()
        try:
            check_arch(job.arch, capability, source=job.recording)
        except TritonhookError as exc:  # instead of the hello: the parent stops the whole replay
            emit({"status": "refused", "message": str(exc)})
            return REFUSED_EXIT
        emit(hello(device=torch.cuda.get_device_name(), capability=capability))
        stores = {}

        def replay_one(job: ReplayJob, job_path: Path, signature: dict) -> dict:
            store = stores.get(job.store) or stores.setdefault(job.store, Store(job.store, readonly=True))
            return replay_signature(torch, job, signature, store, job_path.parent)

        return serve(job_path, emit, replay_one, context_lost=lambda: _context_lost(torch))


def _context_lost(torch) -> bool:
    """After a kernel fault every CUDA call fails: then this worker must stop and a fresh one go on."""
    try:
        torch.cuda.synchronize()
        torch.zeros(1, device="cuda").add_(1).item()
        return False
    except Exception:  # noqa: BLE001
        return True


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
