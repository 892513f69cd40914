"""Confirming decisions inside the workload (`tritonhook decisions confirm`): a sweep's autotune regrets (configs
pinned) and its, or a tune's, build decisions (a name, a ptxas, options, a control file).

A replay can find a config faster than the one the workload's autotuner picked, or a build of a kernel faster than
plain; that holds only if the workload itself runs faster with it. So the workload is run (recorded, as `tritonhook
record` runs it) alternately as it is and with the decisions applied (`run --apply`'s decisions: the autotuner
skipped for a pinned kernel and tuning key, a matching kernel built with its choice), ABBA in fresh processes, and
for each decision its kernel's GPU time per launch inside the workload (the recording's sampled times) is compared
between the two arms, with an interval over the runs; the step's recorded Triton GPU time too. A build decision's
kernel is found in each run by its key (`keep.capture_key`), and its captures say what each arm built: a comparison
is judged only where the arm with the decision built it so and the arm as it is did not (`BuildConfirmation`).

For pins: each unpinned run also re-tunes from cold (a new process), so the configs its autotuner picked, run after
run, say how reproducible its pick is: where it varies, a pinned config is also a reproducibility fix. What the
runs say of the regret (confirmed, a replay bias, or not judged because of what the unpinned runs picked):
`confirmation.PinConfirmation.standing`.
"""

from __future__ import annotations

import dataclasses
import shlex
import subprocess
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

from .. import _triton, config, format
from ..errors import TritonhookError
from ..measure.stats import median, ratio_interval, verdict
from ..measure.timing import round_order
from ..rename import compile_select
from ..store import Store, result_kind_text
from ..sweep.autotune import config_text
from ..sweep.recorder import record_command
from ..sweep.recording import Recording, Signature, shapes_text
from ..sweep.result import RESULT_KIND as SWEEP_KIND, SweepResult, SweepRow
from ..sweep.tune import RESULT_KIND as TUNE_KIND, TuneResult
from .apply import APPLIED_KEY
from .confirmation import AGAINST, ARMS, RESULT_KIND, BuildConfirmation, Confirmation, PinConfirmation
from .keep import _Maker, capture_key, controls_of, get, held_picks, write_entries
from .model import PLAIN, AutotuneKey, Choice, Decision, Key

APPLIED, AS_IS = ARMS[1], ARMS[0]


class NothingToConfirm(TritonhookError):
    """A result that supports no decision: `sweep/tune --confirm` show the result and this line."""


@dataclasses.dataclass
class Confirmed:
    """A sweep's or tune's result and what the workload said of its decisions (`sweep/tune --confirm N`): one
    answer, what to apply measured where it runs; `nothing`: why there was nothing to confirm."""

    result: SweepResult | TuneResult
    confirmation: Confirmation | None
    store_path: str                   # the store the answer's commands keep and apply the decisions from
    nothing: str = ""

    @property
    def warnings(self) -> list[str]:
        return self.result.warnings + ([self.nothing] if self.nothing else [])

    @property
    def warning_prefix(self) -> str:
        return self.result.warning_prefix

    def answer(self) -> str:
        """The one line a user acts on, last: what to apply (the decisions the workload confirmed, and the commands
        that keep and apply them) or that there is nothing, and what was left out. The result's own estimate above
        it is a replay's figure; this is the workload's."""
        if self.confirmation is None:
            return f"answer: nothing to apply ({self.nothing})"
        found = self.confirmation.sorted_out()
        left = "; ".join(f"{len(found[kind])} {kind} ({', '.join(found[kind])})"
                         for kind in ("refuted", "not judged") if found[kind])
        if not found["confirmed"]:
            return f"answer: nothing to apply: no decision confirmed in the workload: {left}"
        command = shlex.join(self.confirmation.command)
        held = self.confirmation.held_picks
        line = (f"answer: apply what the workload confirmed ({', '.join(found['confirmed'])}): tritonhook decisions "
                f"from-result {self.result.id} --store {self.store_path}"
                f"{f' (it keeps the {held} autotune picks both arms held too)' if held else ''}, then tritonhook run "
                f"--apply {self.store_path} -- {command}")
        if found["not judged"]:
            line += (f"; from-result keeps the {len(found['not judged'])} not judged too (confirm them with more "
                     f"runs, or remove them with tritonhook decisions rm)")
        return line + (f"; it leaves out the {len(found['refuted'])} refuted" if found["refuted"] else "")

    def to_json(self) -> dict:
        return {"result": self.result.to_json(),
                "confirmation": self.confirmation.to_json() if self.confirmation else None, "nothing": self.nothing,
                "answer": {**(self.confirmation.sorted_out() if self.confirmation else {}), "line": self.answer()}}

    def __rich_console__(self, console, options):
        yield self.result
        if self.confirmation is not None:
            yield self.confirmation
        yield format.line(self.answer())


def check_runs(runs: int, flag: str = "--runs") -> int:
    """`runs` per arm, once it gives an interval (`--confirm N`'s N is checked before a sweep runs)."""
    if runs < 2:
        raise TritonhookError(f"{flag} {runs}: at least 2 runs per arm, for an interval")
    return runs


def ending(store: Store, result: SweepResult | TuneResult, command: list[str] | None, runs: int,
           progress: Callable[[str], None] = lambda line: None) -> Confirmed:
    """`result` with its decisions confirmed in the workload `command` (for a tune, its recording's command):
    `runs` per arm (`confirm`)."""
    if not command:
        raise TritonhookError(f"result {result.id}: its recording names no command to confirm its decisions in")
    try:
        return Confirmed(result, confirm(store, result.id, command, runs=runs, progress=progress), str(store.path))
    except NothingToConfirm as exc:
        return Confirmed(result, None, str(store.path), str(exc))


class Made(NamedTuple):
    """The decisions a result supports, not saved (what `decisions from-result` would make of it): its control
    files' bytes by sha256, its recording, the autotuned row each pin's evidence is from; or kept decisions, with
    no result (`recording` None) and the recordings they were measured on (`measured_on`, where the store holds
    them)."""

    decisions: list[Decision]
    controls: dict[str, bytes]
    recording: Recording | None
    rows: dict[AutotuneKey, SweepRow]
    measured_on: tuple[Recording, ...] = ()


def decisions_of(store: Store, result: SweepResult | TuneResult) -> Made:
    """A sweep's (or replay's) pins (its autotune regrets and faster `config:` variants) and, where its baseline is
    plain, its builds; a tune's confirmed winners."""
    recording = store.result(result.recording_id) if result.recording_id is not None else None
    if not isinstance(recording, Recording):
        raise TritonhookError(f"result {result.id}: its recording {result.recording_id} is not in {store.path}")
    tuned = isinstance(result, TuneResult)
    made = _Maker(store, recording, TUNE_KIND if tuned else SWEEP_KIND, result.id)
    if tuned:
        made.from_tune(result)
    else:
        made.pin_all_configs(result.rows)
        if result.variants[:1] == [PLAIN]:
            made.builds_of(result.rows)
        made.flip_near_ties(result)
    if not made.decisions:
        what = "no confirmed winner" if tuned else \
            "no autotune regret, faster config, faster build or template fusion near a tie"
        raise NothingToConfirm(f"{TUNE_KIND if tuned else 'sweep'} result {result.id}: {what} to confirm"
                              f"{'; ' + '; '.join(made.warnings) if made.warnings else ''}")
    return Made(list(made.decisions.values()), made.controls, recording, made.rows, (recording,))


def _result(store: Store, result_id: int | str | None) -> SweepResult | TuneResult:
    """The result whose decisions to confirm: `result_id`'s, or the newest sweep's."""
    if result_id is None:
        newest = store.results(SWEEP_KIND, limit=1)
        if not newest:
            raise TritonhookError(f"{store.path}: no sweep result to confirm; run tritonhook sweep -- CMD first")
        result_id = newest[0].id
    result = store.result(result_id)
    if not isinstance(result, (SweepResult, TuneResult)):
        raise TritonhookError(f"result {result_id}: {result_kind_text(result)}; confirm takes a sweep, replay or "
                              f"tune result")
    return result


def kept(store: Store, decision_ids: list[int | str]) -> Made:
    """Decisions kept in the store, by id, with their control files (no result, so no row for a pin's regret)."""
    decisions = [get(store, decision_id) for decision_id in decision_ids]
    return Made(decisions, {d.choice.controls_sha256: controls_of(store, d) for d in decisions
                            if d.choice.controls_sha256}, None, {}, _measured_on(store, decisions))


_RESULTS_WITH_RECORDINGS = {SWEEP_KIND: SweepResult, TUNE_KIND: TuneResult}
"""The evidence kinds whose source is a result measured on a recording, and that result's type."""


def _measured_on(store: Store, decisions: list[Decision]) -> tuple[Recording, ...]:
    """The recordings in `store` that kept decisions were measured on: each decision's source result's (a sweep's,
    replay's or tune's recording; a baseline pick's source is the recording itself). A source the store does not
    hold as the kind its evidence names (a decision imported from another store) gives none."""
    found = {}
    for kind, source_id in {(d.evidence.source_kind, d.evidence.source_id) for d in decisions}:
        source = None if source_id is None else store.result(source_id)
        if kind in _RESULTS_WITH_RECORDINGS:  # the source is a result, which names its recording
            names_one = isinstance(source, _RESULTS_WITH_RECORDINGS[kind]) and source.recording_id is not None
            source = store.result(source.recording_id) if names_one else None
        if isinstance(source, Recording):
            found[source.id] = source
    return tuple(found.values())


def confirm(store: Store, sweep_id: int | str | None, command: list[str], *, runs: int = 3,
            against: str = "autotuner", min_effect: float = config.ab.DEFAULT_MIN_EFFECT,
            decision_ids: list[int | str] | None = None, cold: bool = False, only: str | None = None,
            progress: Callable[[str], None] = lambda line: None) -> Confirmation:
    """Run `command` `runs` times as it is and `runs` times with the decisions of a sweep, replay or tune result
    applied (`decisions_of`; or the kept decisions `decision_ids`), alternating (ABBA, so a drift of the machine
    falls on both arms alike), each run recorded without input snapshots (nothing here is replayed, and a snapshot
    costs a run its copy and hash); compare each decision's kernel's in-workload time and the step's GPU time
    between the arms. Saved in the store. `sweep_id` None: the newest sweep result. `against` "sweep": the unpinned
    arm runs, pinned, the configs the sweep's recorded run picked, so a replay's regret (that config against the
    pinned one) is measured as it is even where the autotuner's pick is a draw.
    Every run has Inductor's caches off where `cold` asks or `runs_cold` finds it must. `only`: a regex; the
    decisions whose kernel and key it finds (`_decision_text`) alone, as a decision only the step measures (a
    template fusion the other way) must be confirmed."""
    if against not in AGAINST or (decision_ids and against == "sweep"):
        raise TritonhookError(f"--against {against}: one of {', '.join(AGAINST)} (sweep only with a sweep result)")
    if decision_ids and sweep_id is not None:
        raise TritonhookError("--sweep and --decision: confirm a result's decisions or kept ones, not both")
    result = None if decision_ids else _result(store, sweep_id)
    check_runs(runs)
    made = kept(store, decision_ids) if decision_ids else decisions_of(store, result)
    if only is not None:
        made = _only(made, only, f"result {result.id}" if result else "the decisions given")
    pins = [d for d in made.decisions if isinstance(d.key, AutotuneKey)]
    swept = _swept_decisions(made.rows, made.recording) if made.recording else {}
    baseline = {pin.key: swept[pin.key].decision["chosen"] for pin in pins if pin.key in swept} \
        if against == "sweep" else {}
    ways = _recorded_ways(made)  # a template fusion run the other way is compared with its way as recorded
    baseline.update(ways)
    why_cold = "--cold" if cold else runs_cold(made)
    if why_cold:
        progress(f"every run with Inductor's caches off ({why_cold}), so each compiles and tunes as a first run")
    first_run = _first_run(made)
    held = _held(first_run, made.decisions, progress) if first_run else []
    applied = arm_files(store.run_folder("confirm"), made.decisions, made.controls, baseline, held)
    recordings = _run_arms(command, store, applied, runs, why_cold is not None, progress)
    found = []
    for pin in pins:
        if pin.key in ways:
            found.append(_measure_fusion(pin, ways[pin.key], recordings, min_effect, len(made.decisions) - 1))
            continue
        row = swept.get(pin.key, _Swept(None, "", {}, None))
        at_pin = _PinnedKernel(pin, row.decision.get("key_names") or [],
                               _sources(made.recording, row.group) if made.recording else frozenset())
        found.append(_measure_pin(at_pin, recordings, min_effect, row.group, row.workload_config,
                                  swept_config=row.decision.get("chosen"), against_sweep=pin.key in baseline,
                                  row_shapes=row.shapes))
    builds = [_measure_build(BuiltKernel(store, d), recordings, min_effect) for d in made.decisions
              if isinstance(d.key, Key)]
    step_ms = {arm: [r.total_gpu_ms for r in recordings[arm]] for arm in ARMS}
    confirmation = Confirmation(result and int(result.id), list(command), runs, found, step_ms,
                                _compared(step_ms, min_effect), builds=builds,
                                inductor_cold=why_cold is not None, held_picks=len(held))
    confirmation.id = store.add_result(RESULT_KIND, confirmation.to_json())
    return confirmation


def _only(made: Made, pattern: str, whose: str) -> Made:
    """`made` with the decisions whose kernel and key `pattern` finds (`re.search`) alone."""
    found = compile_select(pattern)
    chosen = [d for d in made.decisions if found.search(_decision_text(d))]
    if not chosen:
        raise TritonhookError(f"--only {pattern!r}: no decision of {whose} matches; its decisions: "
                              + "; ".join(_decision_text(d) for d in made.decisions))
    return made._replace(decisions=chosen)


def _decision_text(decision: Decision) -> str:
    """A decision's kernel and key as `--only` searches them: "KERNEL [TUNING KEY]" or "KERNEL CHOICE"."""
    if isinstance(decision.key, AutotuneKey):
        return f"{decision.key.kernel} [{', '.join(decision.key.tuning_key)}]"
    return f"{decision.evidence.kernel} {decision.choice.label}"


def runs_cold(made: Made) -> str | None:
    """Why every run of a confirmation needs Inductor's caches off (None where it does not): where a recording the
    decisions were measured on compiled as a first run does (`Recording.inductor_tuning`: they were measured on a
    first run's builds, and a warm run builds some kernels otherwise, with another ptxas among them: a kept
    decision's key then matches no build of a warm arm), or where the applied arm's pins turn the caches off anyway
    (`_triton.pins_turn_inductor_caches_off`: a warm arm beside it would differ in every kernel Inductor tunes
    afresh, not only in the decisions)."""
    first_run = _first_run(made)
    if first_run is not None:
        return f"recording {first_run.id} compiled as a first run does: its decisions were measured on its builds"
    pins = {(d.key.kernel, d.key.tuning_key): dict(d.choice.config) for d in made.decisions
            if isinstance(d.key, AutotuneKey)}
    if _triton.pins_turn_inductor_caches_off(pins):
        return "a pin of an Inductor kernel or choice turns them off in the applied arm"
    return None


def _first_run(made: Made) -> Recording | None:
    """The recording the decisions were measured on that compiled as a first run does (it holds Inductor's
    compile-time tuning, `Recording.inductor_tuning`), if one."""
    return next((recording for recording in made.measured_on if recording.inductor_tuning), None)


def _held(recording: Recording, decisions: list[Decision], progress: Callable[[str], None]) -> list[Decision]:
    """`keep.held_picks`, said: how many both arms hold, and the keys left to tune."""
    held, unpinned = held_picks(recording, decisions)
    progress(f"both arms hold the {len(held)} autotune picks recording {recording.id} ran (compile-time choices, "
             f"template fusions, tuned configs), so each builds the kernels the decisions were measured on"
             + "".join(f"; {line}" for line in unpinned))
    return held


def _run_arms(command: list[str], store: Store, applied: dict[str, str | None], runs: int, inductor_cold: bool,
              progress: Callable[[str], None]) -> dict[str, list[Recording]]:
    """`runs` recorded runs of `command` per arm, each arm's with its decisions file applied, in ABBA order
    (`inductor_cold`: every run with Inductor's caches off)."""
    recordings: dict[str, list[Recording]] = {arm: [] for arm in ARMS}
    for run in range(runs):
        for arm in (ARMS[a] for a in round_order(run, len(ARMS))):
            progress(f"run {run + 1}/{runs}, {arm}")
            result = record_command(command, store, apply=applied[arm], stdout=subprocess.DEVNULL, budget=0,
                                    snapshot_budget=0, inductor_cold=inductor_cold)
            if result.recording is None or result.exit_code != 0:
                raise TritonhookError(f"{' '.join(command)}: the {arm} run {run + 1} exited {result.exit_code} "
                                      f"with no recording ({result.failure or 'see its stderr above'})")
            recordings[arm].append(result.recording)
    return recordings


def arm_files(folder: Path, decisions: list[Decision], controls: dict[str, bytes],
              baseline: dict[AutotuneKey, dict] | None = None, held: Sequence[Decision] = ()
              ) -> dict[str, str | None]:
    """Each arm's decisions file for its runs' `--apply`: the applied arm's holds every decision (configs pinned,
    kernels built as chosen, control files inline); the arm as it is has none, or, where `baseline` gives a pin's
    key the config the sweep's run picked, those configs pinned (`--against sweep`). Both hold the `held` picks
    (`keep.held_picks`)."""
    pinned_baseline = [dataclasses.replace(d, choice=Choice(PLAIN, config=tuple(baseline[d.key].items())))
                       for d in decisions if d.key in (baseline or {})]
    as_is = [*pinned_baseline, *held]
    return {APPLIED: _decisions_file(folder / "applied.json", [*decisions, *held], controls,
                                     "the decisions confirmed"),
            AS_IS: _decisions_file(folder / "baseline.json", as_is, {}, "the arm as it is") if as_is else None}


def _compared(ms: dict[str, list[float]], min_effect: float) -> dict:
    if not (ms["unpinned"] and ms["pinned"]) or 0.0 in ms["unpinned"] + ms["pinned"]:
        return {"ratio": None, "low": None, "high": None, "verdict": "-"}
    ratio, low, high = ratio_interval(ms["unpinned"], ms["pinned"])
    return {"ratio": ratio, "low": low, "high": high,
            "verdict": verdict(ratio, low, high, min_effect, baseline_ms=median(ms["unpinned"]))}


def _decisions_file(path: Path, decisions: list[Decision], controls: dict[str, bytes], what: str) -> str:
    """A decisions file of `decisions` (their control files inline), for one arm's `record --apply`."""
    return write_entries(path, [(d, controls.get(d.choice.controls_sha256)) for d in decisions], what)


class _Swept(NamedTuple):
    """What a pin's regret was measured against, at the row its evidence is from: that row's autotune decision
    (its group; the recorded decision, with the config the run picked, `chosen`, and `key_names`), that config as
    text, and the row's input shapes (`Signature.shapes`; a tuning key can span several)."""

    group: int | None
    workload_config: str
    decision: dict
    shapes: tuple | None


def _swept_decisions(rows: dict[AutotuneKey, SweepRow], recording: Recording) -> dict[AutotuneKey, _Swept]:
    """Per pin (its key), `_Swept` of the autotuned row its evidence is from."""
    decided = {d["group"]: d for d in recording.autotune if d.get("key")}
    signatures = {s.id: s for s in recording.signatures}
    return {key: _Swept(row.autotune["group"], row.autotune.get("workload", ""), decision,
                        signatures[row.signature].shapes if row.signature in signatures else None)
            for key, row in rows.items() if (decision := decided.get(row.autotune.get("group"))) is not None}


@dataclasses.dataclass(frozen=True)
class _PinnedKernel:
    """Which launch signatures of a run are the pinned kernel at its tuning key: its name, its function's source
    (`Signature.source`: two kernels can share a name, as Inductor's of two graphs do; empty where the sweep's
    recording has none, then the name alone) and the scalar arguments its tuning key names."""

    pin: Decision
    key_names: list[str]
    sources: frozenset[str] = frozenset()

    def __call__(self, signature: Signature) -> bool:
        return (signature.kernel == self.pin.key.kernel and signature.launches > 0 and bool(signature.times_ms)
                and (not self.sources or signature.source in self.sources)
                and _at_tuning_key(signature, self.key_names, self.pin.key.tuning_key))


def _sources(recording: Recording, group: int | None) -> frozenset[str]:
    """The sources of an autotune decision's candidates in the sweep's recording (one, as a rule), without ""."""
    return frozenset(s.source for s in recording.signatures
                     if s.source and s.autotune is not None and s.autotune["group"] == group)


def _measure_pin(at_pin: _PinnedKernel, recordings: dict[str, list[Recording]],
                 min_effect: float, group: int | None = None, workload_config: str = "", *,
                 swept_config: dict | None = None, against_sweep: bool = False,
                 row_shapes: tuple | None = None) -> PinConfirmation:
    """`swept_config`: the config the sweep's recorded run picked, which the unpinned arm ran pinned where
    `against_sweep`; otherwise its launches tell whether it ran that config, where the constexprs of the two configs
    differ (num_warps and the like are not in a launch's signature). Where the tuning key ran at several input
    shapes, each is compared too (`PinConfirmation.shapes`), `row_shapes` (the regret's row's) marked: the pin
    holds at all of them, the regret was measured at one."""
    pin = at_pin.pin
    config = dict(pin.choice.config)
    ms = {arm: [] for arm in ARMS}
    by_shapes: dict[tuple, dict[str, list[float]]] = {}
    ran = {arm: True for arm in ARMS}
    for arm, expected in (("unpinned", swept_config), ("pinned", config)):
        for recording in recordings[arm]:
            at_key = [s for s in recording.signatures if at_pin(s)]
            ms[arm].append(_per_launch_ms(at_key))
            for shapes in {s.shapes for s in at_key}:
                by_shapes.setdefault(shapes, {a: [] for a in ARMS})[arm].append(
                    _per_launch_ms([s for s in at_key if s.shapes == shapes]))
            ran[arm] &= bool(at_key) and expected is not None and all(_runs_config(s, expected) for s in at_key)
            if arm == "unpinned" and not against_sweep:  # a launch that fits both configs tells neither
                ran[arm] &= not all(_runs_config(s, config) for s in at_key)
    picks = [config_text(d["chosen"]) for recording in recordings["unpinned"] for d in recording.autotune
             if d["kernel"] == pin.key.kernel and tuple(d.get("key") or ()) == pin.key.tuning_key
             and d.get("made_at") is None]  # a pick benchmarked again at another shape is the same run's pick
    ev = pin.evidence
    found = PinConfirmation(pin.key.kernel, list(pin.key.tuning_key), config_text(config),
                            {"ratio": ev.ratio, "low": ev.low, "high": ev.high}, ms, pinned_ran=ran["pinned"],
                            picks=picks, workload_config=workload_config, group=group,
                            against="sweep" if against_sweep else "autotuner",
                            baseline_ran=ran["unpinned"] if swept_config is not None else None,
                            decision=identity(pin))
    figures = _compared(ms, min_effect)
    found.ratio, found.low, found.high, found.verdict = (figures[k] for k in ("ratio", "low", "high", "verdict"))
    if len(by_shapes) > 1:
        found.shapes = [{"shapes": ", ".join(map(shapes_text, shapes)), "row": shapes == row_shapes, "ms": arm_ms,
                         **_compared(arm_ms, min_effect)} for shapes, arm_ms in sorted(by_shapes.items())]
    return found


def _recorded_ways(made: Made) -> dict[AutotuneKey, dict]:
    """Per template fusion pinned the other way among `made`'s decisions (`keep._Maker.flip_near_ties`), the way
    the recording it was measured on ran (its config): what the arm as it is pins, since a run whose GEMM choice is
    held fuses whatever fits without the scheduler's benchmark. A fusion whose recording is not here has none."""
    recorded = {(d["kernel"], tuple(d.get("key") or ())): d["chosen"] for recording in made.measured_on
                for d in recording.autotune if d.get("tuner") == _triton.TEMPLATE_FUSION and d.get("chosen")}
    return {d.key: recorded[d.key.kernel, d.key.tuning_key] for d in made.decisions
            if isinstance(d.key, AutotuneKey) and _triton.FUSED in dict(d.choice.config)
            and (d.key.kernel, d.key.tuning_key) in recorded}


def _measure_fusion(pin: Decision, recorded: dict, recordings: dict[str, list[Recording]], min_effect: float,
                    others: int) -> PinConfirmation:
    """A template fusion pinned the other way, against its way as recorded: measured by the step (the recorded
    Triton GPU time of each run), since its GEMM runs other kernels in each arm (one fused kernel, or the template
    and its neighbour apart); `others`: the confirmation's other decisions, which that step holds too. Each arm
    ran its way where every run's pinner took it (a `pinned` decision at the fusion's key with its `fused`)."""
    config = dict(pin.choice.config)

    def ran(arm: str, way: dict) -> bool:
        return bool(recordings[arm]) and all(
            any(d.get("tuner") == _triton.PINNED and d["kernel"] == pin.key.kernel
                and tuple(d.get("key") or ()) == pin.key.tuning_key
                and bool((d.get("chosen") or {}).get(_triton.FUSED)) == bool(way.get(_triton.FUSED))
                for d in recording.autotune)
            for recording in recordings[arm])

    ms = {arm: [recording.total_gpu_ms for recording in recordings[arm]] for arm in ARMS}
    ev = pin.evidence
    found = PinConfirmation(pin.key.kernel, list(pin.key.tuning_key), config_text(config),
                            {"ratio": ev.ratio, "low": ev.low, "high": ev.high}, ms,
                            pinned_ran=ran("pinned", config), workload_config=config_text(recorded),
                            against="sweep", baseline_ran=ran("unpinned", recorded), decision=identity(pin),
                            by_step=others)
    figures = _compared(ms, min_effect)
    found.ratio, found.low, found.high, found.verdict = (figures[k] for k in ("ratio", "low", "high", "verdict"))
    return found


def identity(decision: Decision) -> dict:
    """What a confirmation keeps of a decision so that `decisions ls/show` find it: its key and choice as JSON."""
    data = decision.to_json()
    return {"key": data["key"], "choice": data["choice"]}


class BuiltKernel:
    """A build decision's kernel in the captures of a run: which captures are builds of its key (`of_kernel`:
    the PTX as Triton generated it, arch, Triton's ptxas, the run's GPU), and whether one was built as each arm asks
    (`as_arm`)."""

    def __init__(self, store: Store, decision: Decision):
        self.store, self.decision = store, decision
        self._keys: dict[tuple[int, str | None], Key | None] = {}

    def of_kernel(self, capture, gpu: str | None) -> bool:
        if (capture.id, gpu) not in self._keys:
            self._keys[capture.id, gpu] = capture_key(self.store, capture, gpu)
        return self._keys[capture.id, gpu] == self.decision.key

    def as_arm(self, capture, arm: str) -> bool:
        """With the decision (`APPLIED`): its metadata records this choice applied, its entry renamed where the
        choice names one, its cubin assembled by the chosen ptxas where the choice assembles (not Triton's, as
        after a build ptxas refused). As it is: nothing applied, the entry Triton's."""
        applied = capture.metadata.get(APPLIED_KEY)
        if arm != APPLIED:
            return applied is None and not capture.renamed
        choice = self.decision.choice
        cubin = (applied or {}).get("cubin", "")
        return (applied is not None and applied.get("choice") == choice.label
                and capture.renamed == (choice.name != PLAIN)
                and (not choice.assembles or cubin.startswith("ptxas "))
                and (not choice.ptxas_version or cubin == f"ptxas {choice.ptxas_version}"))

    def launched(self, recording: Recording) -> tuple[list[tuple[Signature, object]], list[str]]:
        """The run's timed launch signatures of the decision's build, with their captures; and the builds of the
        kernel (its name) it launched under another key, each in words: who assembled it and how it differs from
        the decision's key (`Key.unlike`). One reading of each capture."""
        found, unlike, kernel = [], set(), self.decision.evidence.kernel
        for signature in recording.signatures:
            timed = bool(signature.times_ms)
            if signature.capture_id is None or not signature.launches or not (timed or kernel in signature.kernel):
                continue
            capture = self.store.get(signature.capture_id)
            if self.of_kernel(capture, recording.device):
                if timed:
                    found.append((signature, capture))
            elif capture.original_entry == kernel:
                key = self._keys[capture.id, recording.device]
                how = self.decision.key.unlike(key) if key else "no ptxas or GPU recorded"
                unlike.add(f"{built_text(capture)}, ptxas {capture.ptxas_version or '?'} "
                           f"({capture.ptxas_path or '?'}): {how}")
        return found, sorted(unlike)


def built_text(capture) -> str:
    """What a capture says was built: its entry and who assembled its cubin."""
    return f"{capture.entry} by {(capture.metadata.get(APPLIED_KEY) or {}).get('cubin', 'triton')}"


def _measure_build(built: BuiltKernel, recordings: dict[str, list[Recording]], min_effect: float
                   ) -> BuildConfirmation:
    """A build decision's kernel's GPU time per launch in each run of each arm, and whether every run built it as
    its arm asks (a run that did not launch it did not)."""
    decision = built.decision
    ms: dict[str, list[float]] = {arm: [] for arm in ARMS}
    ran = {arm: True for arm in ARMS}
    seen: dict[str, set[str]] = {arm: set() for arm in ARMS}
    unlike: dict[str, set[str]] = {arm: set() for arm in ARMS}
    for arm in ARMS:
        for recording in recordings[arm]:
            launched, launched_unlike = built.launched(recording)
            ms[arm].append(_per_launch_ms([signature for signature, _ in launched]))
            ran[arm] &= bool(launched) and all(built.as_arm(capture, arm) for _, capture in launched)
            seen[arm] |= {built_text(capture) for _, capture in launched}
            unlike[arm] |= set(launched_unlike)
    ev = decision.evidence
    found = BuildConfirmation(ev.kernel, decision.choice.label, identity(decision),
                              {"ratio": ev.ratio, "low": ev.low, "high": ev.high}, ms, applied_ran=ran[APPLIED],
                              plain_ran=ran[AS_IS], built={arm: sorted(texts) for arm, texts in seen.items()},
                              built_unlike={arm: sorted(texts) for arm, texts in unlike.items()})
    figures = _compared(ms, min_effect)
    found.ratio, found.low, found.high, found.verdict = (figures[k] for k in ("ratio", "low", "high", "verdict"))
    return found


def _per_launch_ms(signatures: list[Signature]) -> float:
    """The GPU time per launch over `signatures` (0 where none launched)."""
    launches = sum(s.launches for s in signatures)
    return sum(s.gpu_ms for s in signatures) / launches if launches else 0.0


def _at_tuning_key(signature: Signature, key_names: list[str], tuning_key: tuple[str, ...]) -> bool:
    """Whether a launch signature was made at this tuning key: the scalar arguments the key names have its values
    (a kernel tuned per batch size runs one signature per size); with no names recorded, every signature."""
    scalars = {a["name"]: a.get("value") for a in signature.args if a["kind"] in ("scalar", "constexpr")}
    return all(str(scalars[name]) == part for name, part in zip(key_names, tuning_key) if name in scalars)


def _runs_config(signature: Signature, config: dict) -> bool:
    """Whether a signature launched the pinned config: its constexprs have the config's values (num_warps and the
    like are not in a signature; the constexprs tell two configs of one kernel apart)."""
    constexprs = signature.constexprs or {}
    return all(str(constexprs[name]) == str(value) for name, value in config.items() if name in constexprs)

