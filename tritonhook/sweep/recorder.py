"""Recording a workload: every Triton launch with its arguments, input snapshots and sampled GPU times.

`record(store)` is a context manager for a process's own code; `record_command(command)` runs a command with
recording in every Python process it starts (tritonhook's sitecustomize, as `tritonhook run`), and merges what
they recorded. See the package docstring for the design.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import dataclasses
import os
import secrets
import subprocess
import sys
import time
from typing import Callable, Iterator

from .. import _triton, config, preflight, processes
from ..measure.stats import median
from ..measure.timing import (HOLD_EXTRA_US, HOLD_MARGIN, cuda_torch, hold_cycles_per_us, hold_stream,
                              profiler_traces, sm_clock_mhz, time_empty_kernel)
from ..launcher import Capture, ChildSettings, Record, Workload
from ..ptx_capture import active_session, session as capture_session
from ..errors import Stopped, TritonhookError
from ..files import read_input
from ..store import Store
from . import l2probe
from .recording import (RESULT_KIND, Recording, Signature, SnapshotBudget, describe_args, signature_key,
                        span_elements, tensors_of)

STDERR_TAIL_LINES = 20
"""How many of a failed workload's last stderr lines `record_command` quotes."""


@dataclasses.dataclass
class _Pending:
    """A signature while recording: its description, the tracer's state for it (`seen`: the launches it passed
    over), its launch count, the CUDA event pairs not yet read (`held`: the kernel was queued before the stream
    hold ran out, so the events time the kernel alone; `late`: after, with how many µs after) and the lag marks of
    its first timed launches (`marks`: see `Recorder._mark`)."""

    signature: Signature
    seen: object                     # the tracer's SignatureSeen
    held: list = dataclasses.field(default_factory=list)
    late: list = dataclasses.field(default_factory=list)    # (start, end, µs the host took past the hold)
    probes: list = dataclasses.field(default_factory=list)  # (tensor positions, the L2 probe's device tensor)
    dirt: list = dataclasses.field(default_factory=list)    # the dirt probe's cycle tensors (l2probe.probe_dirt)
    marks: list = dataclasses.field(default_factory=list)   # (idle anchor, mark): both (event, host seconds)
    empties: list = dataclasses.field(default_factory=list)  # the trailing empty kernel's events (first timed)
    unsnapshot: bool = False  # described at a launch while Inductor compiled: its inputs not yet snapshotted


class Recorder:
    """The launch callbacks of one recording process (see `_triton.LaunchTracer`)."""

    def __init__(self, store: Store, budget: SnapshotBudget, *, label: str = "",
                 timed_first: int = config.sweep.RECORD_TIMED_FIRST, time_every: int = config.sweep.RECORD_TIME_EVERY,
                 sample_every: int = 1, l2_probe: bool | None = None):
        import torch

        self.torch, self.store, self.budget, self.label = torch, store, budget, label
        self.snapshots = store.hold()  # the input snapshots, held from a repair until the recording is saved
        self.timed_first, self.time_every, self.sample_every = timed_first, time_every, sample_every
        self.pending: list[_Pending] = []
        self.last_of_kernel: dict[str, _Pending] = {}   # Triton hash -> the signature its last full launch had
        self.launch_tracer: _triton.LaunchTracer | None = None   # set by `_tracers`
        self.loaded: dict[str, object] = {}
        self.host_us = HOLD_EXTRA_US     # the host's time from a stream hold to the kernel queued, smoothed
        self.untimed_for_profiler = 0    # launches not timed: torch.profiler traced the workload then
        self.decisions: list[dict] = []
        self.held_picks: dict[str, set[str]] = {}  # who held a pick -> the kernels that ran it untuned here
        self.tuning_snapshots: dict[int, dict] = {}  # autotune group -> its configs' shared snapshots (describe_tensor)
        self.tuning: Callable[[], _triton.AutotuneCandidate | None] = lambda: None  # set by `_tracers`
        self.compiled_ahead: _triton.CompiledAhead | None = None  # set by `_tracers`
        self.started = time.time()
        self.first_capture = store.last_id()
        self.l2_probe = config.sweep.RECORD_L2_PROBE.get() if l2_probe is None else l2_probe
        self.l2_calibration: l2probe.Calibration | None = None
        self.dirt_pool: l2probe.DirtPool | None = l2probe.DirtPool(torch)
        self.dirt_calibration: l2probe.DirtCalibration | None = None
        self.idle_anchor: tuple | None = None   # (event, host seconds) queued when the stream was last seen idle
        self.held_warnings = preflight.hold_warnings()

    def on_launch(self, spec: _triton.LaunchSpec, grid: tuple[int, int, int], args: tuple, weight: int,
                  seen):
        """`weight`: the launches this one stands for (itself and those the tracer passed over since the last one it
        showed). Sets how many of the signature's next launches the tracer may pass over: up to the next it times."""
        pending = seen.data
        candidate = self.tuning()
        compiling = candidate is not None and candidate.compiling
        if pending is None:  # first launch: describe and snapshot the inputs before the kernel can write them
            pending = seen.data = _Pending(Signature(
                id=len(self.pending), kernel=spec.name, triton_hash=spec.triton_hash, capture_id=None, arch=None,
                grid=list(grid), args=self._described(spec, args, candidate),
                arg_names=spec.arg_names, signature=spec.signature, constexprs=spec.to_json()["constexprs"],
                launches=0, times_ms=[], source=spec.source), seen, unsnapshot=compiling)
            self.pending.append(pending)
            self._prepare_timing()
        elif pending.unsnapshot and candidate is None:  # first launched by a compile, now by the workload
            pending.signature.args, pending.unsnapshot = self._described(spec, args, None), False
        signature = pending.signature
        if candidate is not None:  # the autotuner benchmarking a config: tuning, not the workload; not timed
            signature.tuning_launches += 1
            signature.launches += weight - 1
            if candidate.group is not None:  # None: a launch while Inductor compiled, of no decision
                signature.autotune = signature.autotune or {"group": candidate.group, "config": candidate.config}
            return None
        self.last_of_kernel[spec.triton_hash] = pending
        before = signature.launches
        calls = signature.launches = before + weight   # the workload's launches, those passed over included
        seen.pass_next = self._launches_until_timed(calls)
        # the first launch is not timed: its snapshot left the GPU idle, so its events would time the launch gap
        first_timed = 1 < calls <= self.timed_first + 1
        if not first_timed and calls // self.time_every <= before // self.time_every:
            return None
        if profiler_traces(self.torch):  # what events read then is not the kernel's time
            self.untimed_for_profiler += 1
            return None
        return self._start_timing(pending, args if first_timed and self.l2_probe else None)

    def _described(self, spec: _triton.LaunchSpec, args: tuple, candidate) -> list[dict]:
        """The launch's arguments as data, snapshotted unless Inductor is compiling (its benchmarks of template
        configs and fusions: kernels the workload never runs, hundreds under max-autotune, each snapshot a copy
        to the host)."""
        compiling = candidate is not None and candidate.compiling
        shared = None if candidate is None else self.tuning_snapshots.setdefault(candidate.group, {})
        return describe_args(args, spec.arg_names, spec.signature, spec.constexprs,
                             blobs=None if compiling else self.snapshots, budget=self.budget,
                             descriptor_fields=_triton.tensor_descriptor_fields, shared=shared)

    def _prepare_timing(self) -> None:
        """At a signature's first launch: calibrate the stream hold here, not inside a timed launch (it would
        lengthen the next holds), and mark the lag (after a snapshot's copy the stream is idle: an anchor)."""
        hold_cycles_per_us(self.torch)
        self._mark()

    def _launches_until_timed(self, calls: int) -> int:
        """How many launches follow launch number `calls` of a signature before the next one the recording times:
        launches 2 to `timed_first` + 1, then every `time_every`-th."""
        if calls <= self.timed_first:
            return 0
        return (calls // self.time_every + 1) * self.time_every - calls - 1

    def _start_timing(self, pending: _Pending, probed: tuple | None) -> tuple:
        """Probe how dirty the L2 is and what the kernel's tensors (`probed`: the launch's arguments, or None)
        have in L2 (`l2probe`), hold the stream (`measure.timing.hold_stream`), then the start event: the kernel's time inside
        the workload without the host's launch latency, which a launch-bound workload would otherwise add to every
        sample. Only the first `timed_first` timed launches are probed: a probe costs tens of µs of host and GPU
        time, which at one launch in 256 would still weigh on a launch-bound loop, and nothing once a signature is
        past them (docs/sweep.md#what-the-l2-probe-costs). They are also the ones whose lag is marked (`_mark`)."""
        if len(pending.marks) < self.timed_first:
            mark = self._mark()
            if mark is not None:
                pending.marks.append(mark)
        if probed is not None:
            self._probe_dirt(pending)
            self._probe_l2(pending, probed)
        queued_from = time.perf_counter()
        hold_us = HOLD_MARGIN * self.host_us + HOLD_EXTRA_US
        hold_stream(self.torch, hold_us)
        start = self.torch.cuda.Event(enable_timing=True)
        start.record()
        return pending, start, queued_from, hold_us

    def _mark(self) -> tuple | None:
        """Queue an event now and return (the idle anchor, it): how far the GPU ran behind the host here is the
        GPU time from the anchor to this event less the host time between them, read after the workload
        (`_behind_ms`). The anchor is the last event queued while the stream was idle (`query()`: no synchronize,
        which would drain the very queue this measures); this one becomes it when the stream is idle now. None
        before the stream was first seen idle."""
        idle = self.torch.cuda.current_stream().query()
        event = self.torch.cuda.Event(enable_timing=True)
        event.record()
        mark = (event, time.perf_counter())
        if idle:
            self.idle_anchor = mark
        return (self.idle_anchor, mark) if self.idle_anchor is not None else None

    def _probe_dirt(self, pending: _Pending) -> None:
        """Queue the dirt probe (`l2probe.probe_dirt`); where its buffer (twice the L2) cannot be allocated, the
        recording goes on without it."""
        if self.dirt_pool is None:
            return
        try:
            pending.dirt.append(l2probe.probe_dirt(self.torch, self.dirt_pool))
        except (TritonhookError, RuntimeError) as exc:  # the driver refused the read; torch: no memory for the pool
            print(f"tritonhook: L2 dirt probe off ({exc}); the replay dirties the L2 before every call",
                  file=sys.stderr)
            self.dirt_pool = None

    def _probe_l2(self, pending: _Pending, args: tuple) -> None:
        """Queue the L2 probe over this launch's tensors (the first `l2probe.MAX_TENSORS` with bytes, positions in
        `tensors_of(args)`). A driver that refuses the probe turns probing off for the rest of the recording."""
        positions, spans = [], []
        for position, tensor in enumerate(_live_tensors(args, pending.signature.args)):
            nbytes = span_elements(tensor.shape, tensor.stride()) * tensor.element_size()
            if nbytes and tensor.data_ptr() and min(tensor.stride(), default=0) >= 0:
                positions.append(position)
                spans.append((tensor.data_ptr(), nbytes))
                if len(spans) == l2probe.MAX_TENSORS:
                    break
        try:
            pending.probes.append((positions, l2probe.probe(self.torch, spans)))
        except TritonhookError as exc:
            print(f"tritonhook: {exc}; recording without L2 residency", file=sys.stderr)
            self.l2_probe = False

    def on_new_kernel(self, spec: _triton.LaunchSpec, loaded) -> None:
        """Keep the way to capture a kernel late: one compiled before recording began has no capture yet."""
        self.loaded[spec.triton_hash] = loaded

    def on_autotuned(self, decision: _triton.AutotuneDecision) -> None:
        self.decisions.append(dataclasses.asdict(decision))

    def on_held_pick(self, kernel: str, holder: str) -> None:
        self.held_picks.setdefault(holder, set()).add(kernel)

    def on_launched(self, token) -> None:
        """The end event, and the empty kernel queued after every timed kernel, as the replay does; both inside the
        stream hold where the host was in time (the hold covers the host's time up to the empty kernel queued). Only
        a held empty kernel's time is the launch lead: one queued after the hold ran out, on a GPU the host starves,
        times the host's launch latency too, and the lead is taken out of every sample of the signature
        (`Signature.gpu_ms`)."""
        pending, start, queued_from, hold_us = token
        end = self.torch.cuda.Event(enable_timing=True)
        end.record()
        empty = time_empty_kernel(self.torch)
        host_us = (time.perf_counter() - queued_from) * 1e6
        if host_us < hold_us:
            pending.held.append((start, end))
            if empty is not None and len(pending.empties) < self.timed_first:
                pending.empties.append(empty)
        else:
            pending.late.append((start, end, host_us - hold_us))
        self.host_us = 0.8 * self.host_us + 0.2 * host_us

    def finish(self) -> Recording:
        """Read every event (after a synchronize), link each signature to its capture, and return the recording.
        Sampling: the launches passed over after a kernel's last full launch count for that launch's signature."""
        for digest, count in (self.launch_tracer.passed_over() if self.launch_tracer else {}).items():
            if digest in self.last_of_kernel:
                self.last_of_kernel[digest].signature.launches += count
        for pending in self.pending:
            pending.signature.launches += pending.seen.passed
        self._fold_fresh_scalars()
        if self.pending:
            self.torch.cuda.synchronize()
        leads = {id(pending): [start.elapsed_time(end) for start, end in pending.empties] for pending in self.pending}
        pooled = [ms for lead in leads.values() for ms in lead]  # the GPU's lead, for a signature never held
        for pending in self.pending:  # samples queued after their hold ran out only where none was in time
            events = pending.held or pending.late
            pending.signature.times_ms += [start.elapsed_time(end) for start, end, *_ in events]
            if not pending.held:
                pending.signature.late_us += [round(late, 3) for *_, late in pending.late]
            pending.held, pending.late = [], []
            pending.signature.behind_ms = _behind_ms(pending.marks)
            lead = leads[id(pending)] or pooled
            pending.signature.empty_ms = round(median(lead), 6) if lead else None
            pending.marks, pending.empties = [], []
        clock = sm_clock_mhz(self.torch) if self.pending else None  # the GPU still at the workload's clocks
        self._resolve_l2()
        signatures = [pending.signature for pending in self.pending]
        _link_captures(self.store, signatures, self.first_capture, self.loaded)
        self._release_warnings(signatures)
        if self.untimed_for_profiler:
            print(f"tritonhook sweep: {self.untimed_for_profiler} launch(es) not timed: torch.profiler traced the "
                  f"workload then, and its kernel tracing lengthens what CUDA events read around a kernel; their "
                  f"signatures' times are those taken outside it", file=sys.stderr)
        self._resolve_held_picks(signatures)
        self._compiled_ahead_line()
        device = self.torch.cuda.get_device_name() if self.torch.cuda.is_available() else None
        arch = next((s.arch for s in signatures if s.arch), None)
        return Recording(signatures, arch=arch, device=device, triton_version=_triton.triton_version(),
                         torch_version=self.torch.__version__, pid=os.getpid(), rank=distributed_rank(),
                         label=self.label,
                         wall_s=time.time() - self.started, store=str(self.store.path),
                         budget=self.budget.to_json(), autotune=list(self.decisions),
                         sample_every=self.sample_every,
                         l2_calibration=self.l2_calibration and dataclasses.asdict(self.l2_calibration),
                         dirt_calibration=self.dirt_calibration and dataclasses.asdict(self.dirt_calibration),
                         sm_clock_mhz=clock)

    def _fold_fresh_scalars(self) -> None:
        """Count the launches a kernel made under scalars that took a new value at each (`_triton.FreshScalars`:
        each a signature launched once, before the tracer dropped those scalars from its key) as the one signature
        it launched under from then on, and say so: the signature is replayed at one of the values."""
        folded = set()
        for fresh in (self.launch_tracer.fresh_scalars.values() if self.launch_tracer else ()):
            merged = fresh.streak[-1].data if fresh.dropped and fresh.streak else None
            if merged is None:
                continue
            for seen in fresh.streak[:-1]:
                if seen.data is not None and seen.data is not merged:
                    merged.signature.launches += seen.data.signature.launches
                    merged.signature.tuning_launches += seen.data.signature.tuning_launches
                    folded.add(id(seen.data))
            names = [merged.signature.arg_names[at] if at < len(merged.signature.arg_names) else f"#{at}"
                     for at in fresh.dropped]
            print(f"tritonhook record: {merged.signature.kernel}: {', '.join(names)} took a new value at each of "
                  f"{len(fresh.streak)} launches in a row (a seed or a counter): its launches are one signature from "
                  f"there, timed and replayed at one value", file=sys.stderr)
        if folded:
            self.pending = [pending for pending in self.pending if id(pending) not in folded]
            for index, pending in enumerate(self.pending):
                pending.signature.id = index

    def _release_warnings(self, signatures: list[Signature]) -> None:
        """Print the preflight warnings held since the start, for the kernels the workload launched, beside what
        its context really reserved."""
        launched = {s.triton_hash for s in signatures if s.launches}
        lines = self.held_warnings.release(launched, measured=lambda: _measured_stack(self.torch))
        for text in lines:
            print(text, file=sys.stderr)

    def _resolve_held_picks(self, signatures: list[Signature]) -> None:
        """Link the kernels that ran a pick Inductor's cache held from a decision this recording saw (made while
        Inductor compiled: `link_compile_time_picks`), and name the other launched kernels that ran a pick their
        autotuner held (Inductor's caches, or an autotuner's cache of its own): their configs were not benchmarked
        here, so the sweep has no candidates for them (no regret, no re-ranking)."""
        linked = link_compile_time_picks(signatures, self.decisions,
                                         self.held_picks.get(_triton.INDUCTOR_CACHE, set()))
        if linked:
            print(f"tritonhook sweep: {len(linked)} kernel(s) ran the config Inductor's tuning picked for them while "
                  f"it compiled, on its benchmark inputs ({_some(linked)}): each is that decision's row, its "
                  f"candidates replayed on synthetic inputs of their shapes (the compile's were not kept)",
                  file=sys.stderr)
        for holder, held in untuned_held_picks(signatures, self.held_picks).items():
            cold = ("with cold caches (TORCHINDUCTOR_FORCE_DISABLE_CACHES=1)" if holder == _triton.INDUCTOR_CACHE
                    else "with that autotuner's cache cold (where its library keeps its picks)")
            print(f"tritonhook sweep: {len(held)} kernel(s) ran the config {holder} held before recording "
                  f"({_some(held)}), so their configs were not benchmarked here: no autotune regret or re-ranking "
                  f"for them; record {cold} to see them tuned", file=sys.stderr)

    def _compiled_ahead_line(self) -> None:
        """Say what compiling autotune configs ahead took: on a cold cache the most of an autotune-heavy
        recording (docs/timing.md#compiling-autotune-configs-ahead)."""
        ahead = self.compiled_ahead
        if ahead is not None and ahead.decisions:
            print(f"tritonhook sweep: compiled the {ahead.configs} configs of {ahead.decisions} autotune "
                  f"decision(s) ahead of their benchmarks, {ahead.threads} at a time: {ahead.seconds:.1f} s "
                  f"(${config.sweep.RECORD_COMPILE_THREADS.name}=1: one at a time, as Triton does)", file=sys.stderr)

    def _resolve_l2(self) -> None:
        """After the workload: calibrate the probes on this GPU, then turn each signature's probe cycles into the
        fraction of its probes that found each sampled line in L2 (`Signature.l2_resident`), and its dirt probes'
        times into how dirty they found the L2 (`Signature.l2_dirt`)."""
        self._resolve_dirt()
        probed = [pending for pending in self.pending if pending.probes]
        if not probed:
            return
        try:
            self.l2_calibration = l2probe.calibrate(self.torch)
        except (TritonhookError, RuntimeError) as exc:  # RuntimeError: torch's (no memory for the flood buffer)
            print(f"tritonhook: L2 probe calibration failed ({exc}); recording without L2 residency",
                  file=sys.stderr)
            return
        for pending in probed:
            if self.l2_calibration.usable:
                seen: list[list] = [[] for _ in tensors_of(pending.signature.args)]
                for positions, cycles in pending.probes:
                    for position, lines in zip(positions, l2probe.resident(cycles.tolist(), self.l2_calibration)):
                        seen[position].append(lines)
                pending.signature.l2_resident = [l2probe.line_fractions(lines) if lines else None for lines in seen]
            pending.probes = []

    def _resolve_dirt(self) -> None:
        """Calibrate the dirt probe (`l2probe.calibrate_dirt`), free its pool, and set each probed signature's
        `l2_dirt` where the calibration can tell clean from dirty on this GPU."""
        probed = [pending for pending in self.pending if pending.dirt]
        if not probed or self.dirt_pool is None:
            return
        try:
            self.dirt_calibration = l2probe.calibrate_dirt(self.torch, self.dirt_pool)
        except (TritonhookError, RuntimeError) as exc:  # as in _probe_dirt
            print(f"tritonhook: L2 dirt calibration failed ({exc}); the replay dirties the L2 before every call",
                  file=sys.stderr)
        self.dirt_pool = None  # its buffer freed
        for pending in probed:
            if self.dirt_calibration is not None and self.dirt_calibration.usable:
                pending.signature.l2_dirt = self.dirt_calibration.dirt([l2probe.read_cycles(c) for c in pending.dirt])
            pending.dirt = []


def untuned_held_picks(signatures: list[Signature], held_picks: dict[str, set[str]]) -> dict[str, list[str]]:
    """Per holder of picks (Inductor's cache, a library's own), the kernels it handed a pick that ran in the
    workload with no decision of this recording behind them, sorted. A kernel whose launches all belong to a
    decision was tuned in this run: a later instance of it finding that pick in the cache (a recompiled graph
    holds the same kernel) ran this run's own pick, as the FlexAttention step's recompiled backward did."""
    untuned = {s.kernel for s in signatures if s.launches and s.autotune is None}
    found = {holder: sorted(untuned & kernels) for holder, kernels in sorted(held_picks.items())}
    return {holder: kernels for holder, kernels in found.items() if kernels}


def link_compile_time_picks(signatures: list[Signature], decisions: list[dict], held: set[str]) -> list[str]:
    """Make each workload signature of a kernel in `held` (it ran a pick Inductor's autotune cache held) a member
    of the last decision this recording saw for that kernel (other than `select_algorithm`'s and a template
    fusion's, whose candidates are other kernels, and a pin's, which has none), at that decision's pick: Inductor
    tuned it while it compiled (coordinate descent over its fusion benchmarks) and the workload's kernel, compiled
    later from the same source, found the pick in the cache.
    So the decision's candidates have a workload member, and the sweep replays them and measures the regret.
    Returns the kernels linked, sorted."""
    last = {d["kernel"]: d for d in decisions
            if d.get("tuner") not in (_triton.SELECT_ALGORITHM, _triton.TEMPLATE_FUSION, _triton.PINNED)}
    linked = set()
    for signature in signatures:
        decision = last.get(signature.kernel)
        if signature.launches and signature.autotune is None and signature.kernel in held and decision is not None:
            signature.autotune = {"group": decision["group"], "config": decision["chosen"]}
            linked.add(signature.kernel)
    return sorted(linked)


def _some(names: list[str]) -> str:
    """The first three names, and an ellipsis for the rest."""
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


def _behind_ms(marks: list[tuple]) -> float | None:
    """The median over a signature's marked launches of how far the GPU ran behind the host (ms; see
    `Recorder._mark`); None when none was marked. The recorder's own probes and stream holds count too."""
    lags = [anchor_event.elapsed_time(event) - (host_s - anchor_s) * 1e3
            for (anchor_event, anchor_s), (event, host_s) in marks]
    return round(median(lags), 4) if lags else None


def _live_tensors(args: tuple, described: list[dict]) -> list:
    """This launch's tensors in the order of `tensors_of(described)` (descriptor bases included)."""
    tensors = []
    for value, arg in zip(args, described):
        if arg["kind"] == "tensor":
            tensors.append(value)
        elif arg["kind"] == "tensordesc":
            tensors.append(_triton.tensor_descriptor_fields(value)["base"])
    return tensors


def _measured_stack(torch) -> str | None:
    """This process's stack limit on its GPU and what it reserves (limit x SMs x threads per SM), or None where the
    driver cannot be asked (no cuda-bindings or NVML: `tritonhook[gpu]`)."""
    from ..format import human_bytes
    from ..mem.device import Gpu

    try:
        gpu = Gpu(torch.cuda.current_device())
    except Exception:  # noqa: BLE001 - the measurement is a courtesy: no driver bindings, no NVML, no context
        return None
    try:
        limits = gpu.limits()
    finally:
        gpu.close()
    if limits is None:
        return None
    return (f"stack limit {limits[0]} B/thread, {human_bytes(gpu.info.stack_reserve(limits[0]))} of stack reserved "
            f"by this process's context")


def _link_captures(store: Store, signatures: list[Signature], after: int, loaded: dict) -> None:
    """Each signature's capture: of its Triton hash, one this run wrote if any, else the first older one; a
    kernel compiled before recording that the store never saw is captured now, from Triton's cache files
    (`loaded[hash]()`, see `Recorder.on_new_kernel`). One query, by hash."""
    found: dict[str, object] = {}
    for capture in store.captures(triton_hashes={s.triton_hash for s in signatures}):
        if capture.triton_hash not in found or (capture.id > after >= found[capture.triton_hash].id):
            found[capture.triton_hash] = capture
    for signature in signatures:
        capture = found.get(signature.triton_hash)
        if capture is None and signature.triton_hash in loaded:
            capture = found[signature.triton_hash] = store.get(store.add(loaded[signature.triton_hash]()))
        if capture is not None:
            signature.capture_id, signature.arch = capture.id, capture.arch


@contextlib.contextmanager
def record(store: str | os.PathLike | Store | None = None, *, label: str = "",
           budget: SnapshotBudget | None = None, sample_every: int | None = None,
           l2_probe: bool | None = None) -> Iterator[Recorder]:
    """Record every Triton launch inside the block; at its end the recording is saved in the store (its id in
    `recorder.recording.id`). Compiles are captured into the same store (the replay builds its variants from the
    captured PTX); a capture session already active is used as it is. `sample_every` K > 1: after each kernel's
    first `config.sweep.RECORD_EXACT_FIRST` launches, about one launch in K is looked at (the others cost a lookup), and
    the launch counts per signature become estimates (per kernel they stay exact); default
    `$TRITONHOOK_RECORD_SAMPLE`, else 1 (every launch). `l2_probe`: probe what a signature's first timed launches
    find in L2 (`l2probe`, for `--l2 measured` replays); default `$TRITONHOOK_RECORD_L2_PROBE`, else on."""
    _triton.check_supported()
    cuda_torch("recording")
    active = active_session()
    capture = capture_session(store) if active is None else contextlib.nullcontext(active)
    with capture as running, _triton.inductor_launches_through_triton():
        recorder = Recorder(running.store, budget or default_budget(), label=label,
                            sample_every=_checked_sample(sample_every), l2_probe=l2_probe)
        tracers = _tracers(recorder)
        try:
            yield recorder
        finally:
            for tracer in tracers:
                tracer.uninstall()
            recorder.recording = save(recorder)


def _tracers(recorder: Recorder, guard: Callable[[str, Callable], Callable] = lambda what, callback: callback
             ) -> list:
    """Install the launch tracer and the autotune tracer feeding `recorder` (each callback through `guard`, see
    `_Failures.guarded`); returned for uninstalling."""
    autotune = _triton.AutotuneTracer(guard("an autotune decision", recorder.on_autotuned),
                                      guard("an autotuner's held pick", recorder.on_held_pick),
                                      compile_threads=compile_threads())
    recorder.tuning = autotune.current
    recorder.compiled_ahead = autotune.compiled_ahead
    recorder.launch_tracer = _triton.LaunchTracer(guard("a launch", recorder.on_launch),
                                                  guard("a launch's timing", recorder.on_launched),
                                                  guard("a new kernel", recorder.on_new_kernel),
                                                  sample_every=recorder.sample_every,
                                                  exact_first=config.sweep.RECORD_EXACT_FIRST,
                                                  signature_key=signature_key, autotune=autotune)
    tracers = [recorder.launch_tracer, autotune]
    for tracer in tracers:
        tracer.install()
    return tracers


def distributed_rank() -> int | None:
    """This process's rank in a distributed job (`RANK`, which torchrun and torch.distributed's launchers set);
    None outside one, or where it is no whole number."""
    text = os.environ.get("RANK", "")
    return int(text) if text.isdigit() else None


def compile_threads() -> int:
    """The threads a recording compiles an autotune decision's configs in (`config.sweep.RECORD_COMPILE_THREADS`, 0: one
    per CPU core, at most 16); a setting that is no such number is one line naming it (range-checked in `config`)."""
    try:
        threads = config.sweep.RECORD_COMPILE_THREADS.get()
    except ValueError as exc:
        raise TritonhookError(str(exc)) from None
    return threads or min(16, os.cpu_count() or 1)


def save(recorder: Recorder) -> Recording:
    """Finish the recording and save it (when it saw any launch); its snapshots' hold ends with the saved row."""
    with recorder.snapshots:
        recording = recorder.finish()
        if recording.signatures:
            recording.id = recorder.store.add_result(RESULT_KIND, recording.to_json(), hold=recorder.snapshots)
    return recording


def _checked_sample(sample_every: int | None) -> int:
    value = Record.configured().sample_every if sample_every is None else sample_every
    if value < 1:
        raise TritonhookError(f"--sample {value}: at least 1 (1: every launch)")
    return value


def default_budget(settings: Record | None = None) -> SnapshotBudget:
    settings = Record.configured() if settings is None else settings
    return SnapshotBudget(settings.snapshot_budget, settings.snapshot_total_budget)


class _Failures:
    """The failures of a recording inside a workload's own process (`start_from_env`). That process is the user's:
    it must never die of tritonhook, so every failure of the recorder there is caught and counted, the workload
    goes on, and one line (at exit, or at once when recording could not start) says how many and the first."""

    def __init__(self):
        self.count, self.first = 0, ""

    def guarded(self, what: str, callback: Callable) -> Callable:
        """`callback`, with what it raises counted (as a failure at `what`) instead of raised; then it returns
        None (for the launch tracer: nothing more for this launch)."""
        def call(*args):
            try:
                return callback(*args)
            except Exception as exc:  # noqa: BLE001 - never into the workload
                self.count += 1
                self.first = self.first or f"at {what}: {type(exc).__name__}: {exc}"
                return None

        return call

    def report(self) -> None:
        if self.count:
            print(f"tritonhook: recording in process {os.getpid()} failed {self.count} time(s) (the first "
                  f"{self.first}); the workload itself was not affected", file=sys.stderr)


def start_from_env() -> None:
    """Called at start-up (sitecustomize, after capture was enabled) when TRITONHOOK_RECORD=1: record until exit.
    Never raises (`_Failures`)."""
    active = active_session()
    settings = ChildSettings.current().record
    if settings is None or active is None or _triton.inductor_benchmark_process():
        return
    failures = _Failures()

    def start() -> tuple[Recorder, list]:
        recorder = Recorder(active.store, default_budget(settings), label=settings.label,
                            sample_every=max(1, settings.sample_every))
        return recorder, _tracers(recorder, failures.guarded)

    started = failures.guarded("the start of recording", start)()
    if started is None:
        failures.report()
        return
    recorder, tracers = started

    def finish() -> None:
        for tracer in tracers:
            tracer.uninstall()
        save(recorder)

    finished = []

    def finish_and_report() -> None:
        if not finished:  # at exit, or at a terminating signal first (`processes.save_before_terminated`)
            finished.append(True)
            failures.guarded("the end of recording (saving it)", finish)()
            failures.report()

    atexit.register(finish_and_report)

    def save_if_recorded() -> None:  # a process that recorded nothing (a compile worker stopped) dies at once
        if recorder.pending or recorder.decisions:
            finish_and_report()

    processes.save_before_terminated(save_if_recorded)


# ----- a command under recording -------------------------------------------------------------------------------
@dataclasses.dataclass
class RecordResult:
    """What `record_command` left: the merged recording (None when nothing was launched) and the exit status."""

    recording: Recording | None
    exit_code: int
    stderr_tail: list[str]

    def failure(self) -> str | None:
        if self.exit_code == 0:
            return None
        kept = f"{len(self.recording.signatures)} signature(s) recorded are kept" if self.recording else \
            "nothing was recorded"
        tail = "\n".join(f"  | {line}" for line in self.stderr_tail)
        return f"the workload exited with status {self.exit_code} ({kept}); its last stderr lines:\n{tail}"


def check_can_record(command: list[str]) -> None:
    """One line, before anything else happens, where recording cannot work here: a setting it cannot read, no
    torch, or no CUDA GPU."""
    compile_threads()
    try:
        cuda_torch("recording")
    except TritonhookError as exc:
        raise TritonhookError(f"{exc}, so {' '.join(command)} was not run") from None


def record_command(command: list[str], store: Store, *, budget: int | None = None, sample_every: int | None = None,
                   stdout=None, snapshot_budget: int | None = None, apply: str | os.PathLike | None = None,
                   inductor_cold: bool = False) -> RecordResult:
    """Run `command` with every Python process it starts recording (and capturing) into `store`; the processes'
    recordings merged into one, saved in the store. The command's stderr is passed through and its tail kept;
    `stdout` redirects its own output (the CLI's --json keeps stdout for its result). `budget` / `snapshot_budget`:
    input snapshot bytes per signature / per recording process. `apply`: decisions applied at compile time, as
    `tritonhook run --apply` does (what `tritonhook check --apply` gates), a source its caller has checked
    (`decisions.apply.check_source`: the CLI's --apply does). `inductor_cold`: Inductor's caches off in its
    processes. Without torch or a CUDA GPU here, the one line saying so, before the command starts."""
    check_can_record(command)
    label = f"record-{os.getpid()}-{secrets.token_hex(4)}"
    given = {"snapshot_budget": budget, "snapshot_total_budget": snapshot_budget,
             "sample_every": None if sample_every is None else _checked_sample(sample_every)}
    for value in (budget, snapshot_budget):
        if value is not None and value < 0:
            raise TritonhookError(f"snapshot budget {value}: a number of bytes, 0 or more")
    settings = recording_settings(store.path, label, apply=apply, inductor_cold=inductor_cold,
                                  **{field: value for field, value in given.items() if value is not None})
    began = time.time()
    tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
    try:
        with Workload(command, settings, stdout=stdout, stderr=subprocess.PIPE, text=True,
                      errors="replace") as workload:
            for line in workload.process.stderr:
                sys.stderr.write(line)
                tail.append(line.rstrip("\n"))
            exit_code = workload.wait()
    except Stopped as stopped:  # the processes saved what they recorded as the signal ended them: merged all the same
        _merge_parts(store, label, command, stopped.status, began)
        raise
    return RecordResult(_merge_parts(store, label, command, exit_code, began), exit_code, list(tail))


def _merge_parts(store: Store, label: str, command: list[str], exit_code: int, began: float) -> Recording | None:
    """The recordings the command's processes saved under `label`, merged into one and saved (None if none)."""
    parts = store.results(RESULT_KIND, label=label)
    if not parts:
        return None
    recording = Recording.merged(parts)
    recording.command, recording.exit_code, recording.wall_s = command, exit_code, time.time() - began
    recording.id = store.add_result(RESULT_KIND, {**recording.to_json(), "label": f"{label}-merged"})
    return recording


def recording_settings(store_path: os.PathLike, label: str, apply: str | None = None, inductor_cold: bool = False,
                       **given) -> ChildSettings:
    """What makes a Python process record (and capture, applying the decisions of `apply` when given) into
    `store_path` from its start (`start_from_env`), its recording saved with `label`, with Inductor's launches
    through Triton's hooks (and its caches off where `inductor_cold`); `given` (`launcher.Record` fields) replace
    this process's own (the sampling and budgets a user set in the environment travel on)."""
    record = dataclasses.replace(Record.configured(), label=label, **given)
    return ChildSettings(capture=Capture.of(store_path, apply=apply), record=record, inductor_through_triton=True,
                         inductor_cold=inductor_cold)


def load(store: Store, which: str | None = None) -> Recording:
    """A saved recording: `which` is a JSON file, a result id in the store, or None for the newest one."""
    if which is not None and os.path.lexists(which):
        import json

        try:
            data = json.loads(read_input(which, "recording"))
        except ValueError as exc:
            raise TritonhookError(f"{which}: cannot read it as a recording ({exc})") from None
        return Recording.from_json(data, source=which)
    if which is None:
        newest = store.results(RESULT_KIND, limit=1)
        if not newest:
            raise TritonhookError(f"{store.path}: no recording in this store; run tritonhook record -- CMD first")
        return newest[0]
    found = store.result(which) if str(which).isdigit() else None
    if not isinstance(found, Recording):
        raise TritonhookError(f"{store.path}: no recording with id {which} (and no such file)")
    return found
