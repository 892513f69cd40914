"""The gate: every signature of the current run replayed with two builds side by side, the baseline's build of
the same kernel and specialization (told apart by their code where several builds share them:
`baseline.matched`) and the current one, by the sweep's replay engine (one process, one GPU, interleaved rounds,
the current run's own inputs), and a verdict per signature.

The rule (docs/check.md#the-rule). A signature *regressed* when the current build's time over the baseline build's
(the median of the rounds' paired ratios) is at least 1 + threshold (default 3%, `config.check.THRESHOLD`), and at
least `config.ab.MIN_EFFECT_US` a launch more, AND its 95% interval lies wholly above 1 (`measure.stats.verdict`'s
"slower" with `min_effect` set to the threshold, the very rule the sweep uses, at the gate's threshold). Why each:
the interval alone calls real but harmless shifts of a fraction of a percent a regression; the threshold alone
calls the noise of a short or jittery kernel one; and a kernel of a few µs whose two identical builds land a few
event ticks apart, run after run, reads 3.5-4% slower with an interval that excludes 1 (the gate's H200 A/A:
docs/check.md#the-us-floor). A signature so judged is replayed once more in new worker
processes and regressed only if it is so judged there too (`_retested`). The replay's rounds are adaptive
(`measure.sequential`: each signature stops once its always-valid interval has decided against the threshold or is
precise enough; `rounds` is the cap), so the interval is valid however early it stopped; a fixed-rounds plan times
every signature `rounds` rounds with `ratio_interval`. Its *outputs changed* when the replay's output check calls
the current build's outputs "differ" from the baseline build's: beyond the tolerance, or NaN/Inf where the baseline
has none (`measure.outputs`); "close" (another rounding order, within `config.sweep.RTOL`) is shown, not failed, as
a code change that reorders a sum produces it by design.

A current build whose kernel `.text` and launch metadata equal the baseline's is not timed ("SASS identical":
the same machine code cannot regress), unless `time_identical` (an A/A of the gate itself, as the false-positive
measurement needs). A signature that cannot be replayed (a fault, a build missing from the store) or matched is
listed as not checked with its share of the current run's GPU time, and fails no kernel: a kernel fails on
evidence, not on its absence. But the gate does not pass on absence either: when the signatures left unchecked
make more than `max_unchecked` of the GPU time (default `config.check.MAX_UNCHECKED`), it fails with its own exit
status (`CheckResult.exit_code`).
"""

from __future__ import annotations

import json
from typing import Iterable, Sequence

from .. import config
from ..cubin import Cubin
from ..errors import TritonhookError
from ..measure.outputs import DIFFER
from ..store import Store
from ..sweep.recording import Recording, capability_of
from ..sweep.replay import ReplayPlan, Workers, replay
from ..sweep.schedule import WORKER
from ..sweep.builds import BuiltVariant
from .baseline import Baseline, code_of, key_label, key_text, match_key, matched, same_code, specialization
from .result import OUTPUTS_CHANGED, PASSED, REGRESSED, RESULT_KIND, CheckResult, KernelCheck, Unmatched

BASELINE_LABEL, CURRENT_LABEL = "baseline", "current"
"""The replay's variant labels: the baseline build first (the ratio's denominator)."""
UNCOMPARED_METADATA = ("hash", "name", "extern_libs", "triton_version")
"""Metadata fields that differ between two builds of the same machine code (the source's hash, the entry name
after a rename, where libdevice was installed, the release) and so do not stop the two being "SASS identical"."""


def gate_plan(*, threshold: float = config.check.THRESHOLD, rounds: int = config.sweep.DEFAULT_ROUNDS,
              fixed_rounds: bool = False, l2: str = config.sweep.L2_MODES[0],
              l2_dirt: str = config.sweep.L2_DIRT[0]) -> ReplayPlan:
    """The replay the gate runs: every signature, `rounds` the cap of its adaptive rounds (or, `fixed_rounds`, the
    count of every signature's), the threshold as the verdicts' min-effect. Checked when made: the CLI and the
    pytest plugin make it before the workload runs, so bad input is one line and no lost run."""
    return ReplayPlan(rounds=rounds, fixed_rounds=fixed_rounds, min_effect=checked_threshold(threshold), l2=l2,
                      l2_dirt=l2_dirt, explain_misses=False)


def check(baseline: Baseline, recording: Recording, store: Store, plan: ReplayPlan | None = None, *,
          max_unchecked: float = config.check.MAX_UNCHECKED, time_identical: bool = False, progress: bool = False,
          worker: Sequence[str] = WORKER) -> CheckResult:
    """Replay `recording` (the current run, in `store`) with each signature's baseline build and current build
    under `plan` (`gate_plan`; its default without one), judge every signature (see the module docstring), save
    and return the result, which fails when more than `max_unchecked` of the current run's GPU time was not
    checked (`CheckResult.exit_code`). `worker`: as `replay`'s."""
    plan = plan or gate_plan()
    max_unchecked = checked_max_unchecked(max_unchecked)
    if baseline.arch and recording.arch and capability_of(baseline.arch) != capability_of(recording.arch):
        raise TritonhookError(f"{baseline.source}: built for {baseline.arch}, the current run is {recording.arch}; "
                              f"check against a baseline recorded on the same GPU architecture")
    captures = {s.id: store.get(s.capture_id) for s in recording.signatures if s.capture_id is not None}
    specialized: dict[int, dict[str, str]] = {}  # per capture: its signatures share one rebuild record
    for s in recording.signatures:
        if s.id in captures and s.capture_id not in specialized:
            specialized[s.capture_id] = specialization(s, captures[s.id], store)
    keys = {s.id: match_key(s, captures.get(s.id), specialized.get(s.capture_id, {})) for s in recording.signatures}
    found, unmatched, renamed = _matching(baseline, recording, captures, keys, store)
    prebuilt = {sid: _pair(build, store, captures[sid], time_identical) for sid, build in found.items()}
    result = CheckResult(baseline.source, recording.id, plan.min_effect, [], unmatched, plan.rounds, plan.l2,
                         fixed_rounds=plan.fixed_rounds, l2_dirt=plan.l2_dirt, max_unchecked=max_unchecked)
    if prebuilt:
        def replayed(ids) -> list:
            swept = replay(recording, store, [], plan, workers=Workers.at(worker=worker, progress=progress),
                           prebuilt=lambda s: prebuilt[s.id] if s.id in ids else "unmatched")
            result.sweep_id = result.sweep_id or swept.id
            result.warnings += [w for w in swept.warnings
                                if not w.endswith(": unmatched") and w not in result.warnings]
            return [_judged(row, key_label(keys[row.signature])) for row in swept.rows if row.signature in ids]

        result.kernels = _retested(replayed(set(prebuilt)), replayed)
        for kernel in result.kernels:
            if kernel.signature in renamed and renamed[kernel.signature].key != keys[kernel.signature]:
                kernel.baseline_kernel = renamed[kernel.signature].key["kernel"]
        if met := [k for k in result.kernels if k.baseline_kernel]:
            result.warnings.append(f"{len(met)} signature(s) had no baseline build of their kernel's name and met "
                                   f"one of another name by their machine code (Inductor numbers its kernels per "
                                   f"graph), e.g. {met[0].kernel} <- {met[0].baseline_kernel}")
    result.id = store.add_result(RESULT_KIND, result.to_json())
    return result


def _matching(baseline: Baseline, recording: Recording, captures: dict, keys: dict, store: Store
              ) -> tuple[dict, list[Unmatched], dict]:
    """The baseline build of each current signature that has one (by signature id), the unmatched of both runs
    with why, and the renamed: the builds of each key paired by `baseline.matched`; a signature with no baseline
    build of its key, or paired by its name alone with a build of other code, meets the build of its machine code
    where there is one (`_same_machine_code`; by signature): on an H200 two cold compiles of BERT named two
    transposes alike, and a gate by name compared them, "outputs changed"."""
    builds = baseline.by_key()
    current: dict[str, dict[str, dict]] = {}  # per key, the current builds' code by Triton hash
    for signature in recording.signatures:
        if signature.id in captures:
            current.setdefault(key_text(keys[signature.id]), {})[signature.triton_hash] = \
                code_of(signature, captures[signature.id])
    pairs = {text: matched(builds.get(text, []), code) for text, code in current.items()}
    by_name = {s.id: pairs.get(key_text(keys[s.id]), {}).get(s.triton_hash) for s in recording.signatures}
    code_paired = [build for text, paired in pairs.items() for name, build in paired.items()
                   if same_code(build.code, current[text][name])]
    # a signature with no baseline build of its name, or paired by its name alone with a build of other code (its
    # name may be another kernel's in the baseline: Inductor's numbers move between compiles), meets the baseline
    # build of its machine code under another name, where there is one
    unsure = [s for s in recording.signatures if s.id in captures and (
        key_text(keys[s.id]) not in builds or all(by_name[s.id] is not build for build in code_paired))]
    renamed = _same_machine_code(unsure, [b for b in baseline.builds if all(b is not p for p in code_paired)],
                                 captures, keys, store)
    found, unmatched = {}, []
    for signature in recording.signatures:
        text = key_text(keys[signature.id])
        if (build := renamed.get(signature.id) or by_name[signature.id]) is not None:
            found[signature.id] = build
            continue
        why = "no build of it in the store (compiled before recording?)" if signature.id not in captures else \
            "no baseline build of this kernel and specialization, nor of its machine code" if text not in builds \
            else _ambiguous(len(builds[text]), len(current[text]), "baseline")
        unmatched.append(Unmatched(signature.label(), why, signature.id, recording.share(signature)))
    launched = [keys[s.id] for s in recording.signatures if s.id in captures]
    met_renamed = list(renamed.values())
    for build in baseline.builds:
        text = key_text(build.key)
        if text not in current:
            if all(build is not met for met in met_renamed):
                unmatched.append(Unmatched(build.label, _not_launched_why(build.key, launched)))
        elif all(build is not met for met in [*found.values(), *met_renamed]):
            why = "its name's current build is another baseline build's machine code" \
                if any(by_name[sid] is build for sid in renamed) \
                else _ambiguous(len(builds[text]), len(current[text]), "current")
            unmatched.append(Unmatched(build.label, f"in the baseline, {why}"))
    unmatched += [Unmatched(label, "in the baseline recording with no build in its store")
                  for label in baseline.unbuilt]
    return found, unmatched, renamed


def _same_machine_code(unsure: list, unclaimed: list, captures: dict, keys: dict, store: Store) -> dict:
    """The baseline build whose machine code each of the `unsure` current signatures is, among the `unclaimed`
    baseline builds (no current build's code is theirs), by signature: a build of the same argument types,
    constexprs, specialization and launch options, under any kernel name, whose kernel .text, registers, spills and
    launch metadata are the same (`_machine_code`). Why: Inductor numbers the kernels of a graph in order
    (`triton_red_fused_sum_29`), so where a second cold run compiled one kernel more or less before them (another
    template chosen, another fusion) every later name moves: a gate by name leaves their code unchecked though it
    is the baseline's, or compares a kernel with another that took its name. Code that changed under a new name
    stays unmatched: which baseline build it replaces is not known. Only builds of a key (less the name) both sides
    have are parsed. By signature id."""
    unnamed = lambda key: key_text({k: v for k, v in key.items() if k != "kernel"})  # noqa: E731
    shared = {unnamed(keys[s.id]) for s in unsure} & {unnamed(b.key) for b in unclaimed}
    by_code = {}
    for build in unclaimed:
        if unnamed(build.key) in shared:  # builds of one code alike: any of them is that machine code
            by_code.setdefault(_machine_code(build.entry, build.cubin, build.metadata_json, unnamed(build.key)), build)
    found, codes = {}, {}  # codes: per capture, read and parsed once however many signatures launched it
    for signature in unsure:
        if unnamed(keys[signature.id]) in shared:
            capture = captures[signature.id]
            if capture.id not in codes:
                codes[capture.id] = _machine_code(capture.entry, store.read(capture, "cubin"),
                                                  store.read(capture, "json"), unnamed(keys[signature.id]))
            if (build := by_code.get(codes[capture.id])) is not None:
                found[signature.id] = build
    return found


def _machine_code(entry: str, cubin: bytes, metadata_json: bytes, unnamed_key: str) -> str:
    """What a build is whatever its kernel's name: its key less the name, its kernel's cubin summary (the .text
    hash among it) and its launch metadata (`UNCOMPARED_METADATA` left out), as one string."""
    summary = Cubin.from_bytes(cubin, label=f"build of {entry}").summary(entry)
    return json.dumps([unnamed_key, summary, _launch_metadata(metadata_json)], sort_keys=True, default=str)


def _ambiguous(baseline: int, current: int, other: str) -> str:
    """Why a build matched none where several builds share its key (`baseline.matched`)."""
    count = lambda n, run: f"{n} {run} build{'' if n == 1 else 's'}"  # noqa: E731
    return (f"ambiguous: {count(baseline, 'baseline')} and {count(current, 'current')} of this kernel name and "
            f"specialization, and its code (source hash, module text, PTX) is no single {other} build's")


def _retested(kernels: list[KernelCheck], replayed) -> list[KernelCheck]:
    """The kernels, each one that regressed replayed once more in new worker processes (`replayed(ids)`) and failed
    only if it regresses there too. Two identical builds of a short kernel can differ steadily by a few percent
    within one process, round after round, and the next process draws that offset afresh: on the H200 one gate run
    in ten failed on such a kernel (docs/check.md#a-regression-replayed-twice)."""
    suspects = {k.signature for k in kernels if k.status == REGRESSED}
    if not suspects:
        return kernels
    again = {k.signature: k for k in replayed(suspects)}
    for kernel in kernels:
        second = again.get(kernel.signature)  # only the suspects were replayed again
        if second is None:
            continue
        kernel.retest = f"{second.interval()} {second.verdict}"
        if second.ratio is not None and second.status != REGRESSED:  # timed again, and not slower there
            kernel.status = PASSED
            kernel.verdict = f"slower in one replay, not in a second ({kernel.retest})"
    return kernels


def _not_launched_why(key: dict, launched: Iterable[dict]) -> str:
    """Why a baseline build is unmatched: not launched by the current run, and, where the current run launched the
    same kernel on the same argument types under other constexprs or launch options, which: an autotuned kernel's
    candidates are each a build, and a baseline that tuned (a cold cache) launched them all while a current run
    whose cache gave the pick launched one (or its autotuner picked another)."""
    others = [key_label(k) for k in launched if k["kernel"] == key["kernel"] and k["types"] == key["types"]]
    why = "in the baseline, not launched by the current run"
    if others:
        why += f", which launched {', '.join(sorted(others))} (another config of it: an autotune candidate or pick)"
    return why


def checked_max_unchecked(fraction: float) -> float:
    """`fraction` when it is in [0, 1] (1: the gate never fails on what it left unchecked)."""
    if not 0 <= fraction <= 1:
        raise TritonhookError(f"--max-unchecked {fraction}: a fraction in [0, 1], e.g. 0.1 (1: never fail on it)")
    return fraction


def checked_threshold(threshold: float) -> float:
    """`threshold` when it is a fraction in (0, 1); the CLI and the plugin ask before any workload runs."""
    if not 0 < threshold < 1:
        raise TritonhookError(f"--threshold {threshold}: a fraction in (0, 1), e.g. 0.03")
    return threshold


def _pair(build, store: Store, capture, time_identical: bool) -> dict[str, BuiltVariant]:
    """The two builds of one signature as replay variants, the baseline's first; the current one marked
    identical to it when its machine code and launch metadata are the same (not timed then)."""
    pairs = []
    for label, entry, cubin, metadata in ((BASELINE_LABEL, build.entry, build.cubin, build.metadata_json),
                                          (CURRENT_LABEL, capture.entry, store.read(capture, "cubin"),
                                           store.read(capture, "json"))):
        summary = Cubin.from_bytes(cubin, label=f"{label} build of {entry}").summary(entry)
        pairs.append(BuiltVariant(label, entry, cubin, metadata, None, None, summary))
    base, current = pairs
    if (not time_identical and base.summary == current.summary
            and _launch_metadata(base.metadata_json) == _launch_metadata(current.metadata_json)):
        current.same_text_as = BASELINE_LABEL
    return {BASELINE_LABEL: base, CURRENT_LABEL: current}


def _launch_metadata(metadata_json: bytes) -> dict:
    """A build's Triton metadata less what differs between two builds of the same machine code."""
    return {k: v for k, v in json.loads(metadata_json).items() if k not in UNCOMPARED_METADATA}


def _judged(row, key: str) -> KernelCheck:
    """A replayed row as the gate's verdict (see the module docstring)."""
    base = row.variants[0] if row.variants else None
    current = next((v for v in row.variants if v.label == CURRENT_LABEL), None)
    if row.status != "ok" or current is None:
        status = f"not checked: {row.status}" if row.status != "ok" else "not checked: not timed"
        return KernelCheck(row.signature, row.kernel, row.label, key, row.share, None, None, None, "-", row.outputs,
                           status, rounds=row.rounds, stopped=row.stopped)
    verdict = current.verdict
    status = OUTPUTS_CHANGED if row.outputs == DIFFER else REGRESSED if verdict == "slower" else PASSED
    return KernelCheck(row.signature, row.kernel, row.label, key, row.share, current.ratio, current.low,
                       current.high, verdict, row.outputs, status, base.median_ms, current.median_ms, row.rounds,
                       row.stopped)
