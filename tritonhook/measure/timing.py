"""GPU timing: the one timer of the project (`bench_interleaved`; `ab.bench` times one arm with it), the L2 rotation
of inputs and the stream hold. `ab/` and `sweep/` both time with it.

CUDA events around every call, warm-up by time, inputs rotated through copies (so that no call finds in L2 what
the calls just before it read), the arms' order balanced by place and by neighbour (`round_order`), the stream
held while the host queues each round (`hold_stream`), and the median of the calls. torch is imported only when
something is timed.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Callable, Sequence

from ..errors import TritonhookError
from .stats import median


@dataclasses.dataclass(frozen=True)
class BenchResult:
    median_ms: float
    samples_ms: list[float]
    input_sets: int                  # > 1: inputs were rotated through this many copies
    output: object = dataclasses.field(default=None, repr=False, compare=False)
    empty_samples_ms: list[float] | None = None  # with `trailing_empty`: the empty kernel after each call


def rotation_sets(working_set_bytes: int, l2_bytes: int, free_bytes: int, arms: int = 1, *, factor: int = 4,
                  least: int = 3, most: int = 64) -> int:
    """How many copies of the inputs the calls rotate through (`input_set`), so that a call never finds in L2 what
    the calls just before it read: enough to span `factor` times the L2, and at least `least` also where one set
    is larger than the L2 (the tail of a set read two calls back was still found there, 6% faster, on the H200:
    docs/timing.md#an-arms-neighbours-in-its-round), as many as fit in half of `free_bytes`; 1 for no inputs.
    With two or more `arms` the count is prime to 2 x `arms`, the calls of one cycle of `round_order`: else the
    sets would recur at the same places every cycle, and each arm keep to some of them."""
    if working_set_bytes <= 0:
        return 1
    wanted = min(most, max(least, math.ceil(factor * l2_bytes / working_set_bytes)))
    fits = 1 + free_bytes // 2 // working_set_bytes
    choices = [count for count in range(2, min(fits, 2 * most) + 1) if arms < 2 or math.gcd(count, 2 * arms) == 1]
    return next((count for count in choices if count >= wanted), choices[-1] if choices else 1)


def cuda_torch(needed_by: str = "timing"):
    """torch, when it can run kernels here; else the one line saying what is missing, torch or a CUDA GPU
    (`needed_by`: what needs them, the line's subject)."""
    try:
        import torch
    except ImportError:
        raise TritonhookError(f"{needed_by} needs torch with CUDA, and torch is not installed here "
                              f"(pip install torch)") from None
    if not torch.cuda.is_available():
        raise TritonhookError(f"{needed_by} needs a CUDA GPU, and there is none here "
                              f"(torch.cuda.is_available() is False)")
    return torch


def l2_bytes(torch) -> int:
    """The current GPU's L2 size in bytes, as CUDA reports it (the one place that asks: the timer's rotation, the
    sweep's L2 probe calibration and its dirty-L2 write size themselves by it)."""
    return torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size


def _input_sets(torch, inputs: tuple, arms: int) -> list[tuple]:
    tensors = {id(x): x for x in inputs if isinstance(x, torch.Tensor)}  # a tensor passed twice is one copy
    size = sum(t.numel() * t.element_size() for t in tensors.values())
    count = rotation_sets(size, l2_bytes(torch), torch.cuda.mem_get_info()[0], arms)
    return [inputs, *(copy_inputs(torch, inputs) for _ in range(count - 1))]


def copy_inputs(torch, inputs: tuple) -> tuple:
    """`inputs` with every tensor cloned, a tensor passed twice cloned once: a kernel given x, x (an add of x to
    itself, an in-place update) gets the same aliasing from every set, as the caller meant it."""
    clones = {id(x): x.clone() for x in inputs if isinstance(x, torch.Tensor)}
    return tuple(clones[id(x)] if isinstance(x, torch.Tensor) else x for x in inputs)


Arm = tuple  # (context-manager factory entered around each call, callable)

HOLD_MARGIN, HOLD_EXTRA_US, HOLD_MAX_US = 2.0, 20.0, 20_000.0
"""A round's stream hold lasts HOLD_MARGIN x the host time the previous round took to queue, plus HOLD_EXTRA_US,
at most HOLD_MAX_US."""
_CYCLES_PER_US: dict[int, float] = {}


def hold_stream(torch, microseconds: float) -> bool:
    """Keep the current stream busy for about `microseconds` (a clock64 spin kernel, `torch.cuda._sleep`), so that
    what the host queues next runs back to back. False when this torch has no spin kernel.

    Why: CUDA events time the stream, not the kernel. When the host queues a kernel more slowly than the GPU runs
    it (a small kernel, a launch-bound program), the start event fires on an idle GPU and the interval counts the
    host's launch latency, several times a small kernel's own. Held, the stream reaches the start event only after the
    kernel and the end event are queued. The spin length is in GPU cycles, calibrated once per device."""
    rate = hold_cycles_per_us(torch)
    if rate is None:
        return False
    torch.cuda._sleep(max(1, int(min(microseconds, HOLD_MAX_US) * rate)))
    return True


def hold_cycles_per_us(torch) -> float | None:
    """The spin kernel's GPU cycles per microsecond on the current device, calibrated on first use (a ~1 ms spin
    and a synchronize: call it where that costs nothing); None when this torch has no spin kernel."""
    if getattr(torch.cuda, "_sleep", None) is None:
        return None
    device = torch.cuda.current_device()
    if device not in _CYCLES_PER_US:
        _CYCLES_PER_US[device] = sm_clock_mhz(torch)
    return _CYCLES_PER_US[device]


def profiler_traces(torch) -> bool:
    """Whether torch.profiler traces the process now. Its kernel tracing (CUPTI) lengthens what CUDA events read
    around a kernel, held or not: on an H200 a held 3.2 µs add read 28.5 µs under it
    (`benchmarks/profiler_event_timing.py`), so a kernel timed then is not timed as it runs."""
    return bool(torch._C._autograd._profiler_enabled())


def time_empty_kernel(torch) -> tuple | None:
    """Queue an empty kernel (a one-cycle spin, `torch.cuda._sleep`) between two CUDA events; the events, or None
    when this torch has no spin kernel. A sweep queues one right after the end event of every kernel it times, in
    the recording and in the replay alike, so that what follows a kernel's end event is the same in both (else the
    workload's next kernel there, the next call here); how much that moves the fidelity:
    docs/sweep_fidelity.md#the-trailing-empty-kernel. Its own time is kept: the launch lead of each place
    (`sweep.result.SweepRow.lead_ms`)."""
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        return None
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    sleep(1)
    end.record()
    return start, end


def sm_clock_mhz(torch, cycles: int = 2_000_000) -> float | None:
    """The SM clock now, in MHz: the GPU cycles of a ~1 ms spin (`torch.cuda._sleep` counts `clock64`) over its
    CUDA-event time. A kernel's time moves with the clock, so a sweep reads it after the workload and after each
    replayed signature, and names it where a row misses the fidelity bar (`sweep.misses`). None when this torch
    has no spin kernel."""
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        return None
    sleep(cycles // 10)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    sleep(cycles)
    end.record()
    end.synchronize()
    return cycles / (start.elapsed_time(end) * 1e3)


def bench_interleaved(arms: Sequence[Arm], *, inputs: Sequence = (), warmup_ms: float = 25.0,
                      rep_ms: float = 100.0, min_reps: int = 10, rotate: bool = True,
                      before_call: Callable[[tuple], object] | None = None, trailing_empty: bool = False
                      ) -> list[BenchResult]:
    """Time several arms call by call, A B, B A, ... (`round_order`), so that clock and power swings (a GPU at its
    power limit moves by several percent within a second) fall on every arm alike. Each call runs inside its arm's
    context (for A/B: the variant's capture session); the events bracket the call alone. `rotate=False` keeps
    one input set: every call then finds in L2 what the previous call read and wrote. `before_call(input_set)`
    runs before each call's start event, on the set the call gets (a sweep replay reads the inputs into L2 there,
    as the producer of a kernel's inputs leaves them inside a workload). `trailing_empty`: queue (and time) an
    empty kernel after each timed call (`time_empty_kernel`; `BenchResult.empty_samples_ms`)."""
    torch = cuda_torch()
    sets = _input_sets(torch, tuple(inputs), len(arms)) if rotate else [tuple(inputs)]
    outputs = []
    for enter, fn in arms:  # first call of each arm: compiles; its result is the output compared across arms
        with enter():
            outputs.append(_snapshot(fn(*sets[0])))
    torch.cuda.synchronize()
    estimate_ms = _estimate_ms(torch, arms, sets, before_call)
    _timed_calls(torch, arms, sets, max(1, int(warmup_ms / estimate_ms)), before_call)
    empties: list[list] | None = [[] for _ in arms] if trailing_empty else None
    rounds = whole_cycles(max(min_reps, int(rep_ms / estimate_ms)), len(arms))
    samples = _timed_calls(torch, arms, sets, rounds, before_call, empties)
    return [BenchResult(median(arm_samples), arm_samples, len(sets), output,
                        empties[arm] if empties is not None and empties[arm] else None)
            for arm, (arm_samples, output) in enumerate(zip(samples, outputs))]


def round_order(round_index: int, arms: int) -> list[int]:
    """The arms' order in round `round_index`: over 2 x `arms` rounds (a cycle, `whole_cycles`) every arm takes
    every place of a round twice and follows the round's start and every other arm twice. Why: a call's time
    depends on what ran just before it. The first call behind the stream hold reads up to 6% slower for a 0.1-0.2
    ms kernel on the H200 (docs/timing.md#an-arms-place-in-its-round), and a call right behind a kernel that read
    the same inputs, or behind a particular other kernel, by up to 6% either way
    (docs/timing.md#an-arms-neighbours-in-its-round). An order that only alternated A B C, C B A kept the middle
    arms off the ends for good; one that only shifted it kept each arm behind its two neighbours in the list.
    The rows are a Williams design (a Latin square whose every ordered pair of neighbours occurs once: 0, 1, n-1,
    2, n-2, ... shifted by one each row), each row taken twice, forwards and reversed. The timer's rounds, the
    replay's module loads and the A/B's fresh processes all take their order from here."""
    row = (round_index // 2) % arms
    order = [(row + williams_place) % arms for williams_place in _williams_row(arms)]
    return order[::-1] if round_index % 2 else order


def _williams_row(arms: int) -> list[int]:
    """0, 1, n-1, 2, n-2, ...: the first row of a Williams design for `arms` treatments."""
    return [(place + 1) // 2 if place % 2 else (arms - place // 2) % arms for place in range(arms)]


def input_set(round_index: int, place: int, arms: int, sets: int) -> int:
    """The input set of the call at `place` of round `round_index`: the calls take the sets in turn, so a set
    comes back only after every other set was read; with a count prime to the calls of a cycle (`rotation_sets`),
    every arm takes every set alike over `sets` cycles. Sets handed out by the arm rather than the call let two
    calls in a row read one set once the order stopped being a rotation of the arms; handed out by the place
    within a round alone, they kept each A/B arm on its own half of the copies, whose addresses the allocator keeps
    from round to round: a 5 µs kernel's few-percent difference between two allocations became a steady A/A
    "slower" (docs/timing.md#input-sets-and-module-loads)."""
    return (round_index * arms + place) % sets


def whole_cycles(rounds: int, arms: int) -> int:
    """`rounds` rounded up to whole cycles of `round_order` (2 x `arms` rounds), in which every arm takes every
    place alike."""
    cycle = 2 * arms
    return -(-rounds // cycle) * cycle


def _estimate_ms(torch, arms, sets, before_call=None, calls: int = 5) -> float:
    """What one call of the slowest arm costs, from a short burst: its GPU time, or the wall time per call where
    the host is slower (a held stream times a small kernel alone, but the host still spends its launch latency
    on each call): sizes the warm-up and the repetitions by the time they take."""
    began = time.perf_counter()
    gpu_ms = max(sum(arm_samples) / len(arm_samples)
                 for arm_samples in _timed_calls(torch, arms, sets, calls, before_call))
    wall_ms = (time.perf_counter() - began) * 1e3 / (calls * len(arms))
    return max(gpu_ms, wall_ms, 1e-4)


def _timed_calls(torch, arms, sets, count: int, before_call=None, empties: list[list] | None = None
                 ) -> list[list[float]]:
    """`count` rounds of one call per arm, each bracketed by CUDA events; ms per call, per arm.

    The calls take the input sets in turn, one after another across rounds (`input_set`): no call finds in L2
    what the calls just before it read (when two calls read one set back to back, the second runs warm, and a
    memory-bound kernel reads 'faster' than itself), and every arm goes through every set. The arms' order comes
    from `round_order` (every arm at every place, and behind every other arm, alike), and each round is queued
    behind a stream hold sized from the previous round's host time (see `hold_stream`), once the previous round
    has finished on the GPU: an event-timed call reads longer while more than about eight calls are queued behind
    it, and without the wait the GPU, held longer than the host takes, falls further behind every round until the
    queue is deep. A kernel inside a workload is timed with the workload's next launches not yet queued, so the
    replay of a sweep matches it only this way (docs/timing.md#the-queue-behind-a-timed-call).
    `empties` (one list per arm): an empty kernel is queued after each call's end event (`time_empty_kernel`) and
    its ms appended to the call's arm's list."""
    events = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in arms]
              for _ in range(count)]
    host_us = HOLD_EXTRA_US
    after = []
    for i, pairs in enumerate(events):
        if i:
            torch.cuda.current_stream().synchronize()
        hold_stream(torch, HOLD_MARGIN * host_us + HOLD_EXTRA_US)
        queued_from = time.perf_counter()
        for place, arm in enumerate(round_order(i, len(arms))):
            (enter, fn), (begin, finish) = arms[arm], pairs[arm]
            inputs = sets[input_set(i, place, len(arms), len(sets))]
            if before_call is not None:
                before_call(inputs)
            with enter():
                begin.record()
                fn(*inputs)
                finish.record()
            if empties is not None and (empty := time_empty_kernel(torch)) is not None:
                after.append((arm, empty))
        host_us = (time.perf_counter() - queued_from) * 1e6
    torch.cuda.synchronize()
    for arm, (begin, finish) in after:
        empties[arm].append(begin.elapsed_time(finish))
    return [[pairs[a][0].elapsed_time(pairs[a][1]) for pairs in events] for a in range(len(arms))]



def median_wall_seconds(work: Callable[[], object], repeat: int = 5) -> float:
    """Median wall-clock seconds of `repeat` calls of `work`: the host-side timer of the CPU benchmarks (parsing,
    diffing, store queries), where no GPU stream is involved."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return median(times)


def _snapshot(output):
    clone = getattr(output, "clone", None)
    return clone() if callable(clone) else output

