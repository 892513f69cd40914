"""`bisect`: the first Triton release whose build of a captured kernel differs from the captured build, and whether
that release's PTX or its ptxas moved it (docs/upgrade.md#tritonhook-bisect-the-first-release-that-changed-a-kernel).

Per captured kernel matching `kernel`, built by release A (`--from`): a binary search over the releases after A up
to B, in the order of an explicit list (`config.upgrade.SUPPORTED_RELEASES` unless given). B is rebuilt first (the same
as A: "no change", one rebuild); then the range known to hold the change is halved until one release is left, so M
releases after A take at most ⌈log2 M⌉ + 1 rebuilds, each through the rebuild worker under that release's
virtualenv (`rebuild`, `releases`). A build differs when its kernel's `.text` is not the captured one's (not SASS
identical; the registers and spills are recorded with it); a release that fails to compile the kernel differs
too, with the compiler's error. The search assumes a change, once made, stays: a kernel whose SASS changes at one
release and changes back at a later one may be reported as unchanged, as any bisect would.

At the first differing release R, with its predecessor P (A itself, or a release the search found the same), the
cells between the two (`cells.cells_between`: P's PTX with R's ptxas, R's PTX with P's ptxas, each against P's
build) say whether the PTX, ptxas or both moved it. Kernels are searched in lockstep (`lockstep`): each round runs
one worker per release for every kernel that needs that release next. All of it at the cubin level, on the CPU;
the timing half (the first release where a recorded kernel's time moved beyond its interval) is `bisect_timing`,
on the same search (`Halving`) and result (`BisectResult` with `timed`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from pathlib import Path
from typing import Iterator, Sequence

from .. import config, format

from .. import binaries
from ..cubin import CubinDelta, CubinDeltas
from ..errors import TritonhookError
from ..measure.variants import resolve_ptxas
from ..store import Capture, ResultKind, Store, register_result_kind
from .cells import _captures, captured_build, cells_between, kernel_matches, kernel_pattern
from .worker import Rebuilt, rebuild_captures
from .releases import release_python
from .result import PTX_ONLY, PTXAS_ONLY, Cell, one_line

RESULT_KIND = "bisect"
SAME, DIFFERS, FAILED = "same", "differs", "compile error"
"""A step's verdict: the release's build of the kernel has the captured `.text`, another one, or none."""
NO_CHANGE = "none"
"""The split of a kernel no release changed."""
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


@dataclasses.dataclass
class Step:
    """One release tried by the search: its build of the kernel against the captured build (`delta`: SASS identical
    or not, registers, spills), or the compiler's `error`. A timed bisect's step (`bisect_timing`) that was replayed
    carries `timing`: the upgraded build's time over the captured build's, `ratio` with its interval `low`..`high`,
    its `verdict` and `outputs`, and the same of the single-change builds, `codegen` (the release's PTX, the
    captured ptxas) and `ptxas` (the captured PTX, the release's ptxas), each a dict or None (not timed). An
    autotuned kernel's adds the config each build ran at (`workload_config`: the captured build's, the workload's;
    each build's `config`: the one its own autotuner would pick) and, where a build's is not the workload's, its
    `same_config` comparison (`config`, `ratio`, `low`, `high`, `verdict`); results saved before have none."""

    release: str
    verdict: str
    delta: CubinDelta | None = None
    error: str | None = None
    timing: dict | None = None

    def what(self) -> str:
        """What the release's build showed: the compiler's error, else its figures against the captured build, and
        its time where it was replayed."""
        if self.error:
            return one_line(self.error)
        parts = [self.delta.cell()] if self.delta is not None else []
        if self.timing is not None:
            parts.append(timed_text(self.timing))
        return ", ".join(part for part in parts if part)

    def text(self) -> str:
        if self.error:
            return f"{self.release} {self.verdict}: {self.what()}"
        what = self.what()
        return f"{self.release} {self.verdict} ({what})" if what else f"{self.release} {self.verdict}"

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "delta": self.delta.to_json() if self.delta else None}

    @classmethod
    def from_json(cls, data: dict) -> "Step":
        delta = data.get("delta")
        return cls(**{**data, "delta": CubinDelta.from_json(delta) if delta else None})


def timed_text(timing: dict) -> str:
    """A timed build's figures: "x1.125 [1.120, 1.130] slower, outputs bitwise", and where its autotuner picks
    another config than the workload's: ", at its own config BLOCK=1024, ... (at the workload's BLOCK=512, ...:
    x1.080 [1.080, 1.080] slower)"."""
    text = f"{_ratio_text(timing)}, outputs {timing['outputs']}"
    if same := timing.get("same_config"):
        text += f", at its own config {timing['config']} (at the workload's {same['config']}: {_ratio_text(same)})"
    return text


def _ratio_text(timing: dict) -> str:
    return f"x{timing['ratio']:.3f} [{timing['low']:.3f}, {timing['high']:.3f}] {timing['verdict']}"


@dataclasses.dataclass
class KernelBisect:
    """One captured kernel's search: `path` the releases rebuilt, in the order tried; `first_differing` the first
    release whose build differs (None: none up to --to) and `previous` the release before it; `split` what moved it
    (`SPLITS`) from `cells`, the cells between the two (`result.CELLS`, against `previous`'s build); `rebuilds` how
    many builds the search took, at most `bound` = ⌈log2 M⌉ + 1 for the M releases after --from.

    A timed bisect (`bisect_timing`) searches one recorded launch `signature` of the kernel: `first_differing` is
    the first release whose build's time (or outputs) moved, and `cells` that release's cells against the captured
    build, timed in the step that found it (`Step.timing`)."""

    capture_id: int
    kernel: str
    entry: str
    arch: str
    specialization: str
    path: list[Step]
    first_differing: str | None
    previous: str | None
    split: str
    cells: dict[str, Cell]
    rebuilds: int
    bound: int
    note: str | None = None
    signature: int | None = None

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "path": [s.to_json() for s in self.path],
                "cells": {name: cell.to_json() for name, cell in self.cells.items()}}

    def title(self) -> str:
        return (f"{self.capture_id} {self.entry}" + (f" ({self.specialization})" if self.specialization else "")
                + (f", signature {self.signature}" if self.signature is not None else ""))

    def between(self) -> list[tuple[str, str]]:
        """The single-axis cells that say whether the PTX or ptxas moved the kernel, each named by what built it
        ("3.8.0 PTX, 3.9.0 ptxas") with what it showed: at the cubin level, those between `previous` and
        `first_differing`; timed, those between the captured build and `first_differing`, with their times."""
        before, after = ("captured" if self.signature is not None else self.previous), self.first_differing
        timing = next((s.timing for s in self.path if s.release == after), None) or {}
        return [(label, self.cells[name].text() + (f", {timed_text(timing[axis])}" if timing.get(axis) else ""))
                for name, label, axis in ((PTXAS_ONLY, f"{before} PTX, {after} ptxas", "ptxas"),
                                          (PTX_ONLY, f"{after} PTX, {before} ptxas", "codegen"))
                if name in self.cells]

    @classmethod
    def from_json(cls, data: dict) -> "KernelBisect":
        return cls(**{**data, "path": [Step.from_json(s) for s in data["path"]],
                      "cells": {name: Cell.from_json(cell) for name, cell in data["cells"].items()}})


@dataclasses.dataclass
class BisectResult:
    """Every matching kernel's bisect between `from_release` (the captured builds) and `to_release`, over
    `releases` (the ordered list searched, --from to --to). `timed`: by the time of a recording's launches
    (`bisect_timing`), a release moved when the ratio is at least `threshold` from 1 with its interval excluding 1,
    over `rounds` rounds, or its outputs went beyond today's spread (`moved_by`: either, time or outputs alone),
    an autotuned kernel's `autotune_top` candidates replayed (None: all); else at the cubin level."""

    kernel_pattern: str
    from_release: str
    to_release: str
    releases: list[str]
    kernels: list[KernelBisect]
    recording_id: int | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)
    id: int | None = None
    timed: bool = False
    threshold: float | None = None
    rounds: int | None = None
    moved_by: str | None = None
    autotune_top: int | None = None
    over: str = "Triton"
    warning_prefix = "tritonhook bisect"

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "kernels": [k.to_json() for k in self.kernels]}

    @classmethod
    def from_json(cls, data: dict, *, source: str = "bisect result") -> "BisectResult":
        try:
            fields = {f.name for f in dataclasses.fields(cls)} - {"kernels"}
            return cls(kernels=[KernelBisect.from_json(k) for k in data["kernels"]],
                       **{k: v for k, v in data.items() if k in fields})
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise TritonhookError(f"{source}: malformed bisect result ({type(exc).__name__}: {exc})") from None

    def describe(self) -> str:
        """What was searched: "Triton 3.6.0 → 3.9.0 over 3.6.0, 3.7.1, 3.8.0, 3.9.0, 4 kernel(s)" (`over`: "ptxas"
        for a bisect of ptxas versions, from the captured builds' ptxas)."""
        return (f"{self.over} {self.from_release} → {self.to_release} over {', '.join(self.releases)}, "
                f"{len(self.kernels)} kernel(s)")

    def how(self) -> str:
        """How a release was judged: "at the cubin level (not timed)" or "timed (moved: ≥ 3% ..., 21 rounds)"."""
        if self.over == "ptxas":
            return "at the cubin level: the captured PTX assembled by each, with the captured Triton's flags"
        if not self.timed:
            return "at the cubin level (not timed)"
        time = f"time ≥ {self.threshold:.1%} away with its interval excluding no change"
        outputs = "outputs beyond today's spread"
        moved = {"time": time, "outputs": outputs}.get(self.moved_by, f"{time}, or {outputs}")
        return f"timed (moved: {moved}; {self.rounds} rounds)"

    def __rich_console__(self, console, options):
        from rich.markup import escape  # a compiler error may hold brackets rich would read as markup

        rows = [[k.title(), k.arch, "\n".join(step.text() for step in k.path), k.first_differing or "-",
                 _split_text(k), f"{k.rebuilds} (≤ {k.bound})"] for k in self.kernels]
        title = f"tritonhook bisect: {self.kernel_pattern!r}, {self.describe()}, {self.how()}"
        yield format.table(["capture kernel", "arch", "path (vs the captured build)",
                            "first moved" if self.timed else "first differing", "moved by",
                            "assemblies" if self.over == "ptxas" else "rebuilds"],
                           [[escape(cell) for cell in row] for row in rows], title=title)


def _split_text(kernel: KernelBisect) -> str:
    """What moved it, then each single-axis cell, one a line."""
    if kernel.first_differing is None:
        return "no change"
    lines = [kernel.split + (f" ({one_line(kernel.note)})" if kernel.note else "")]
    lines += [f"{label}: {text}" for label, text in kernel.between()]
    return "\n".join(lines)


register_result_kind(ResultKind(RESULT_KIND, BisectResult.from_json, label="kernel_pattern", source="recording_id"))


# ----- the search ---------------------------------------------------------------------------------------------------
def bisect(store: Store, *, kernel: str, from_release: str, to_release: str, releases: Sequence[str] | None = None,
           recording: str | None = None) -> BisectResult:
    """The first release after `from_release` up to `to_release` (in `releases`, default
    `config.upgrade.SUPPORTED_RELEASES`) whose build differs from the captured one, for every kernel captured under
    `from_release` whose name matches the regex `kernel` (in `store`, or launched in `recording`). Saved in the
    store and returned."""
    ordered = releases_between(releases or config.upgrade.SUPPORTED_RELEASES, from_release, to_release)
    after = ordered[1:]
    pattern = kernel_pattern(kernel)
    captures, recording_id, warnings = _captures(store, recording)
    matching = [c for c in captures if kernel_matches(pattern, c)]
    chosen = [c for c in matching if c.frontend_version == from_release]
    if not chosen:
        found = ", ".join(sorted({f"{c.kernel} (Triton {c.frontend_version})" for c in matching}))
        raise TritonhookError(f"{store.path}: no captured Triton kernel matching {kernel!r} built by Triton "
                              f"{from_release}" + (f" (found {found})" if found else ""))
    warnings += [f"capture {c.id} ({c.kernel}) was built by Triton {c.frontend_version}, not {from_release}: "
                 f"left out" for c in matching if c.frontend_version != from_release]
    work = store.run_folder("bisects")
    searches = [_Search(store, c, after) for c in chosen]
    deltas = CubinDeltas()
    for round_number, release, waiting in lockstep(searches):
        rebuilt = rebuild_captures(release_python(release), store, [s.capture for s in waiting],
                                   work / "rebuild" / f"{round_number}-{release}")
        for search in waiting:
            search.record(release, rebuilt[search.capture.id], deltas)
    kernels = [search.finish(deltas, work / "cells") for search in searches]
    result = BisectResult(kernel, from_release, to_release, ordered, kernels, recording_id, warnings)
    result.id = store.add_result(RESULT_KIND, result.to_json())
    return result


def bisect_ptxas(store: Store, *, kernel: str, ptxas: Sequence[str], recording: str | None = None) -> BisectResult:
    """The first ptxas of `ptxas` (versions or paths, `resolve_ptxas`, in the order given) whose assembly of the
    captured PTX of each kernel matching the regex `kernel` (in `store`, or launched in `recording`) differs from
    the captured build, with the flags of the Triton that captured it. The captured build comes first: a list that
    starts with the ptxas that built a kernel starts there for that kernel. Each step is one assembly, at most
    ⌈log2 M⌉ + 1 for the M versions after the captured one; what moved the kernel is always ptxas (the PTX is the
    captured one), or ptxas refusing it (`FAILED`). Saved in the store and returned."""
    listed: dict[str, str] = {}
    for where in ptxas:
        path = resolve_ptxas(where, "--ptxas")
        version = binaries.ptxas_version(path)
        if version in listed:
            raise TritonhookError(f"--ptxas {where}: ptxas {version} is given twice")
        listed[version] = path
    if not listed:
        raise TritonhookError("--ptxas: give the ptxas versions to bisect, in order (e.g. 12.8,12.9,13.0,13.4)")
    pattern = kernel_pattern(kernel)
    captures, recording_id, warnings = _captures(store, recording)
    if not (chosen := [c for c in captures if kernel_matches(pattern, c)]):
        raise TritonhookError(f"{store.path}: no captured Triton kernel matching {kernel!r}")
    versions = list(listed)
    searches = []
    for capture in chosen:
        captured_first = _same_ptxas(versions[0], capture.ptxas_version)
        if not (after := versions[1:] if captured_first else versions):
            raise TritonhookError(f"--ptxas {','.join(ptxas)}: ptxas {versions[0]} built capture {capture.id} "
                                  f"({capture.kernel}); give the versions to try after it")
        searches.append((_Search(store, capture, after),
                         versions[0] if captured_first else capture.ptxas_version or "captured"))
    deltas = CubinDeltas()
    for _, version, waiting in lockstep([search for search, _ in searches]):
        for search in waiting:
            search.record(version, _assembled(store, search.capture, listed[version]), deltas)
    kernels = []
    for search, start in searches:
        found = search.found(start)
        if found.first_differing is not None:
            error = search.builds[found.first_differing].error
            found.split, found.note = (FAILED, one_line(error)) if error else ("ptxas", None)
        kernels.append(found)
    captured = ", ".join(sorted({c.ptxas_version or "?" for c in chosen}))
    result = BisectResult(kernel, captured, versions[-1], versions, kernels, recording_id, warnings, over="ptxas")
    result.id = store.add_result(RESULT_KIND, result.to_json())
    return result


def _same_ptxas(version: str, captured: str | None) -> bool:
    """Whether a ptxas of `version` ("12.8.93") is the one a capture records (its "12.8" or "12.8.93")."""
    return captured is not None and (version == captured or version.startswith(captured + "."))


def _assembled(store: Store, capture: Capture, ptxas: str) -> Rebuilt:
    """The captured PTX assembled by `ptxas` with the captured Triton's flags (its ISA lowered where that ptxas
    needs it, `cells._Build.assembled`), as a rebuild the search reads; ptxas's refusal as its error."""
    captured, flags = captured_build(store, capture)
    built = captured.assembled(ptxas, flags, capture.arch)
    if isinstance(built.cubin, binaries.AssembleError):
        return Rebuilt(capture.id, ptxas_path=ptxas, error=str(built.cubin))
    return Rebuilt(capture.id, ptx=built.ptx, cubin=built.cubin, metadata={"name": capture.entry}, ptxas_path=ptxas)


def releases_between(releases: Sequence[str], first: str, last: str) -> list[str]:
    """The releases from `first` to `last`, oldest first; a release not given as X.Y.Z, or either end not among
    them, or the ends the wrong way round, is one line."""
    keys = {}
    for release in releases:
        if not (match := _VERSION.fullmatch(release.strip())):
            raise TritonhookError(f"--releases {release!r}: give each release as X.Y.Z (e.g. 3.9.0)")
        keys[release.strip()] = tuple(int(part) for part in match.groups())
    known = sorted(keys, key=keys.get)
    for end, option in ((first, "--from"), (last, "--to")):
        if end not in keys:
            raise TritonhookError(f"{option} {end}: not among the releases bisected ({', '.join(known)}); "
                                  f"give it in --releases")
    if keys[first] >= keys[last]:
        raise TritonhookError(f"--from {first} is not before --to {last}")
    return [release for release in known if keys[first] <= keys[release] <= keys[last]]


class Halving:
    """The search both bisects run (`bisect` at the cubin level, `bisect_timing.bisect_time` on the GPU), as a pure
    state machine over `after`, the releases after --from, oldest first: the last is tried first (not moved there:
    `unchanged`, done); else `low..high` is the range holding the first release that moved (`high` known to have
    moved), halved until one release is left. `next_release()` is the release to try next (None: done) and
    `record(release, moved)` what it showed; at most `bound` = ⌈log2 M⌉ + 1 releases are tried for M."""

    def __init__(self, after: Sequence[str]):
        self.after = list(after)
        self.low, self.high = 0, len(self.after) - 1
        self.tried: list[str] = []
        self.unchanged = False

    @property
    def bound(self) -> int:
        return math.ceil(math.log2(len(self.after))) + 1

    def next_release(self) -> str | None:
        if not self.tried:
            return self.after[-1]
        if self.unchanged or self.low >= self.high:
            return None
        return self.after[(self.low + self.high) // 2]

    def record(self, release: str, moved: bool) -> None:
        self.tried.append(release)
        if len(self.tried) == 1:
            self.unchanged = not moved
        elif moved:
            self.high = self.after.index(release)
        else:
            self.low = self.after.index(release) + 1

    def first(self) -> str | None:
        """The first release that moved (once done); None when --to did not."""
        return None if self.unchanged else self.after[self.low]

    def previous(self, start: str) -> str:
        """The release before `first()`: `start` (--from), or the last one the search found not moved."""
        return self.after[self.low - 1] if self.low else start


def lockstep(searches: Sequence) -> Iterator[tuple[int, str, list]]:
    """The searches (each with a `next_release()`) in rounds: each round, every release some search wants next with
    the searches that want it, (round, release, searches), so one rebuild (or replay) a release serves them all;
    until none wants one. Each search must be told what its release showed before the next round starts."""
    for round_number in itertools.count(1):
        wanted: dict[str, list] = {}
        for search in searches:
            if (release := search.next_release()) is not None:
                wanted.setdefault(release, []).append(search)
        if not wanted:
            return
        for release, waiting in wanted.items():
            yield round_number, release, waiting


class _Search:
    """One kernel's search at the cubin level: a `Halving`, each release's rebuild kept, and its steps."""

    def __init__(self, store: Store, capture: Capture, after: list[str]):
        self.store, self.capture = store, capture
        self.halving = Halving(after)
        self.path: list[Step] = []
        self.builds: dict[str, Rebuilt] = {}

    def next_release(self) -> str | None:
        return self.halving.next_release()

    def record(self, release: str, rebuilt: Rebuilt, deltas: CubinDeltas) -> None:
        step = self._step(release, rebuilt, deltas)
        self.path.append(step)
        self.builds[release] = rebuilt
        self.halving.record(release, step.verdict != SAME)

    def _step(self, release: str, rebuilt: Rebuilt, deltas: CubinDeltas) -> Step:
        if rebuilt.error:
            return Step(release, FAILED, error=rebuilt.error)
        captured = self.store.read(self.capture, "cubin")
        try:
            delta = deltas.between(captured, rebuilt.cubin, self.capture.entry,
                                   rebuilt.metadata.get("name", self.capture.entry))
        except TritonhookError as exc:
            return Step(release, FAILED, error=f"its cubin cannot be read: {exc}")
        return Step(release, SAME if delta.sass_identical else DIFFERS, delta)

    def found(self, start: str) -> KernelBisect:
        """The search's answer, not yet split: the first build that differs and the one before it (`start`, the
        captured build's, when it is the first tried)."""
        c, halving = self.capture, self.halving
        found = KernelBisect(c.id, c.kernel, c.entry, c.arch, c.specialization, self.path, None, None, NO_CHANGE,
                             {}, len(self.path), halving.bound)
        if (first := halving.first()) is not None:
            found.first_differing, found.previous = first, halving.previous(start)
        return found

    def finish(self, deltas: CubinDeltas, folder: Path) -> KernelBisect:
        found = self.found(self.capture.frontend_version)
        if (first := found.first_differing) is None:
            return found
        previous = found.previous
        before = self.builds[previous] if self.halving.low else None  # a release the search found the same
        found.cells = cells_between(self.store, self.capture, before, self.builds[first], None, deltas,
                                    folder / str(self.capture.id) / f"{previous}-{first}")
        found.split, found.note = _split(found.cells, self.builds[first])
        return found


def _split(cells: dict[str, Cell], rebuilt: Rebuilt) -> tuple[str, str | None]:
    """What moved the kernel at the first differing release, from the cells between it and the release before,
    with a note where that needs one: "PTX" or "ptxas" (that one alone moves it), "both" (each alone does, or only
    the two together), "unknown" (a cell could not be built), or `FAILED` (the release did not compile it)."""
    if rebuilt.error:
        return FAILED, one_line(rebuilt.error)
    moved = {}
    for name, axis in ((PTX_ONLY, "PTX"), (PTXAS_ONLY, "ptxas")):
        cell = cells.get(name)
        if cell is None or cell.status != "ok" or cell.delta is None:
            return "unknown", f"{name}: {cell.text() if cell else 'not built'}"
        moved[axis] = not cell.delta.sass_identical
    if moved["PTX"] and moved["ptxas"]:
        return "both", "each alone moves it"
    if moved["PTX"] or moved["ptxas"]:
        return ("PTX", None) if moved["PTX"] else ("ptxas", None)
    return "both", "neither alone moves it, the two together do"
