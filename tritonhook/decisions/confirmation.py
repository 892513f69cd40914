"""What `tritonhook decisions confirm` found (`Confirmation`: one `PinConfirmation` per pinned config, one
`BuildConfirmation` per build decision: a name, a ptxas, options, a control file), what it says of the sweep's
autotune regrets (`with_confirmations`: the sweep's rows read with the newest confirmation of each regret, so that
every reader of a saved sweep, `decisions from` and the report among them, says whether the workload confirmed it),
and of each decision (`newest_confirmations`: what `decisions ls/show` print beside it).

A build decision is measured as the workload runs it: the arm with the decisions applied against the arm as it is,
its kernel's GPU time per launch in each; its captures say whether each arm built the kernel as the arm asks
(`BuildConfirmation.standing`: a comparison whose applied arm did not build the decision, or whose plain arm did,
judges nothing).

A regret is the replay's figure: the pinned config against the config the sweep's recorded run picked. Inside the
workload the pinned arm is compared with the unpinned arm, whose autotuner tunes again each run, so what the
comparison says depends on what the unpinned runs picked (`PinConfirmation.standing`): only where every one of them
ran the sweep's config does a pinned config that is not faster, by an interval that excludes the replay's ratio,
refute the replay (a replay bias); where they picked
the pinned config itself, both arms ran one config and nothing was judged (the sweep's pick was a draw).
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

from .. import format
from ..errors import TritonhookError
from ..store import ResultKind, Store, register_result_kind

RESULT_KIND = "confirmation"
ARMS = ("unpinned", "pinned")
"""The workload's two arms: as it is (no decision applied; the sweep's configs pinned under `--against sweep`), and
with the decisions applied (the configs pinned, the builds made as chosen)."""
AGAINST = {"autotuner": "the unpinned arm: the workload's autotuner tunes again each run",
           "sweep": "the unpinned arm runs the config the sweep's recorded run picked, pinned too"}
"""What a pinned config is compared with inside the workload (`decisions confirm --against`)."""

CONFIRMED, REPLAY_BIAS, UNDECIDED, SLOWER = "confirmed", "replay bias", "undecided", "slower pinned"
STEP_SHARED, NO_GAIN = "step shared", "no gain"
STANDINGS = {
    CONFIRMED: "confirmed inside the workload with the config pinned",
    REPLAY_BIAS: "NOT confirmed inside the workload: a replay bias (every unpinned run ran the sweep's config, and "
                 "the runs' interval lies above the replay's ratio)",
    UNDECIDED: "not judged: the runs' interval holds the replay's ratio as well as no difference (too few --runs for "
               "this kernel's spread)",
    "picked itself": "not judged: the unpinned runs' autotuner picked the pinned config itself, so both arms ran "
                     "one config (the sweep's pick was a draw)",
    "other picks": "not judged against the sweep's config: the unpinned runs' autotuner picked other configs",
    SLOWER: "NOT confirmed inside the workload: slower with the config pinned than as it is (the runs' interval above "
            "1), whatever the unpinned runs' autotuner picked",
    "picks unseen": "not judged: the unpinned runs did not tune it (a cache gave their config)",
    "not pinned": "not judged: a run did not launch the config its arm pins",
    STEP_SHARED: "not judged: a template fusion the other way is measured by the step alone (its GEMM runs other "
                 "kernels in each arm), and this step holds other decisions too; confirm it alone (tritonhook "
                 "decisions confirm --only 'GRAPH NODE')",
    NO_GAIN: "not judged: no difference in the step either way (its interval holds 1); the scheduler's way stands "
             "unless more --runs find the other way faster",
}
"""What a confirmation says of a regret (`PinConfirmation.standing`), in words."""

NOT_CONFIRMED, NOT_APPLIED, OTHER_BUILD = "not confirmed", "not applied", "other build"
BUILD_STANDINGS = {
    CONFIRMED: "confirmed inside the workload with the decision applied",
    NOT_CONFIRMED: "NOT confirmed inside the workload: the runs' interval lies above the decision's estimate",
    UNDECIDED: "not judged: the runs' interval holds the estimate as well as no difference (too few --runs for this "
               "kernel's spread)",
    NOT_APPLIED: "not judged: a run with the decision did not build the kernel with it, or a run without did (or a "
                 "run did not launch it), as their captures say",
    OTHER_BUILD: "not judged: the runs launched the kernel only as another build than the decision's (another "
                 "ptxas, arch or PTX: see what differs); a decision holds for the build it was measured on: confirm "
                 "with --cold where the sweep recorded a first run, or sweep the workload as these runs build it",
}
"""What a confirmation says of a build decision (`BuildConfirmation.standing`), in words."""


@dataclasses.dataclass
class PinConfirmation:
    """One pinned config measured inside the workload: the kernel's GPU time per launch at its tuning key in each
    unpinned and pinned run, their ratio (pinned / unpinned) with its interval and verdict, the replay's figure it
    confirms or not (against `workload_config`, the config the sweep's recorded run picked; `group`, that
    decision's number in the recording), whether every pinned run launched the pinned config, and what the
    unpinned runs' autotuner picked each time."""

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
    workload_config: str = ""
    group: int | None = None
    against: str = "autotuner"        # a key of AGAINST
    baseline_ran: bool | None = None  # every unpinned run launched the sweep's config, as its launches tell
    shapes: list[dict] = dataclasses.field(default_factory=list)  # per input shape of a key that ran at several:
    # {"shapes": text, "row": the regret's row's, "ms", "ratio", "low", "high", "verdict"}
    decision: dict | None = None      # the pin's key and choice as its JSON holds them (`decision_text`)
    by_step: int | None = None        # a template fusion the other way, judged by the step: the confirmation's
    # other decisions, which the step holds too (0: it measures this one alone); None for any other pin

    @property
    def at_row(self) -> dict:
        """The figures the regret is judged on: at its row's input shapes where the key ran at several (the pin
        holds at every one; the replay measured one), else over the key's launches."""
        return next((s for s in self.shapes if s["row"]),
                    {"ratio": self.ratio, "low": self.low, "high": self.high, "verdict": self.verdict})

    @property
    def standing(self) -> str:
        """What the runs say of the replay's regret (a key of `STANDINGS`): confirmed where the pinned config ran
        faster; refuted (a replay bias) only where every unpinned run ran the config the regret was measured
        against (by its pick, pinned to it: `against` "sweep", or, where nothing was tuned, by its launches) and
        the runs' interval excludes the replay's ratio (one that holds it and 1 too decides nothing: a few runs of
        a kernel whose time varies between runs); refuted too where the unpinned runs ran other configs and the
        pinned one was slower than they were (a divergence pin chosen by the autotuners' own µs timings was, at 5
        of 32 keys of a DDP job); otherwise not judged, and why."""
        if not self.pinned_ran or (self.against == "sweep" and not self.baseline_ran):
            return "not pinned"
        if self.by_step is not None:  # the scheduler's timing was a draw: the step says whether the other way pays
            return STEP_SHARED if self.by_step else {"faster": CONFIRMED, "slower": SLOWER}.get(self.verdict, NO_GAIN)
        judged = self.at_row
        if judged["verdict"] == "faster":
            return CONFIRMED
        refuted = REPLAY_BIAS if judged["low"] is not None and judged["low"] > self.replay["ratio"] else UNDECIDED
        if self.against == "sweep":
            return refuted
        slower = judged["verdict"] == "slower"
        if not self.picks:  # nothing tuned: what the unpinned runs launched says which config they ran
            return refuted if self.baseline_ran else SLOWER if slower else "picks unseen"
        ran = Counter(self.picks)
        if ran[self.config] == len(self.picks):
            return "picked itself"
        if ran[self.workload_config] == len(self.picks):
            return refuted
        return SLOWER if slower else "other picks"

    @property
    def confirmed(self) -> bool | None:
        """The regret as a sweep row holds it: True confirmed, False a replay bias or slower pinned, None not
        judged."""
        return {CONFIRMED: True, REPLAY_BIAS: False, SLOWER: False}.get(self.standing)

    def picks_text(self) -> str:
        """How many configs the unpinned runs' autotuner picked, and how often the sweep's and the pinned one; where
        it tuned in none of them, that a cache gave the pick (Inductor's, or Triton's autotune cache), so its
        reproducibility was not seen."""
        if self.by_step is not None:
            return "not tuned: the recorded way pinned as it is"
        if self.against == "sweep":
            return "not tuned: the sweep's config pinned"
        if not self.picks:
            return f"not tuned in any of the {len(self.ms.get('unpinned', []))} unpinned runs (a cache gave its pick)"
        ran = Counter(self.picks)
        return (f"{len(ran)} config(s) in {len(self.picks)} runs (the sweep's {ran[self.workload_config]}, the pinned "
                f"{ran[self.config]})")


@dataclasses.dataclass
class BuildConfirmation:
    """One build decision (a name, a ptxas, options, a control file) measured inside the workload: its kernel's GPU
    time per launch in each run of each arm, their ratio (applied / as is) with its interval and verdict, the
    decision's estimate it confirms or not, and what each arm's captures say it built (`built`: arm -> the distinct
    "ENTRY by CUBIN" of its runs; `built_unlike`: the builds of the kernel they launched under another key, and
    what differs) and whether every run of the arm built it as the arm asks (`applied_ran`: with the decision;
    `plain_ran`: without)."""

    kernel: str
    choice: str                       # the decision's choice (`Choice.label`)
    decision: dict                    # its key and choice as its JSON holds them (`decision_text`)
    estimate: dict                    # the decision's evidence: ratio, low, high (chosen / plain)
    ms: dict[str, list[float]]        # arm -> per run: the kernel's GPU time per launch
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    verdict: str = "-"
    applied_ran: bool = False
    plain_ran: bool = False
    built: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    built_unlike: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    @property
    def standing(self) -> str:
        """A key of `BUILD_STANDINGS`: judged only where every applied run built the kernel with the decision and
        every plain run without it; confirmed where it ran faster; not confirmed where the runs' interval lies above
        the estimate; otherwise undecided. Where no run of either arm launched the decision's build and some
        launched another build of the kernel, that is why (`OTHER_BUILD`)."""
        if not (self.applied_ran and self.plain_ran):
            launched_other = not any(self.built.get(arm) for arm in ARMS) and any(self.built_unlike.values())
            return OTHER_BUILD if launched_other else NOT_APPLIED
        if self.verdict == "faster":
            return CONFIRMED
        return NOT_CONFIRMED if self.low is not None and self.low > self.estimate["ratio"] else UNDECIDED

    @property
    def confirmed(self) -> bool | None:
        """True confirmed, False not confirmed, None not judged."""
        return {CONFIRMED: True, NOT_CONFIRMED: False}.get(self.standing)


@dataclasses.dataclass
class Confirmation:
    """What `confirm` measured: per pinned config a `PinConfirmation`, per build decision a `BuildConfirmation`, and
    the step's recorded Triton GPU time per arm and run (`step_ms`) with its ratio. `sweep_id`: the sweep, replay or
    tune result whose decisions were confirmed."""

    sweep_id: int | None              # None: decisions kept in the store, confirmed by id
    command: list[str]
    runs: int
    pins: list[PinConfirmation]
    step_ms: dict[str, list[float]]
    step: dict
    id: int | None = None
    builds: list[BuildConfirmation] = dataclasses.field(default_factory=list)
    inductor_cold: bool = False       # every run with Inductor's caches off (`confirm`)
    held_picks: int = 0               # the recording's autotune picks both arms held (`keep.held_picks`)
    warning_prefix = "tritonhook decisions confirm"

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        for found, row in zip([*self.pins, *self.builds], [*data["pins"], *data["builds"]]):
            row["confirmed"], row["standing"] = found.confirmed, found.standing
        return data

    @classmethod
    def from_json(cls, data: dict, *, source: str = "confirmation") -> "Confirmation":
        try:
            pins = [PinConfirmation(**_stored(p)) for p in data["pins"]]
            builds = [BuildConfirmation(**_stored(b)) for b in data.get("builds", [])]  # none before builds were
            return cls(data["sweep_id"], data["command"], data["runs"], pins, data["step_ms"], data["step"],
                       data.get("id"), builds, data.get("inductor_cold", False), data.get("held_picks", 0))
        except (KeyError, TypeError) as exc:
            raise TritonhookError(f"{source}: malformed confirmation ({type(exc).__name__}: {exc})") from None

    def __rich_console__(self, console, options):
        what = "pins and builds" if self.pins and self.builds else "pins" if self.pins else "builds"
        if self.pins:
            yield self._pins_table()
        if self.builds:
            yield format.table(("kernel", "choice", "estimate", "in the workload", "verdict", "standing",
                                "built (with / without)"),
                               [(b.kernel, b.choice, _interval(b.estimate["ratio"], b.estimate.get("low"),
                                                               b.estimate.get("high")),
                                 _interval(b.ratio, b.low, b.high), b.verdict, BUILD_STANDINGS[b.standing],
                                 _built_text(b))
                                for b in self.builds],
                               title=f"tritonhook decisions confirm: {self.source}, {self.runs} runs per arm; "
                                     f"build decisions applied against the workload as it is")
        yield format.line(f"step (recorded Triton GPU time) with the {what} / as is: "
                          f"{_interval(self.step.get('ratio'), self.step.get('low'), self.step.get('high'))} "
                          f"{self.step.get('verdict', '-')}")

    @property
    def source(self) -> str:
        """Whose decisions, and how the runs were made."""
        whose = "kept decisions" if self.sweep_id is None else f"result {self.sweep_id}"
        held = f", its recording's {self.held_picks} autotune picks held in both arms" if self.held_picks else ""
        return f"{whose}, Inductor's caches off in every run{held}" if self.inductor_cold else whose + held

    def sorted_out(self) -> dict[str, list[str]]:
        """Its decisions ("KERNEL CHOICE") by what the workload said of them: "confirmed", "refuted" (measured and
        not faster: a replay bias, an interval above the estimate) and "not judged"."""
        found: dict[str, list[str]] = {"confirmed": [], "refuted": [], "not judged": []}
        for item in [*self.pins, *self.builds]:
            choice = item.config if isinstance(item, PinConfirmation) else item.choice
            found[{True: "confirmed", False: "refuted"}.get(item.confirmed, "not judged")].append(
                f"{item.kernel} {choice}")
        return found

    def _pins_table(self):
        rows = []
        for pin in self.pins:
            replay = pin.replay
            whose = " (the scheduler's)" if pin.by_step is not None else ""
            rows.append((pin.kernel, ", ".join(pin.tuning_key), pin.config,
                         _interval(replay["ratio"], replay.get("low"), replay.get("high")) + whose,
                         _in_workload(pin) + (" (the step)" if pin.by_step is not None else ""),
                         pin.at_row["verdict"] if pin.pinned_ran else "not pinned",
                         STANDINGS[pin.standing], pin.picks_text()))
        against = {pin.against for pin in self.pins}
        return format.table(("kernel", "tuning key", "pinned config", "replay", "in the workload", "verdict",
                             "regret", "autotuner's picks"), rows,
                            title=f"tritonhook decisions confirm: {self.source}, {self.runs} runs per arm; "
                                  f"against {'; '.join(AGAINST[a] for a in sorted(against))}")


def _stored(row: dict) -> dict:
    """A stored pin's or build's fields, without what `to_json` derives."""
    return {k: v for k, v in row.items() if k not in ("confirmed", "standing")}


def _built_text(found: BuildConfirmation) -> str:
    """What the arms built, with / without the decision; where an arm never launched the decision's build, the
    other builds of the kernel it launched."""
    return " / ".join("; ".join(found.built.get(arm) or [f"other build: {other}" for other in
                                                         found.built_unlike.get(arm, [])] or ["not launched"])
                      for arm in ARMS[::-1])


def _interval(ratio, low, high) -> str:
    if ratio is None:
        return "-"
    return f"{ratio:.3f}" + (f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else "")


def _in_workload(pin: PinConfirmation) -> str:
    """A pin's in-workload figure; where its key ran at several input shapes, at its row's and at each other."""
    if not pin.shapes:
        return _interval(pin.ratio, pin.low, pin.high)
    parts = [f"{_interval(s['ratio'], s['low'], s['high'])} at {s['shapes']}{' (its row)' if s['row'] else ''}"
             for s in sorted(pin.shapes, key=lambda s: not s["row"])]
    return "; ".join(parts + [f"{_interval(pin.ratio, pin.low, pin.high)} over its key's launches"])


def with_confirmations(store: Store, sweep):
    """`sweep` (a SweepResult) with each autotune regret's standing from the newest confirmation of it in `store`
    (the regret's `confirmed`: True, False or None, and `confirmation`: that result's id and standing in words); a
    regret no confirmation measured is left as it was. The rows are updated in place, the sweep returned."""
    newest: dict[tuple[int, str], tuple[int, PinConfirmation]] = {}
    for found in sorted(store.results(RESULT_KIND, source=sweep.id), key=lambda c: c.id or 0):
        for pin in found.pins:
            if pin.group is not None:
                newest[pin.group, pin.config] = (found.id, pin)
    for row in sweep.rows:
        regret = (row.autotune or {}).get("regret")
        if regret and (hit := newest.get((row.autotune.get("group"), regret.get("config")))):
            result_id, pin = hit
            regret["confirmed"] = pin.confirmed
            regret["confirmation"] = {"id": result_id, "standing": STANDINGS[pin.standing]}
    return sweep


def decision_text(decision_json: dict) -> str:
    """What tells a decision apart, as text: its key and choice (a decision made again from another result, or kept
    under another id, is the same decision)."""
    return json.dumps({"key": decision_json["key"], "choice": decision_json["choice"]}, sort_keys=True)


def newest_confirmations(store: Store) -> dict[str, dict]:
    """Per decision (`decision_text`), what the newest confirmation measuring it says: {"id": that result's,
    "standing", "confirmed", "ratio", "low", "high"}. A pin confirmed before confirmations named their decisions
    is in none."""
    found: dict[str, dict] = {}
    for confirmation in store.results(RESULT_KIND):  # in id order: a newer one replaces an older one
        for item in [*confirmation.pins, *confirmation.builds]:
            if item.decision is not None:
                standings = STANDINGS if isinstance(item, PinConfirmation) else BUILD_STANDINGS
                found[decision_text(item.decision)] = {
                    "id": confirmation.id, "standing": item.standing, "confirmed": item.confirmed,
                    "in words": standings[item.standing], "ratio": item.ratio, "low": item.low, "high": item.high}
    return found


register_result_kind(ResultKind(RESULT_KIND, Confirmation.from_json, source="sweep_id"))
