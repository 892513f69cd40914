"""Why a row misses the fidelity bar, measured rather than guessed.

A row of the fidelity set (`result.Fidelity`) whose replayed time is more than the tolerance away from its time
inside the workload is replayed again, its baseline alone, under the other L2 rules (`CHECK_MODES`), under its
own rule with the L2 dirt flipped, and, where some of its inputs were beyond the snapshot budget, with those filled
with zeros instead of random values (`check_conditions`), and what else the two places measured is set beside it: the
launch lead (the empty kernel after each timed kernel, in both places: `SweepRow.lead_ms`) and the SM clock (a ~1 ms
spin after the workload and after the row's rounds: `measure.timing.sm_clock_mhz`). `miss_reason` turns those
figures into the row's sentence, naming what brings the row within the tolerance, or, where nothing does, every
figure that was ruled out. The replays are `replay.py`'s (`_explain_misses`); this module is pure.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from .. import config
from ..format import human_bytes
from .result import FIDELITY_TOLERANCE, Fidelity, SweepRow

CHECK_MODES = ("cold", "warm")
"""The L2 rules a missed row is replayed under besides the sweep's own: every call reading DRAM, and every call
finding in L2 what the previous one read and wrote; a kernel's time inside a workload lies between the two where
L2 is what separates it from its replay."""
CLOCK_TOLERANCE = 0.03
"""SM clocks within 3% of each other (after the workload, after the replay) are "the same clock"."""


def missed_rows(rows: list[SweepRow], tolerance: float = FIDELITY_TOLERANCE) -> list[SweepRow]:
    """The rows of the fidelity set (`Fidelity.members`) replayed outside ±`tolerance` of their in-workload time."""
    return [row for row in Fidelity.members(rows)
            if row.status == "ok" and row.fidelity is not None and abs(row.fidelity - 1.0) > tolerance]


ZEROS_FILLED = "zeros-filled"
"""The name of the check replay with the synthetic float inputs zeroed, in a row's figures."""


@dataclasses.dataclass(frozen=True)
class CheckCondition:
    """One check replay of a missed row: an L2 rule (`config.sweep.L2_MODES`), the L2 dirt set before each call
    (`config.sweep.L2_DIRT`), its name in the row's figures, and what the float tensors beyond the snapshot budget
    hold (`config.sweep.SYNTHETIC_FILLS`): a condition with another fill than the sweep's checks only the rows
    replayed on synthetic inputs (`for_synthetic_only`)."""

    l2: str
    dirt: str
    name: str
    fill: str = config.sweep.SYNTHETIC_FILLS[0]

    @property
    def for_synthetic_only(self) -> bool:
        return self.fill != config.sweep.SYNTHETIC_FILLS[0]


DIRT_WORDS = {"dirty": "dirtied", "clean": "clean"}
"""The L2 dirts a missed row is replayed with besides its own (`config.sweep.L2_DIRT`), and the word naming each in
the row's figures ("measured dirtied"). Not the half dirt: on the H200 a kernel evicting a half-dirty L2 paid about
what it paid on a dirty one (docs/sweep_fidelity.md#a-half-dirty-l2)."""
DIRT_LEVELS = {"dirty": 1.0, "half": 0.5, "clean": 0.0}
"""The share of the L2's lines each dirt leaves dirty; "none" (what the previous call left: its outputs written, its
inputs read) counts as half."""


def check_conditions(l2: str, dirt_of: Callable[[str], str]) -> list[CheckCondition]:
    """The replays a row missed under `l2` is checked with (`dirt_of(mode)`: the dirt a replay under `mode` sets,
    `replay._dirt`): `l2` itself with the synthetic inputs zeroed (for the rows that have some), where `l2`
    rotates its inputs, `l2` itself on each L2 dirt of `DIRT_WORDS` but the one the sweep ran, then each other rule
    at its own dirt. The fill and the dirt each change one thing: a row whose time moves with the fill does work
    that depends on values the replay does not have; a row the dirt alone brings within keeps the sweep's
    residency, so it missed on what its evictions cost, not on what it found in L2; `warm` changes both at once
    (one input set, never dirtied) and cannot tell them apart."""
    zeros = [CheckCondition(l2, dirt_of(l2), ZEROS_FILLED, fill="zeros")]
    flipped = [] if l2 == "warm" else [CheckCondition(l2, state, f"{l2} {word}")
                                       for state, word in DIRT_WORDS.items() if state != dirt_of(l2)]
    return zeros + flipped + [CheckCondition(mode, dirt_of(mode), mode) for mode in CHECK_MODES if mode != l2]


def miss_reason(row: SweepRow, l2: str, by_mode: dict[str, float | None], workload_clock_mhz: float | None,
                tolerance: float = FIDELITY_TOLERANCE, replayed_dirt: str = "dirty",
                synthetic: tuple[int, int] = (0, 0)) -> str:
    """Why `row` missed the bar, in one sentence from measured figures: `by_mode` is the row's replay/workload
    ratio under each check condition (`check_conditions`' names; None: that replay failed); `workload_clock_mhz` the
    SM clock after the workload (`Recording.sm_clock_mhz`); `replayed_dirt` the L2 dirt the sweep gave this row
    ("dirty", "half", "clean", "none"): its own among the conditions is a re-measurement, not a change; `synthetic`
    the (tensors, bytes) of its inputs replayed synthetic. The inputs come first: a time that moves with values
    the replay made up says nothing of the kernel's time on the workload's."""
    within = lambda ratio: ratio is not None and abs(ratio - 1.0) <= tolerance  # noqa: E731
    figures = ", ".join(f"{mode} {ratio:.3f}" for mode, ratio in {l2: row.fidelity, **by_mode}.items()
                        if ratio is not None)
    zeros = by_mode.get(ZEROS_FILLED)
    if zeros is not None and abs(zeros / row.fidelity - 1.0) > tolerance:
        tensors, size = synthetic
        return (f"inputs: {tensors} of its tensors ({human_bytes(size)}) were beyond the snapshot budget and its "
                f"time depends on their values ({figures}): inside the workload it works on other data; record "
                f"with --budget {size} or more (and room for them in --snapshot-budget) to replay them as recorded")
    by_mode = {mode: ratio for mode, ratio in by_mode.items() if mode != ZEROS_FILLED}
    late = _late_launches(row, tolerance)
    if late:
        return f"{late}; L2 rules {figures}"
    ratios = {l2: row.fidelity, **by_mode}
    closing = [mode for mode, ratio in by_mode.items() if within(ratio)]
    flips = {f"{l2} {word}": state for state, word in DIRT_WORDS.items()}
    level = lambda state: DIRT_LEVELS.get(state, DIRT_LEVELS["half"])  # noqa: E731
    changed = [mode for mode in closing if flips.get(mode, replayed_dirt) != replayed_dirt]
    if changed:
        flipped = min(changed, key=lambda mode: abs(level(flips[mode]) - level(replayed_dirt)))
        fewer = "fewer" if level(flips[flipped]) < level(replayed_dirt) else "more"
        return (f"L2 dirt: replayed {flipped} it is within ±{tolerance:.0%} ({figures}): inside the workload {fewer} "
                f"of the lines it evicts from L2 are dirty (owed to DRAM) than in the {l2} replay")
    closing = [mode for mode in closing if mode not in flips]
    if closing:
        mode = closing[0]
        more = "more" if mode == "warm" else "less"
        return (f"L2 state: replayed {mode} it is within ±{tolerance:.0%} ({figures}): inside the workload it finds "
                f"{more} of its data in L2 than the {l2} replay gives it")
    measured = [ratio for ratio in ratios.values() if ratio is not None]
    if len(measured) > 1 and min(measured) < 1.0 < max(measured):
        return (f"L2 state: its time inside the workload lies between its replays ({figures}); no single L2 rule "
                f"reproduces what the workload leaves in L2 for it")
    if within(row.net_fidelity):
        return (f"launch pacing: within ±{tolerance:.0%} net of the launch lead ({row.lead_ms * 1e3:+.2f} µs, "
                f"{row.net_fidelity:.3f}); L2 rules {figures}")
    clock = _clock_text(row.clock_mhz, workload_clock_mhz)
    if clock and abs(row.clock_mhz / workload_clock_mhz - 1.0) > CLOCK_TOLERANCE \
            and within(row.fidelity * row.clock_mhz / workload_clock_mhz):
        return f"clocks: within ±{tolerance:.0%} at the workload's clock ({clock}); L2 rules {figures}"
    lead = f"launch lead {row.lead_ms * 1e3:+.2f} µs" if row.lead_ms is not None else "launch lead not measured"
    return (f"not the L2 state ({figures}), the launch pacing ({lead}) or the clocks ("
            f"{clock or 'not measured'}): unexplained at {row.recorded_ms * 1e3:.1f} µs inside the workload")


def _late_launches(row: SweepRow, tolerance: float) -> str | None:
    """The sentence for a row whose every timed launch inside the workload was queued after its stream hold ran
    out (`Signature.late_us`), where that explains it: the GPU then idled between the start event and the kernel,
    so the recorded time is the kernel's plus up to that idle, and the replay, its kernel held, reads lower. None
    where it was held, where its replay is slower, or where it is still faster net of the whole idle: no part of
    the idle then brings it within."""
    if row.recorded_late_us is None or not row.fidelity or row.fidelity >= 1.0:
        return None
    kernel_ms = row.recorded_ms - row.recorded_late_us / 1e3
    net = row.fidelity * row.recorded_ms / kernel_ms if kernel_ms > 0 else None
    if net is not None and net < 1.0 - tolerance:
        return None
    net_text = f"{net:.3f} net of it" if net is not None else "it is more than that time"
    return (f"launch pacing: inside the workload the host queued it {row.recorded_late_us:.1f} µs after its stream "
            f"hold ran out (at every timed launch), so its {row.recorded_ms * 1e3:.1f} µs there count the GPU idling "
            f"for the host's launch ({net_text})")


def _clock_text(replay_mhz: float | None, workload_mhz: float | None) -> str | None:
    if not replay_mhz or not workload_mhz:
        return None
    return f"SM at {replay_mhz:.0f} MHz after the replay, {workload_mhz:.0f} MHz after the workload"
