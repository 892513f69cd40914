"""Confirming a sweep's autotune regret inside the workload (`tritonhook decisions confirm`).

A replay can find a config faster than the one the workload's autotuner picked; that is the autotuner's regret only
if the workload itself runs faster with that config. So the workload is run (recorded, as `tritonhook record` runs
it) alternately as it is and with the configs pinned (the sweep's pins, `keep._Maker.pin_configs`, applied through
`run --apply`'s decisions: the autotuner skipped for that kernel and tuning key), and for each pinned kernel its GPU
time per launch inside the workload (the recording's sampled times, at that tuning key) is compared between the two
arms, with an interval over the runs; the step's recorded Triton GPU time too. Each unpinned run also re-tunes from
cold (a new process), so the configs its autotuner picked, run after run, say how reproducible its pick is: where
it varies, a pinned config is also a reproducibility fix. What the runs say of the regret (confirmed, a replay bias,
or not judged because of what the unpinned runs picked): `confirmation.PinConfirmation.standing`.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from typing import Callable, NamedTuple

from ..errors import TritonhookError
from ..files import write_file
from ..measure.stats import DEFAULT_MIN_EFFECT, ratio_interval, verdict
from ..measure.timing import round_order
from ..store import Store, result_kind_text
from ..sweep.autotune import config_text
from ..sweep.recorder import record_command
from ..sweep.recording import Recording, Signature, shapes_text
from ..sweep.result import RESULT_KIND as SWEEP_KIND, SweepResult, SweepRow
from .._version import __version__
from .confirmation import AGAINST, ARMS, RESULT_KIND, Confirmation, PinConfirmation
from .keep import _Maker
from .model import AutotuneKey, Decision, file_json

def pins_of(store: Store, sweep: SweepResult) -> tuple[list[Decision], Recording, dict[AutotuneKey, SweepRow]]:
    """The config decisions a sweep result supports (its autotune regrets and faster `config:` variants), not saved:
    what `confirm` runs the workload with; its recording; the row each decision's evidence is from."""
    recording = store.result(sweep.recording_id) if sweep.recording_id is not None else None
    if not isinstance(recording, Recording):
        raise TritonhookError(f"sweep result {sweep.id}: its recording {sweep.recording_id} is not in {store.path}")
    made = _Maker(store, recording, "sweep", sweep.id)
    made.pin_all_configs(sweep.rows)
    pins = [d for d in made.decisions.values() if isinstance(d.key, AutotuneKey)]
    if not pins:
        raise TritonhookError(f"sweep result {sweep.id}: no autotune regret or faster config to confirm"
                              f"{'; ' + '; '.join(made.warnings) if made.warnings else ''}")
    return pins, recording, made.rows


def confirm(store: Store, sweep_id: int | str | None, command: list[str], *, runs: int = 3,
            against: str = "autotuner", min_effect: float = DEFAULT_MIN_EFFECT,
            progress: Callable[[str], None] = lambda line: None) -> Confirmation:
    """Run `command` `runs` times as it is and `runs` times with the sweep's configs pinned, alternating (ABBA, so a
    drift of the machine falls on both arms alike), each run recorded without input snapshots (nothing here is
    replayed, and a snapshot costs a run its copy and hash); compare each pinned kernel's in-workload time
    and the step's GPU time between the arms. Saved in the store. `sweep_id` None: the newest sweep result.
    `against` "sweep": the unpinned arm runs, pinned, the configs the sweep's recorded run picked, so the replay's
    figure (that config against the regret's) is measured as it is even where the autotuner's pick is a draw."""
    if against not in AGAINST:
        raise TritonhookError(f"--against {against}: one of {', '.join(AGAINST)}")
    if sweep_id is None:
        newest = store.results(SWEEP_KIND, limit=1)
        if not newest:
            raise TritonhookError(f"{store.path}: no sweep result to confirm; run tritonhook sweep -- CMD first")
        sweep_id = newest[0].id
    sweep = store.result(sweep_id)
    if not isinstance(sweep, SweepResult):
        raise TritonhookError(f"result {sweep_id}: {result_kind_text(sweep)}; confirm takes a sweep or replay result")
    if runs < 2:
        raise TritonhookError(f"--runs {runs}: at least 2 per arm, for an interval")
    pins, recording, rows = pins_of(store, sweep)
    swept = _swept_decisions(rows, recording)
    baseline = {pin.key: swept[pin.key].decision["chosen"] for pin in pins if pin.key in swept} \
        if against == "sweep" else {}
    folder = store.run_folder("confirm")
    applied = {"pinned": _pins_file(folder / "pins.json", pins, "pinned configs"),
               "unpinned": _pins_file(folder / "baseline.json", [
                   dataclasses.replace(pin, choice=dataclasses.replace(pin.choice, config=tuple(config.items())))
                   for pin in pins if (config := baseline.get(pin.key))], "the sweep's configs") if baseline else None}
    recordings: dict[str, list[Recording]] = {arm: [] for arm in ARMS}
    for run in range(runs):
        for arm in (ARMS[a] for a in round_order(run, len(ARMS))):
            progress(f"run {run + 1}/{runs}, {arm}")
            result = record_command(command, store, apply=applied[arm], stdout=subprocess.DEVNULL, budget=0,
                                    snapshot_budget=0)
            if result.recording is None or result.exit_code != 0:
                raise TritonhookError(f"{' '.join(command)}: the {arm} run {run + 1} exited {result.exit_code} "
                                      f"with no recording ({result.failure or 'see its stderr above'})")
            recordings[arm].append(result.recording)
    found = []
    for pin in pins:
        row = swept.get(pin.key, _Swept(None, "", {}, None))
        at_pin = _PinnedKernel(pin, row.decision.get("key_names") or [], _sources(recording, row.group))
        found.append(_measure_pin(at_pin, recordings, min_effect, row.group, row.workload_config,
                                  swept_config=row.decision.get("chosen"), against_sweep=pin.key in baseline,
                                  row_shapes=row.shapes))
    step_ms = {arm: [r.total_gpu_ms for r in recordings[arm]] for arm in ARMS}
    confirmation = Confirmation(int(sweep.id), list(command), runs, found, step_ms,
                                _compared(step_ms, min_effect))
    confirmation.id = store.add_result(RESULT_KIND, confirmation.to_json())
    return confirmation


def _compared(ms: dict[str, list[float]], min_effect: float) -> dict:
    if not (ms["unpinned"] and ms["pinned"]) or 0.0 in ms["unpinned"] + ms["pinned"]:
        return {"ratio": None, "low": None, "high": None, "verdict": "-"}
    ratio, low, high = ratio_interval(ms["unpinned"], ms["pinned"])
    return {"ratio": ratio, "low": low, "high": high, "verdict": verdict(ratio, low, high, min_effect)}


def _pins_file(path, pins: list[Decision], what: str) -> str:
    """A decisions file of `pins`, for one arm's `record --apply`."""
    return str(write_file(path, json.dumps(file_json([(d, None) for d in pins], __version__)), what))


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
                            baseline_ran=ran["unpinned"] if swept_config is not None else None)
    figures = _compared(ms, min_effect)
    found.ratio, found.low, found.high, found.verdict = (figures[k] for k in ("ratio", "low", "high", "verdict"))
    if len(by_shapes) > 1:
        found.shapes = [{"shapes": ", ".join(map(shapes_text, shapes)), "row": shapes == row_shapes, "ms": arm_ms,
                         **_compared(arm_ms, min_effect)} for shapes, arm_ms in sorted(by_shapes.items())]
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

