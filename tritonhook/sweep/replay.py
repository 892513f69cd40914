"""Replaying a recording: build each signature's variants, time them in worker processes (on one GPU, every
local GPU or a Ray cluster: `schedule.py`), collect a `SweepResult` (saved in the store as a "sweep" result)."""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import dataclasses
import functools
import os
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator, Sequence

from .. import config, format
from ..errors import TritonhookError
from ..files import file_name
from ..binaries import CAUSES
from ..measure.sequential import SEQUENCE_MIN_ROUNDS, StopRule
from ..measure.stats import median, min_effect_at
from ..measure.variants import Variant, config_of_label
from ..rename import compile_select
from ..store import ResultKind, Store, register_result_kind
from .autotune import analyze_group, autotune_groups, config_text, regrets_at_shared_keys
from .fusion import template_fusions
from .recording import PARTLY_SYNTHETIC, SYNTHETIC, Recording, Signature, synthetic_tensors
from .misses import ZEROS_FILLED, check_conditions, miss_reason, missed_rows
from .result import RESULT_KIND, SweepResult, SweepRow, analyze_row, explain
from .schedule import WORKER, WorkerPool, resolve_gpus, run_on_ray, run_workers
from .builds import BuiltVariant, build_variants, with_extra_ptxas
from .job import ReplayJob
from .l2probe import replayed_dirt

SIGNATURE_KIND = "sweep-signature"
"""The kind each signature's replay result is kept under in the store as it arrives (see `_journal`): a plain
record, found by its recording."""
register_result_kind(ResultKind(SIGNATURE_KIND, source="recording"))
MIN_REPS = 10
"""Per round and variant: the fewest timed calls (their span: `config.sweep.REPLAY_REP_MS`, the warm-up a quarter
of it)."""


def select_signatures(recording: Recording, *, kernel: str | None = None, top: int | None = None,
                      autotune_top: int | None = None) -> list[Signature]:
    """The signatures to replay: those whose kernel name matches `kernel` (a regex), the `top` by GPU time. An
    autotune decision counts as one, with its group's GPU time, and brings its `autotune_top` candidates fastest
    by the autotuner's own benchmark (default all) and its workload winner. What the workload itself never launched
    is left out: a kernel launched only while Inductor compiled, a compile-time decision whose benchmark kernels the
    workload does not run (it runs the template the choice emitted: `compile_time_warning` says so)."""
    pattern = compile_select(kernel) if kernel is not None else None
    units = [([s], s.gpu_ms) for s in recording.signatures if s.autotune is None and s.launches]
    units += [(g.to_replay(autotune_top), g.gpu_ms) for g in autotune_groups(recording)
              if any(s.launches for s in g.candidates)]
    units = [(members, gpu_ms) for members, gpu_ms in units if pattern is None or pattern.search(members[0].kernel)]
    units.sort(key=lambda unit: unit[1], reverse=True)
    return [s for members, _ in (units[:top] if top else units) for s in members]


@dataclasses.dataclass(frozen=True)
class ReplayPlan:
    """What a replay times, and by which rule; checked when made, so that bad input is one line before anything
    is built.

    `kernel` (a regex of kernel names) and `top` (the signatures making most of the GPU time; an autotune decision
    counts as one) choose the signatures, `autotune_top` how many of a decision's candidates (the fastest by the
    autotuner's own benchmark, plus the config the workload ran; default all). `rounds` is the cap of each
    signature's rounds, which stop once its always-valid intervals have decided (`measure.sequential.StopRule`: rows
    and autotune candidates each their own precision); `fixed_rounds`: every signature times `rounds` rounds.
    `min_effect`: the smallest change a verdict reports. `explain_misses`: the rows outside the fidelity bar are
    replayed again to say why (`config.sweep.SWEEP_EXPLAIN_MISSES` can turn it off everywhere). Off where a
    replay's figures are ratios inside it and its fidelity is never read: `tune` (which would replay plain's misses
    again at every chunk of candidates), the gate, `upgrade` and `bisect` (again at every release or commit).
    `explain_rows`: what changed in each timed variant's cubin (`result.explain`, a disassembly of each); off for
    `tune`'s search chunks, whose winners the confirming replay explains.

    `l2` (`config.sweep.L2_MODES`): "measured", the default (inputs rotated, and the parts of each buffer the
    recording's L2 probe found in L2 inside the workload read into L2 just before each call; `l2probe`; signatures
    without a probe replay cold, with a warning saying why), "cold" (the A/B timer's rule: inputs rotated through
    copies spanning 4x the L2, every call reads DRAM), "warm" (one input set: each call finds in L2 what the
    previous call read and wrote) or "inputs" (rotated, and the buffers the kernel only reads are read into L2 just
    before each call, as a kernel finds what the kernel before it wrote;
    docs/sweep_fidelity.md#the-l2-state-of-a-replay). `l2_dirt` (`config.sweep.L2_DIRT`): how the L2's lines are
    left before each call, first, except under "warm": a kernel inside a workload evicts lines that earlier kernels
    wrote, and pays for each dirty one (docs/sweep_fidelity.md#a-dirty-l2)."""

    kernel: str | None = None
    top: int | None = None
    autotune_top: int | None = config.sweep.AUTOTUNE_TOP
    rounds: int = config.sweep.DEFAULT_ROUNDS
    fixed_rounds: bool = False
    min_effect: float = config.ab.DEFAULT_MIN_EFFECT
    l2: str = config.sweep.L2_MODES[0]
    l2_dirt: str = config.sweep.L2_DIRT[0]
    explain_misses: bool = True
    explain_rows: bool = True

    def __post_init__(self) -> None:
        if self.l2 not in config.sweep.L2_MODES:
            raise TritonhookError(f"--l2 {self.l2}: one of {', '.join(config.sweep.L2_MODES)}")
        if self.l2_dirt not in config.sweep.L2_DIRT:
            raise TritonhookError(f"--l2-dirt {self.l2_dirt}: one of {', '.join(config.sweep.L2_DIRT)}")
        if self.rounds < config.ab.MIN_ROUNDS:
            raise TritonhookError(f"--rounds {self.rounds}: at least {config.ab.MIN_ROUNDS} (fewer give no usable "
                                  f"interval)")
        if not self.fixed_rounds and self.rounds < SEQUENCE_MIN_ROUNDS:
            raise TritonhookError(f"--rounds {self.rounds}: adaptive rounds decide nothing before "
                                  f"{SEQUENCE_MIN_ROUNDS} (the always-valid interval); give at least "
                                  f"{SEQUENCE_MIN_ROUNDS}, or --fixed-rounds")
        if self.autotune_top is not None and self.autotune_top < 1:
            raise TritonhookError(f"--autotune-top {self.autotune_top}: at least 1")


def replay(recording: Recording, store: Store, variants: Sequence[Variant], plan: ReplayPlan = ReplayPlan(), *,
           workers: Workers | None = None, ptxas: Sequence[str] = (), record_s: float | None = None,
           prebuilt: Callable[[Signature], dict[str, BuiltVariant] | str] | None = None) -> SweepResult:
    """Replay the signatures `plan` chooses in `recording` for every variant (x every extra ptxas), save and return
    the result. A signature that cannot be built or replayed is reported in its row; the others go on. The
    candidates of an autotune decision are replayed each and shown as one row (`autotune.analyze_group`).

    `workers`: where (default one worker on this process's GPU: `Workers.at`). `prebuilt(signature)`: its variants
    by label (the first the baseline), built elsewhere (`upgrade`'s cells), or why there are none; `variants` and
    `ptxas` are then not built. `record_s`: how long the recording took, for the result's time split. Its stages
    (the replay, the config check, the miss check) share their workers (`Workers.kept`)."""
    with (workers or Workers.at()).kept() as kept:
        return _replay(recording, store, variants, plan, kept, ptxas, record_s, prebuilt)


def _replay(recording: Recording, store: Store, variants: Sequence[Variant], plan: ReplayPlan, workers: Workers,
            ptxas: Sequence[str], record_s: float | None,
            prebuilt: Callable[[Signature], dict[str, BuiltVariant] | str] | None) -> SweepResult:
    """`replay`, on workers kept for its stages."""
    l2, rounds, min_effect = plan.l2, plan.rounds, plan.min_effect
    dirt_of = functools.partial(_dirt, rule=plan.l2_dirt)
    l2_dirt = dirt_of(l2)
    chosen = select_signatures(recording, kernel=plan.kernel, top=plan.top, autotune_top=plan.autotune_top)
    if not chosen:
        raise TritonhookError(f"recording {recording.id}: no signature matches" +
                              (f" --kernel {plan.kernel}" if plan.kernel else ""))
    rows = {s.id: SweepRow(s.id, s.kernel, s.label(), recording.share(s), s.launches, s.time_per_launch_ms,
                           s.inputs, "ok", **_recorded_context(s)) for s in chosen}
    variants = with_extra_ptxas(variants, ptxas)
    began = time.time()
    built = build_all(store, chosen, variants, rows, prebuilt, progress=workers.progress)
    build_s = time.time() - began
    labels = next((list(b) for b in built.values()), [v.label for v in variants])
    busy, journal = [], _journal(store, recording)

    def arrived(record: dict) -> None:
        busy.append(record.get("worker_s") or 0.0)
        journal(record)

    began = time.time()
    samples = time_signatures(recording, store, [s for s in chosen if s.id in built], built, rows, workers,
                              rounds=rounds, l2=l2, l2_dirt=l2_dirt, min_effect=min_effect, arrived=arrived,
                              adaptive=not plan.fixed_rounds)
    replay_s = time.time() - began
    times = {"record": record_s, "build": build_s, "replay": replay_s}
    if workers.ray is False:  # local workers, one a GPU: what they were not replaying (starting, or out of work)
        times["replay idle"] = max(0.0, len(workers.devices) * replay_s - sum(busy))
    shown, candidates = _fold_autotune_groups(recording, rows, samples, labels, min_effect)
    began = time.time()
    if plan.explain_rows:  # the rows shown; the autotune candidates' (JSON only) would cost a disassembly each
        explain(shown, built)
        times["explain"] = time.time() - began
    began = time.time()
    if _compare_configs(recording, store, shown, built, workers, l2, l2_dirt, min_effect):
        times["config check"] = time.time() - began
    regrets_at_shared_keys(shown, recording)
    if plan.explain_misses and config.sweep.SWEEP_EXPLAIN_MISSES.get():
        began = time.time()
        _explain_misses(recording, store, shown, built, workers, l2, dirt_of)
        times["miss check"] = time.time() - began
    result = SweepResult(shown, labels, rounds, recording.id, recording.command,
                         {k: v for k, v in times.items() if v is not None}, min_effect,
                         candidates=candidates, l2=l2, l2_dirt=l2_dirt,
                         fusions=[fusion.to_json() for fusion in template_fusions(recording.autotune)],
                         fusion_near_tie=config.sweep.FUSION_NEAR_TIE.get()).finish()
    replayed = result.rows + candidates
    if recording.sample_every > 1:
        result.warnings.append(f"recorded with --sample {recording.sample_every}: launch counts, shares and the "
                               f"workload estimate rest on estimated counts per signature")
    if l2 == "measured" and (warning := unprobed_warning(recording, chosen)):
        result.warnings.append(warning)
    if warning := synthetic_warning(recording, chosen):
        result.warnings.append(warning)
    if warning := failed_builds_warning(built):
        result.warnings.append(warning)
    if warning := compile_time_warning(recording):
        result.warnings.append(warning)
    if warning := mixed_ptxas_warning(recording, store):
        result.warnings.append(warning)
    result.warnings += [f"{row.label}: {row.status}" for row in replayed if row.status != "ok"]
    result.warnings += [f"{row.label}: replayed again on {row.replayed_on} after its worker died ({row.retried_after})"
                        for row in replayed if row.retried_after and row.status == "ok"]
    result.id = store.add_result(RESULT_KIND, result.to_json())
    return result


@dataclasses.dataclass(frozen=True)
class Workers:
    """Where signatures are timed: one worker per entry of `devices` (a CUDA_VISIBLE_DEVICES value; None: this
    process's GPU), or Ray tasks (`ray`: True or an address; `ray_task`: other resources per task); `program`: the
    worker program (`schedule.WORKER`, replaced in tests of the scheduling)."""

    devices: list
    ray: str | bool = False
    ray_task: dict | None = None
    program: tuple = WORKER
    progress: bool = False
    pool: WorkerPool | None = None  # set by `kept`

    @classmethod
    def at(cls, gpus: str | Sequence[int] | None = None, ray: str | bool = False, ray_task: dict | None = None, *,
           worker: Sequence[str] = WORKER, progress: bool = False) -> "Workers":
        """Where a replay runs: one worker on this process's GPU; `gpus` "all" or indices: one worker per local GPU;
        `ray` True (the cluster this machine belongs to, else a new local one) or an address: Ray tasks of one GPU
        each (`ray_task`: other Ray resources per task). `worker` replaces the worker program in tests of the
        scheduling only."""
        if ray is not False and gpus is not None:
            raise TritonhookError("--gpus and --ray: give one (Ray decides which GPU runs what)")
        return cls(resolve_gpus(gpus), ray, ray_task, tuple(worker), progress)

    @contextlib.contextmanager
    def kept(self) -> Iterator["Workers"]:
        """These workers, kept from one job to the next inside the block (`schedule.WorkerPool`): the stages of
        one replay start their workers once (inside a block already keeping them: its workers). A Ray replay's
        tasks start their own."""
        if self.pool is not None:
            yield self
            return
        pool = WorkerPool()
        try:
            yield dataclasses.replace(self, pool=pool)
        finally:
            pool.close()

    def run(self, work: Path, job: ReplayJob, store: Store, arrived: Callable[[dict], None]) -> dict[int, dict]:
        if self.ray is not False:
            return run_on_ray(work, job, store, address=None if self.ray is True else self.ray,
                              progress=self.progress, worker=self.program, task=self.ray_task, arrived=arrived)
        return run_workers(work, job, self.devices, progress=self.progress, worker=self.program, arrived=arrived,
                           pool=self.pool)


def time_signatures(recording: Recording, store: Store, signatures: list[Signature],
                    built: dict[int, dict[str, BuiltVariant]], rows: dict[int, SweepRow], workers: Workers, *,
                    rounds: int, l2: str, l2_dirt: str, min_effect: float = config.ab.DEFAULT_MIN_EFFECT,
                    arrived: Callable[[dict], None] = lambda record: None,
                    launches: dict[int, dict[str, Signature]] | None = None, adaptive: bool = False,
                    synthetic_fill: str = config.sweep.SYNTHETIC_FILLS[0]) -> dict[int, dict[str, list[float]]]:
    """Time `built`'s variants of each signature (`rows`: theirs, by id, filled here: status, outputs, the
    variants' times, ratios and verdicts, the launch lead and the SM clock); the per-round samples by signature
    and label of those that replayed. `launches[signature id][label]`: a variant that is another autotune
    config's build, launched as that config's signature launched it (its grid) on this signature's inputs.
    `adaptive`: `rounds` is a cap (`stop_rule`); else every signature times `rounds` rounds. `synthetic_fill`:
    what float tensors beyond the snapshot budget hold (`config.sweep.SYNTHETIC_FILLS`)."""
    rules = {s.id: stop_rule(s, rounds, min_effect) for s in signatures} if adaptive else {}
    with tempfile.TemporaryDirectory(prefix="tritonhook-sweep-") as work:
        job = replay_job(Path(work), recording, store, signatures, built, launches or {}, rules, rounds=rounds, l2=l2,
                         l2_dirt=l2_dirt, synthetic_fill=synthetic_fill)
        results = workers.run(Path(work), job, store, arrived)
    samples: dict[int, dict[str, list[float]]] = {}
    for signature in signatures:
        outcome = results.get(signature.id, {"status": "error", "message": "not replayed"})
        row = rows[signature.id]
        row.replayed_on, row.retried_after = outcome.get("where", ""), outcome.get("retried_after", "")
        if outcome["status"] != "ok":
            row.status = f"{outcome['status']}: {outcome.get('message', '')}"
            row.detail = outcome.get("traceback", "")
            continue
        row.outputs, row.output_check = outcome["outputs"], outcome.get("output_check")
        samples[signature.id] = outcome["samples"]
        row.empty_ms, row.clock_mhz = outcome.get("empty_ms"), outcome.get("clock_mhz")
        row.rounds, row.stopped = outcome.get("rounds"), outcome.get("stopped")
        analyze_row(row, outcome["samples"], {label: b.facts() for label, b in built[signature.id].items()},
                    {label: b.same_text_as for label, b in built[signature.id].items() if b.same_text_as},
                    min_effect, sequential=adaptive)
        for timing in row.variants:  # not timed: its build failed (ptxas's message is in its facts)
            if cause := timing.facts.get("build_failed"):
                timing.verdict = f"build {cause}"
    return samples


WORKLOAD_CONFIG = "workload config"
"""The first arm of a config check replay; each other config's arm is labelled "config ID" (its signature id)."""


def pinnable_configs(row: SweepRow) -> list[int]:
    """The candidates of an autotuned row a decision could pin (`decisions`): its regret's config and the configs
    of its faster `config:` variants, where they are not the workload's."""
    tune = row.autotune or {}
    wanted = [(tune.get("regret") or {}).get("signature") if (tune.get("regret") or {}).get("verdict") == "faster"
              else None]
    wanted += [tune.get("winner_signatures", {}).get(v.label) for v in row.variants[1:]
               if config_of_label(v.label) and v.verdict == "faster"]
    return sorted({sid for sid in wanted if sid is not None and sid != row.signature})


def _compare_configs(recording: Recording, store: Store, rows: list[SweepRow],
                     built: dict[int, dict[str, BuiltVariant]], workers: Workers, l2: str, l2_dirt: str,
                     min_effect: float) -> bool:
    """Run each config a decision could pin (`pinnable_configs`) against the workload's config on the same inputs,
    the workload config's, interleaved: its outputs judged against the workload config's own run-to-run spread (a
    config is pinned only with its outputs kept), and a paired ratio beside the candidates' (each timed on its own
    snapshot). Sets `row.autotune["against_workload"]` (signature id -> outputs, output_check, ratio, low, high,
    verdict); False when no row has such a config."""
    by_id = {s.id: s for s in recording.signatures}
    wanted = {row.signature: (row, [sid for sid in pinnable_configs(row) if sid in built]) for row in rows
              if row.signature in built}
    wanted = {sid: pair for sid, pair in wanted.items() if pair[1]}
    if not wanted:
        return False
    baseline = lambda signature_id: next(iter(built[signature_id].values()))  # noqa: E731
    arms = {sid: {WORKLOAD_CONFIG: baseline(sid), **{f"config {other}": baseline(other) for other in others}}
            for sid, (_, others) in wanted.items()}
    signatures = [dataclasses.replace(by_id[sid], autotune=None) for sid in wanted]
    checked = {s.id: SweepRow(s.id, s.kernel, s.label(), None, s.launches, s.time_per_launch_ms, s.inputs, "ok")
               for s in signatures}
    time_signatures(recording, store, signatures, arms, checked, workers, rounds=config.sweep.CHECK_ROUNDS, l2=l2,
                    l2_dirt=l2_dirt, min_effect=min_effect,
                    launches={sid: {f"config {other}": by_id[other] for other in others}
                              for sid, (_, others) in wanted.items()})
    for sid, (row, others) in wanted.items():
        check = checked[sid]
        against = row.autotune["against_workload"] = {}
        for other in others:
            timing = next((v for v in check.variants if v.label == f"config {other}"), None)
            if check.status != "ok" or timing is None:
                against[str(other)] = {"outputs": f"not compared ({check.status})"}
                continue
            own = ((check.output_check or {}).get("variants") or {}).get(timing.label) or {}
            against[str(other)] = {"outputs": own.get("verdict", check.outputs), "output_check": own or None,
                                   "ratio": timing.ratio, "low": timing.low, "high": timing.high,
                                   "verdict": timing.verdict}
    return True


def _dirt(l2: str, rule: str) -> str:
    """How a replay under `l2` leaves the L2's lines before each call under the dirt rule `rule`
    (`config.sweep.L2_DIRT`): untouched under warm (its one input set is what each call finds in L2); the measured
    dirt only where the dirt probe's figure is replayed (`--l2 measured`), written under the other rotating rules;
    else the rule itself."""
    if l2 == "warm":
        return "none"
    if rule == "measured" and l2 != "measured":
        return "dirty"
    return rule


def _explain_misses(recording: Recording, store: Store, rows: list[SweepRow],
                    built: dict[int, dict[str, BuiltVariant]], workers: Workers, l2: str,
                    dirt_of: Callable[[str], str]) -> None:
    """Set `miss` on every row of the fidelity set outside the tolerance (`misses.py`): its baseline replayed again
    under each other L2 rule and its own with the dirt changed (`misses.check_conditions`, `dirt_of`: the dirt a
    replay under an L2 rule sets, `_dirt`; the config the workload ran, for an autotuned row), its ratio under each,
    and the sentence `misses.miss_reason` makes of them with the launch lead and the clocks."""
    missed = missed_rows(rows)
    by_id = {s.id: s for s in recording.signatures}
    signatures = [dataclasses.replace(by_id[row.signature], autotune=None) for row in missed
                  if row.signature in built]
    if not signatures:
        return
    baseline = {s.id: dict([next(iter(built[s.id].items()))]) for s in signatures}
    synthetic = {s.id: synthetic_tensors(s.args) for s in signatures}
    by_mode: dict[int, dict[str, float | None]] = {s.id: {} for s in signatures}
    for condition in check_conditions(l2, dirt_of):
        checking = [s for s in signatures if synthetic[s.id] or not condition.for_synthetic_only]
        if not checking:
            continue
        checked = {s.id: SweepRow(s.id, s.kernel, s.label(), None, s.launches, s.time_per_launch_ms, s.inputs, "ok")
                   for s in checking}
        time_signatures(recording, store, checking, baseline, checked, workers, rounds=config.sweep.CHECK_ROUNDS,
                        l2=condition.l2, l2_dirt=condition.dirt, synthetic_fill=condition.fill)
        for signature_id, row in checked.items():
            by_mode[signature_id][condition.name] = row.fidelity if row.status == "ok" else None
    for row in missed:
        if row.signature in by_mode:
            ratios, made_up = by_mode[row.signature], synthetic[row.signature]
            size = sum(t["span"] * t["element_size"] for t in made_up)
            row.miss = {"l2": {l2: row.fidelity, **{m: r for m, r in ratios.items() if m != ZEROS_FILLED}},
                        "lead_ms": row.lead_ms,
                        "clock_mhz": {"replay": row.clock_mhz, "workload": recording.sm_clock_mhz},
                        "rounds": config.sweep.CHECK_ROUNDS,
                        "why": miss_reason(row, l2, ratios, recording.sm_clock_mhz,
                                           replayed_dirt=replayed_dirt(dirt_of(l2), by_id[row.signature].l2_dirt),
                                           synthetic=(len(made_up), size))}
            if made_up:
                row.miss["inputs"] = {"synthetic_tensors": len(made_up), "synthetic_bytes": size,
                                      ZEROS_FILLED: ratios.get(ZEROS_FILLED)}


def stop_rule(signature: Signature, cap: int, min_effect: float) -> StopRule:
    """When `signature`'s rounds stop: an autotune candidate the workload never ran is only ranked (coarse
    precision, a lower cap); every other signature is a row (or the config a row answers for). The effect a
    verdict reports is at least `min_effect_at` the kernel's time inside the workload, so rounds stop once that is
    decided."""
    effect = min_effect_at(signature.time_per_launch_ms, min_effect)
    if signature.autotune is not None and not signature.launches:
        return StopRule(effect, config.sweep.CANDIDATE_PRECISION, min(cap, config.sweep.CANDIDATE_CAP))
    return StopRule(effect, config.sweep.ROW_PRECISION, cap)


def failed_builds_warning(built: dict[int, dict[str, BuiltVariant]]) -> str | None:
    """What the replay says of the variants ptxas could not build (their rows go on without them): how many by
    cause (`binaries.CAUSES`), and the first message."""
    failed = [b for variants in built.values() for b in variants.values() if b.failed]
    if not failed:
        return None
    causes = collections.Counter(b.failed for b in failed)
    return (f"{len(failed)} variant build(s) failed and were not timed: "
            + ", ".join(f"{causes[cause]} {cause}" for cause in CAUSES if causes[cause]) + f"; first: {failed[0].error}")


def synthetic_warning(recording: Recording, chosen: list[Signature]) -> str | None:
    """What the replay says of signatures it runs on synthetic inputs: how many, and which snapshot budget refused
    how many tensors (its timing and outputs on random data can differ from the workload's: NaN, other paths)."""
    statuses = collections.Counter(s.inputs for s in chosen)
    synthetic, partly = statuses[SYNTHETIC], statuses[PARTLY_SYNTHETIC]
    if not synthetic and not partly:
        return None
    refused = (recording.budget or {}).get("refused") or {}
    causes = [f"{tensors} tensor(s), {format.human_bytes(nbytes)}, over the {what}"
              for limit, what in (("per_signature", "per-signature budget"), ("total", "per-process budget"))
              for tensors, nbytes in [refused.get(limit, (0, 0))] if tensors]
    why = "; ".join(causes) if causes else "the recording does not say why (recorded before budgets were counted)"
    return (f"{synthetic} signature(s) replayed on synthetic inputs and {partly} partly, marked in the inputs "
            f"column: {why}; raise the budgets with --budget (per signature) and --snapshot-budget (per process)")


def compile_time_warning(recording: Recording) -> str | None:
    """What the recording saw launched only on the way to the workload, left out of its rows and shares: the
    decisions of Inductor's compile-time choice and coordinate descent, and the kernels launched only while
    Inductor compiled or an autotuner benchmarked (their launch count)."""
    tuners = collections.Counter(d.get("tuner") for d in recording.inductor_tuning)
    benchmarked = [s for s in recording.signatures if not s.launches and s.tuning_launches]
    if not tuners and not benchmarked:
        return None
    decided = ", ".join(f"{count} by {tuner}" for tuner, count in sorted(tuners.items()))
    return (f"not the workload: {len(benchmarked)} signature(s) launched only while compiling or autotuning "
            f"({sum(s.tuning_launches for s in benchmarked)} launches)" + (f"; decisions {decided}" if decided else "")
            + "; left out of the rows, shares and estimate")


def mixed_ptxas_warning(recording: Recording, store: Store) -> str | None:
    """What the sweep says where the workload's kernels for one arch were built by more than one ptxas: which
    ptxas built how many. A process that repoints Triton's ptxas on the way builds a kernel with one ptxas in one
    run and the other in the next (torch's Inductor points it at torch's own once it compiles asynchronously: a
    kernel tuned in process on a cold run gets Triton's, a warm run's gets torch's), and a decision measured on
    one build does not apply to the other (`Key`)."""
    kernels: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
    for capture_id, kernel in {(s.capture_id, s.kernel) for s in recording.signatures
                               if s.launches and s.capture_id is not None}:
        capture = store.get(capture_id)
        if capture.ptxas_version:
            kernels[capture.arch, f"{capture.ptxas_version} ({capture.ptxas_path})"].add(kernel)
    archs = collections.Counter(arch for arch, _ in kernels)
    mixed = [(arch, tool, sorted(names)) for (arch, tool), names in sorted(kernels.items()) if archs[arch] > 1]
    if not mixed:
        return None
    built = "; ".join(f"{arch} by ptxas {tool}: {len(names)} kernel(s), {', '.join(names[:2])}"
                      f"{', ...' if len(names) > 2 else ''}" for arch, tool, names in mixed)
    return (f"the workload's kernels were built by more than one ptxas ({built}): another run may build a kernel "
            f"with the other one (torch's Inductor points Triton at its own ptxas once it compiles "
            f"asynchronously, so a cold run and a warm one differ), and a decision applies only to the build it "
            f"was measured on; sweep the workload as it usually runs")


def unprobed_warning(recording: Recording, chosen: list[Signature]) -> str | None:
    """What `--l2 measured` says of the signatures it replays cold for want of an L2 probe, by cause: a recording
    without the probe, or signatures the recorder never timed inside the workload (it probes at the timed launches:
    the second to ninth), namely autotune candidates that only the autotuner launched and kernels launched once."""
    unprobed = [s for s in chosen if s.l2_resident is None]
    if not unprobed:
        return None
    if recording.l2_calibration is None:
        return (f"--l2 measured: the recording has no L2 probe (recorded before format 3, with "
                f"TRITONHOOK_RECORD_L2_PROBE=0, or its calibration failed): {len(unprobed)} signature(s) replayed cold")
    tuning = sum(s.launches == 0 and s.tuning_launches > 0 for s in unprobed)
    once = sum(s.launches == 1 for s in unprobed)
    causes = [(tuning, "launched only by an autotuner"), (once, "launched once"),
              (len(unprobed) - tuning - once, "not probed")]
    return (f"--l2 measured: {len(unprobed)} signature(s) never probed inside the workload, replayed cold: "
            + ", ".join(f"{count} {cause}" for count, cause in causes if count))


def _journal(store: Store, recording: Recording):
    """What keeps each signature's result in the store the moment it arrives (kind `SIGNATURE_KIND`, tagged with
    the recording and this replay's start), so a replay stopped half-way keeps what it measured; the sweep result
    saved at the end is what the commands read."""
    tag = {"recording": recording.id, "replay_started": time.time(), "pid": os.getpid()}

    def arrived(record: dict) -> None:  # the store numbers its results under "id": the signature's is "signature"
        store.add_result(SIGNATURE_KIND, {**tag, **{k: v for k, v in record.items() if k != "id"},
                                          "signature": record["id"]})

    return arrived


def _fold_autotune_groups(recording: Recording, rows: dict[int, SweepRow], samples: dict, labels: list[str],
                          min_effect: float) -> tuple[list[SweepRow], list[SweepRow]]:
    """(rows to show, candidate rows): each autotune group's candidate rows folded into one row where its first
    candidate stood, its share the group's (the workload's launches of its configs)."""
    groups = {s.id: g for g in autotune_groups(recording) for s in g.candidates}
    shown, candidates, folded = [], [], set()
    for signature_id, row in rows.items():
        group = groups.get(signature_id)
        if group is None:
            shown.append(row)
            continue
        if group.group in folded:
            continue
        folded.add(group.group)
        members = [rows[s.id] for s in group.candidates if s.id in rows]
        for member, signature in zip(members, [s for s in group.candidates if s.id in rows]):
            member.autotune = {"group": group.group, "config": config_text(signature.autotune["config"])}
        winner = group.workload_winner or group.candidates[0]
        folded_row = SweepRow(winner.id, group.kernel, winner.label(),
                              sum(recording.share(s) or 0.0 for s in group.candidates),
                              sum(s.launches for s in group.candidates), winner.time_per_launch_ms, winner.inputs, "ok",
                              **_recorded_context(winner))
        if (timed := rows.get(winner.id)) is not None:  # what its replay measured besides the rounds' times
            folded_row.empty_ms, folded_row.clock_mhz = timed.empty_ms, timed.clock_mhz
            folded_row.rounds, folded_row.stopped = timed.rounds, timed.stopped
        shown.append(analyze_group(folded_row, group, members, samples, labels, min_effect))
        candidates += members
    return shown, candidates


def build_all(store: Store, chosen: list[Signature], variants, rows, prebuilt=None, *, progress: bool = False
               ) -> dict[int, dict[str, BuiltVariant]]:
    """label -> built variant, per signature id; a signature whose capture is missing or whose baseline fails to
    build gets its row's status set instead (another variant that fails is kept, marked: `build_variants`)."""
    wanted = []
    for signature in chosen:
        if signature.replayable is not None:
            rows[signature.id].status = f"not replayable: {signature.replayable}"
        elif signature.capture_id is None:
            rows[signature.id].status = "no capture of this kernel in the store (compiled before recording?)"
        else:
            wanted.append(signature)
    if prebuilt is None:
        by_capture = build_captures(store, [signature.capture_id for signature in wanted], variants,
                                    progress=progress)
        outcomes = {signature.id: by_capture[signature.capture_id] for signature in wanted}
    else:
        outcomes = {signature.id: prebuilt(signature) for signature in wanted}
    built = {}
    for signature in wanted:
        outcome = outcomes[signature.id]
        if isinstance(outcome, str):
            rows[signature.id].status = outcome
        else:
            built[signature.id] = outcome
    return built


def build_captures(store: Store, capture_ids, variants, *, progress: bool = False
                   ) -> dict[int, dict[str, BuiltVariant] | str]:
    """Per capture id, its variants by label or why they could not be built. Variants are built once per capture,
    the captures in parallel: each build is mostly ptxas, a subprocess, and an autotune-heavy library's hundreds of
    builds would take a minute one after another."""
    captures = sorted(set(capture_ids))
    workers = max(1, min(len(captures), os.cpu_count() or 1))
    by_capture = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool, \
            format.progress(progress, len(captures), "build") as step:
        builds = {pool.submit(_build_one, store, capture_id, variants): capture_id for capture_id in captures}
        for future in concurrent.futures.as_completed(builds):
            by_capture[builds[future]] = future.result()
            step(f"capture {builds[future]}")
    return by_capture


def _build_one(store: Store, capture_id: int, variants) -> dict[str, BuiltVariant] | str:
    """One capture's variants by label, or why they could not be built."""
    try:
        return {b.label: b for b in build_variants(store, store.get(capture_id), variants)}
    except TritonhookError as exc:
        return f"build failed: {exc}"


def _recorded_context(signature: Signature) -> dict:
    """What the recording measured around a signature's timed launches, as a row carries it."""
    return {"behind_ms": signature.behind_ms, "l2_dirt": signature.l2_dirt, "recorded_empty_ms": signature.empty_ms,
            "recorded_late_us": median(signature.late_us) if signature.late_us else None}


def _dirt_of_groups(recording: Recording) -> dict[int, float]:
    """Per autotune decision, how dirty the dirt probe found the L2 at the config the workload ran: the configs
    only the autotuner launched were never probed, and each is replayed on that L2 too, so that their ranking
    against the workload's config compares them on one L2 (`worker._L2Setup`)."""
    return {s.autotune["group"]: s.l2_dirt for s in recording.signatures
            if s.autotune is not None and s.l2_dirt is not None}


def _probed_dirt(signature: Signature, dirt_of_group: dict[int, float]) -> float | None:
    """How dirty the L2 is replayed for `signature` under the measured dirt: its own probe's figure, else its
    autotune decision's (`_dirt_of_groups`)."""
    if signature.l2_dirt is None and signature.autotune is not None:
        return dirt_of_group.get(signature.autotune["group"])
    return signature.l2_dirt


def replay_job(work: Path, recording: Recording, store: Store, signatures: list[Signature],
               built: dict[int, dict[str, BuiltVariant]], launches: dict[int, dict[str, Signature]],
               rules: dict[int, StopRule], *, rounds: int, l2: str, l2_dirt: str,
               synthetic_fill: str = config.sweep.SYNTHETIC_FILLS[0]) -> ReplayJob:
    """The job replaying `signatures`' `built` variants, their cubins and metadata written under `work` (once per
    capture and label), the costliest first (`replay_cost`)."""
    entries, costs, dirt_of_group = [], {}, _dirt_of_groups(recording)
    rep_ms = config.sweep.REPLAY_REP_MS.get()
    for signature in signatures:
        variants = []
        for label, variant in built[signature.id].items():
            if variant.failed:
                continue
            folder = Path("variants", str(signature.capture_id), file_name(label))  # relative to `work`
            if not (work / folder).exists():
                (work / folder).mkdir(parents=True)
                (work / folder / "metadata.json").write_bytes(variant.metadata_json)
                (work / folder / "kernel.cubin").write_bytes(variant.cubin)
            entry = {"label": label, "entry": variant.entry, "metadata": str(folder / "metadata.json"),
                     "cubin": str(folder / "kernel.cubin"), "timed": variant.same_text_as is None}
            if (other := launches.get(signature.id, {}).get(label)) is not None:
                entry["launch"] = _launch_of(other)
            variants.append(entry)
        rule = rules.get(signature.id)
        costs[signature.id] = replay_cost(signature, sum(v["timed"] for v in variants), rule.cap if rule else rounds,
                                          rep_ms)
        entries.append({"id": signature.id, "args": signature.args, "l2_resident": signature.l2_resident,
                        "l2_dirt": _probed_dirt(signature, dirt_of_group), **_launch_of(signature),
                        "variants": variants,
                        "stop": rule and rule.to_json()})
    entries.sort(key=lambda entry: -costs[entry["id"]])
    return ReplayJob(str(store.path), recording.arch, f"recording {recording.id}", tuple(entries), rounds, l2,
                     l2_dirt, rep_ms / 4, rep_ms, MIN_REPS, synthetic_fill)


def replay_cost(signature: Signature, timed_arms: int, most_rounds: int, rep_ms: float) -> float:
    """What replaying `signature` costs at most, in ms of timed calls: its timed arms, each round's span per arm
    (`rep_ms`, or `MIN_REPS` calls of a kernel slower than that) and its rounds' cap. Why: the workers take the
    signatures in the job's order, and a long one taken last keeps one GPU busy while the others wait at the end of
    the replay (each of `tune`'s chunks is a replay of its own, so it waits so once a chunk); longest first bounds
    that wait by the shortest jobs (list scheduling)."""
    per_call_ms = signature.time_per_launch_ms or 0.0
    return timed_arms * most_rounds * max(rep_ms, MIN_REPS * per_call_ms)


def _launch_of(signature: Signature) -> dict:
    """What the worker needs to launch `signature`'s build besides its arguments (`worker.replay_signature`)."""
    return {"kernel": signature.kernel, "triton_hash": signature.triton_hash, "grid": signature.grid,
            "arg_names": signature.arg_names, "signature": signature.signature, "constexprs": signature.constexprs}
