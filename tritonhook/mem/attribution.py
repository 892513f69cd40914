"""Attribution (pure): the snapshots a watch recorded, and how NVML's growth splits into parts with formulas."""

from __future__ import annotations

import dataclasses

from ..preflight import DEFAULT_STACK_LIMIT
from .device import DeviceInfo


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """Every reading at one instant. None means "could not be read" (no context yet, no torch, ...)."""

    t: float
    event: str  # before, after, launch_enter, launch_exit, load_start, load_end
    kernel: str | None
    used: int | None
    reserved: int | None
    context: bool
    stack: int | None
    printf_fifo: int | None
    malloc_heap: int | None
    torch_reserved: int | None
    torch_allocated: int | None
    scratch_live: int
    scratch_requested: int



@dataclasses.dataclass(frozen=True)
class Part:
    """One line of the attribution: bytes, the formula that produced them, and a detail (e.g. the kernel)."""

    name: str
    bytes: int
    formula: str
    detail: str = ""


@dataclasses.dataclass(frozen=True)
class StackGrowth:
    """The context stack limit grew between two consecutive snapshots."""

    old: int
    new: int
    t: float
    kernel: str | None
    where: str


@dataclasses.dataclass(frozen=True)
class StackStart:
    """The stack limit a region started from, and whether a reading shows it. A region that starts before its
    process has a CUDA context reads no limit there; the context it creates starts at the driver's default, `read`
    when the context's first reading before the region's end shows that."""

    limit: int
    read: bool

    def describe(self, number=str) -> str:
        """The limit as `number` writes it, and where no reading shows it, why it is the figure."""
        return number(self.limit) + ("" if self.read else " (driver default, no context yet)")


def stack_start(snapshots: list[Snapshot]) -> StackStart | None:
    """The limit at `before`; where it had no context, the driver's default, `read` when the first reading with
    a context before the region's end shows it. None where no snapshot saw a context."""
    if snapshots[0].stack is not None:
        return StackStart(snapshots[0].stack, True)
    if all(s.stack is None for s in snapshots):
        return None
    first = next((s.stack for s in snapshots[:-1] if s.stack is not None), None)
    return StackStart(DEFAULT_STACK_LIMIT, first == DEFAULT_STACK_LIMIT)


def stack_growths(snapshots: list[Snapshot]) -> list[StackGrowth]:
    """Every rise of the context stack limit, with the launch it happened in when a launch's hooks bracket it; a
    context created inside the region rose from the driver's default before its first reading when that reading
    is higher."""
    start = stack_start(snapshots)
    growths, previous = [], None
    for snapshot in snapshots:
        if snapshot.stack is None:
            continue
        if previous is None and start is not None and snapshot.stack > start.limit:
            growths.append(StackGrowth(start.limit, snapshot.stack, snapshot.t, None,
                                       f"a point between the creation of the context and the {_label(snapshot)} "
                                       f"snapshot (its first reading)"))
        elif previous is not None and snapshot.stack > previous.stack:
            growths.append(StackGrowth(previous.stack, snapshot.stack, snapshot.t, *_growth_place(previous, snapshot)))
        previous = snapshot
    return growths


def _growth_place(before: Snapshot, after: Snapshot) -> tuple[str | None, str]:
    if before.event == "launch_enter" and after.event == "launch_exit" and before.kernel == after.kernel:
        return after.kernel, f"launch of {after.kernel}"
    return None, f"outside a Triton launch (between {_label(before)} and {_label(after)})"


def _label(snapshot: Snapshot) -> str:
    return snapshot.event + (f" {snapshot.kernel}" if snapshot.kernel else "")


def value_of(snapshot: Snapshot | None, field: str) -> int:
    value = getattr(snapshot, field) if snapshot is not None else None
    return value or 0


def attribute(snapshots: list[Snapshot], device: DeviceInfo) -> list[Part]:
    """Split NVML `used`(after) - `used`(before) into parts; the residual makes them add up exactly.

    The context's own limits are compared from the first snapshot that saw the context: when the context was
    created inside the region, its default reservations belong to the "context baseline" line, and a stack limit
    above the driver's default at its first reading to the stack line.
    """
    before, after = snapshots[0], snapshots[-1]
    first = next((s for s in snapshots if s.context), None)
    start = stack_start(snapshots)
    parts = [_baseline_part(before, first, start, device),
             Part("torch allocator", value_of(after, "torch_reserved") - value_of(before, "torch_reserved"),
                  "torch reserved(after) - reserved(before)"),
             Part("Triton scratch outside torch", after.scratch_live - before.scratch_live,
                  "global-scratch bytes from a non-torch triton.set_allocator allocator still held after")]
    parts.append(_stack_part(snapshots, start, after, device))
    parts.append(Part("printf FIFO + malloc heap",
                      (value_of(after, "printf_fifo") - value_of(first, "printf_fifo")
                       + value_of(after, "malloc_heap") - value_of(first, "malloc_heap")) if first else 0,
                      "delta of CU_LIMIT_PRINTF_FIFO_SIZE + CU_LIMIT_MALLOC_HEAP_SIZE (upper bound: the driver "
                      "allocates them lazily)"))
    growth = value_of(after, "used") - value_of(before, "used")
    parts.append(Part("residual", growth - sum(p.bytes for p in parts),
                      "growth - the lines above (module images, other processes, NVML granularity)"))
    return parts


def _stack_reserve(old: int, new: int, device: DeviceInfo) -> int:
    return device.stack_reserve(new - old)


def _baseline_part(before: Snapshot, first: Snapshot | None, start: StackStart | None, device: DeviceInfo) -> Part:
    formula = ("used(first snapshot with a context) - used(before) - torch reserved - scratch then - stack above "
               "the driver default then")
    if before.context or first is None:
        return Part("context baseline", 0, formula, "context existed before" if before.context else "no context")
    size = (value_of(first, "used") - value_of(before, "used") - value_of(first, "torch_reserved")
            - (first.scratch_live - before.scratch_live) - _stack_reserve(start.limit, first.stack, device))
    return Part("context baseline", size, formula, f"context first seen at {_label(first)}")


def _stack_part(snapshots: list[Snapshot], start: StackStart | None, after: Snapshot, device: DeviceInfo) -> Part:
    formula = (f"(stack limit(after) - stack limit(start)) x {device.sms} SMs x {device.max_threads_per_sm} "
               f"threads/SM")
    if start is None or after.stack is None:
        return Part("stack (local memory) reservation", 0, formula, "no context")
    detail = "; ".join(f"{g.old} -> {g.new} B/thread at {g.where}" for g in stack_growths(snapshots)) or \
        f"limit unchanged ({after.stack} B/thread)"
    return Part("stack (local memory) reservation", _stack_reserve(start.limit, after.stack, device), formula, detail)
