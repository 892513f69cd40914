"""Confirming a sweep's autotune regret inside the workload (`tritonhook decisions confirm`).

A replay can find a config faster than the one the workload's autotuner picked; that is the autotuner's regret only
if the workload itself runs faster with that config. So the workload is run (recorded, as `tritonhook record` runs
it) alternately as it is and with the configs pinned (the sweep's pins, `keep._Maker.pin_configs`, applied through
`run --apply`'s decisions: the autotuner skipped for that kernel and tuning key), and for each pinned kernel its GPU
time per launch inside the workload (the recording's sampled times, at that tuning key) is compared between the two
arms, with an interval over the runs; the step's recorded Triton GPU time too. Each unpinned run also re-tunes from
cold (a new process), so the configs its autotuner picked, run after run, say how reproducible its pick is: where
it varies, a pinned config is also a reproducibility fix.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from typing import Callable

from .. import format
from ..errors import TritonhookError
from ..files import write_file
from ..measure.stats import DEFAULT_MIN_EFFECT, ratio_interval, verdict
from ..store import ResultKind, Store, register_result_kind, result_kind_text
from ..sweep.autotune import config_text
from ..sweep.recorder import record_command
from ..sweep.recording import Recording, Signature
from ..sweep.result import RESULT_KIND as SWEEP_KIND, SweepResult
from .._version import __version__
from .keep import _Maker
from .model import AutotuneKey, Decision, file_json

RESULT_KIND = "confirmation"
ARMS = ("unpinned", "pinned")


@dataclasses.dataclass
class PinConfirmation:
    """One pinned config measured inside the workload: the kernel's GPU time per launch at its tuning key in each
    unpinned and pinned run, their ratio (pinned / unpinned) with its interval and verdict, the replay's figure it
    confirms or not, whether every pinned run launched the pinned config, and what the unpinned runs' autotuner
    picked each time."""

    kernel: str
    tuning_key: list[str]
    config: str
    replay: dict                      # the sweep's ratio, low, high (pinned config / the workload's)
    ms: dict[str, list[float]]        # arm -> per run: the kernel's GPU time per launch at that tuning key
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    verdict: str = "-"
    pinned_ran: bool = False
    picks: list[str] = dataclasses.field(default_factory=list)

    @property
    def confirmed(self) -> bool:
        """The replay's regret holds inside the workload: the pinned config is faster there too."""
        return self.verdict == "faster" and self.pinned_ran

    def picks_text(self) -> str:
        """How many configs the unpinned runs' autotuner picked; where it tuned in none of them, that a cache gave
        the pick (Inductor's, or Triton's autotune cache), so its reproducibility was not seen."""
        if not self.picks:
            return f"not tuned in any of the {len(self.ms.get('unpinned', []))} unpinned runs (a cache gave its pick)"
        return f"{len(set(self.picks))} config(s) in {len(self.picks)} runs"


@dataclasses.dataclass
class Confirmation:
    """What `confirm` measured: per pinned config a `PinConfirmation`, and the step's recorded Triton GPU time per
    arm and run (`step_ms`) with its ratio."""

    sweep_id: int
    command: list[str]
    runs: int
    pins: list[PinConfirmation]
    step_ms: dict[str, list[float]]
    step: dict
    id: int | None = None
    warning_prefix = "tritonhook decisions confirm"

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        for pin, row in zip(self.pins, data["pins"]):
            row["confirmed"] = pin.confirmed
        return data

    @classmethod
    def from_json(cls, data: dict, *, source: str = "confirmation") -> "Confirmation":
        try:
            pins = [PinConfirmation(**{k: v for k, v in p.items() if k != "confirmed"}) for p in data["pins"]]
            return cls(data["sweep_id"], data["command"], data["runs"], pins, data["step_ms"], data["step"],
                       data.get("id"))
        except (KeyError, TypeError) as exc:
            raise TritonhookError(f"{source}: malformed confirmation ({type(exc).__name__}: {exc})") from None

    def __rich_console__(self, console, options):
        rows = []
        for pin in self.pins:
            replay = pin.replay
            rows.append((pin.kernel, ", ".join(pin.tuning_key), pin.config,
                         f"{replay['ratio']:.3f} [{replay['low']:.3f}, {replay['high']:.3f}]",
                         _interval(pin.ratio, pin.low, pin.high), pin.verdict if pin.pinned_ran else "not pinned",
                         "confirmed" if pin.confirmed else "NOT confirmed: a replay bias",
                         pin.picks_text()))
        yield format.table(("kernel", "tuning key", "pinned config", "replay", "in the workload", "verdict",
                            "regret", "autotuner's picks"), rows,
                           title=f"tritonhook decisions confirm: sweep {self.sweep_id}, {self.runs} runs per arm")
        yield format.line(f"step (recorded Triton GPU time) pinned / unpinned: "
                          f"{_interval(self.step.get('ratio'), self.step.get('low'), self.step.get('high'))} "
                          f"{self.step.get('verdict', '-')}")


def _interval(ratio, low, high) -> str:
    return "-" if ratio is None else f"{ratio:.3f} [{low:.3f}, {high:.3f}]"


def pins_of(store: Store, sweep: SweepResult) -> tuple[list[Decision], Recording]:
    """The config decisions a sweep result supports (its autotune regrets and faster `config:` variants), not saved:
    what `confirm` runs the workload with."""
    recording = store.result(sweep.recording_id) if sweep.recording_id is not None else None
    if not isinstance(recording, Recording):
        raise TritonhookError(f"sweep result {sweep.id}: its recording {sweep.recording_id} is not in {store.path}")
    made = _Maker(store, recording, "sweep", sweep.id)
    for row in sweep.rows:
        if row.status == "ok" and (row.autotune or {}).get("configs"):
            made.pin_configs(row)
    pins = [d for d in made.decisions.values() if isinstance(d.key, AutotuneKey)]
    if not pins:
        raise TritonhookError(f"sweep result {sweep.id}: no autotune regret or faster config to confirm"
                              f"{'; ' + '; '.join(made.warnings) if made.warnings else ''}")
    return pins, recording


def confirm(store: Store, sweep_id: int | str | None, command: list[str], *, runs: int = 3,
            min_effect: float = DEFAULT_MIN_EFFECT, progress: Callable[[str], None] = lambda line: None
            ) -> Confirmation:
    """Run `command` `runs` times as it is and `runs` times with the sweep's configs pinned, alternating (ABBA, so a
    drift of the machine falls on both arms alike), each run recorded; compare each pinned kernel's in-workload time
    and the step's GPU time between the arms. Saved in the store. `sweep_id` None: the newest sweep result."""
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
    pins, recording = pins_of(store, sweep)
    folder = store.run_folder("confirm")
    pins_file = write_file(folder / "pins.json", json.dumps(file_json([(d, None) for d in pins], __version__)),
                           "pinned configs")
    recordings: dict[str, list[Recording]] = {arm: [] for arm in ARMS}
    for run in range(runs):
        for arm in (ARMS if run % 2 == 0 else ARMS[::-1]):
            progress(f"run {run + 1}/{runs}, {arm}")
            result = record_command(command, store, apply=str(pins_file) if arm == "pinned" else None,
                                    stdout=subprocess.DEVNULL)
            if result.recording is None or result.exit_code != 0:
                raise TritonhookError(f"{' '.join(command)}: the {arm} run {run + 1} exited {result.exit_code} "
                                      f"with no recording ({result.failure or 'see its stderr above'})")
            recordings[arm].append(result.recording)
    key_names = {d["kernel"]: d.get("key_names") or [] for d in recording.autotune}
    found = [_measure_pin(pin, key_names.get(pin.key.kernel, []), recordings, min_effect) for pin in pins]
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


def _measure_pin(pin: Decision, key_names: list[str], recordings: dict[str, list[Recording]],
                 min_effect: float) -> PinConfirmation:
    config = dict(pin.choice.config)
    ms = {arm: [] for arm in ARMS}
    pinned_ran = True
    for arm in ARMS:
        for recording in recordings[arm]:
            at_key = [s for s in recording.signatures if s.kernel == pin.key.kernel and s.launches and s.times_ms
                      and _at_tuning_key(s, key_names, pin.key.tuning_key)]
            launches = sum(s.launches for s in at_key)
            ms[arm].append(sum(s.gpu_ms for s in at_key) / launches if launches else 0.0)
            if arm == "pinned":
                pinned_ran &= bool(at_key) and all(_runs_config(s, config) for s in at_key)
    picks = [config_text(d["chosen"]) for recording in recordings["unpinned"] for d in recording.autotune
             if d["kernel"] == pin.key.kernel and tuple(d.get("key") or ()) == pin.key.tuning_key]
    ev = pin.evidence
    found = PinConfirmation(pin.key.kernel, list(pin.key.tuning_key), config_text(config),
                            {"ratio": ev.ratio, "low": ev.low, "high": ev.high}, ms, pinned_ran=pinned_ran,
                            picks=picks)
    figures = _compared(ms, min_effect)
    found.ratio, found.low, found.high, found.verdict = (figures[k] for k in ("ratio", "low", "high", "verdict"))
    return found


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


register_result_kind(ResultKind(RESULT_KIND, Confirmation.from_json, source="sweep_id"))
