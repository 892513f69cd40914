"""`tritonhook tune`: search the ways ptxas can build the kernels that make most of a recording's GPU time (kernel
name, ptxas binary, documented codegen options, control files) and keep, per kernel, the variant that beats plain,
confirmed in a fresh replay.

Every candidate is judged by the replay engine the sweep uses (`replay.replay`): built from the captured PTX,
timed interleaved with plain in isolated workers, its outputs checked against plain's own run-to-run spread. So a
candidate that breaks ptxas (an error, a crash, a hang past `config.ptxas.PTXAS_TIMEOUT_S`), faults on the GPU or
changes the outputs loses only itself, and is counted by cause. Candidates whose kernel `.text` equals plain's or
an earlier candidate's are not timed again (a build is seconds, a timing a round of the GPU).

A search's best is biased upwards (the maximum of noisy estimates), so the winners are timed again, in a replay of
their own beside plain and `cutlass_`, before they are reported (docs/variants.md#tune).

The `acf-search` axis is not a list fixed in advance: per kernel, NVIDIA CompileIQ's engine (`ptxas.tune_space`)
proposes a pool of control files, each is built and timed like any candidate, its time ratio to plain is told back, and
the engine proposes the next pool from those scores (docs/control_files.md#tune-search).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import itertools
import re
import threading
import time
from pathlib import Path
from typing import Sequence

from .. import config, format

from .. import binaries

from ..ptxas import tune_space
from ..errors import TritonhookError
from ..files import file_name
from ..measure.outputs import BITWISE, NO_OUTPUT, WITHIN_SPREAD
from ..measure.stats import median, ratio_interval, verdict
from ..measure.variants import PLAIN, Variant, parse_variant, resolve_ptxas
from ..rename import DEFAULT_PREFIX, exact_names_pattern
from ..store import ResultKind, Store, register_result_kind
from .recording import Recording, Signature
from .replay import ReplayPlan, Workers, build_captures, replay, select_signatures
from .schedule import WORKER
from .result import SweepResult, VariantTiming
from .builds import IDENTICAL

RESULT_KIND = "tune"
DEFAULT_SHARE = 0.8
"""By default `tune` searches the kernels that together make this share of the recorded GPU time."""
OPTION_SETS: tuple[tuple[str, ...], ...] = (
    ("-O2",), ("--allow-expensive-optimizations=true",), ("--register-usage-level=0",),
    ("--register-usage-level=10",), ("--def-load-cache=cg",))
"""The documented codegen options `tune` tries besides none (`binaries.CODEGEN_OPTIONS`; each keeps the kernel's
numerics: no `--fmad=false`). `--maxrregcount` is not among them: ptxas ignores it under Triton's `.reqntid`."""
CHUNK = 8
"""Candidates timed per replay: each replay times plain beside them, so its ratios compare across replays; a small
chunk lets the budget stop between replays, and each chunk's progress shows."""
OK_OUTPUTS = (BITWISE, WITHIN_SPREAD, NO_OUTPUT)
ACF_SEARCH = "acf-search"
"""The axis of control files CompileIQ's engine proposes pool by pool (`AcfSearch`), as `--space` and the trials
name it."""


@dataclasses.dataclass(frozen=True)
class AcfSearch:
    """The `acf-search` axis: per kernel, `generations` pools of `pool` control files from CompileIQ's engine over
    the search-space file `space`, each built as `plain@PTXAS+acf:FILE` by `ptxas` (a path; one that reads control
    files, and of the space's release: 13.3.x for CompileIQ's 13.3 spaces)."""

    space: str
    ptxas: str
    pool: int = config.sweep.TUNE_ACF_POOL
    generations: int = config.sweep.TUNE_ACF_GENERATIONS

    @classmethod
    def checked(cls, space: str, ptxas: Sequence[str], pool: int, generations: int) -> "AcfSearch":
        """Everything the search needs, checked before any work: the one ptxas (read control files, or a line
        saying it cannot), the space file, the pool sizes, CompileIQ itself."""
        if len(ptxas) != 1:
            raise TritonhookError(f"--space {ACF_SEARCH}: give the one ptxas that builds its control files with "
                                  f"--ptxas (13.3.x for CompileIQ's 13.3 spaces; got {len(ptxas)})")
        path = resolve_ptxas(ptxas[0], f"--ptxas {ptxas[0]}")
        if refusal := binaries.controls_refusal(f"--acf-space {space}", path):
            raise TritonhookError(refusal)
        tune_space.check_space(space, pool, generations)
        return cls(str(space), path, pool, generations)


@dataclasses.dataclass(frozen=True)
class TuneSpace:
    """The axes `tune` crosses: kernel names, ptxas binaries (None: the one the capture used), option sets (()
    first: none) and control files, and the control files CompileIQ proposes (`acf_search`). Plain (plain name,
    the capture's ptxas, no option, no file) is the baseline, not a candidate."""

    names: tuple[str, ...] = (PLAIN, DEFAULT_PREFIX)
    ptxas: tuple[str | None, ...] = (None,)
    options: tuple[tuple[str, ...], ...] = ((),) + OPTION_SETS
    controls: tuple[str | None, ...] = (None,)
    acf_search: AcfSearch | None = None

    @classmethod
    def parse(cls, axes: str, *, ptxas: Sequence[str] = (), controls: Sequence[str] = (),
              acf_space: str | None = None, acf_pool: int = config.sweep.TUNE_ACF_POOL,
              acf_generations: int = config.sweep.TUNE_ACF_GENERATIONS) -> "TuneSpace":
        """`--space names,ptxas,options,acf,acf-search`: the axes to search (the others stay at plain's value).
        The ptxas axis is `ptxas` (versions or paths, as after `@`) or, when empty, the newest ptxas found besides
        the capture's; the acf axis is the control files `controls`; the acf-search axis searches the CompileIQ
        space `acf_space` with the one ptxas `ptxas`."""
        chosen = {a.strip() for a in axes.split(",") if a.strip()}
        unknown = chosen - {"names", "ptxas", "options", "acf", ACF_SEARCH}
        if unknown or not chosen:
            raise TritonhookError(f"--space {axes!r}: give some of names, ptxas, options, acf, {ACF_SEARCH}")
        if "acf" in chosen and not controls:
            raise TritonhookError("--space acf: give the control files to try with --acf FILE[,FILE]")
        if (ACF_SEARCH in chosen) != (acf_space is not None):
            raise TritonhookError(f"--space {ACF_SEARCH}: give CompileIQ's search-space file with --acf-space "
                                  f"SPACE.bin" if acf_space is None else
                                  f"--acf-space {acf_space}: add {ACF_SEARCH} to --space to search it")
        return cls(names=cls.names if "names" in chosen else (PLAIN,),
                   ptxas=(None, *(ptxas or _newest_other_ptxas())) if "ptxas" in chosen else (None,),
                   options=cls.options if "options" in chosen else ((),),
                   controls=(None, *controls) if "acf" in chosen else (None,),
                   acf_search=AcfSearch.checked(acf_space, ptxas, acf_pool, acf_generations)
                   if ACF_SEARCH in chosen else None)

    def candidates(self) -> list[Variant]:
        """Every combination but plain, as variants of the grammar (`measure.variants`): each spec is checked there,
        a control file against its ptxas included (a combination that ptxas cannot read is left out)."""
        found = []
        combos = sorted(itertools.product(self.names, self.ptxas, self.options, self.controls),
                        key=lambda c: (c[0] != PLAIN) + (c[1] is not None) + bool(c[2]) + (c[3] is not None))
        for name, ptxas, options, controls in combos:  # one axis changed first: what a small budget should try
            spec = name + (f"@{ptxas}" if ptxas else "") + "".join(f"+opt:{o}" for o in options)
            spec += f"+acf:{controls}" if controls else ""
            if spec == PLAIN:
                continue
            try:
                found.append(parse_variant(spec))
            except TritonhookError:
                if controls is None:
                    raise
        return found


def _newest_other_ptxas() -> list[str]:
    """The newest ptxas `binaries.find_ptxas` knows, as a path: a second compiler to try beside the capture's."""
    found = binaries.one_per_version(binaries.find_ptxas())
    newest = max(found, key=lambda b: b.release, default=None)
    return [newest.path] if newest else []


@dataclasses.dataclass
class Trial:
    """One candidate on one kernel: its ratio to plain with the interval, the verdict, and its outputs against
    plain's spread; `outcome` sorts it for the counts (faster, slower, no difference, identical, wrong, and the
    build failures: error, crashed, hung, unsupported)."""

    label: str
    outcome: str
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    outputs: str = "-"
    text_sha256: str | None = None     # of its kernel's .text: a candidate equal to an earlier one is "identical"
    axis: str | None = None            # ACF_SEARCH for the control files CompileIQ proposed, None for the space's
    pool: int | None = None            # which of its kernel's acf-search pools (0 first)

    @property
    def score(self) -> float | None:
        """What the acf-search engine is told: the time ratio to plain (lower is better); None when it failed to
        build, faulted, was not timed, or changed the outputs beyond plain's spread."""
        return None if self.outcome == "wrong" else self.ratio


@dataclasses.dataclass
class KernelTune:
    """The search on one kernel signature and its confirmation: the winner (None: nothing beat plain) against plain
    and against `cutlass_`, each (ratio, low, high, verdict) from the confirming replay; `why` what changed in its
    cubin (`cubin.CubinDelta`)."""

    signature: int
    kernel: str
    label: str
    share: float | None
    trials: list[Trial] = dataclasses.field(default_factory=list)
    winner: str | None = None
    searched: dict | None = None       # the winner's ratio in the search (biased: the best of many)
    vs_plain: dict | None = None
    vs_cutlass: dict | None = None
    why: str = ""
    status: str = "ok"

    @property
    def counts(self) -> dict[str, int]:
        counted: dict[str, int] = {}
        for trial in self.trials:
            counted[trial.outcome] = counted.get(trial.outcome, 0) + 1
        return counted

    @property
    def confirmed(self) -> bool:
        return bool(self.vs_plain and self.vs_plain["verdict"] == "faster")


@dataclasses.dataclass
class TuneResult:
    kernels: list[KernelTune]
    recording_id: int | None
    space: dict
    rounds: int
    confirm_rounds: int
    times_s: dict[str, float]
    gpus: int = 1
    skipped: int = 0                   # candidates the budget left untried
    warnings: list[str] = dataclasses.field(default_factory=list)
    id: int | None = None
    warning_prefix = "tritonhook tune"

    @property
    def timed(self) -> int:
        return sum(1 for k in self.kernels for t in k.trials if t.ratio is not None)

    @property
    def candidates_per_minute_per_gpu(self) -> float | None:
        """Timed candidates (a kernel x a variant) per minute of the search's replays, per GPU."""
        replay_s = self.times_s.get("search")
        return self.timed / (replay_s / 60) / self.gpus if replay_s else None

    def totals(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for kernel in self.kernels:
            for outcome, n in kernel.counts.items():
                total[outcome] = total.get(outcome, 0) + n
        return total

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["totals"], data["candidates_per_minute_per_gpu"] = self.totals(), self.candidates_per_minute_per_gpu
        return data

    @classmethod
    def from_json(cls, data: dict, *, source: str = "tune result") -> "TuneResult":
        try:
            kernels = [KernelTune(**{**k, "trials": [Trial(**t) for t in k["trials"]]}) for k in data["kernels"]]
            fields = {f.name for f in dataclasses.fields(cls)} - {"kernels"}
            return cls(kernels=kernels, **{k: v for k, v in data.items() if k in fields})
        except (KeyError, TypeError) as exc:
            raise TritonhookError(f"{source}: malformed tune result ({exc})") from None

    def __rich_console__(self, console, options):
        columns = ["kernel", "share", "best variant", "vs plain", "vs cutlass_", "searched", "why",
                   "tried", "faster", "wrong", "failed"]
        rows = []
        for k in self.kernels:
            counts = k.counts
            failed = sum(counts.get(cause, 0) for cause in binaries.CAUSES)
            best = (k.winner + ("" if k.confirmed else " (not confirmed)")) if k.winner else "-"
            rows.append([k.label, format.share(k.share), best if k.status == "ok" or k.winner else k.status,
                         _ratio_cell(k.vs_plain), _ratio_cell(k.vs_cutlass), _ratio_cell(k.searched), k.why or "-",
                         str(len(k.trials)), str(counts.get("faster", 0)), str(counts.get("wrong", 0)),
                         str(failed)])
        yield format.table(columns, rows, title=f"tritonhook tune: {len(self.kernels)} kernel signature(s), "
                                                f"{self.rounds} rounds a candidate, {self.confirm_rounds} to confirm")
        totals = ", ".join(f"{outcome} {n}" for outcome, n in sorted(self.totals().items()))
        rate = self.candidates_per_minute_per_gpu
        split = ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in self.times_s.items())
        yield format.line(f"candidates: {totals or 'none'}" + (f"; {self.skipped} left untried by the budget"
                                                               if self.skipped else ""))
        yield format.line(f"time: {split}" + (f"; {rate:.1f} candidates a minute per GPU" if rate else ""))
        if searched := self.space.get(ACF_SEARCH):
            yield format.line(f"{ACF_SEARCH} ({searched['space']}, ptxas {searched['ptxas_version']}): " + "; ".join(
                f"{name} {len(k['candidates'])} in {k['pools']} pools, generation {k['generation']} of "
                f"{searched['generations']} ({k['stopped']})" for name, k in searched["kernels"].items()))


def _ratio_cell(figures: dict | None) -> str:
    if not figures:
        return "-"
    return f"{figures['ratio']:.3f} [{figures['low']:.3f}, {figures['high']:.3f}] {figures['verdict']}"


register_result_kind(ResultKind(RESULT_KIND, TuneResult.from_json, source="recording_id"))


def parse_budget(text: str | None) -> tuple[int | None, float | None]:
    """`--budget 40` (candidates) or `--budget 20m` (minutes of search) -> (candidates, seconds)."""
    if text is None:
        return None, None
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(m|min)?\s*", text)
    if not match or float(match.group(1)) <= 0:
        raise TritonhookError(f"--budget {text!r}: a number of candidates (40) or of minutes (20m)")
    value = float(match.group(1))
    return (None, value * 60) if match.group(2) else (int(value), None)


def chosen_kernels(recording: Recording, *, share: float | None, top: int | None, kernel: str | None) -> str:
    """The `--select` pattern naming the kernels to tune: `kernel` as given, else the `top` kernels by GPU time,
    else the fewest that make `share` of it."""
    if kernel is not None:
        return kernel
    ranked = select_signatures(recording, top=top, autotune_top=1)
    if top is None:
        total, covered, kept = recording.total_gpu_ms or 0.0, 0.0, []
        for signature in ranked:
            if kept and total and covered >= (share or DEFAULT_SHARE) * total:
                break
            kept.append(signature)
            covered += signature.gpu_ms
        ranked = kept
    return exact_names_pattern(sorted({s.kernel for s in ranked}))


@dataclasses.dataclass(frozen=True)
class _Replays:
    """How tune's replays run: one plan and one set of workers, the kernels or the rounds replaced per replay."""

    plan: ReplayPlan
    workers: Workers
    stages: dict[str, float] = dataclasses.field(default_factory=dict)
    """Seconds each stage of these replays took in all (build, replay, config check), summed over replays that ran
    side by side: where a search's time went, which a rate per GPU alone does not say (the builds run on the host's
    cores however many GPUs time)."""
    stages_lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, compare=False, repr=False)

    def of(self, recording: Recording, store: Store, variants: list[Variant], prebuilt=None, **changes
           ) -> SweepResult:
        swept = replay(recording, store, variants, dataclasses.replace(self.plan, **changes), workers=self.workers,
                       prebuilt=prebuilt)
        with self.stages_lock:  # a search's chunks replaying side by side add theirs from their threads
            for stage, seconds in swept.times_s.items():
                self.stages[stage] = self.stages.get(stage, 0.0) + seconds
        return swept


def tune(recording: Recording, store: Store, space: TuneSpace, *, share: float | None = None,
         top: int | None = None, kernel: str | None = None, budget: str | None = None,
         rounds: int = config.sweep.DEFAULT_ROUNDS, confirm_rounds: int = 2 * config.sweep.DEFAULT_ROUNDS,
         min_effect: float = config.ab.DEFAULT_MIN_EFFECT, progress: bool = False, gpus=None, ray=False,
         worker: Sequence[str] | None = None, l2: str = config.sweep.L2_MODES[0],
         l2_dirt: str = config.sweep.L2_DIRT[0]) -> TuneResult:
    """Search `space` on the chosen kernels of `recording`, confirm each kernel's best in a fresh replay, save the
    result in the store and return it. The space's fixed candidates go first, then the acf-search pools (the
    budget bounds both together)."""
    candidates = space.candidates()
    if not candidates and space.acf_search is None:
        raise TritonhookError("--space: nothing to search besides plain (give more than one name, ptxas, option "
                              "set or control file)")
    spent = _Budget(budget)
    pattern = chosen_kernels(recording, share=share, top=top, kernel=kernel)
    run = _Replays(ReplayPlan(kernel=pattern, autotune_top=1, rounds=rounds, min_effect=min_effect, l2=l2,
                              l2_dirt=l2_dirt, explain_misses=False),
                   Workers.at(gpus, ray, worker=worker or WORKER, progress=progress))
    plain = parse_variant(PLAIN)
    kernels: dict[int, KernelTune] = {}
    searched = {v.label: v for v in candidates}
    explored = {"candidates": [v.to_json() for v in candidates]}
    warnings = []
    with run.workers.kept() as kept:  # the search's replays share workers; the confirmation starts its own
        # the search's chunks are figures for picking winners: the confirmation explains what it keeps
        search = dataclasses.replace(run, plan=dataclasses.replace(run.plan, explain_rows=False), workers=kept,
                                     stages={})
        chunks = [candidates[start:start + CHUNK] for start in range(0, len(candidates), CHUNK)]
        chosen = select_signatures(recording, kernel=pattern, autotune_top=1)  # what each replay of `run` chooses
        with _BuildsAhead(store, chosen) as ahead:
            for swept in _search_chunks(recording, store, search, chunks, plain, ahead, spent, progress):
                _add_trials(kernels, swept)
        search.stages["builds in all"] = ahead.built_s
        if space.acf_search is not None and not spent.left(1):
            warnings.append(f"the budget ({budget}) was spent before {ACF_SEARCH} began")
        elif space.acf_search is not None:
            names = [s.kernel for s in chosen]
            explored[ACF_SEARCH] = _search_controls(recording, store, space.acf_search, list(dict.fromkeys(names)),
                                                    kernels, search, spent, searched, warnings)
    tried = spent.tried
    result = TuneResult(sorted(kernels.values(), key=lambda k: -(k.share or 0)), recording.id, explored, rounds,
                        confirm_rounds, {"search": time.time() - spent.began,
                                         **{f"search {stage}": seconds for stage, seconds in search.stages.items()}},
                        gpus=_gpu_count(gpus),
                        skipped=len(candidates) - tried, warnings=warnings)
    _pick_winners(result.kernels)
    began = time.time()
    try:
        _confirm(recording, store, result.kernels, searched, run, confirm_rounds, min_effect)
    except TritonhookError as exc:  # the search's figures are kept, and say they were not confirmed
        result.warnings.append(f"the winners could not be timed again: {exc}")
    result.times_s["confirm"] = time.time() - began
    if result.skipped:
        result.warnings.append(f"the budget ({budget}) left {result.skipped} of {len(candidates)} candidates untried")
    result.id = store.add_result(RESULT_KIND, result.to_json())
    return result


def _search_chunks(recording: Recording, store: Store, search: _Replays, chunks: list[list[Variant]], plain: Variant,
                   ahead: _BuildsAhead, spent: _Budget, progress: bool) -> list[SweepResult]:
    """The fixed candidates' chunks replayed, each with plain; their results in chunk order (an earlier chunk's
    candidate is the one a later identical build is counted "identical" to). With several local GPUs, as many chunks
    replay side by side over the same workers (`schedule.WorkerPool` hands a GPU's worker out a signature at a
    time): one after the other, each chunk ended with all GPUs but one waiting for its slowest signature, and then
    for its results to be kept (`tune` on 2 GPUs timed 1.39x the candidates a minute of 1 on a 32-second search:
    docs/variants.md#tune). The budget is spent as a chunk starts. The search's "replay" is then the chunks'
    replays' seconds summed (more than the stage's own when they ran side by side), and its "replay idle" the
    GPU-seconds of the stage that replayed nothing."""
    side_by_side = 1 if search.workers.ray is not False else len(search.workers.devices)
    quiet = dataclasses.replace(search, workers=dataclasses.replace(search.workers, progress=False))  # one bar
    began = time.time()
    with format.progress(progress, len(chunks), "search") as step, \
            concurrent.futures.ThreadPoolExecutor(max_workers=side_by_side) as pool:
        running, done = {}, {}
        for at, whole in enumerate(chunks):
            if not (chunk := whole[:spent.left(CHUNK)]):
                break
            if len(running) == side_by_side:
                finished = next(concurrent.futures.as_completed(running))
                done[running.pop(finished)] = finished.result()
                step(f"chunk {len(done)}")
            prebuilt = ahead.take([plain, *chunk])
            spent.spend(len(chunk))
            if at + 1 < len(chunks) and (following := chunks[at + 1][:spent.left(CHUNK)]):
                ahead.start([plain, *following])
            running[pool.submit(quiet.of, recording, store, [plain, *chunk], prebuilt=prebuilt)] = at
        for finished in concurrent.futures.as_completed(running):
            done[running[finished]] = finished.result()
            step(f"chunk {len(done)}")
    stages = search.stages
    if "replay idle" in stages:  # each chunk's GPU-seconds replaying: its workers' seconds less their idle ones
        busy = side_by_side * stages["replay"] - stages["replay idle"]
        stages["replay idle"] = max(0.0, side_by_side * (time.time() - began) - busy)
    return [done[at] for at in sorted(done)]


class _Budget:
    """`--budget` as the search spends it: candidates tried so far and the time since the search began."""

    def __init__(self, text: str | None):
        self.max_candidates, self.max_seconds = parse_budget(text)
        self.began, self.tried = time.time(), 0

    def left(self, wanted: int) -> int:
        """How many of `wanted` candidates may still be tried (0: the budget is spent)."""
        if self.max_seconds is not None and time.time() - self.began >= self.max_seconds:
            return 0
        return wanted if self.max_candidates is None else max(0, min(wanted, self.max_candidates - self.tried))

    def spend(self, tried: int) -> None:
        self.tried += tried


class _BuildsAhead:
    """The search's chunks built one ahead: while a chunk replays on the GPUs, the next one's variants are assembled
    on the host's cores (ptxas). One after the other, the builds were a share of the search that more GPUs could not
    take (`tune` on 2 GPUs timed 1.68x the candidates a minute of 1: docs/variants.md#tune). `chosen`: the
    signatures each replay of the search chooses. `built_s`: the builds' own seconds in all."""

    def __init__(self, store: Store, chosen: list[Signature]):
        self.store, self.built_s = store, 0.0
        self.captures = [s.capture_id for s in chosen if s.replayable is None and s.capture_id is not None]
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self.pending: dict[tuple[str, ...], concurrent.futures.Future] = {}

    def __enter__(self) -> "_BuildsAhead":
        return self

    def __exit__(self, *exc) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)  # a chunk the budget stopped before: not built

    def start(self, variants: list[Variant]) -> None:
        """Begin building `variants` (plain and a chunk) for every chosen capture."""
        self.pending[tuple(v.label for v in variants)] = self.pool.submit(self._build, variants)

    def take(self, variants: list[Variant]):
        """`replay`'s `prebuilt` for `variants`: built ahead where `start` asked for them, else built now; the
        replay waits for them (its "build" time: what was not built ahead)."""
        future = self.pending.pop(tuple(v.label for v in variants), None) or self.pool.submit(self._build, variants)
        return lambda signature: future.result()[signature.capture_id]

    def _build(self, variants: list[Variant]) -> dict:
        began = time.time()
        try:
            return build_captures(self.store, self.captures, variants)
        finally:
            self.built_s += time.time() - began


def _search_controls(recording: Recording, store: Store, search: AcfSearch, names: list[str],
                     kernels: dict[int, KernelTune], run: _Replays, spent: _Budget, searched: dict[str, Variant],
                     warnings: list[str]) -> dict:
    """The acf-search axis: one CompileIQ engine per kernel name, served in turn a pool at a time while the budget
    lasts. Each pool's control files are written under the run's work folder in the store (kept: a winner's file is
    what `acf:FILE` reuses), built by `search.ptxas`, timed beside plain in chunks of `CHUNK` (a replay of that
    kernel alone), and every candidate's score (`Trial.score`, over the kernel's signatures weighted by their share
    of GPU time) told back before the next pool is asked. Returns what the result keeps of it: per kernel the
    candidates, the generations reached, why it stopped and the engine's own record of the scores it was told."""
    work = store.run_folder("tune") / ACF_SEARCH
    plain = parse_variant(PLAIN)
    engines = {name: tune_space.ControlFileSearch(search.space, pool_size=search.pool,
                                                  generations=search.generations) for name in names}
    kept = {name: {"candidates": [], "pools": 0} for name in names}
    try:
        live = list(names)
        while live and spent.left(1):
            for name in list(live):
                pool = engines[name].ask()
                if not pool:
                    live.remove(name)
                    continue
                number, variants = kept[name]["pools"], []
                for index, acf in enumerate(pool):
                    path = work / file_name(name) / f"pool{number}-{index}.acf"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(acf)
                    variants.append(parse_variant(f"{PLAIN}@{search.ptxas}+acf:{path}"))
                kept[name]["pools"] += 1
                scores = []
                for start in range(0, len(variants), CHUNK):
                    chunk = variants[start:start + CHUNK][:spent.left(CHUNK)]
                    if not chunk:
                        break
                    swept = run.of(recording, store, [plain, *chunk], kernel=exact_names_pattern([name]))
                    _add_trials(kernels, swept, axis=ACF_SEARCH, pool=number)
                    scores += [_score(kernels, swept, variant.label) for variant in chunk]
                    spent.spend(len(chunk))
                engines[name].tell(scores)
                for variant in variants[:len(scores)]:
                    searched[variant.label] = variant
                    kept[name]["candidates"].append(variant.to_json())
                if len(scores) < len(variants) or not spent.left(1):
                    break
    finally:
        for name, engine in engines.items():
            kept[name].update(generation=engine.generation, stopped=engine.stopped or "the budget",
                              engine=engine.record())
            engine.close()
            if engine.stopped is None or engine.stopped.startswith("no candidate"):
                warnings.append(f"{ACF_SEARCH} of {name} stopped at generation {engine.generation} of "
                                f"{search.generations}: {kept[name]['stopped']}")
    return {"space": search.space, "space_sha256": hashlib.sha256(Path(search.space).read_bytes()).hexdigest(),
            "ptxas": search.ptxas, "ptxas_version": binaries.ptxas_version(search.ptxas), "pool": search.pool,
            "generations": search.generations, "work": str(work), "kernels": kept}


def _score(kernels: dict[int, KernelTune], swept: SweepResult, label: str) -> float | None:
    """A candidate's score on the kernel `swept` replayed: its `Trial.score` on each signature, weighted by the
    signature's share of GPU time (the kernel's whole time under it, relative to plain's); None if it failed on
    any."""
    total = weights = 0.0
    for row in swept.rows:
        trial = next((t for t in reversed(kernels[row.signature].trials) if t.label == label), None)
        if trial is None or trial.score is None:
            return None
        weight = row.share or 1.0
        total, weights = total + weight * trial.score, weights + weight
    return total / weights if weights else None


def _gpu_count(gpus) -> int:
    from .schedule import resolve_gpus

    return max(1, len([d for d in resolve_gpus(gpus) if d is not None])) if gpus else 1


def _add_trials(kernels: dict[int, KernelTune], swept: SweepResult, *, axis: str | None = None,
                pool: int | None = None) -> None:
    for row in swept.rows:
        tuned = kernels.setdefault(row.signature, KernelTune(row.signature, row.kernel, row.label, row.share))
        if row.status != "ok":
            tuned.trials += [Trial(v.label, "fault", axis=axis, pool=pool)
                             for v in row.variants[1:]] if row.variants else []
            tuned.status = row.status
            continue
        verdicts = ((row.output_check or {}).get("variants") or {})
        seen = {t.text_sha256 for t in tuned.trials} | {row.variants[0].facts.get("text_sha256")}
        for timing in row.variants[1:]:
            trial = _trial(timing, verdicts.get(timing.label, {}).get("verdict", row.outputs))
            trial.axis, trial.pool = axis, pool
            if trial.text_sha256 in seen - {None} and trial.outcome not in binaries.CAUSES:
                trial.outcome = "identical"  # the same SASS as plain or as a candidate of an earlier replay
            seen.add(trial.text_sha256)
            tuned.trials.append(trial)


def _trial(timing: VariantTiming, outputs: str) -> Trial:
    cause = timing.facts.get("build_failed")
    if cause:
        outcome = cause if cause in binaries.CAUSES else "error"
    elif timing.verdict == IDENTICAL:
        outcome = "identical"
    elif outputs not in OK_OUTPUTS:
        outcome = "wrong"
    else:
        outcome = timing.verdict if timing.ratio is not None else "untimed"
    return Trial(timing.label, outcome, timing.ratio, timing.low, timing.high, outputs,
                 timing.facts.get("text_sha256"))


def _pick_winners(kernels: list[KernelTune]) -> None:
    """Each kernel's fastest candidate among those faster than plain beyond the interval, outputs unchanged."""
    for tuned in kernels:
        faster = [t for t in tuned.trials if t.outcome == "faster"]
        if faster:
            best = min(faster, key=lambda t: t.ratio)
            tuned.winner = best.label
            tuned.searched = {"ratio": best.ratio, "low": best.low, "high": best.high, "verdict": best.outcome}


def _confirm(recording: Recording, store: Store, kernels: list[KernelTune], searched: dict[str, Variant],
             run: _Replays, rounds: int, min_effect: float) -> None:
    """Time every winner again beside plain and `cutlass_`, in one fresh replay of the kernels that have one.
    `searched`: the candidates by label (the winners are those variants, not their labels parsed again: a label
    names a ptxas by version, which another ptxas of that version could answer)."""
    winners = [k for k in kernels if k.winner]
    if not winners:
        return
    variants = list({v.label: v for v in [parse_variant(PLAIN), parse_variant(DEFAULT_PREFIX),
                                          *(searched[k.winner] for k in winners)]}.values())
    swept = run.of(recording, store, variants, kernel=exact_names_pattern(sorted({k.kernel for k in winners})),
                   rounds=rounds)
    rows = {row.signature: row for row in swept.rows}
    for tuned in winners:
        row = rows.get(tuned.signature)
        timings = {v.label: v for v in (row.variants if row is not None and row.status == "ok" else [])}
        own, plain, cutlass = (timings.get(label) for label in (tuned.winner, PLAIN, DEFAULT_PREFIX))
        tuned.vs_plain = _against(plain, own, min_effect)
        tuned.vs_cutlass = _against(cutlass, own, min_effect)
        tuned.why = ((own.why or {}).get("text", "") if own else "") or ""
        if tuned.vs_plain is None:
            tuned.status = row.status if row is not None and row.status != "ok" else "not confirmed: not timed"


def _against(base: VariantTiming | None, own: VariantTiming | None, min_effect: float) -> dict | None:
    if base is None or own is None or not base.samples or not own.samples:
        return None
    if base is own:
        return {"ratio": 1.0, "low": 1.0, "high": 1.0, "verdict": "no difference"}
    ratio, low, high = ratio_interval(base.samples, own.samples)
    return {"ratio": ratio, "low": low, "high": high,
            "verdict": verdict(ratio, low, high, min_effect, baseline_ms=median(base.samples))}


__all__ = ["ACF_SEARCH", "CHUNK", "DEFAULT_SHARE", "OPTION_SETS", "RESULT_KIND", "AcfSearch", "KernelTune", "Trial",
           "TuneResult", "TuneSpace", "chosen_kernels", "parse_budget", "tune"]
