"""Decisions made from sweep, replay and tune results, kept in the store and moved through the portable file.

Kept as `results` rows of kind "decision" (one row a decision), not a table of their own: the results table is the
store's place for typed JSON a feature declares (`ResultKind`), with ids `tritonhook decisions show/rm` name, and a
decision is read whole (the applier loads them all once per process), so no column of its own would be queried.
A control file's bytes are a content-addressed blob (`Store.put_blob`), named by the decision's sha256.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import os
import re

from .. import format, ptx as _ptx
from .._version import __version__
from ..errors import TritonhookError
from ..files import json_text, write_file
from ..measure.outputs import DIFFER, VERDICTS
from ..measure.variants import config_of_label
from .. import binaries
from ..store import ResultKind, Store, register_result_kind, result_kind_text
from ..sweep.autotune import config_at_row, config_text, tuning_key_of
from ..sweep.divergence import Divergence, divergence
from ..sweep.fusion import near_ties
from ..sweep.recording import Recording
from ..sweep.result import RESULT_KIND as SWEEP_KIND, SweepResult, SweepRow, against_workload, within_fidelity_bar
from ..sweep.tune import RESULT_KIND as TUNE_KIND, TuneResult
from .confirmation import (RESULT_KIND as CONFIRMATION_KIND, decision_text, newest_confirmations,
                           with_confirmations)
from .model import (PLAIN, RESULT_KIND, VERSION, AutotuneKey, Choice, Decision, Evidence, FileContents, Key,
                    file_json, read_file)

register_result_kind(ResultKind(RESULT_KIND, Decision.from_store, blobs=lambda data: [
    data["choice"]["controls"]["sha256"]] if data["choice"].get("controls") else []))


@dataclasses.dataclass
class DecisionList:
    """The decisions of a store (or made by one command), and the lines saying what was left out."""

    decisions: list[Decision]
    warnings: list[str] = dataclasses.field(default_factory=list)
    title: str = "tritonhook decisions"
    confirmations: dict[str, dict] | None = None  # `newest_confirmations`, where looked up (`decisions ls`)
    warning_prefix = "tritonhook decisions"

    def to_json(self) -> dict:
        if self.confirmations is None:
            return {"decisions": [d.to_json() for d in self.decisions], "warnings": self.warnings}
        return {"decisions": [{**d.to_json(), "confirmation": self.confirmation(d)} for d in self.decisions],
                "warnings": self.warnings}

    def confirmation(self, decision: Decision) -> dict | None:
        """What the newest confirmation of `decision` says (None: none measured it)."""
        return (self.confirmations or {}).get(decision_text(decision.to_json()))

    def __rich_console__(self, console, options):
        rows = [(str(d.id) if d.id is not None else "-", d.evidence.kernel, d.key.short, d.choice.label,
                 f"x{d.evidence.ratio:.3f}", d.evidence.outputs,
                 f"{d.evidence.source_kind} {d.evidence.source_id}" if d.evidence.source_id is not None else "-",
                 *([confirmation_text(self.confirmation(d))] if self.confirmations is not None else []))
                for d in self.decisions]
        yield format.table(("id", "kernel", "key (PTX sha256, arch, ptxas, GPU; or kernel, tuning key, GPU)", "choice",
                            "ratio", "outputs", "from", *(["in the workload"] if self.confirmations is not None
                                                          else [])),
                           rows, title=f"{self.title}: {len(self.decisions)}", right_align=("id", "ratio"))


@dataclasses.dataclass
class ShownDecision:
    """One decision with what the newest confirmation of it says (`decisions show`)."""

    decision: Decision
    confirmation: dict | None
    warning_prefix = "tritonhook decisions"

    def to_json(self) -> dict:
        return {**self.decision.to_json(), "confirmation": self.confirmation}

    def __rich_console__(self, console, options):
        yield self.decision
        yield format.line(f"in the workload: {confirmation_text(self.confirmation)}")


def confirmation_text(found: dict | None) -> str:
    """A decision's newest confirmation in a few words: its standing, the in-workload ratio, the result's id."""
    if found is None:
        return "not confirmed yet (tritonhook decisions confirm)"
    ratio = f" x{found['ratio']:.3f}" if found.get("ratio") is not None else ""
    interval = f" [{found['low']:.3f}, {found['high']:.3f}]" if found.get("low") is not None else ""
    return f"{found['standing']}{ratio}{interval} (confirmation {found['id']})"


# ----- made from results ------------------------------------------------------------------------------------------
def from_result(store: Store, result_id: int | str) -> DecisionList:
    """The decisions a sweep, replay or tune result supports, saved in the store (a decision for a key already
    there replaces it). Sweep/replay: per kernel build (key), the variant that is "faster" than plain on some of
    its signatures, slower and with changed outputs on none (the fastest such); tune: each confirmed winner."""
    result = store.result(result_id)
    if isinstance(result, SweepResult):
        kind = SWEEP_KIND
    elif isinstance(result, TuneResult):
        kind = TUNE_KIND
    else:
        raise TritonhookError(f"result {result_id}: {result_kind_text(result)}; decisions are made from a sweep, "
                              f"replay or tune result")
    if result.recording_id is None:
        raise TritonhookError(f"result {result_id}: names no recording, so its kernels' PTX cannot be found")
    recording = store.result(result.recording_id)
    if not isinstance(recording, Recording):
        raise TritonhookError(f"result {result_id}: its recording {result.recording_id} is not in {store.path}")
    made = _Maker(store, recording, kind, result.id)
    if kind == SWEEP_KIND:
        made.from_sweep(with_confirmations(store, result))  # a regret the workload refuted is pinned by none
    else:
        made.from_tune(result)
    kept = _unrefuted(store, made)
    held = held_picks(recording, kept)[0] if _confirmed_with_held_picks(store, result) else []
    saved = save(store, [(d, made.controls.get(d.choice.controls_sha256)) for d in [*held, *kept]])
    return DecisionList(saved, made.warnings, title=f"decisions from {kind} result {result.id}" + (
        f", with the {len(held)} autotune picks its confirmation held" if held else ""))


def _confirmed_with_held_picks(store: Store, result: SweepResult | TuneResult) -> bool:
    """Whether the newest confirmation of `result` ran both arms with its recording's picks held (`held_picks`):
    then what it confirmed holds with them, and they are kept with the decisions."""
    newest = store.results(CONFIRMATION_KIND, source=int(result.id), limit=1)
    return bool(newest) and newest[0].held_picks > 0


def _unrefuted(store: Store, made: "_Maker") -> list[Decision]:
    """The decisions made, less those the newest confirmation found not faster in the workload (one warning each):
    a replay's or tune's figure the workload refuted is no decision."""
    confirmed = newest_confirmations(store)
    kept = []
    for decision in made.decisions.values():
        found = confirmed.get(decision_text(decision.to_json()))
        if found is not None and found["confirmed"] is False:
            made.warnings.append(f"{decision.evidence.kernel} {decision.choice.label}: no decision, the workload did "
                                 f"not confirm it ({confirmation_text(found)})")
        else:
            kept.append(decision)
    return kept


class _Maker:
    def __init__(self, store: Store, recording: Recording, kind: str, source_id: int):
        self.store, self.recording, self.kind, self.source_id = store, recording, kind, source_id
        self.signatures = {s.id: s for s in recording.signatures}
        self.decisions: dict[Key | AutotuneKey, Decision] = {}
        self.rows: dict[AutotuneKey, SweepRow] = {}  # the autotuned row each config decision's evidence is from
        self.controls: dict[str, bytes] = {}
        self.warnings: list[str] = []
        self._keys: dict[int, Key | None] = {}
        self._date = _today()

    def key(self, signature_id: int) -> Key | None:
        """The key of a recorded signature's build: its capture's PTX with any rename undone (the key is the PTX
        as Triton generated it), the capture's arch and ptxas version, the recording's GPU."""
        if signature_id not in self._keys:
            self._keys[signature_id] = self._key(signature_id)
        return self._keys[signature_id]

    def _key(self, signature_id: int) -> Key | None:
        signature = self.signatures.get(signature_id)
        if signature is None or signature.capture_id is None:
            self.warnings.append(f"signature {signature_id}: no capture recorded, no decision")
            return None
        capture = self.store.get(signature.capture_id)
        key = capture_key(self.store, capture, self.recording.device)
        if key is None:
            self.warnings.append(f"{capture.entry}: capture {capture.id} names no ptxas version or the recording "
                                 f"no GPU, no decision")
        return key

    def offer(self, key: Key | AutotuneKey, choice: Choice, evidence: Evidence, row: SweepRow | None = None) -> None:
        """Keep the fastest choice per key (and, for a config, the `row` its evidence is from); one no reader would
        take is a warning, not a decision."""
        held = self.decisions.get(key)
        if held is None or evidence.ratio < held.evidence.ratio:
            try:
                self.decisions[key] = Decision(key, choice, evidence).checked(f"decision for {evidence.kernel}")
            except TritonhookError as exc:
                self.warnings.append(str(exc))
                return
            if row is not None:
                self.rows[key] = row

    def evidence(self, kernel: str, figures: dict, outputs: str) -> Evidence:
        return Evidence(kernel, figures["ratio"], figures.get("low"), figures.get("high"), outputs, self._date,
                        __version__, self.kind, self.source_id)

    def choice(self, label: str, ptxas_version: str | None, options, controls: dict | None,
               controls_path: str | None) -> Choice | None:
        """The choice of a variant; None (with a warning) when its control file cannot be read back as it was."""
        sha = None
        if controls and controls.get("sha256"):
            sha = controls["sha256"]
            if sha not in self.controls:
                try:
                    data = binaries.read_control_file(controls_path or "").data
                except TritonhookError:
                    data = b""
                if _sha256(data) != sha:
                    self.warnings.append(f"{label}: its control file {controls_path} is gone or changed since it "
                                         f"was measured, no decision")
                    return None
                self.controls[sha] = data
        return Choice(_name_of(label), ptxas_version, tuple(options or ()), sha)

    def autotune_key(self, row: SweepRow) -> AutotuneKey | None:
        """The key of an autotuned row's decision: the kernel and tuning key the recording's autotuner decided
        for (Inductor's: its source hash), the recording's GPU. None (with a warning) where pinning cannot apply:
        a decision recorded with no key, or a recording with no GPU."""
        key = self._tuning_key_of(row)
        if key is None:
            self.warnings.append(f"{row.kernel}: its autotuner's decision has no tuning key (recorded by an older "
                                 f"tritonhook) or the recording no GPU; no config is pinned for it")
        return key

    def _tuning_key_of(self, row: SweepRow) -> AutotuneKey | None:
        found = tuning_key_of(row, self.recording)
        return AutotuneKey(found[0], found[1], self.recording.device) if found and self.recording.device else None

    def pin_all_configs(self, rows: list[SweepRow]) -> None:
        """`pin_configs` for every autotuned row, each beside the rows that share its tuning key."""
        tuned = [row for row in rows if row.status == "ok" and (row.autotune or {}).get("configs")]
        keys = [self._tuning_key_of(row) for row in tuned]
        for row, key in zip(tuned, keys):
            self.pin_configs(row, [other for other, at in zip(tuned, keys)
                                   if other is not row and key is not None and at == key])

    def pin_configs(self, row: SweepRow, mates: list[SweepRow] = ()) -> None:
        """Offer a config decision for an autotuned row: a `config:` variant faster than the workload's config with
        outputs kept, and the row's autotune regret where it is "faster". A pin holds for its tuning key, so also at
        `mates`, the rows of other input shapes under the same key (a key that buckets a length runs one config at
        every shape of its bucket): `_holds_at_mates` says whether it pays over them."""
        offers = []
        for timing in row.variants[1:]:
            signature = row.autotune["winner_signatures"].get(timing.label)
            if config_of_label(timing.label) and timing.verdict == "faster":
                outputs = self._pinned_outputs(row, signature, timing.label)
                offers.append((signature, dataclasses.asdict(timing), outputs))
        regret = row.autotune.get("regret") or {}
        if regret.get("verdict") == "faster" and regret.get("confirmed") is not False:
            offers.append((regret["signature"], regret, self._pinned_outputs(row, regret["signature"], None)))
        offers = [(signature, figures, outputs) for signature, figures, outputs in offers
                  if outputs in VERDICTS and outputs != DIFFER]
        if not offers or (key := self.autotune_key(row)) is None:
            return
        for signature, figures, outputs in offers:
            config = (self.signatures.get(signature) and self.signatures[signature].autotune or {}).get("config")
            if config and self._holds_at_mates(row, config, figures, mates):
                self.offer(key, Choice(PLAIN, config=tuple(config.items())),
                           self.evidence(row.kernel, figures, outputs), row)

    def _holds_at_mates(self, row: SweepRow, config: dict, figures: dict, mates: list[SweepRow]) -> bool:
        """Whether `config`, faster at `row`, may be pinned for the tuning key `mates` share with it. Where a mate
        timed it slower, only where the key's timed rows, weighed by their share of the workload's GPU time, still
        run it faster than the workload's configs (a warning says which, and the net either way); a warning names
        the mates where nothing timed it."""
        found = [(mate, config_at_row(mate, config, self.recording, self.signatures)) for mate in mates]
        slower = [(mate, ran) for mate, ran in found if ran and ran[1] == "slower"]
        if slower:
            timed = [(row, figures["ratio"])] + [(mate, ran[0]) for mate, ran in found if ran]
            weight = sum(r.share or 0.0 for r, _ in timed)
            net = sum((r.share or 0.0) * ratio for r, ratio in timed) / weight if weight else None
            pays = net is not None and net < 1.0
            where = "; ".join(f"{ran[0]:.3f}x at {mate.label} ({ran[2]})" for mate, ran in slower)
            self.warnings.append(
                f"{row.label}: {config_text(config)} runs {figures['ratio']:.3f}x the workload's config here but "
                f"{where}, which shares its tuning key (a pin holds at every input shape of its key); over the "
                f"key's timed rows by their GPU time "
                + (f"{net:.3f}x, so it is {'pinned' if pays else 'not pinned'}" if net is not None
                   else "it cannot be weighed (no shares), so it is not pinned"))
            if not pays:
                return False
        untimed = [mate.label for mate, ran in found if ran is None]
        if untimed:
            self.warnings.append(f"{row.label}: a pin of {config_text(config)} also holds at {'; '.join(untimed)} "
                                 f"(its tuning key's other input shapes), where nothing timed it; `decisions "
                                 f"confirm` measures it there too")
        return True

    @staticmethod
    def _pinned_outputs(row: SweepRow, signature: int | None, label: str | None) -> str:
        """The outputs of the candidate a decision would pin: against the workload's config on one input set where
        the sweep compared them (`sweep.result.against_workload`), else the row's (`label`'s) own verdict."""
        checked = against_workload(row.autotune, signature).get("outputs") if signature is not None else None
        return checked or (_outputs(row, label) if label else row.outputs)

    def from_sweep(self, result: SweepResult) -> None:
        if not result.variants or result.variants[0] != PLAIN:
            raise TritonhookError(f"sweep result {result.id}: its baseline is {result.variants[:1]}, not plain; "
                                  f"a decision's evidence is a ratio to plain")
        self.pin_all_configs(result.rows)
        self.builds_of(result.rows)
        self.flip_near_ties(result, confirmed_only=True)

    def flip_near_ties(self, result: SweepResult, *, confirmed_only: bool = False) -> None:
        """Offer each template fusion the sweep found a near tie (`sweep.fusion`) pinned the other way: what a
        confirmation runs against the way the scheduler took. The scheduler's own timing (its evidence: the other
        way over the way taken) is a draw, so only the workload can say it pays: `confirmed_only` keeps a flip only
        where the newest confirmation of it found it faster (what `from-result` keeps)."""
        if not self.recording.device:
            return
        confirmed = newest_confirmations(self.store) if confirmed_only else {}
        for fusion in near_ties(result.template_fusions, result.fusion_near_tie):
            decision = Decision(AutotuneKey(fusion.kernel, tuple(fusion.key), self.recording.device),
                                Choice(PLAIN, config=tuple(fusion.other.items())),
                                self.evidence(fusion.kernel, {"ratio": fusion.margin}, "-"))
            if not confirmed_only or (confirmed.get(decision_text(decision.to_json())) or {}).get("confirmed"):
                self.offer(decision.key, decision.choice, decision.evidence)

    def builds_of(self, rows: list[SweepRow]) -> None:
        """Offer per build (key) the variant "faster" on some of its rows, "slower" or with outputs that differ on
        none (rows of a sweep whose baseline is plain)."""
        by_key: dict[Key, list[SweepRow]] = {}
        for row in rows:
            if row.status == "ok" and row.autotune is None and (key := self.key(row.signature)) is not None:
                by_key.setdefault(key, []).append(row)
        for key, built in by_key.items():
            labels = {t.label for row in built for t in row.variants[1:]}
            for label in sorted(labels):
                pairs = [(row, t) for row in built for t in row.variants if t.label == label]
                outputs = [_outputs(row, label) for row, _ in pairs]
                if DIFFER in outputs or any(t.verdict == "slower" for _, t in pairs) or \
                        label.split("#")[0] == PLAIN:
                    continue
                faster = [(row, t) for row, t in pairs if t.verdict == "faster"]
                if not faster:
                    continue
                if missed := [row for row, _ in faster if not within_fidelity_bar(row)]:
                    self.warnings.append(_missed_bar_warning(label, missed))
                    continue
                row, timing = max(faster, key=lambda pair: pair[0].share or 0.0)
                head = label.split("+")[0]
                choice = self.choice(label, timing.facts.get("ptxas_version") if "@" in head else None,
                                     timing.facts.get("ptxas_options"),
                                     {"sha256": timing.facts.get("controls_sha256")}, _acf_path(label))
                if choice is not None:
                    self.offer(key, choice, self.evidence(row.kernel, dataclasses.asdict(timing),
                                                          _outputs(row, label)))

    def from_tune(self, result: TuneResult) -> None:
        candidates = {c["label"]: c for c in result.space.get("candidates", [])}
        for tuned in result.kernels:
            if not (tuned.winner and tuned.confirmed) or (key := self.key(tuned.signature)) is None:
                continue
            variant = candidates.get(tuned.winner)
            if variant is None:
                self.warnings.append(f"{tuned.kernel}: winner {tuned.winner} is not among the result's candidates")
                continue
            trial = next((t for t in tuned.trials if t.label == tuned.winner), None)
            outputs = trial.outputs if trial is not None else "-"
            if outputs == DIFFER:
                continue
            choice = self.choice(tuned.winner, variant.get("ptxas_version") if variant.get("ptxas") else None,
                                 variant.get("options"), variant.get("controls"),
                                 (variant.get("controls") or {}).get("path"))
            if choice is not None:
                self.offer(key, choice, self.evidence(tuned.kernel, tuned.vs_plain, outputs))


def capture_key(store: Store, capture, gpu: str | None) -> Key | None:
    """The key of a capture's build on `gpu`: its PTX with any rename undone (the key is the PTX as Triton generated
    it), its arch and the ptxas version Triton runs for it; None where the capture names no ptxas or no GPU is
    known."""
    if not (capture.ptxas_version and gpu):
        return None
    ptx = _ptx.as_text(store.read(capture, "ptx"))
    if capture.renamed:
        ptx = _ptx.rename_symbols(ptx, {capture.entry: capture.original_entry})
    return Key(_ptx.code_sha256(ptx), capture.arch, capture.ptxas_version, gpu)


def _sha256(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def _name_of(label: str) -> str:
    return re.split(r"[@+#]", label, maxsplit=1)[0] or PLAIN


def _acf_path(label: str) -> str | None:
    _, found, path = label.partition("+acf:")
    return path if found else None


def _missed_bar_warning(label: str, missed: list[SweepRow]) -> str:
    """Why a variant faster in the replay is not kept: where its replay did not reproduce the workload's time, the
    ratio is the replay's, not the workload's (`sweep.result.within_fidelity_bar`)."""
    ratios = ", ".join(f"{row.label} {row.fidelity:.3f}" if row.fidelity is not None else f"{row.label} not timed"
                       for row in missed)
    return (f"{missed[0].kernel} {label}: no decision: faster only in a replay that missed the fidelity bar "
            f"(replay/workload: {ratios}); confirm it in the workload first (tritonhook ab)")


def _outputs(row: SweepRow, label: str) -> str:
    return ((row.output_check or {}).get("variants") or {}).get(label, {}).get("verdict", row.outputs)


# ----- kept in the store ------------------------------------------------------------------------------------------
def save(store: Store, decisions: list[tuple[Decision, bytes | None]]) -> list[Decision]:
    """Save each decision (its control file as a blob); one already kept for the same key is replaced."""
    held = {d.key: d.id for d in listing(store).decisions}
    saved = []
    for decision, controls in decisions:
        with store.hold() as control_file:  # held from a repair until the decision's row refers to it
            if decision.choice.controls_sha256 is not None:
                if controls is None:
                    raise TritonhookError(f"{decision.evidence.kernel}: its control file's bytes are missing")
                control_file.put_blob(controls)
            if decision.key in held:
                store.remove_result(RESULT_KIND, held[decision.key])
            decision = dataclasses.replace(decision, id=None)
            decision.id = held[decision.key] = store.add_result(RESULT_KIND, decision.to_json(), hold=control_file)
        saved.append(decision)
    return saved


def listing(store: Store, *, confirmations: bool = False) -> DecisionList:
    """Every decision in the store; a row that no longer validates is left out with a line saying why.
    `confirmations`: with what the newest confirmation of each says (`decisions ls`, and an applying process, which
    leaves out what a confirmation refuted)."""
    warnings: list[str] = []
    found = store.results(RESULT_KIND, on_error=lambda _, exc: warnings.append(str(exc)))
    return DecisionList(found, warnings, confirmations=newest_confirmations(store) if confirmations else None)


def get(store: Store, decision_id: int | str) -> Decision:
    found = store.result(decision_id)
    if not isinstance(found, Decision):
        raise TritonhookError(f"{store.path}: no decision with id {decision_id} (`tritonhook decisions ls`)")
    return found


def shown(store: Store, decision_id: int | str) -> ShownDecision:
    """A decision with what the newest confirmation of it says."""
    decision = get(store, decision_id)
    return ShownDecision(decision, newest_confirmations(store).get(decision_text(decision.to_json())))


def remove(store: Store, decision_id: int | str) -> Decision:
    decision = get(store, decision_id)
    store.remove_result(RESULT_KIND, decision.id)
    return decision


def controls_of(store: Store, decision: Decision) -> bytes | None:
    sha = decision.choice.controls_sha256
    return None if sha is None else store.read_blob(sha, what=f"decision {decision.id} control file")


def export(store: Store, path: str | os.PathLike) -> DecisionList:
    """Write every decision of the store to the portable file `path` (control files inline)."""
    kept = listing(store)
    data = file_json([(d, controls_of(store, d)) for d in kept.decisions], __version__)
    write_file(path, json_text(data, indent=1, sort_keys=True) + "\n", "decisions file")
    return DecisionList(kept.decisions, kept.warnings, title=f"exported to {path}")


def import_file(store: Store, path: str | os.PathLike) -> DecisionList:
    """Validate the file (`model.read_file`) and save the entries it keeps; the refused ones are the warnings,
    one line each. Nothing in the file is run; the store is the only place written."""
    contents: FileContents = read_file(path)
    saved = save(store, contents.decisions)
    return DecisionList(saved, contents.refused, title=f"imported from {path} (format version {VERSION})")


# ----- one pick for every process ---------------------------------------------------------------------------------
def from_divergence(store: Store, found: Divergence, gpu: str | None) -> DecisionList:
    """One pick for every rank and run: every tuning key's config pinned for `gpu` (the recordings'). A divergent
    key's pick is the fastest of its rival picks by the autotuners' own timings, a near-tie broken by a fixed rule
    (`KeyPicks.fastest`), never a vote among draws; where the key's rivals were replayed (`--replay`) and one ran
    faster than that pick beyond doubt, that one (`_replayed_faster`). Its evidence is that estimate (the pick's
    median over the slowest rival's, the rivals' range as the interval) or that replay. A key every process agreed
    on is pinned at that pick (`AGREED_PICK_KIND`): agreement over a few cold runs is a draw too (a DDP job's key
    that all six processes of three cold runs picked alike split its two ranks in the next run, on an H200).
    `tritonhook decisions confirm` confirms the pins in the workload. Saved in the store; `run --apply` then runs
    them in every process of the job."""
    if gpu is None:
        raise TritonhookError("the recordings name no GPU; a pin holds for the GPU it was measured on")
    date = _today()
    keys, warnings = _workload_keys(found.keys)
    made = []
    for key in keys:
        if not key.divergent:
            evidence = Evidence(key.kernel, 1.0, None, None, "-", date, __version__, AGREED_PICK_KIND, None)
            made.append((_pin(key, key.picks[-1].config, evidence, gpu), None))
        elif (pinned := _divergent_pick(key, date)) is None:
            warnings.append(f"{_where(key)}: a rival pick was never timed by its autotuner; no pin")
        else:
            made.append((_pin(key, *pinned, gpu), None))
    return DecisionList(save(store, made), warnings, title="one pick for every process")


def _divergent_pick(key, date: str) -> tuple[dict, Evidence] | None:
    """A divergent key's pin and its evidence (`from_divergence`); None where a rival pick was never timed."""
    config = key.fastest()
    if config is None:
        return None
    faster = _replayed_faster(key)
    if faster is not None:  # the replay found a rival faster than the autotuners' fastest: measured beats drawn
        config, rival = faster
        return config, Evidence(key.kernel, rival.ratio, rival.low, rival.high, "-", date, __version__,
                                DIVERGENCE_REPLAY_KIND, None)
    own = key.timings[config_text(config)]
    slowest = max(key.timings[text][0] for text in key.configs)
    return config, Evidence(key.kernel, own[0] / slowest, own[1] / slowest, own[2] / slowest, "-", date,
                            __version__, DIVERGENCE_KIND, None)


def baseline_picks(recording: Recording) -> tuple[list[Decision], list[str]]:
    """A pin per tuning key at the config `recording` ran there (a process's last decision at the key; where its
    processes picked differently, the one `from_divergence` pins), and why a key has none: what `tritonhook check`
    runs in its current run. A second cold run's autotuners draw picks of their own (a 2-rank job's picks differed
    at 39 of 42 keys over 3 cold runs) and a kernel at another config is another build, which the gate cannot set
    beside the baseline's (docs/check.md#the-baselines-picks)."""
    if recording.device is None:
        return [], ["the baseline recording names no GPU; its autotune picks are not pinned"]
    date = _today()
    keys, warnings = _workload_keys(divergence([recording]).keys)
    made = []
    for key in keys:
        config = key.fastest() if key.divergent else key.picks[-1].config
        if config is None:
            warnings.append(f"{_where(key)}: its processes' picks were never timed by their autotuners; not pinned")
            continue
        evidence = Evidence(key.kernel, 1.0, None, None, "-", date, __version__, BASELINE_PICK_KIND, recording.id)
        try:
            made.append(_pin(key, config, evidence, recording.device).checked(_where(key)))
        except TritonhookError as exc:  # a config no decisions file can hold: that key tunes, the others hold
            warnings.append(f"{exc}; not pinned")
    return made, warnings


def held_picks(recording: Recording, decisions: list[Decision]) -> tuple[list[Decision], list[str]]:
    """The autotune picks `recording` ran (`baseline_picks`: Inductor's compile-time choices among templates, its
    template fusions, its tuned and coordinate-descent configs, `triton.autotune`'s) as pins beside `decisions`,
    less those at a tuning key a decision pins (a confirmation's arms compare that pin with the autotuner) or under
    it (a template fusion's key is its GEMM's choice key and the graph node: the fusion of another choice); and why
    a key has none. What both arms of a confirmation hold where the decisions were measured on a first run's builds
    (`confirm.confirm`), and what `from_result` keeps with the decisions it confirmed: a first run draws its picks
    afresh, another template config is another kernel, built from other PTX, which a build decision measured on the
    recording's does not match, and its compile benchmarks every choice again (most of a max-autotune model's cold
    compile). Held, the decisions' kernels are built as they were measured."""
    pinned = [d.key.tuning_key for d in decisions if isinstance(d.key, AutotuneKey)]
    picks, unpinned = baseline_picks(recording)
    return [pick for pick in picks if not any(pick.key.tuning_key[:len(key)] == key for key in pinned)], unpinned


def _workload_keys(keys: list) -> tuple[list, list[str]]:
    """The keys a pin is made for, and a warning for those left out: Inductor kernels tuned but never launched by
    the workload (`KeyPicks.launched`). No step runs them, and their code can be a kernel's the workload runs under
    its own name, so a pin of theirs could only stand in the way of that kernel's (`_triton.AutotunePinner` takes a
    pin of a kernel's code where all agree)."""
    unlaunched = [key.kernel for key in keys if not key.launched]
    warning = [f"{len(unlaunched)} Inductor kernel(s) tuned but never launched by the workload (compiled for "
               f"Inductor's benchmarks while it compiled, e.g. {unlaunched[0]}) not pinned"] if unlaunched else []
    return [key for key in keys if key.launched], warning


def _where(key) -> str:
    """A tuning key as the pins' warnings name it: the kernel and the key's values."""
    return f"{key.kernel} [{' '.join(key.key)}]"


def _pin(key, config: dict, evidence: Evidence, gpu: str) -> Decision:
    """`key`'s config pinned for `gpu`, with `evidence`."""
    return Decision(AutotuneKey(key.kernel, tuple(key.key), gpu), Choice(PLAIN, config=tuple(config.items())), evidence)


def _today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


BASELINE_PICK_KIND = "baseline pick"
"""A pin's source: the config the baseline recording ran at its key (`baseline_picks`), not a measurement."""


def write_entries(path: str | os.PathLike, entries: list[tuple[Decision, bytes | None]], what: str) -> str:
    """A decisions file of `entries` (each decision and its control file's bytes, inlined), for a command's
    `--apply`; `what` names it in the line that says it cannot be written."""
    return str(write_file(path, json_text(file_json(entries, __version__)), what))


DIVERGENCE_KIND = "divergence"
"""A pin's source: the autotune picks of several processes (`sweep.divergence`), not a replay."""
AGREED_PICK_KIND = "agreed pick"
"""A pin's source: the config every process of several recordings picked at a key (`from_divergence`): no rival to
measure it against."""
DIVERGENCE_REPLAY_KIND = "divergence replay"
"""A pin's source: a rival pick the replay of a divergent key (`decisions divergence --replay`) measured faster
than the autotuners' fastest pick, its interval wholly below 1; its ratio is against that pick."""


def _replayed_faster(key) -> tuple[dict, object] | None:
    """The rival pick of divergent `key` that its replay measured fastest, where one was faster than the
    autotuners' fastest pick beyond doubt (its interval below 1), with its replayed timing; else None. On an H200 a
    2-rank job's rival pick ran 0.966 [0.958, 0.980] of the pick its autotuners timed fastest."""
    faster = [rival for rival in key.replayed if rival.high is not None and rival.high < 1.0]
    if not faster:
        return None
    rival = min(faster, key=lambda r: r.ratio)
    config = next((p.config for p in key.picks if config_text(p.config) == rival.config), None)
    return None if config is None else (config, rival)
