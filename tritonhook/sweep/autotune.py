"""Autotuned kernels in a sweep: the candidates of one autotune decision replayed per variant, the baseline at the
config the workload ran, each other variant at the config its autotuner would pick, and the autotune regret.

A kernel under `triton.autotune` is compiled once per config and benchmarked; renaming it in production re-runs
the autotuner under the new name, so a variant is compared at its own best config (the replay's re-ranking of the
candidates) against the baseline at the config the workload's autotuner chose, the one the workload really runs: a
row never answers for a config the workload does not run. Where the replay finds another config faster than the
workload's (the autotuner's pick at µs scale is a draw: its benchmark times pre-hooks, and is noisy), that is the
row's autotune regret, measured with its interval and, where the recording can tell, why the autotuner missed it;
it stays a replay's finding until the workload run with that config pinned confirms it. The recording tags every
signature launched while the autotuner benchmarked it with its decision (`group`) and config (recording.py); here
those signatures become one group, and a group's replayed candidates become one `SweepRow`. Pure functions: tested
with real captures and given sample arrays on a CPU.
"""

from __future__ import annotations

import dataclasses

from .. import config
from .._triton import config_matches
from ..measure.outputs import BITWISE, CLOSE, DIFFER, NO_OUTPUT, WITHIN_SPREAD
from ..measure.stats import median, ratio_interval, verdict
from ..measure.variants import config_of_label
from .recording import Recording, Signature
from .result import TRITON_CACHE, SweepRow, VariantTiming, against_workload
from .builds import IDENTICAL

OUTPUTS_ORDER = (DIFFER, CLOSE, "allclose", WITHIN_SPREAD, BITWISE, NO_OUTPUT, "-")
"""A group's outputs are its worst candidate's: "differ" anywhere keeps the kernel out of the estimate ("allclose":
the verdict of results saved before the comparison against the baseline's spread)."""


@dataclasses.dataclass
class AutotuneGroup:
    """One autotune decision: the signatures of every config the autotuner benchmarked, fastest first by the
    autotuner's own benchmark (configs it could not time last), and the config it chose. `held`: where the workload
    ran a pick not made at this call (Triton's autotune cache; the autotuner's decision at another input shape under
    the same tuning key), and `cached_ms` the median each config had in the benchmark that pick was made on (the
    benchmark is then the recording's own); both None where the workload's autotuner benchmarked here."""

    group: int
    kernel: str
    candidates: list[Signature]
    chosen: dict | None
    bench_ms: dict[int, float | None]  # signature id -> the autotuner's median for its config
    bench_spread: dict[int, list] = dataclasses.field(default_factory=dict)  # ... its [median, p20, p80]
    hooks: dict = dataclasses.field(default_factory=dict)  # what its benchmark runs besides the kernel
    cached_ms: dict[int, float | None] | None = None  # signature id -> its median where the pick was made
    held: str | None = None

    @property
    def workload_winner(self) -> Signature | None:
        """The candidate that ran as the workload: the chosen config's, one the workload launched first (a pick
        made while Inductor compiled also has the compile's benchmark of it), else the one with workload launches."""
        chosen = [s for s in self.candidates if s.autotune["config"] == self.chosen]
        return (next((s for s in chosen if s.launches), None) or next(iter(chosen), None)
                or next((s for s in self.candidates if s.launches), None))

    @property
    def gpu_ms(self) -> float:
        """The group's GPU time in the workload (benchmark launches are not in it)."""
        return sum(s.gpu_ms for s in self.candidates)

    def to_replay(self, top: int | None) -> list[Signature]:
        """The `top` candidates by the autotuner's benchmark, and always the workload's winner; not another
        signature of the winner's config (a pick made while Inductor compiled: its benchmark, on other inputs)."""
        winner = self.workload_winner
        others = [s for s in self.candidates if winner is None or s is winner
                  or s.autotune["config"] != winner.autotune["config"]]
        chosen = others[:top] if top else others
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
        timed = {json_key(config): times or [] for config, times in decision.get("timings", [])}
        spread = {s.id: timed.get(json_key(s.autotune["config"]), []) for s in signatures}
        bench = {sid: (times[0] if times else None) for sid, times in spread.items()}
        signatures.sort(key=lambda s: (bench[s.id] is None, bench[s.id] or 0.0, s.id))
        groups.append(AutotuneGroup(group, decision.get("kernel") or signatures[0].kernel, signatures,
                                    decision.get("chosen"), bench, spread, decision.get("hooks") or {},
                                    _cached_ms(decision.get("cached"), signatures), _held(decision)))
    return groups


def _held(decision: dict) -> str | None:
    """Where a decision's pick came from when not made at its call, in words."""
    if decision.get("cached") is None:
        return None
    if decision.get("made_at") is None:
        return TRITON_CACHE
    return f"its decision at another input shape under the same tuning key (decision {decision['made_at']})"


def _cached_ms(cached: list | None, signatures: list[Signature]) -> dict[int, float | None] | None:
    """Each candidate's median in the timings its pick was made on (a decision's `cached`), None without them."""
    if cached is None:
        return None
    held = {json_key(config): times[0] if times else None for config, times in cached}
    return {s.id: held.get(json_key(s.autotune["config"])) for s in signatures}


def json_key(config: dict) -> tuple:
    return tuple(sorted((str(k), repr(v)) for k, v in config.items()))


def analyze_group(row: SweepRow, group: AutotuneGroup, candidates: list[SweepRow],
                  samples: dict[int, dict[str, list[float]]], labels: list[str],
                  min_effect: float = config.ab.DEFAULT_MIN_EFFECT) -> SweepRow:
    """Fill the group's `row` from its replayed candidates.

    The baseline runs at the config the workload ran (`workload_winner`), never at a replay's pick: the row's
    times, verdict, fidelity and estimate are of what the workload runs. Each other variant runs there too unless
    its own autotuner would pick otherwise than the baseline's (`_config_for`: its fastest candidate,
    `samples[signature][label]`: per-round medians, beats it at the baseline's fastest beyond noise; a variant not
    timed because its SASS equals another's takes that one's samples): two identical builds can pick different
    winners of a short kernel within noise, and comparing the two winners would call an A/A "faster". Where a
    variant keeps the workload's config, the verdict is that candidate's own interleaved comparison; where its
    config changes (`flip`), its best against the baseline (`ratio_interval` of the two candidates' rounds), and
    beside it the comparison at the workload's config (`same_config`). `regret`: the baseline's fastest config
    against the workload's (`autotune_regret`), what both builds' autotuners left on the table."""
    by_id = {c.signature: c for c in candidates}
    resolved = {c.signature: _resolved(c, samples.get(c.signature, {})) for c in candidates if c.status == "ok"}
    # a variant no candidate timed (its build failed at every config) keeps its verdict; the others are compared
    untimed = [label for label in labels[1:] if not any(own.get(label) for own in resolved.values())]
    timed_labels = [label for label in labels if label not in untimed]
    timed = {sid: own for sid, own in resolved.items() if all(own.get(label) for label in timed_labels)}
    row.autotune = {"group": group.group, "configs": len(group.candidates),
                    "replayed": [c.signature for c in candidates], "workload": config_text(group.chosen),
                    "winners": {}, "winner_signatures": {}, "changed": False, "flips": {}, "same_config": {},
                    "regret": None, "cached_pick": _cached_pick(group)}
    winner = group.workload_winner
    if winner is None or winner.id not in timed:
        failed = by_id[winner.id].status if winner is not None and winner.id in by_id else "not replayed"
        row.status = (f"the workload's config ({config_text(group.chosen)}) was not timed: "
                      f"{failed if failed != 'ok' else 'a variant failed at it'}")
        return row
    reference = winner.id
    anchor = min(timed, key=lambda sid: (median(timed[sid][labels[0]]), sid))  # the baseline's own fastest
    chosen = {label: _pinned(label, group, timed) if config_of_label(label) else
              reference if label == labels[0] else _config_for(label, timed, reference, anchor, min_effect)
              for label in timed_labels}
    if chosen[labels[0]] is None:
        row.status = f"{labels[0]}: no replayed config has {config_text(config_of_label(labels[0]))}"
        return row
    base = timed[chosen[labels[0]]][labels[0]]
    for label in labels:
        if label in untimed:
            failed = _timing_of(by_id[reference], label)
            row.variants.append(VariantTiming(label, None, verdict=failed.verdict, facts=failed.facts))
            continue
        if chosen[label] is None:
            row.variants.append(VariantTiming(label, None, verdict="config not replayed"))
            continue
        own_id = chosen[label]
        own = timed[own_id][label]
        candidate_timing = _timing_of(by_id[own_id], label)
        timing = VariantTiming(label, median(own), facts=candidate_timing.facts, samples=list(own))
        if label == labels[0]:
            pass
        elif own_id == chosen[labels[0]]:  # one config for both: its own interleaved comparison
            timing.ratio, timing.low, timing.high = candidate_timing.ratio, candidate_timing.low, candidate_timing.high
            timing.verdict = candidate_timing.verdict
        else:
            timing.ratio, timing.low, timing.high = ratio_interval(base, own)
            timing.verdict = verdict(timing.ratio, timing.low, timing.high, min_effect, baseline_ms=median(base))
            same = _timing_of(by_id[reference], label)
            row.autotune["same_config"][label] = {"config": _config_of(by_id[reference]), "ratio": same.ratio,
                                                  "low": same.low, "high": same.high, "verdict": same.verdict}
        row.variants.append(timing)
    chosen = {label: sid for label, sid in chosen.items() if sid is not None}
    fastest = {label: min(timed, key=lambda sid: (median(timed[sid][label]), sid)) for label in chosen}
    row.autotune["flips"] = {label: {"fastest": _config_of(by_id[sid]), "kept": _config_of(by_id[chosen[label]])}
                             for label, sid in fastest.items()
                             if sid != chosen[label] and label != labels[0] and not config_of_label(label)}
    row.autotune["winners"] = {label: _config_of(by_id[sid]) for label, sid in chosen.items()}
    row.autotune["winner_signatures"] = chosen
    row.autotune["changed"] = len(set(chosen.values())) > 1
    row.autotune["regret"] = autotune_regret(group, {sid: own[labels[0]] for sid, own in timed.items()}, reference,
                                             {sid: _config_of(by_id[sid]) for sid in timed}, min_effect)
    worst = min((c for c in candidates if c.status == "ok"),
                key=lambda c: OUTPUTS_ORDER.index(c.outputs) if c.outputs in OUTPUTS_ORDER else len(OUTPUTS_ORDER))
    row.outputs, row.output_check = worst.outputs, worst.output_check
    return row


REGRET_OVERHEAD = 1.5
"""The autotuner's time for a config over the kernel's replayed time beyond which its ranking is said to be timing
more than the kernel (its pre-hooks, clones, the launch): below it the two time the same thing, give or take."""


def autotune_regret(group: AutotuneGroup, rounds: dict[int, list[float]], workload: int, configs: dict[int, str],
                    min_effect: float = config.ab.DEFAULT_MIN_EFFECT) -> dict:
    """What the workload's autotuner left on the table, as the replay measures it: the baseline's fastest candidate
    (`rounds`: per-round times of each timed candidate) against the workload's config, ratio and interval (`verdict`
    "faster": a config truly faster than the one the workload runs), and why the autotuner missed it where the
    recording can tell (`why`, each a sentence from its own timings: how it ranked that config, whether the two were
    within its own spread, how much more than the kernel its benchmark timed and which pre-hooks it ran). Not yet the
    autotuner's: `confirmed` stays None until the workload run with the config pinned says so (then True or False:
    an unconfirmed regret is a replay bias)."""
    best = min(rounds, key=lambda sid: (median(rounds[sid]), sid))
    found = {"config": configs[best], "signature": best, "workload_config": configs[workload], "ratio": 1.0,
             "low": 1.0, "high": 1.0, "verdict": "none", "why": [], "confirmed": None}
    if best == workload:
        return found
    ratio, low, high = ratio_interval(rounds[workload], rounds[best])
    found.update(ratio=ratio, low=low, high=high,
                 verdict=verdict(ratio, low, high, min_effect, baseline_ms=median(rounds[workload])))
    found["why"] = _why_missed(group, rounds, workload, best)
    return found


def _cached_pick(group: AutotuneGroup) -> dict | None:
    """Where the workload ran a pick not made at this call (`held`): the config the recording's own benchmark of
    the same configs here picks (`benchmark_pick`), and whether it is the held one (`agrees`): how an autotuner
    tuning at this call would pick, without another run. None where the workload's autotuner benchmarked."""
    if group.cached_ms is None:
        return None
    fastest = group.candidates[0]  # fastest first by the benchmark, untimed configs last
    if group.bench_ms.get(fastest.id) is None:
        return {"benchmark_pick": None, "agrees": None, "held": group.held}
    return {"benchmark_pick": config_text(fastest.autotune["config"]),
            "agrees": fastest.autotune["config"] == group.chosen, "held": group.held}


def _why_missed(group: AutotuneGroup, rounds: dict[int, list[float]], workload: int, best: int) -> list[str]:
    """Sentences from the recording's own figures saying why the autotuner picked `workload` over `best`."""
    why, benchmark, pick = [], "the autotuner", "its pick"
    if group.cached_ms is not None:
        held_best, held_workload = group.cached_ms.get(best), group.cached_ms.get(workload)
        timed = (f", which timed that config {held_best / held_workload:.3f}x its pick"
                 if held_best and held_workload else "")
        why.append(f"the workload ran the pick of {group.held}{timed}")
        benchmark, pick = "the recording's own benchmark", "the workload's config"
    ranked = sorted((sid for sid, ms in group.bench_ms.items() if ms is not None), key=lambda sid: group.bench_ms[sid])
    theirs, ours = group.bench_ms.get(best), group.bench_ms.get(workload)
    if theirs is None:
        why.append(f"{benchmark} has no timing of that config (it failed or was pruned there)")
    elif ours:
        why.append(f"{benchmark} timed it {theirs / ours:.3f}x {pick} (ranked {ranked.index(best) + 1} of "
                   f"{len(ranked)})")
    spread_best, spread_workload = group.bench_spread.get(best) or [], group.bench_spread.get(workload) or []
    if len(spread_best) == 3 and len(spread_workload) == 3 and None not in spread_best + spread_workload:
        if spread_best[1] <= spread_workload[2] and spread_workload[1] <= spread_best[2]:
            why.append("the two are within the autotuner's own spread (their p20-p80 ranges overlap): a draw")
    if ours and (kernel := median(rounds[workload])) and ours / kernel > REGRET_OVERHEAD:
        ran = _hooks_text(group.hooks)
        what = f": it times {ran} with each config" if ran else ""
        why.append(f"its benchmark timed {ours / kernel:.1f}x the kernel's replayed time{what}")
    return why


def _hooks_text(hooks: dict) -> str:
    """"zeroing c and cloning and restoring a": what an autotuner's benchmark runs besides the kernel, in words."""
    ran = []
    if hooks.get("reset_to_zero"):
        ran.append(f"zeroing {', '.join(hooks['reset_to_zero'])}")
    if hooks.get("restore_value"):
        ran.append(f"cloning and restoring {', '.join(hooks['restore_value'])}")
    if hooks.get("pre_hook"):
        ran.append("a user pre-hook")
    if hooks.get("config_pre_hooks"):
        ran.append(f"a config's own pre-hook ({hooks['config_pre_hooks']} of its configs have one)")
    return " and ".join(ran)


def _pinned(label: str, group: AutotuneGroup, timed: dict[int, dict[str, list[float]]]) -> int | None:
    """The timed candidate whose config has the values `label`'s `config:` part names (None: not replayed)."""
    wanted = config_of_label(label)
    return next((s.id for s in group.candidates if s.id in timed and config_matches(wanted, s.autotune["config"])),
                None)


def _config_for(label: str, timed: dict[int, dict[str, list[float]]], reference: int, anchor: int,
                min_effect: float) -> int:
    """The candidate `label` runs at: the workload's config (`reference`) unless `label` ranks the configs otherwise
    than the baseline does, that is where its fastest candidate beats `label` at the baseline's fastest (`anchor`)
    beyond noise (the interval of the two candidates' rounds says "faster"); then its fastest. A config faster for
    both builds alike is the autotune regret, reported on its own, not a difference between the variants: an A/A's
    two identical builds would otherwise both "find" it and read "faster"."""
    fastest = min(timed, key=lambda sid: (median(timed[sid][label]), sid))
    if fastest in (reference, anchor):
        return reference
    ratio, low, high = ratio_interval(timed[anchor][label], timed[fastest][label])
    said = verdict(ratio, low, high, min_effect, baseline_ms=median(timed[anchor][label]))
    return fastest if said == "faster" else reference


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


def tuning_key_of(row: SweepRow, recording: Recording) -> tuple | None:
    """An autotuned row's (kernel, tuning key): what its decision was made for, and what a pin is looked up by; None
    where the decision was recorded without a key."""
    decision = decision_of(row, recording)
    return (decision["kernel"], tuple(decision["key"])) if decision and decision.get("key") else None


def decision_of(row: SweepRow, recording: Recording) -> dict | None:
    """The recorded autotune decision of an autotuned row."""
    return next((d for d in recording.autotune if d["group"] == row.autotune["group"]), None)


def config_at_row(row: SweepRow, config: dict, recording: Recording, signatures: dict[int, Signature]
                  ) -> tuple[float, str, str] | None:
    """How `config` ran at an autotuned `row` against the config the workload ran there: (ratio, verdict, whose
    figure), the replay's where it timed that config at the row (on one input set, `against_workload`), else the
    recording's benchmark of every config at that call (`AutotuneDecision.timings`: slower or faster only where
    their p20-p80 ranges part); None where neither has it. `signatures`: the recording's by id (its caller's)."""
    for candidate in row.autotune.get("replayed") or []:
        signature = signatures.get(candidate)
        checked = against_workload(row.autotune, candidate)
        if signature is not None and (signature.autotune or {}).get("config") == config and \
                checked.get("ratio") is not None:
            return checked["ratio"], checked.get("verdict", "-"), "the replay"
    decision = decision_of(row, recording) or {}
    timed = {config_text(c): t for c, t in decision.get("timings") or [] if t and t[0]}
    mine, workload = timed.get(config_text(config)), timed.get(config_text(decision.get("chosen")))
    if not mine or not workload:
        return None
    judged = "-"
    if len(mine) == 3 and len(workload) == 3 and None not in mine + workload:
        judged = "slower" if mine[1] > workload[2] else "faster" if mine[2] < workload[1] else "no difference"
    return mine[0] / workload[0], judged, "the autotuner's benchmark there"


def regrets_at_shared_keys(rows: list[SweepRow], recording: Recording) -> None:
    """A pin holds for its tuning key, so at every row of that key (the other input shapes a key that buckets a
    length runs one config at): each "faster" regret gets `shared_key`, per other row of its key, how its config ran
    there (`config_at_row`: ratio, verdict and whose figure, or None where nothing timed it)."""
    tuned = [(row, tuning_key_of(row, recording)) for row in rows if row.status == "ok" and row.autotune
             and row.autotune.get("group") is not None]
    signatures = {s.id: s for s in recording.signatures}
    for row, key in tuned:
        regret = row.autotune.get("regret") or {}
        if key is None or regret.get("verdict") != "faster":
            continue
        config = (getattr(signatures.get(regret.get("signature")), "autotune", None) or {}).get("config")
        mates = [other for other, at in tuned if other is not row and at == key]
        if config is not None and mates:
            regret["shared_key"] = [{"row": mate.label, "ran": config_at_row(mate, config, recording, signatures)}
                                    for mate in mates]
