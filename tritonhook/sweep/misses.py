"""Why a row misses the fidelity bar, measured rather than guessed.

A row of the fidelity set (`result.Fidelity`) whose replayed time is more than the tolerance away from its time
inside the workload is replayed again, its baseline alone, under the other L2 rules (`CHECK_MODES`) and under its own
rule with the L2 dirt flipped (`check_conditions`), and what else the two places measured is set beside it: the launch lead (the empty kernel after each timed kernel, in both
places: `SweepRow.lead_ms`) and the SM clock (a ~1 ms spin after the workload and after the row's rounds:
`measure.timing.sm_clock_mhz`). `miss_reason` turns those figures into the row's sentence, naming what brings the
row within the tolerance, or, where nothing does, every figure that was ruled out. The replays are `replay.py`'s
(`_explain_misses`); this module is pure.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

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


@dataclasses.dataclass(frozen=True)
class CheckCondition:
    """One check replay of a missed row: an L2 rule (`config.SWEEP_L2_MODES`) and whether an L2-sized write goes
    before each call (`config.SWEEP_DIRTY_L2`)."""

    l2: str
    dirty: bool
    name: str


def check_conditions(l2: str, dirtied: Callable[[str], bool]) -> list[CheckCondition]:
    """The replays a row missed under `l2` is checked with: each other rule at its own dirtiness (`dirtied(mode)`),
    and, where `l2` rotates its inputs, `l2` itself with the dirt flipped ("measured clean", or "measured dirtied"
    where the sweep ran clean). The flip changes one thing: the residency is the sweep's, so a row it brings within
    missed on what its evictions cost, not on what it found in L2; `warm` changes both at once (one input set, never
    dirtied) and cannot tell them apart."""
    others = [CheckCondition(mode, dirtied(mode), mode) for mode in CHECK_MODES if mode != l2]
    if l2 == "warm":
        return others
    own = dirtied(l2)
    return [CheckCondition(l2, not own, f"{l2} {'dirtied' if not own else 'clean'}"), *others]


def miss_reason(row: SweepRow, l2: str, by_mode: dict[str, float | None], workload_clock_mhz: float | None,
                tolerance: float = FIDELITY_TOLERANCE) -> str:
    """Why `row` missed the bar, in one sentence from measured figures: `by_mode` is the row's replay/workload
    ratio under each other L2 rule (None: that replay failed); `workload_clock_mhz` the SM clock after the workload
    (`Recording.sm_clock_mhz`)."""
    within = lambda ratio: ratio is not None and abs(ratio - 1.0) <= tolerance  # noqa: E731
    ratios = {l2: row.fidelity, **by_mode}
    figures = ", ".join(f"{mode} {ratio:.3f}" for mode, ratio in ratios.items() if ratio is not None)
    closing = [mode for mode, ratio in by_mode.items() if within(ratio)]
    flipped = next((mode for mode in closing if mode.startswith(f"{l2} ")), None)
    if flipped:
        fewer = "fewer" if flipped.endswith("clean") else "more"
        return (f"L2 dirt: replayed {flipped} it is within ±{tolerance:.0%} ({figures}): inside the workload {fewer} "
                f"of the lines it evicts from L2 are dirty (owed to DRAM) than in the {l2} replay")
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


def _clock_text(replay_mhz: float | None, workload_mhz: float | None) -> str | None:
    if not replay_mhz or not workload_mhz:
        return None
    return f"SM at {replay_mhz:.0f} MHz after the replay, {workload_mhz:.0f} MHz after the workload"
