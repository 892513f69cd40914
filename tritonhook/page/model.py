"""What `tritonhook report` shows, gathered from a store as plain data (no HTML here).

`collect(store, memwatch_files)` reads every capture once, parses each distinct cubin once, pairs the plain and
renamed builds of each kernel and diffs them with `diff.diff_cubins` (SASS through nvdisasm, each distinct cubin
disassembled once), predicts the stack reservation of each distinct cubin with `preflight.predict_cubin`, and
reads the saved ptxas matrices, A/B, check, upgrade and bisect results and the memwatch files given. Whatever
cannot be read (a corrupt blob, a memwatch file that is not one, no nvdisasm, a damaged result) becomes a `Problem`
the page lists, and the rest goes on.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import os
import re
import time
from pathlib import Path
from typing import Iterable, Sequence

from .. import config
from ..ab import ABReport, ABWorkloadEstimate, SavedABResult
from ..ab.result import RESULT_KIND as AB_KIND
from ..check.result import RESULT_KIND as CHECK_KIND, CheckResult
from ..sweep.result import RESULT_KIND as SWEEP_KIND, SweepResult
from ..sweep.builds import IDENTICAL
from ..cubin import Cubin, disassemble
from ..decisions.confirmation import with_confirmations
from ..diff import CubinDiff, diff_cubins
from ..errors import TritonhookError
from ..format import share as share_text
from ..preflight import Prediction, predict_cubin
from ..store import Capture, ResultKind, Store, register_result_kind
from ..upgrade import CELLS, BisectResult, UpgradeResult
from ..upgrade.bisect import RESULT_KIND as BISECT_KIND
from ..upgrade.result import RESULT_KIND as UPGRADE_KIND, one_line
from ..upgrade.timing import RESULT_KIND as TIMING_KIND, SPLITS, UpgradeTiming

PTXAS_MATRIX_KIND = "ptxas-matrix"
"""`Store.results` kind under which `tritonhook demo` saves a ptxas matrix (a `PtxasMatrix.to_json()` with its
subject: the page reads it as that plain record)."""
register_result_kind(ResultKind(PTXAS_MATRIX_KIND))
SASS_DIFF_LINES = 1500
SASS_DIFF_KERNELS = 20
"""The page carries the SASS diffs of the SASS_DIFF_KERNELS largest effects, each cut at SASS_DIFF_LINES lines
(an attention kernel's runs to tens of thousands), so that a store of 1,000 captures stays a page of a few MB
(benchmarks/report_scale.py); each kernel section's `tritonhook diff` command prints the whole diff."""
CHART_SPEC_CHARS = 40
"""A chart label shows at most this much of the specialization (the table under the chart has it all)."""


@dataclasses.dataclass(frozen=True)
class Problem:
    """Something the report could not read, and what it did instead."""

    where: str
    what: str


@dataclasses.dataclass(frozen=True)
class CutlassEffect:
    """One kernel built twice for one target and specialization: with its own name (`plain`) and renamed."""

    plain: Capture
    renamed: Capture
    diff: CubinDiff

    @property
    def title(self) -> str:
        spec = f" [{self.plain.specialization}]" if self.plain.specialization else ""
        return f"{self.plain.original_entry} {self.plain.arch}{spec}"

    @property
    def anchor(self) -> str:
        return f"kernel-{self.plain.id}-{self.renamed.id}"

    def metric(self, name: str) -> tuple:
        """(plain, renamed) value of a `diff.KERNEL_METRICS` metric, summed over the paired kernels."""
        pairs = [row.metrics[name] for row in self.diff.kernels]
        return tuple(sum(v or 0 for v in side) if any(v is not None for v in side) else None for side in zip(*pairs))

    @property
    def cubin_sizes(self) -> tuple[int, int]:
        """(plain, renamed) cubin file size in bytes."""
        return self.plain.artifacts["cubin"].size, self.renamed.artifacts["cubin"].size

    @property
    def cubin_change(self) -> float:
        """Relative change of the cubin file size: the sort key, largest effect first."""
        plain, renamed = self.cubin_sizes
        return (renamed - plain) / plain if plain else 0.0


def chart_labels(effects: Sequence[CutlassEffect]) -> list[str]:
    """A label per effect for a figure's axis, each unique: the kernel and target, plus the part of the
    specialization that sets it apart from the others of that kernel and target (the whole one can run to ten
    constexprs), plus the capture ids where even that is equal."""
    groups: dict[tuple, list[CutlassEffect]] = {}
    for effect in effects:
        groups.setdefault((effect.plain.original_entry, effect.plain.arch), []).append(effect)
    labels = []
    for effect in effects:
        key = (effect.plain.original_entry, effect.plain.arch)
        shared = set.intersection(*(set(e.plain.specialization.split()) for e in groups[key]))
        own = " ".join(word for word in effect.plain.specialization.split() if word not in shared)
        own = own if len(own) <= CHART_SPEC_CHARS else own[:CHART_SPEC_CHARS - 1] + "…"
        labels.append(" ".join(key) + (f" [{own}]" if own else ""))
    counts = collections.Counter(labels)
    return [f"{label} (captures {e.plain.id}/{e.renamed.id})" if counts[label] > 1 else label
            for label, e in zip(labels, effects)]


@dataclasses.dataclass(frozen=True)
class ForestRow:
    """One non-baseline variant of one A/B benchmark or one swept kernel signature: its time ratio and interval,
    verdict, GPU-time share (of its A/B run, or of the workload's recorded Triton time), why it moved (the text of
    its `cubin.CubinDelta`, as the run's own table shows it) and, for a sweep's row, its rounds."""

    ab_id: int  # the id of the saved A/B run or sweep (`kind` says which)
    benchmark: str
    variant: str
    baseline: str
    ratio: float
    low: float
    high: float
    verdict: str
    share: float  # the benchmark's part of its A/B run's baseline time
    kind: str = "A/B"
    why: str = "-"
    rounds: str = "-"  # a sweep row's rounds and why they stopped (`SweepRow.rounds_text`)


@dataclasses.dataclass(frozen=True)
class MemwatchRun:
    source: str
    result: object  # memwatch.MemwatchResult


@dataclasses.dataclass(frozen=True)
class UpgradeCell:
    """One of a kernel's four builds as the page shows it. `registers`, `spills` ("stores/loads" B) and `text_size`
    are (today, this build); `why` what moved in its SASS (`CubinDelta.sass_change`), or why it was not built
    (`error`: one line of `detail`)."""

    name: str
    ptxas: str
    registers: tuple
    spills: tuple
    text_size: tuple
    why: str
    note: str | None = None
    error: str | None = None
    detail: str | None = None


@dataclasses.dataclass(frozen=True)
class UpgradeKernel:
    """One kernel of an upgrade: what its PTX did, whether today's launcher launches the new build (`abi`), the
    other release's compile error (`error`, one line of `detail`) and its cells, in `result.CELLS` order."""

    title: str
    arch: str
    ptx: str
    abi: str
    cells: list[UpgradeCell]
    error: str | None = None
    detail: str | None = None


@dataclasses.dataclass(frozen=True)
class TimingView:
    """A saved `upgrade --time` split: per kernel signature (`KernelSplit`) its ratios to today's time with their
    intervals; `workload` the Triton GPU time after each change over today's (`UpgradeTiming.workload`).
    `cells_store` names the store of upgrade `upgrade_id` when it is not this one."""

    id: int
    upgrade_id: int | None
    upgrade: str
    sweep_id: int | None
    cells_store: str | None
    kernels: list
    workload: dict[str, float | None]


@dataclasses.dataclass(frozen=True)
class UpgradeView:
    """A saved `tritonhook upgrade` (`UpgradeResult`) as the page shows it, with the timings of its cells."""

    id: int
    title: str
    args: str  # of the `tritonhook upgrade` that made it, --store aside
    kernels: list[UpgradeKernel]
    warnings: list[str]
    timings: list[TimingView]


@dataclasses.dataclass(frozen=True)
class BisectKernel:
    """One kernel's search: `path` the releases rebuilt in the order tried, each (release, verdict, what its
    build showed against the captured one); `moved_by` whether PTX, ptxas or both moved it at `first_differing`
    and `between` the cells that say so, each (what built it, what it showed)."""

    title: str
    arch: str
    path: list[tuple[str, str, str]]
    first_differing: str | None
    previous: str | None
    moved_by: str
    between: list[tuple[str, str]]
    rebuilds: int
    bound: int


@dataclasses.dataclass(frozen=True)
class BisectView:
    id: int
    title: str
    args: str  # of the `tritonhook bisect` that made it, --store aside
    kernels: list[BisectKernel]
    warnings: list[str]
    timed: bool = False  # by a recording's launch times (`bisect --time`), not at the cubin level


@dataclasses.dataclass(frozen=True)
class CheckRow:
    """One checked signature, its figures as the gate's own table writes them (`KernelCheck.interval`);
    `failed`: it regressed or its outputs changed (`status` then in capitals, as the terminal shows it)."""

    kernel: str
    label: str
    share: str
    ratio: str
    verdict: str
    rounds: str
    outputs: str
    status: str
    failed: bool


@dataclasses.dataclass(frozen=True)
class CheckView:
    """A saved `tritonhook check` (`CheckResult`): its verdict line (`title`), its signatures failures first,
    each failure's one line (the JUnit message; the unchecked share's beyond its limit), what it could not compare
    (label, share of the GPU time, why) with the share unchecked in all and its limit, and the arguments of the
    `tritonhook check` that repeats it."""

    id: int
    title: str
    baseline: str
    recording_id: int | None
    threshold: str
    rounds_text: str
    l2: str | None
    sweep_id: int | None
    kernels: list[CheckRow]
    failures: list[str]
    unmatched: list[tuple[str, str, str]]
    unchecked: str
    warnings: list[str]
    args: str | None  # None: no command repeats it (a baseline recording of another store)


@dataclasses.dataclass
class ReportData:
    store: str
    generated: float
    captures: list[Capture]
    effects: list[CutlassEffect]
    matrices: list[dict]
    ab_results: list[SavedABResult]
    forest: list[ForestRow]
    estimates: list[ABWorkloadEstimate]
    sweeps: list[SweepResult]
    memwatch: list[MemwatchRun]
    predictions: list[tuple[Capture, Prediction]]  # those that reserve anything; heaviest first
    predicted_cubins: int
    problems: list[Problem]
    upgrades: list[UpgradeView] = dataclasses.field(default_factory=list)
    timings: list[TimingView] = dataclasses.field(default_factory=list)  # those of an upgrade in another store
    bisects: list[BisectView] = dataclasses.field(default_factory=list)
    checks: list[CheckView] = dataclasses.field(default_factory=list)

    @property
    def warnings(self) -> list[tuple[Capture, Prediction]]:
        """Predictions above the capture-time warning threshold on a GPU that can load the cubin."""
        return [(c, p) for c, p in self.predictions if p.runs_on_gpu and p.reserve_low > config.capture.WARN_BYTES]


# ----- reading the store -----------------------------------------------------------------------------------------
class _Cubins:
    """Each distinct cubin of the store read, parsed and (on demand) disassembled once; failures become
    Problems naming the capture, and that capture is left out of what needs its cubin."""

    def __init__(self, store: Store, problems: list[Problem]):
        self.store, self.problems = store, problems
        self.parsed: dict[str, tuple[bytes, Cubin] | None] = {}
        self.sass: dict[str, dict | None] = {}
        self.nvdisasm_error: str | None = None

    def get(self, capture: Capture) -> tuple[bytes, Cubin] | None:
        artifact = capture.artifacts.get("cubin")
        if artifact is None:
            return None
        if artifact.sha256 not in self.parsed:
            try:
                data = self.store.read(capture, "cubin")
                self.parsed[artifact.sha256] = data, Cubin.from_bytes(data, label=f"capture {capture.id}")
            except TritonhookError as exc:
                self.parsed[artifact.sha256] = None
                self.problems.append(Problem(f"capture {capture.id} ({capture.entry}, {capture.arch})",
                                             f"{exc}; left out of the cubin sections"))
        return self.parsed[artifact.sha256]

    def disassemble_all(self, digests: Iterable[str]) -> None:
        """nvdisasm on every cubin wanted, a few at a time (each run is a process of its own)."""
        wanted = [d for d in dict.fromkeys(digests) if d not in self.sass and self.parsed.get(d)]
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
            jobs = {digest: pool.submit(disassemble, self.parsed[digest][0], label=digest[:12]) for digest in wanted}
            for digest, job in jobs.items():
                try:
                    self.sass[digest] = job.result()
                except TritonhookError as exc:
                    self.sass[digest] = None
                    self.nvdisasm_error = self.nvdisasm_error or str(exc)


def collect(store: Store, memwatch_files: Sequence[str | os.PathLike] = (), *, sass: bool = True) -> ReportData:
    """Everything the report shows, from `store` (its memwatch results included) and the memwatch JSON files
    given."""
    problems: list[Problem] = []
    captures = store.captures()
    cubins = _Cubins(store, problems)
    effects = _effects(captures, cubins, sass=sass)
    if cubins.nvdisasm_error:
        problems.append(Problem("nvdisasm", f"{cubins.nvdisasm_error}; the kernel sections show no SASS"))
    predictions, predicted = _predictions(captures, cubins)
    ab_results = _saved_ab_results(store, problems)
    sweeps = _saved_sweeps(store, problems)
    forest = [row for saved in ab_results for row in forest_rows(saved.report)]
    forest += [row for result in sweeps for row in sweep_forest_rows(result)]
    checks = _viewed(store, problems, CHECK_KIND, "check result", "check", lambda r: check_view(r, store.path))
    upgrades, timings, bisects = _saved_upgrades(store, problems)
    return ReportData(store=str(store.path), generated=time.time(), captures=captures, effects=effects,
                      matrices=store.results(PTXAS_MATRIX_KIND), ab_results=ab_results, forest=forest,
                      sweeps=sweeps,
                      estimates=[estimate for estimate in (saved.report.workload_estimate() for saved in ab_results)
                                 if estimate is not None],
                      memwatch=_memwatch_runs(store, memwatch_files, problems), predictions=predictions,
                      predicted_cubins=predicted, problems=problems, upgrades=upgrades, timings=timings,
                      bisects=bisects, checks=checks)


def build_pairs(captures: Iterable[Capture]) -> list[tuple[Capture, Capture]]:
    """(plain, renamed) per kernel, target, specialization and frontend version: the newest of each side."""
    sides: dict[tuple, dict[bool, Capture]] = {}
    for capture in captures:
        if "cubin" in capture.artifacts:
            key = (capture.original_entry, capture.arch, capture.specialization, capture.frontend_label)
            sides.setdefault(key, {})[capture.renamed] = capture  # id order: the newest wins
    return [(found[False], found[True]) for found in sides.values() if len(found) == 2]


def _effects(captures: list[Capture], cubins: _Cubins, *, sass: bool) -> list[CutlassEffect]:
    pairs = [(plain, renamed) for plain, renamed in build_pairs(captures)
             if cubins.get(plain) is not None and cubins.get(renamed) is not None]
    if sass:
        cubins.disassemble_all(c.artifacts["cubin"].sha256 for pair in pairs for c in pair)
    diffs: dict[tuple[str, str], CubinDiff] = {}
    effects = []
    for plain, renamed in pairs:
        key = (plain.artifacts["cubin"].sha256, renamed.artifacts["cubin"].sha256)
        if key not in diffs:
            sass_a, sass_b = (cubins.sass.get(digest) for digest in key)
            diffs[key] = diff_cubins(cubins.get(plain)[1], cubins.get(renamed)[1], sass_a=sass_a, sass_b=sass_b)
        effects.append(CutlassEffect(plain, renamed, diffs[key]))
    return sorted(effects, key=lambda e: (-abs(e.cubin_change), e.title))


def _predictions(captures: list[Capture], cubins: _Cubins) -> tuple[list[tuple[Capture, Prediction]], int]:
    """Predictions that reserve anything, one capture per distinct cubin; and how many cubins were predicted."""
    found, seen = [], set()
    for capture in captures:
        artifact = capture.artifacts.get("cubin")
        if artifact is None or artifact.sha256 in seen or (parsed := cubins.get(capture)) is None:
            continue
        seen.add(artifact.sha256)
        found += [(capture, p) for p in predict_cubin(parsed[1]) if p.reserve_high > 0]
    return sorted(found, key=lambda cp: -cp[1].reserve_low), len(seen)


def _saved_ab_results(store: Store, problems: list[Problem]) -> list[SavedABResult]:
    def unreadable(result_id: int, exc: TritonhookError) -> None:
        problems.append(Problem("A/B results", f"{exc}; the sweep section leaves it out"))

    return store.results(AB_KIND, on_error=unreadable)


def _memwatch_runs(store: Store, paths: Sequence[str | os.PathLike], problems: list[Problem]) -> list[MemwatchRun]:
    """The store's memwatch results, then the files given. Imported here: memwatch's modules load on first use."""
    from ..memwatch import load_result
    from ..mem.result import RESULT_KIND as MEMWATCH_KIND

    def unreadable(result_id: int, exc: TritonhookError) -> None:
        problems.append(Problem(f"memwatch result {result_id}", f"{exc}; the memory section leaves it out"))

    runs = [MemwatchRun(f"result {result.id}" + (f": {result.label}" if result.label else ""), result)
            for result in store.results(MEMWATCH_KIND, on_error=unreadable)]
    for path in paths:
        try:
            runs.append(MemwatchRun(str(path), load_result(Path(path))))
        except TritonhookError as exc:
            problems.append(Problem(str(path), f"{exc}; the memory section leaves it out"))
    return runs


# ----- A/B results (pure) ----------------------------------------------------------------------------------------
def _saved_sweeps(store: Store, problems: list[Problem]) -> list[SweepResult]:
    def unreadable(result_id: int, exc: TritonhookError) -> None:
        problems.append(Problem(f"sweep result {result_id}", f"{exc}; the sweep section leaves it out"))

    return [with_confirmations(store, sweep) for sweep in store.results(SWEEP_KIND, on_error=unreadable)]


def sweep_forest_rows(result: SweepResult) -> list[ForestRow]:
    """One row per timed non-baseline variant of each swept kernel signature (variants with identical SASS are
    not timed and have no interval: the sweep's own table lists them)."""
    return [ForestRow(result.id or 0, row.label, timing.label, row.variants[0].label, timing.ratio, timing.low,
                      timing.high, timing.verdict, row.share or 0.0, kind="sweep",
                      why=(timing.why or {}).get("text", "-"), rounds=row.rounds_text())
            for row in result.rows for timing in row.variants[1:]
            if timing.verdict != IDENTICAL and None not in (timing.ratio, timing.low, timing.high)]


def forest_rows(report: ABReport) -> list[ForestRow]:
    """One row per compared variant of each benchmark of an A/B report (`ab.saved_results(store)` holds them)."""
    total = sum(bench.variants[0].summary.median_ms for bench in report.benchmarks)
    rows = []
    for bench in report.benchmarks:
        base = bench.variants[0]
        for variant in bench.variants[1:]:
            rows.append(ForestRow(report.ab_id or 0, bench.name, variant.label, base.label, variant.ratio,
                                  variant.ci_low, variant.ci_high, variant.verdict,
                                  base.summary.median_ms / total if total else 0.0, why=report.why_text(variant.label)))
    return rows


# ----- saved results shown through a view (pure) ----------------------------------------------------------------
_DAMAGE = (KeyError, TypeError, AttributeError, ValueError, IndexError)
"""What a result that loaded but is not whole raises when its view is made (a cell without its figures, a step
without a release, a ratio that is not a number): the page lists it as a problem and shows the rest."""


def _viewed(store: Store, problems: list[Problem], kind: str, what: str, section: str, view) -> list:
    """`view` of each saved result of `kind`; one that cannot be read or shown is a problem naming it (`what` and
    its id) that `section` leaves out, and the rest stands."""
    def unreadable(result_id: int, exc: TritonhookError) -> None:
        problems.append(Problem(f"{what} {result_id}", f"{exc}; the {section} section leaves it out"))

    views = []
    for result in store.results(kind, on_error=unreadable):
        try:
            views.append(view(result))
        except _DAMAGE as exc:
            unreadable(result.id, TritonhookError(f"malformed {what} ({type(exc).__name__}: {exc})"))
    return views


def check_view(result: CheckResult, store: Path) -> CheckView:
    """`result`, saved in `store`. Every figure is formatted here, so that a result whose figures are not numbers
    is a problem, not a page that fails to render."""
    rows = [CheckRow(k.kernel, k.label, share_text(k.share), k.interval(), k.verdict, k.rounds_text(), k.outputs,
                     k.status.upper() if k.failed else k.status, k.failed)
            for k in sorted(result.kernels, key=lambda k: not k.failed)]
    baseline = _baseline_arg(result.baseline, store)
    args = None if baseline is None else \
        f"--baseline {baseline} --current {result.recording_id} --threshold {result.threshold:g}" + \
        (f" --rounds {result.rounds}" if result.rounds else "") + (" --fixed-rounds" if result.fixed_rounds else "") \
        + (f" --l2 {result.l2}" if result.l2 else "") + (f" --l2-dirt {result.l2_dirt}" if result.l2_dirt else "") \
        + (f" --max-unchecked {result.max_unchecked:g}" if result.max_unchecked is not None else "")
    failures = [k.why(result.threshold) for k in result.failures]
    if result.too_unchecked:
        failures.append(result.too_unchecked)
    limit = "" if result.max_unchecked is None else f"; the gate fails above {result.max_unchecked:.1%}"
    return CheckView(result.id, result.title(), result.baseline, result.recording_id, f"{result.threshold:.1%}",
                     result.rounds_text(), result.l2, result.sweep_id, rows, failures,
                     [(u.label, share_text(u.share), u.why) for u in result.unmatched],
                     f"{result.unchecked_share:.1%} of the GPU time unchecked in all{limit}", list(result.warnings),
                     args)


def _baseline_arg(baseline: str, store: Path) -> str | None:
    """What `--baseline` takes to repeat a check: the baseline file, or the recording's id where the baseline was
    a recording of this store (`Baseline.from_recording` names it "recording N in STORE"). None for a recording
    of another store (the library can check against one; the CLI reads a baseline recording from --store)."""
    found = re.fullmatch(r"recording (\d+) in (.*)", baseline)
    if found is None:
        return baseline
    return found.group(1) if Path(found.group(2)).resolve() == Path(store).resolve() else None


# ----- upgrade and bisect results (pure) -------------------------------------------------------------------------
def _saved_upgrades(store: Store, problems: list[Problem]) -> tuple[list[UpgradeView], list[TimingView],
                                                                     list[BisectView]]:
    """The upgrade results with the timings of their cells, the timings of upgrades in other stores, and the
    bisect results. A result that cannot be read or shown is a problem, the rest stands."""
    def viewed(kind: str, what: str, view) -> list:
        return _viewed(store, problems, kind, what, "upgrade", view)

    timings = viewed(TIMING_KIND, "upgrade timing", timing_view)
    upgrades = viewed(UPGRADE_KIND, "upgrade result", upgrade_view)
    ours = {u.id for u in upgrades}
    attached = [dataclasses.replace(u, timings=[t for t in timings if t.cells_store is None and t.upgrade_id == u.id])
                for u in upgrades]
    elsewhere = [t for t in timings if t.cells_store is not None or t.upgrade_id not in ours]
    return attached, elsewhere, viewed(BISECT_KIND, "bisect result", bisect_view)


def upgrade_view(result: UpgradeResult) -> UpgradeView:
    """Each kernel's four cells with the figures of today's build beside each build's (timings: none yet)."""
    kernels = []
    for k in result.kernels:
        deltas = [c.delta for c in k.cells.values() if c.delta is not None]
        today = {field: deltas[0].resources[field][0] for field in ("registers", "spill_stores", "spill_loads",
                                                                    "text_size")} if deltas else {}
        cells = [_cell(k.cells[name], name, today) for name in CELLS if name in k.cells]
        kernels.append(UpgradeKernel(_title(k.capture_id, k.entry, k.specialization), k.arch, k.ptx_text(),
                                     k.abi or ("same" if k.ptx_changed is not None else "-"), cells,
                                     one_line(k.rebuild_error) if k.rebuild_error else None, k.rebuild_error))
    if result.to_triton:
        change = f"--to {result.to_triton}" + (f" --ptxas {result.new_ptxas}" if result.new_ptxas else "")
    else:
        change = f"--ptxas {result.new_ptxas}"
    recording = f" --recording {result.recording_id}" if result.recording_id is not None else ""
    return UpgradeView(result.id, result.describe(), f"{change}{recording}", kernels,
                       list(result.warnings), [])


def _cell(cell, name: str, today: dict) -> UpgradeCell:
    ptxas = cell.ptxas or "-"
    if cell.status != "ok":
        return UpgradeCell(name, ptxas, (None, None), (None, None), (None, None), cell.status,
                           error=f"{cell.status}: {one_line(cell.error or '')}", detail=cell.error)
    now = {field: after for field, (_, after) in cell.delta.resources.items()} if cell.delta is not None else today
    return UpgradeCell(name, ptxas, (today.get("registers"), now.get("registers")),
                       tuple(_spills(side) for side in (today, now)), (today.get("text_size"), now.get("text_size")),
                       cell.delta.sass_change() if cell.delta is not None else "today's build", cell.note)


def _spills(figures: dict) -> str | None:
    stores, loads = figures.get("spill_stores"), figures.get("spill_loads")
    return None if stores is None else f"{stores}/{loads}"


def _title(capture_id: int, entry: str, specialization: str) -> str:
    return f"{capture_id} {entry}" + (f" ({specialization})" if specialization else "")


def timing_view(timing: UpgradeTiming) -> TimingView:
    for split in timing.kernels:  # each ratio a (median, low, high) triple of numbers, or None
        for ratio in (getattr(split, change) for change in SPLITS):
            if ratio is not None and (len(ratio) != 3 or not all(isinstance(v, (int, float)) for v in ratio)):
                raise ValueError(f"{split.label}: a ratio is {ratio!r}, not (median, low, high)")
    return TimingView(timing.id, timing.upgrade_id, timing.upgrade, timing.sweep_id, timing.cells_store,
                      list(timing.kernels), {change: timing.workload(change) for change in SPLITS})


def bisect_view(result: BisectResult) -> BisectView:
    """Each kernel's path, what moved it and the cells between the two releases that say so."""
    kernels = []
    for k in result.kernels:
        path = [(step.release, step.verdict, step.what()) for step in k.path]
        between = k.between() if k.first_differing else []
        moved = "no change" if k.first_differing is None else k.split + (f" ({one_line(k.note)})" if k.note else "")
        kernels.append(BisectKernel(k.title(), k.arch, path, k.first_differing, k.previous, moved, between,
                                    k.rebuilds, k.bound))
    recording = f" --recording {result.recording_id}" if result.recording_id is not None else ""
    timed = f" --time --rounds {result.rounds} --threshold {result.threshold}" if result.timed else ""
    if result.timed and result.moved_by not in (None, config.upgrade.BISECT_MOVED_BY[0]):
        timed += f" --moved-by {result.moved_by}"
    if result.autotune_top is not None:
        timed += f" --autotune-top {result.autotune_top}"
    searched = (f"--ptxas {','.join(result.releases)}" if result.over == "ptxas" else
                f"--from {result.from_release} --to {result.to_release} --releases {','.join(result.releases)}")
    return BisectView(result.id, f"{result.kernel_pattern!r}, {result.describe()}, {result.how()}",
                      f"--kernel '{result.kernel_pattern}' {searched}{recording}{timed}", kernels,
                      list(result.warnings), result.timed)
