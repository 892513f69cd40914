"""Replaying the rival picks of divergent tuning keys on one GPU: how far apart the configs that processes picked for
one kernel and key really are, as intervals, where the autotuners' own timings are each process's draw.

`replay_rivals(recordings, store, report, workers)`: for each divergent key of `report` (`sweep.divergence`), one
signature per picked config (one the workload ran where there is one: its inputs were snapshotted), the fastest
pick's as the baseline and every other pick launched on the baseline's inputs at its own grid, interleaved as a
sweep's config check is (`replay.time_signatures`). Returns per key its rivals' ratios to the fastest pick."""

from __future__ import annotations

import dataclasses

from .. import config
from .._triton import pick_identity
from ..errors import TritonhookError
from ..measure.variants import PLAIN, parse_variant
from ..store import Store
from .autotune import config_text
from .divergence import Divergence, KeyPicks, RivalTiming
from .recording import Recording, Signature
from .replay import Workers, build_all, time_signatures
from .result import SweepRow

FASTEST_PICK = "fastest pick"
"""The baseline arm of a rivals replay; each other pick's arm is "config ID" (its signature id in the merged
recording)."""


def rival_signatures(merged: Recording, key: KeyPicks) -> dict[str, Signature]:
    """Per config picked at `key`, a signature of it from the decisions made at that kernel and key: one the
    workload launched where there is one (its inputs are the workload's), else a benchmarked candidate."""
    groups = {d["group"] for d in merged.autotune
              if d["kernel"] == key.kernel and list(d.get("key") or ()) == key.key and d.get("made_at") is None}
    found: dict[str, Signature] = {}
    for signature in merged.signatures:
        if signature.autotune is None or signature.autotune["group"] not in groups:
            continue
        text = config_text(pick_identity(signature.autotune["config"]))
        if text in key.configs and (text not in found or signature.launches and not found[text].launches):
            found[text] = signature
    return found


def costliest(keys: list[KeyPicks], top: int | None) -> list[KeyPicks]:
    """The `top` keys whose divergence cost the workload most (`KeyPicks.cost`'s excess; a key not costed last),
    all of them where `top` is None."""
    ranked = sorted(keys, key=lambda key: -((key.cost() or {}).get("excess_ms") or 0.0))
    return ranked if top is None else ranked[:top]


def replay_rivals(recordings: list[Recording], store: Store, report: Divergence, workers: Workers, *,
                  rounds: int = config.sweep.DEFAULT_ROUNDS, min_effect: float = config.ab.DEFAULT_MIN_EFFECT,
                  top: int | None = None) -> None:
    """Set `replayed` on every divergent key of `report` (the `top` costliest: `costliest`) whose fastest pick is
    known (`KeyPicks.fastest`): each rival pick against the fastest (see the module docstring)."""
    merged = Recording.merged(recordings)
    plans = []
    for key in costliest(report.divergent, top):
        best = key.fastest()
        found = rival_signatures(merged, key)
        if best is None or config_text(best) not in found:
            continue
        baseline = found.pop(config_text(best))
        plans.append((key, baseline, found))
    if not plans:
        raise TritonhookError("no divergent tuning key with its picks' kernels recorded to replay")
    wanted = [s for _, baseline, others in plans for s in (baseline, *others.values())]
    rows = {s.id: SweepRow(s.id, s.kernel, s.label(), None, s.launches, s.time_per_launch_ms, s.inputs, "ok")
            for s in wanted}
    built = build_all(store, wanted, [parse_variant(PLAIN)], rows, progress=workers.progress)
    timed = [(key, baseline, {text: s for text, s in others.items() if s.id in built})
             for key, baseline, others in plans if baseline.id in built]
    arms = {baseline.id: {FASTEST_PICK: built[baseline.id]["plain"],
                          **{f"config {s.id}": built[s.id]["plain"] for s in others.values()}}
            for _, baseline, others in timed}
    checked = {baseline.id: SweepRow(baseline.id, baseline.kernel, baseline.label(), None, baseline.launches,
                                     baseline.time_per_launch_ms, baseline.inputs, "ok") for _, baseline, _ in timed}
    time_signatures(merged, store, [dataclasses.replace(baseline, autotune=None) for _, baseline, _ in timed],
                    arms, checked, workers, rounds=rounds, l2=config.sweep.L2_MODES[0],
                    l2_dirt=config.sweep.L2_DIRT[0], min_effect=min_effect, adaptive=True,
                    launches={baseline.id: {f"config {s.id}": s for s in others.values()}
                              for _, baseline, others in timed})
    for key, baseline, others in plans:
        row = checked.get(baseline.id) or rows[baseline.id]  # not timed: its build's status
        key.replayed = [_timing(text, signature, row, rows) for text, signature in others.items()]


def _timing(text: str, signature: Signature, row: SweepRow, rows: dict[int, SweepRow]) -> RivalTiming:
    """One rival's figures from the baseline's row, or why it has none."""
    if row.status != "ok":
        return RivalTiming(text, verdict=f"not replayed: {row.status}")
    timing = next((v for v in row.variants if v.label == f"config {signature.id}"), None)
    if timing is None:
        return RivalTiming(text, verdict=f"not replayed: {rows[signature.id].status}")
    return RivalTiming(text, timing.ratio, timing.low, timing.high, timing.verdict)
