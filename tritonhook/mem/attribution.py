"""Attribution (pure): the snapshots a watch recorded, and how NVML's growth splits into parts with formulas."""

from __future__ import annotations

import dataclasses
from typing import Iterable

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

def stack_growths(snapshots: Iterable[Snapshot]) -> list[StackGrowth]:
    """Every rise of the context stack limit, with the launch it happened in when a launch's hooks bracket it."""
    growths, previous = [], None
    for snapshot in snapshots:
        if snapshot.stack is None:
            continue
        if previous is not None and snapshot.stack > previous.stack:
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
    created inside the region, its default stack reservation belongs to the "context baseline" line.
    """
    before, after = snapshots[0], snapshots[-1]
    first = next((s for s in snapshots if s.context), None)
    parts = [_baseline_part(before, first),
             Part("torch allocator", value_of(after, "torch_reserved") - value_of(before, "torch_reserved"),
                  "torch reserved(after) - reserved(before)"),
             Part("Triton scratch outside torch", after.scratch_live - before.scratch_live,
                  "global-scratch bytes from a non-torch triton.set_allocator allocator still held after")]
    parts.append(_stack_part(snapshots, first, after, device))
    parts.append(Part("printf FIFO + malloc heap",
                      (value_of(after, "printf_fifo") - value_of(first, "printf_fifo")
                       + value_of(after, "malloc_heap") - value_of(first, "malloc_heap")) if first else 0,
                      "delta of CU_LIMIT_PRINTF_FIFO_SIZE + CU_LIMIT_MALLOC_HEAP_SIZE (upper bound: the driver "
                      "allocates them lazily)"))
    growth = value_of(after, "used") - value_of(before, "used")
    parts.append(Part("residual", growth - sum(p.bytes for p in parts),
                      "growth - the lines above (module images, other processes, NVML granularity)"))
    return parts


def _baseline_part(before: Snapshot, first: Snapshot | None) -> Part:
    formula = "used(first snapshot with a context) - used(before) - torch reserved - scratch then"
    if before.context or first is None:
        return Part("context baseline", 0, formula, "context existed before" if before.context else "no context")
    size = (value_of(first, "used") - value_of(before, "used") - value_of(first, "torch_reserved")
            - (first.scratch_live - before.scratch_live))
    return Part("context baseline", size, formula, f"context first seen at {_label(first)}")


def _stack_part(snapshots: list[Snapshot], first: Snapshot | None, after: Snapshot, device: DeviceInfo) -> Part:
    formula = (f"(stack limit(after) - stack limit(first)) x {device.sms} SMs x {device.max_threads_per_sm} "
               f"threads/SM")
    if first is None or after.stack is None:
        return Part("stack (local memory) reservation", 0, formula, "no context")
    size = (after.stack - first.stack) * device.sms * device.max_threads_per_sm
    growths = stack_growths(snapshots)
    detail = "; ".join(f"{g.old} -> {g.new} B/thread at {g.where}" for g in growths) or \
        f"limit unchanged ({after.stack} B/thread)"
    return Part("stack (local memory) reservation", size, formula, detail)


