"""`bisect --time`: the first Triton release whose build of a recorded kernel moved its time (or its outputs) beyond
the interval, and whether that release's PTX or its ptxas moved it (docs/upgrade.md#bisect-time).

Per recorded launch signature whose kernel matches `kernel` (the recording made under `from_release`): the same
binary search as the cubin-level bisect (`bisect.Halving`, `--to` first, ≤ ⌈log2 M⌉ + 1 releases tried for the M
after `--from`). A step at release R takes R's cells of the kernel (`result.CELLS`, against the captured build): an
`upgrade` result to R found in `cells_store` (built on another machine and copied, or by an earlier run) holding
the signature's Triton cache key, else `cells.upgrade` to R run here for the matching kernels. Then:

- R's own build has the captured SASS (its cell's `CubinDelta`): "same", not timed;
- R does not compile the kernel: "compile error", which counts as moved, as in the cubin bisect; a build that cannot
  be timed (launch ABI changed, today's launcher cannot serve it; the replay failed) is "not timed", moved too;
- else the signature is replayed with the cells as its variants (`replay`, `timing.built_cells`): "moved" when the
  upgraded build's time over the captured build's is at least `threshold` from 1 and its interval excludes 1
  (`measure.stats.verdict` with `threshold` as the smallest effect), or its outputs went beyond the captured
  build's own run-to-run spread ("close" or "differ", `measure.outputs`); else "not moved".

A signature under `triton.autotune` is searched as its autotune group (`sweep.autotune`): each step replays the
group's `autotune_top` candidates (as `sweep --autotune-top`; always the workload's config) each with its own cells
at R, and the group's row judges R's build at the config its own autotuner would pick against the captured build at
the config the workload ran, the comparison at the workload's config beside it where the two differ (the rule of
`sweep`, `check` and `upgrade --time`). A step is "same" only where no candidate's build changed its SASS: another
config's new build can change the pick. A candidate with no cells, or whose build failed, is left out of the group;
the workload's own config so is "not timed" or "compile error", as above.

Kernels are searched in lockstep: each round, one `upgrade` and one replay per release for every signature that
needs that release next. At the first release R that moved, the split comes from R's replay: its PTX assembled by
the captured ptxas (codegen) and the captured PTX by R's ptxas, each against the captured build, judged alike:
"PTX" or "ptxas" where that one alone moves it, "both" where each does, "neither alone" where only the two together
do. The captured build stands for the release before R: that release (--from itself, or one the search found not
moved) times as the captured build by the search's own verdict. Saved as result kind `bisect` (`BisectResult` with
`timed`), which the HTML report shows.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Sequence

from .. import config
from ..errors import TritonhookError
from ..measure.outputs import CLOSE, DIFFER
from ..measure.stats import verdict
from ..rename import exact_names_pattern
from ..store import Capture, Store
from ..sweep.autotune import AutotuneGroup, autotune_groups
from ..sweep.recording import Recording, Signature
from ..sweep.replay import ReplayPlan, Workers, replay
from ..sweep.schedule import WORKER
from .bisect import (FAILED, NO_CHANGE, RESULT_KIND, SAME, BisectResult, Halving, KernelBisect, Step, lockstep,
                     releases_between)
from .cells import kernel_matches, kernel_pattern, upgrade
from .result import BASELINE, BOTH, PTX_ONLY, PTXAS_ONLY, RESULT_KIND as UPGRADE_KIND, KernelUpgrade, one_line
from .timing import LABELS, built_cells, refuse_other_arch

MOVED, NOT_MOVED, NOT_TIMED = "moved", "not moved", "not timed"
"""A timed step's verdict besides `SAME` (SASS identical, not timed) and `FAILED` (compile error): moved and not
timed count as moved."""
OUTPUTS_MOVED = (CLOSE, DIFFER)
"""Output verdicts that move a kernel: beyond the captured build's own run-to-run spread."""
AXES = (("codegen", PTX_ONLY, "PTX"), ("ptxas", PTXAS_ONLY, "ptxas"))
"""The single-change builds timed at each step: the key of its figures in `Step.timing`, its cell, its axis."""


def bisect_time(recording: Recording, store: Store, *, kernel: str, from_release: str, to_release: str,
                releases: Sequence[str] | None = None, cells_store: Store | None = None,
                rounds: int = config.sweep.DEFAULT_ROUNDS, threshold: float = config.check.THRESHOLD,
                moved_by: str = config.upgrade.BISECT_MOVED_BY[0], autotune_top: int | None = None,
                worker: Sequence[str] = WORKER, progress: bool = False) -> BisectResult:
    """The first release after `from_release` up to `to_release` (in `releases`, default
    `config.upgrade.SUPPORTED_RELEASES`) whose build moved the time or outputs of each signature of `recording` (in
    `store`, replayed on this machine's GPU) whose kernel matches the regex `kernel`. `cells_store`: where to look
    for each release's cells first (default `store`); `moved_by`: one of `config.upgrade.BISECT_MOVED_BY` (time, outputs
    or either moves a kernel); `autotune_top`: per autotuned kernel, the candidates replayed, fastest by the
    autotuner's own benchmark (default all; the workload's config always); `worker`: as `replay`'s. Saved in
    `store` and returned."""
    ordered = releases_between(releases or config.upgrade.SUPPORTED_RELEASES, from_release, to_release)
    if rounds < config.ab.MIN_ROUNDS:
        raise TritonhookError(f"--rounds {rounds}: at least {config.ab.MIN_ROUNDS} (fewer give no usable interval)")
    if not 0 < threshold < 1:
        raise TritonhookError(f"--threshold {threshold}: a fraction above 0 and below 1 (0.03: 3%)")
    if moved_by not in config.upgrade.BISECT_MOVED_BY:
        raise TritonhookError(f"--moved-by {moved_by}: one of {', '.join(config.upgrade.BISECT_MOVED_BY)}")
    if autotune_top is not None and autotune_top < 1:
        raise TritonhookError(f"--autotune-top {autotune_top}: at least 1")
    if recording.triton_version != from_release:
        raise TritonhookError(f"recording {recording.id} was recorded under Triton {recording.triton_version}, "
                              f"not --from {from_release}")
    searches, warnings = _searches(recording, store, kernel_pattern(kernel), from_release, ordered[1:],
                                   autotune_top)
    elsewhere = cells_store is not None and Path(cells_store.path).resolve() != Path(store.path).resolve()
    sources = [cells_store, store] if elsewhere else [store]  # the cells upgrade builds here are kept in store
    for _, release, waiting in lockstep(searches):
        found = _cells(release, waiting, sources, store, recording)
        timed = []
        for search in waiting:
            cells = found.get(search.signature.triton_hash)
            others = [found.get(s.triton_hash) for s in search.candidates if s.id != search.signature.id]
            if (step := _untimed(release, cells, others)) is not None:
                search.record(step, cells)
            else:
                timed.append(search)
        if timed:
            rows, sweep_id = _replay(recording, store, release, timed, found, rounds, autotune_top, worker, progress)
            for search in timed:
                cells = found[search.signature.triton_hash]
                search.record(_timed(release, cells, rows.get(search.row), sweep_id, threshold, moved_by), cells)
    kernels = [search.finish(from_release) for search in searches]
    result = BisectResult(kernel, from_release, to_release, ordered, kernels, recording.id, warnings, timed=True,
                          threshold=threshold, rounds=rounds, moved_by=moved_by, autotune_top=autotune_top)
    result.id = store.add_result(RESULT_KIND, result.to_json())
    return result


@dataclasses.dataclass
class _TimedSearch:
    """One signature's search: its captured build, a `Halving`, its steps and each release's cells; for a signature
    under `triton.autotune`, its `group` and the `candidates` each step replays (else the signature alone)."""

    signature: Signature
    capture: Capture
    halving: Halving
    group: AutotuneGroup | None
    candidates: list[Signature]
    path: list[Step] = dataclasses.field(default_factory=list)
    cells: dict[str, tuple[KernelUpgrade, Path] | None] = dataclasses.field(default_factory=dict)

    @property
    def row(self) -> int:
        """The id of its row in a replay: a group's row is its workload winner's (`replay`'s fold)."""
        return self.signature.id if self.group is None else self.group.workload_winner.id

    @property
    def members(self) -> list[Signature]:
        """The signatures a replay of it is given: its whole group, of which the replay picks `candidates` itself
        (as a sweep's does: a group's row counts all its configs), else the signature."""
        return [self.signature] if self.group is None else self.group.candidates

    def next_release(self) -> str | None:
        return self.halving.next_release()

    def record(self, step: Step, cells: tuple[KernelUpgrade, Path] | None) -> None:
        self.path.append(step)
        self.cells[step.release] = cells
        self.halving.record(step.release, step.verdict not in (SAME, NOT_MOVED))

    def finish(self, from_release: str) -> KernelBisect:
        c, halving = self.capture, self.halving
        found = KernelBisect(c.id, c.kernel, c.entry, c.arch, c.specialization, self.path, None, None, NO_CHANGE,
                             {}, len(self.path), halving.bound, signature=self.signature.id)
        if (first := halving.first()) is None:
            return found
        found.first_differing, found.previous = first, halving.previous(from_release)
        cells = self.cells[first]
        found.cells = dict(cells[0].cells) if cells is not None else {}
        found.split, found.note = _split(next(step for step in self.path if step.release == first))
        return found


def _searches(recording: Recording, store: Store, pattern, from_release: str, after: list[str],
              autotune_top: int | None) -> tuple[list[_TimedSearch], list[str]]:
    """A search per signature the workload launched whose kernel (its capture's name or entry) matches, with its
    autotune group's `autotune_top` candidates where it has one; one line where one was recorded on another arch
    than its captured build's, those without a capture of `from_release` in the store are left out with a warning,
    none left is one line."""
    launched = [s for s in recording.signatures if s.launches > 0]  # not the autotuner's other candidates
    ids = sorted({s.capture_id for s in launched if s.capture_id is not None})
    captures = {c.id: c for c in store.captures(ids=ids)} if ids else {}
    matching = [(s, captures.get(s.capture_id)) for s in launched if pattern.search(s.kernel)
                or (s.capture_id in captures and kernel_matches(pattern, captures[s.capture_id]))]
    if not matching:
        raise TritonhookError(f"recording {recording.id}: no launched kernel matching {pattern.pattern!r}")
    refuse_other_arch(recording, [s for s, c in matching if c is not None],
                      {s.triton_hash: c.arch for s, c in matching if c is not None}, "their captured builds")
    groups = {s.id: g for g in autotune_groups(recording) for s in g.candidates}
    searches, warnings = [], []
    for signature, capture in matching:
        if capture is None or capture.frontend_version != from_release:
            warnings.append(f"signature {signature.id} ({signature.kernel}): " + (
                "no capture of its kernel in the store, left out" if capture is None else
                f"its kernel was built by Triton {capture.frontend_version}, not {from_release}: left out"))
            continue
        group = groups.get(signature.id)
        searches.append(_TimedSearch(signature, capture, Halving(after), group,
                                     [signature] if group is None else group.to_replay(autotune_top)))
    if not searches:
        raise TritonhookError(f"recording {recording.id}: no signature matching {pattern.pattern!r} has a capture "
                              f"of its kernel built by Triton {from_release} in {store.path}")
    return searches, warnings


def _cells(release: str, waiting: list[_TimedSearch], sources: list[Store], store: Store,
           recording: Recording) -> dict[str, tuple[KernelUpgrade, Path]]:
    """Each waiting signature's (and autotune candidate's) cells under `release`, by its Triton cache key, with
    the store holding them: the newest `upgrade` result to that release in `sources` that has them, else `upgrade`
    run here for those kernels alone (saved in `store`)."""
    wanted = {s.triton_hash for search in waiting for s in search.candidates}
    found: dict[str, tuple[KernelUpgrade, Path]] = {}
    for source in sources:
        for result in reversed(source.results(UPGRADE_KIND, on_error=lambda *_: None)):
            if result.to_triton == release and result.new_ptxas is None:
                for cells in result.kernels:
                    if cells.triton_hash in wanted:
                        found.setdefault(cells.triton_hash, (cells, source.path))
    missing = [s for s in waiting if any(c.triton_hash not in found for c in s.candidates)]
    if missing:
        built = upgrade(store, to=release, recording=None if recording.id is None else str(recording.id),
                        kernel=exact_names_pattern(s.capture.kernel for s in missing))
        for cells in built.kernels:
            if cells.triton_hash in wanted:
                found.setdefault(cells.triton_hash, (cells, store.path))
    return found


def _untimed(release: str, found: tuple[KernelUpgrade, Path] | None,
             others: list[tuple[KernelUpgrade, Path] | None]) -> Step | None:
    """The step that needs no replay: the release's build has the captured SASS (and so has every other autotune
    candidate's build, `others`, that built: one that did not cannot be picked), failed, or cannot be timed; None
    when it must be timed."""
    if found is None:
        return Step(release, NOT_TIMED, error=f"no cells of this kernel under Triton {release}")
    cells = found[0]
    if cells.rebuild_error:
        return Step(release, FAILED, error=cells.rebuild_error)
    upgraded = cells.cells.get(BOTH)
    if upgraded is None or upgraded.status != "ok" or upgraded.delta is None:
        return Step(release, NOT_TIMED, error=f"its build: {upgraded.text() if upgraded else 'none'}")
    if cells.abi:
        return Step(release, NOT_TIMED, upgraded.delta, error=cells.abi)
    same = upgraded.delta.sass_identical and not any(_sass_changed(other) for other in others)
    return Step(release, SAME, upgraded.delta) if same else None


def _sass_changed(found: tuple[KernelUpgrade, Path] | None) -> bool:
    """Whether a candidate's build at the release has other SASS than its captured build."""
    upgraded = found[0].cells.get(BOTH) if found is not None else None
    return upgraded is not None and upgraded.delta is not None and not upgraded.delta.sass_identical


def _replay(recording: Recording, store: Store, release: str, timed: list[_TimedSearch], found: dict,
            rounds: int, autotune_top: int | None, worker: Sequence[str], progress: bool) -> tuple[dict, int | None]:
    """One replay of every search in `timed`, each replayed signature with its cells (`found`, by Triton cache key)
    as its variants, an autotune group's `autotune_top` candidates folded into the group's row: the rows by
    signature id, and the sweep's id."""
    wanted = {s.id for search in timed for s in search.members}

    def prebuilt(signature: Signature):
        cells = found.get(signature.triton_hash)
        return built_cells(*cells) if cells else f"no cells of this kernel under Triton {release}"

    sweep = replay(dataclasses.replace(recording, signatures=[s for s in recording.signatures if s.id in wanted]),
                   store, [], ReplayPlan(rounds=rounds, autotune_top=autotune_top, explain_misses=False),
                   workers=Workers.at(worker=worker, progress=progress), prebuilt=prebuilt)
    return {row.signature: row for row in sweep.rows}, sweep.id


def _timed(release: str, found: tuple[KernelUpgrade, Path], row, sweep_id: int | None, threshold: float,
           moved_by: str) -> Step:
    """The step of a replayed release: the upgraded build judged against the captured one, the single changes
    beside it; an autotuned kernel's with the config the captured build ran at (`workload_config`)."""
    delta = found[0].cells[BOTH].delta
    if row is None or row.status != "ok":
        return Step(release, NOT_TIMED, delta, error=f"replay {sweep_id}: {row.status if row else 'no row'}")
    upgraded = _judged(row, LABELS[BOTH], threshold, moved_by)
    if upgraded is None:
        return Step(release, NOT_TIMED, delta, error=f"replay {sweep_id}: the upgraded build was not timed")
    timing = {**upgraded, "sweep_id": sweep_id, **{key: _judged(row, LABELS[cell], threshold, moved_by)
                                                   for key, cell, _ in AXES}}
    if row.autotune:
        timing["workload_config"] = row.autotune["winners"][LABELS[BASELINE]]
    return Step(release, MOVED if upgraded["moved"] else NOT_MOVED, delta, timing=timing)


def _judged(row, label: str, threshold: float, moved_by: str) -> dict | None:
    """A variant's time over the captured build's with its interval, its verdict with `threshold` as the smallest
    effect, its outputs (its own verdict where the replay checked each variant, else the row's), and whether what
    `moved_by` names moved it; None when it was not timed. An autotune group's row adds the `config` it ran at and,
    where that is not the workload's, `same_config`: its comparison at the workload's config (`analyze_group`),
    judged with `threshold` too."""
    timing = next((v for v in row.variants if v.label == label), None)
    if timing is None or timing.ratio is None or not math.isfinite(timing.ratio):
        return None
    own = ((row.output_check or {}).get("variants") or {}).get(label) or {}
    outputs = own.get("verdict", row.outputs)
    base_ms = row.variants[0].median_ms if row.variants else None
    said = verdict(timing.ratio, timing.low, timing.high, threshold, baseline_ms=base_ms)
    moved = {"time": said != "no difference", "outputs": outputs in OUTPUTS_MOVED}
    moved["either"] = moved["time"] or moved["outputs"]
    judged = {"ratio": timing.ratio, "low": timing.low, "high": timing.high, "verdict": said, "outputs": outputs,
              "moved": moved[moved_by]}
    if row.autotune:
        judged["config"] = row.autotune["winners"][label]
        if same := row.autotune["same_config"].get(label):
            judged["same_config"] = {**same, "verdict": verdict(same["ratio"], same["low"], same["high"], threshold,
                                                                baseline_ms=base_ms)}
    return judged


def _split(step: Step) -> tuple[str, str | None]:
    """What moved the kernel at the first release that moved, from that release's replay: "PTX" or "ptxas" where
    that one alone moves it, "both" where each does, "neither alone" where only the two together do; `FAILED` where
    the release did not compile it, "unknown" where a build was not timed (the note says which)."""
    if step.verdict == FAILED:
        return FAILED, one_line(step.error)
    if step.timing is None:
        return "unknown", one_line(step.error or "not timed")
    moved = {}
    for key, cell, axis in AXES:
        if step.timing.get(key) is None:
            return "unknown", f"{cell}: not timed"
        moved[axis] = step.timing[key]["moved"]
    if moved["PTX"] and moved["ptxas"]:
        return "both", "each alone moves it"
    if moved["PTX"] or moved["ptxas"]:
        return ("PTX", None) if moved["PTX"] else ("ptxas", None)
    return "neither alone", "neither alone moves it, the two together do"
