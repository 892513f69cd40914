"""Autotuned kernels in a sweep: the candidates of one autotune decision replayed per variant, each variant's own
best config, and the ratio of the winners.

A kernel under `triton.autotune` is compiled once per config and benchmarked; renaming it in production re-runs
the autotuner under the new name, so the fair comparison is each variant's fastest config against plain's fastest,
not one fixed config. The recording tags every signature launched while the autotuner benchmarked it with its
decision (`group`) and config (recording.py); here those signatures become one group, and a group's replayed
candidates become one `SweepRow`. Pure functions: tested with real captures and given sample arrays on a CPU.
"""

from __future__ import annotations

import dataclasses

from ..measure.outputs import BITWISE, CLOSE, DIFFER, NO_OUTPUT, WITHIN_SPREAD
from ..measure.stats import DEFAULT_MIN_EFFECT, median, ratio_interval, verdict
from .recording import Recording, Signature
from .result import SweepRow, VariantTiming
from .variants import IDENTICAL

OUTPUTS_ORDER = (DIFFER, CLOSE, "allclose", WITHIN_SPREAD, BITWISE, NO_OUTPUT, "-")
"""A group's outputs are its worst candidate's: "differ" anywhere keeps the kernel out of the estimate ("allclose":
the verdict of results saved before the comparison against the baseline's spread)."""


@dataclasses.dataclass
class AutotuneGroup:
    """One autotune decision: the signatures of every config the autotuner benchmarked, fastest first by the
    autotuner's own benchmark (configs it could not time last), and the config it chose."""

    group: int
    kernel: str
    candidates: list[Signature]
    chosen: dict | None
    bench_ms: dict[int, float | None]  # signature id -> the autotuner's median for its config

    @property
    def workload_winner(self) -> Signature | None:
        """The candidate that ran as the workload: the chosen config, else the one with workload launches."""
        return (next((s for s in self.candidates if s.autotune["config"] == self.chosen), None)
                or next((s for s in self.candidates if s.launches), None))

    @property
    def gpu_ms(self) -> float:
        """The group's GPU time in the workload (benchmark launches are not in it)."""
        return sum(s.gpu_ms for s in self.candidates)

    def to_replay(self, top: int | None) -> list[Signature]:
        """The `top` candidates by the autotuner's benchmark, and always the workload's winner."""
        chosen = self.candidates[:top] if top else list(self.candidates)
        winner = self.workload_winner
        return chosen + [winner] if winner is not None and winner not in chosen else chosen


def config_text(config: dict | None) -> str:
    """A config as `BLOCK_M=128, num_warps=4, ...` (its constexprs first, as the autotuner passes them)."""
    return ", ".join(f"{key}={value}" for key, value in (config or {}).items()) or "-"


def autotune_groups(recording: Recording) -> list[AutotuneGroup]:
    """The recording's autotune decisions with their candidate signatures, in decision order."""
    decisions = {d["group"]: d for d in recording.autotune}
    members: dict[int, list[Signature]] = {}
    for signature in recording.signatures:
        if signature.autotune is not None:
            members.setdefault(signature.autotune["group"], []).append(signature)
    groups = []
    for group, signatures in sorted(members.items()):
        decision = decisions.get(group, {})
        timed = {json_key(config): (times[0] if times else None) for config, times in decision.get("timings", [])}
        bench = {s.id: timed.get(json_key(s.autotune["config"])) for s in signatures}
        signatures.sort(key=lambda s: (bench[s.id] is None, bench[s.id] or 0.0, s.id))
        groups.append(AutotuneGroup(group, decision.get("kernel") or signatures[0].kernel, signatures,
                                    decision.get("chosen"), bench))
    return groups


def json_key(config: dict) -> tuple:
    return tuple(sorted((str(k), repr(v)) for k, v in config.items()))


def analyze_group(row: SweepRow, group: AutotuneGroup, candidates: list[SweepRow],
                  samples: dict[int, dict[str, list[float]]], labels: list[str],
                  min_effect: float = DEFAULT_MIN_EFFECT) -> SweepRow:
    """Fill the group's `row` from its replayed candidates.

    Each variant runs at its own config only where that config is truly faster for it: a variant's fastest
    candidate (lowest median, `samples[signature][label]`: per-round medians; a variant not timed because its SASS
    equals another's takes that one's samples) replaces the reference config (the workload's own, else the
    baseline's fastest) only when it beats the variant at the reference config beyond noise. Two identical builds
    picked different winners of a 3 µs kernel within noise, and the ratio of the two winners read "faster 0.958"
    in an A/A: a winner flip within noise is no verdict. Where all variants keep one config, the verdict is that
    candidate's own interleaved comparison; where a variant's config truly changes (`flip`), its best against the
    baseline's best (`ratio_interval` of the two candidates' rounds), and beside it the comparison at the
    reference config (`same_config`)."""
    by_id = {c.signature: c for c in candidates}
    resolved = {c.signature: _resolved(c, samples.get(c.signature, {})) for c in candidates if c.status == "ok"}
    # a variant no candidate timed (its build failed at every config) keeps its verdict; the others are compared
    untimed = [label for label in labels[1:] if not any(own.get(label) for own in resolved.values())]
    timed_labels = [label for label in labels if label not in untimed]
    timed = {sid: own for sid, own in resolved.items() if all(own.get(label) for label in timed_labels)}
    row.autotune = {"group": group.group, "configs": len(group.candidates),
                    "replayed": [c.signature for c in candidates], "workload": config_text(group.chosen),
                    "winners": {}, "winner_signatures": {}, "changed": False, "flips": {}, "same_config": {}}
    if not timed:
        failed = next((c.status for c in candidates if c.status != "ok"), "no candidate was timed")
        row.status = f"no candidate replayed: {failed}"
        return row
    winner = group.workload_winner
    reference = winner.id if winner is not None and winner.id in timed else \
        min(timed, key=lambda sid: (median(timed[sid][labels[0]]), sid))
    chosen = {label: _config_for(label, timed, reference, min_effect) for label in timed_labels}
    base_id = chosen[labels[0]]
    base = timed[base_id][labels[0]]
    for label in labels:
        if label in untimed:
            failed = _timing_of(by_id[reference], label)
            row.variants.append(VariantTiming(label, None, verdict=failed.verdict, facts=failed.facts))
            continue
        own_id = chosen[label]
        own = timed[own_id][label]
        candidate_timing = _timing_of(by_id[own_id], label)
        timing = VariantTiming(label, median(own), facts=candidate_timing.facts, samples=list(own))
        if label == labels[0]:
            pass
        elif own_id == base_id:  # one config for both: its own interleaved comparison
            timing.ratio, timing.low, timing.high = candidate_timing.ratio, candidate_timing.low, candidate_timing.high
            timing.verdict = candidate_timing.verdict
        else:
            timing.ratio, timing.low, timing.high = ratio_interval(base, own)
            timing.verdict = verdict(timing.ratio, timing.low, timing.high, min_effect)
            same = _timing_of(by_id[reference], label)
            row.autotune["same_config"][label] = {"config": _config_of(by_id[reference]), "ratio": same.ratio,
                                                  "low": same.low, "high": same.high, "verdict": same.verdict}
        row.variants.append(timing)
    fastest = {label: min(timed, key=lambda sid: (median(timed[sid][label]), sid)) for label in timed_labels}
    row.autotune["flips"] = {label: {"fastest": _config_of(by_id[sid]), "kept": _config_of(by_id[chosen[label]])}
                             for label, sid in fastest.items() if sid != chosen[label]}
    row.autotune["winners"] = {label: _config_of(by_id[sid]) for label, sid in chosen.items()}
    row.autotune["winner_signatures"] = chosen
    row.autotune["changed"] = len(set(chosen.values())) > 1
    worst = min((c for c in candidates if c.status == "ok"),
                key=lambda c: OUTPUTS_ORDER.index(c.outputs) if c.outputs in OUTPUTS_ORDER else len(OUTPUTS_ORDER))
    row.outputs, row.output_check = worst.outputs, worst.output_check
    return row


def _config_for(label: str, timed: dict[int, dict[str, list[float]]], reference: int, min_effect: float) -> int:
    """The candidate `label` runs at: its fastest where that beats `label` at the reference config beyond noise
    (the interval of the two candidates' rounds says "faster"), else the reference."""
    fastest = min(timed, key=lambda sid: (median(timed[sid][label]), sid))
    if fastest == reference:
        return reference
    ratio, low, high = ratio_interval(timed[reference][label], timed[fastest][label])
    return fastest if verdict(ratio, low, high, min_effect) == "faster" else reference


def _timing_of(candidate: SweepRow, label: str) -> VariantTiming:
    return next(v for v in candidate.variants if v.label == label)


def _resolved(candidate: SweepRow, samples: dict[str, list[float]]) -> dict[str, list[float]]:
    """A candidate's samples per variant, a variant with SASS identical to another's given that one's."""
    resolved = dict(samples)
    for timing in candidate.variants:
        twin = timing.facts.get("same_text_as")
        if timing.verdict == IDENTICAL and twin in samples:
            resolved[timing.label] = samples[twin]
    return resolved


def _config_of(row: SweepRow) -> str:
    return (row.autotune or {}).get("config", "-")
