"""Running an A/B comparison: in this process (`compare`) or in fresh processes per variant and round
(`run_interleaved`, what `tritonhook ab` runs); both save the report in the store, linked to the captures."""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Sequence

from .. import _triton, config, format, preflight

from .. import binaries
from ..cubin import Cubin, CubinDeltas
from ..errors import TritonhookError
from ..launcher import AbRound, Capture, ChildSettings, Ptxas, run_workload
from ..measure.outputs import compare_outputs
from ..measure.timing import bench_interleaved, round_order
from ..measure.variants import PLAIN, Variant, parse_variants, refuse_configs
from ..rename import DEFAULT_PREFIX, Selector
from .protocol import collect, output_file, read_records
from .result import ABReport, analyze


# ----- in one process -----------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _late_captures(store, active, *, enabled: bool):
    """Yields a list that, when the block launched kernels but captured nothing, receives the capture ids of those
    kernels' late captures (`_triton.loaded_event`)."""
    late: list[int] = []
    if not enabled:
        yield late
        return
    seen: dict[str, Callable] = {}
    tracer = _triton.LaunchTracer(lambda spec, grid, args, weight, signature: None,
                                  on_new_kernel=lambda spec, loaded: seen.setdefault(spec.triton_hash, loaded))
    tracer.install()
    try:
        yield late
    finally:
        tracer.uninstall()
    if not active.capture_ids:
        late += [store.add(loaded()) for loaded in seen.values()]


def compare(run: Callable, variants: str | Sequence[str] = (PLAIN, DEFAULT_PREFIX), *, flops: float | None = None,
            check="allclose", inputs: Sequence = (), rounds: int = 10, select: Selector = None, store=None,
            name: str | None = None, warmup_ms: float = 25.0, rep_ms: float = 100.0,
            min_effect: float = config.ab.DEFAULT_MIN_EFFECT, progress: bool = True) -> ABReport:
    """Time `run(*inputs)` under each variant, `rounds` times interleaved, in this process.

    `run` launches the workload and returns its output (compared with `check`). Every build is captured into
    `store`, and the report is saved there, linked to those captures.
    """
    from .. import ptx_capture
    from ..store import Store

    if ptx_capture.active_session() is not None:
        raise TritonhookError("ab.compare() enables each variant itself: call tritonhook.disable() first")
    parsed = parse_variants(variants)
    refuse_configs(parsed, "ab.compare()")
    if assembling := [v.label for v in parsed if v.assembles]:
        raise TritonhookError(f"ab.compare(): variant {assembling[0]} names a ptxas, ptxas options or a control file, "
                              f"which Triton fixes for a process when it first compiles: time it with `tritonhook "
                              f"ab` (ab.run_interleaved), which builds each variant in fresh processes")
    opened = Store.of(store)
    samples = {v.label: [] for v in parsed}
    outputs, captures = {}, {v.label: [] for v in parsed}
    label = name or getattr(run, "__name__", "run")

    first_calls: set[str] = set()

    @contextlib.contextmanager
    def variant_session(variant: Variant):
        """The capture session of one variant; the ids it captures are kept for the report. A variant's first call
        (untimed) also watches its launches: a kernel this process had compiled before (the plain variant of a
        kernel the program already ran) compiles nothing, so it is captured late from Triton's cache files."""
        with ptx_capture.session(opened, subprocesses=False, rename=variant.rename,
                                 select=select if variant.rename is not None else None) as active:
            with _late_captures(opened, active, enabled=variant.label not in first_calls) as late:
                first_calls.add(variant.label)
                yield
            captures[variant.label] += active.capture_ids + late

    arms = [(functools.partial(variant_session, variant), run) for variant in parsed]
    with format.progress(progress, rounds, "A/B") as step:
        for round_index in range(rounds):
            results = bench_interleaved(arms, inputs=inputs, warmup_ms=warmup_ms, rep_ms=rep_ms)
            for variant, result in zip(parsed, results):
                samples[variant.label].append(result.median_ms)
                outputs.setdefault(variant.label, result.output)
            step(f"round {round_index + 1}/{rounds}")
    benchmark = analyze(label, samples, parsed, flops=flops, correctness=compare_outputs(outputs, check),
                        min_effect=min_effect)
    return _finish(opened, [benchmark], parsed, rounds, select, None, captures, min_effect)



# ----- in fresh processes (the CLI) -----------------------------------------------------------------------------
def run_interleaved(command: list[str], variants: Sequence[Variant], *, rounds: int, store, select: str | None,
                    check: str | None = "allclose", min_effect: float = config.ab.DEFAULT_MIN_EFFECT,
                    progress: bool = True) -> ABReport:
    """Run `command` once per variant per round (A B, B A, ...: `measure.timing.round_order`), each in a fresh
    process, and analyse the timings it reports. Each child captures into `store` with its variant's rename, and
    compiles with its variant's ptxas, options and control file (`_arm_builds`); every Triton build an arm captured
    is checked to have been made so."""
    if rounds < config.ab.MIN_ROUNDS:
        raise TritonhookError(f"--rounds {rounds}: use at least {config.ab.MIN_ROUNDS} so the interval means something")
    records, pids = [], {v.label: set() for v in variants}
    last_before = store.last_id()  # the children's captures are the ones after it
    with tempfile.TemporaryDirectory(prefix="tritonhook-ab-") as scratch, \
            format.progress(progress, rounds * len(variants), "A/B") as step:
        builds = _arm_builds(variants, Path(scratch))
        for round_index in range(rounds):
            for variant in (variants[arm] for arm in round_order(round_index, len(variants))):
                out = Path(scratch) / f"round{round_index}-{len(records)}.jsonl"
                capture = Capture.of(store.path, rename=variant.rename,
                                     select=select if variant.rename is not None else None)
                settings = ChildSettings(capture=capture, ab=AbRound(str(out), variant.label, round_index, scratch),
                                         ptxas=builds[variant.label][0])
                reported = _run_child(command, settings, out, f"round {round_index + 1}, variant {variant.label}")
                records += reported
                pids[variant.label].update(r["pid"] for r in reported)
                step(f"round {round_index + 1}/{rounds} {variant.label}")
        benchmarks = [analyze(name, samples, variants, flops=flops,
                              correctness=_check_across_processes(name, by_variant, variants, scratch, check),
                              min_effect=min_effect)
                      for name, (samples, flops, by_variant) in collect(records).items()]
    written = store.captures(after=last_before)
    captures = {label: [c.id for c in written if c.pid in ids] for label, ids in pids.items()}
    _check_builds(variants, written, captures, {label: args for label, (_, args) in builds.items()})
    return _finish(store, benchmarks, variants, rounds, select, command, captures, min_effect)


def _arm_builds(variants: Sequence[Variant], scratch: Path) -> dict[str, tuple[Ptxas | None, tuple[str, ...]]]:
    """Per variant: (the ptxas its children's compiles run, the ptxas arguments it adds), so that Triton's own
    compile runs the variant's ptxas with its options and control file (`_triton.check_ptxas_arm`); (None, ())
    for a variant that only renames. The control file's checked bytes are written under their sha256, so the
    `--apply-controls=` that a capture's options record names the bytes that built it. Each such arm compiles
    into a Triton cache of its own for the run: Triton's key tells a ptxas apart only by its `--version` text (two
    binaries answering alike would share builds), and no build in the user's cache is served to an arm."""
    builds = {}
    for index, variant in enumerate(variants):
        if not variant.assembles:
            builds[variant.label] = None, ()
            continue
        args = list(variant.options)
        if variant.controls is not None:
            _check_controls(variant)
            copy = scratch / "controls" / f"{variant.controls.sha256}.acf"
            copy.parent.mkdir(exist_ok=True)
            copy.write_bytes(variant.controls.data)
            args.append(f"--apply-controls={copy}")
        _triton.check_ptxas_arm(f"variant {variant.label}", variant.ptxas, args)
        builds[variant.label] = Ptxas(variant.ptxas, variant.ptxas, tuple(args),
                                      cache_dir=str(scratch / "triton-cache" / str(index))), tuple(args)
    return builds


def _check_controls(variant: Variant) -> None:
    """A control file with no `@` goes to Triton's own ptxas, which depends on the target: refuse it now, in one
    line, when the one Triton runs for this GPU (every one it may run when no GPU is known) cannot read it, rather
    than in a child's traceback. With `@`, the grammar checked it."""
    if variant.ptxas is not None:
        return
    gpu = preflight.named_gpu() or preflight.visible_gpu()
    for ptxas in _triton.ptxases_for(gpu.capability if gpu else None):
        if refusal := binaries.controls_refusal(variant.controls, ptxas):
            raise TritonhookError(f"variant {variant.label}: {refusal}; it is Triton {_triton.triton_version()}'s "
                                  f"ptxas for {gpu.name if gpu else 'some targets (no GPU seen)'}: name one that "
                                  f"can with @VERSION")


def _check_builds(variants: Sequence[Variant], written, captures: dict[str, list[int]],
                  arm_args: dict[str, tuple[str, ...]]) -> None:
    """Every Triton build of an arm that assembles ran the variant's ptxas and ended its ptxas options with the
    variant's: a command that sets TRITON_PTXAS_PATH or PTXAS_OPTIONS itself, or passes `ptx_options`, would
    otherwise be timed under the variant's label without its build."""
    by_id = {c.id: c for c in written}
    for variant in (v for v in variants if v.assembles):
        wanted = arm_args[variant.label]
        for capture in (by_id[i] for i in captures[variant.label]):
            args = _triton.ptxas_args_of(capture.options)
            if args is None:
                continue  # not a Triton compile: the variant's ptxas is Triton's, not another compiler's
            same_ptxas = variant.ptxas is None or os.path.realpath(capture.ptxas_path or "") == \
                os.path.realpath(variant.ptxas)
            if not same_ptxas or args[len(args) - len(wanted):] != wanted:
                raise TritonhookError(f"variant {variant.label}: capture {capture.id} ({capture.entry}) was built by "
                                      f"ptxas {capture.ptxas_path} with options {' '.join(args) or '(none)'}, not "
                                      f"as the variant says: does the command set its own ptxas or ptx_options?")


def _run_child(command: list[str], settings: ChildSettings, out: Path, where: str) -> list[dict]:
    done = run_workload(command, settings, capture_output=True, text=True)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        # a failed build says why in ptxas's own line, above the command Triton's error ends with
        ptxas_said = [line for line in lines if line.startswith("ptxas") and ("fatal" in line or "error" in line)]
        tail = ptxas_said[-1:] or lines[-1:] or ["(no output)"]
        raise TritonhookError(f"{' '.join(command)}: exited with status {done.returncode} ({where}): {tail[0]}")
    reported = read_records(out)
    if not reported:
        raise TritonhookError(f"{' '.join(command)}: reported no timings ({where}); time with "
                              f"tritonhook.ab.bench(fn, name=...) or report with tritonhook.ab.record(name, ms)")
    return reported


def _check_across_processes(name: str, digests: dict[str, set], variants: Sequence[Variant], scratch: str,
                            check) -> str:
    if check is None or len(digests) < len(variants):
        return "not checked"
    if len(set().union(*digests.values())) == 1:
        return "bitwise"
    import torch

    outputs = {}
    for variant in variants:
        path = Path(scratch) / output_file(variant.label, name)
        outputs[variant.label] = torch.load(path) if path.exists() else None
    return compare_outputs(outputs, check)


# ----- shared ending ------------------------------------------------------------------------------------------------
def _finish(store, benchmarks, variants, rounds, select, command, captures, min_effect) -> ABReport:
    kernels = {v.label: [{**row, "controls_sha256": v.controls.sha256 if v.controls else None}
                         for row in kernel_summaries(store, captures[v.label])] for v in variants}
    report = ABReport(benchmarks, list(variants), rounds, _select_text(select), command, kernels, min_effect,
                      why=kernel_deltas(store, captures))
    report.save(store, captures)
    return report


def _select_text(select) -> str | None:
    if select is None or isinstance(select, str):
        return select
    return getattr(select, "pattern", None) or repr(select)


def kernel_summaries(store, capture_ids: Iterable[int]) -> list[dict]:
    """One row per distinct cubin the variant built: names, what built it (the ptxas and the extra options its
    capture records), and registers / spills / capmerc size."""
    rows, seen = [], set()
    for capture in store.captures(ids=list(capture_ids)):
        cubin = capture.artifacts.get("cubin")
        if cubin is None or (capture.entry, cubin.sha256) in seen:
            continue
        seen.add((capture.entry, cubin.sha256))
        try:
            summary = Cubin.from_bytes(store.read(capture, "cubin")).summary(capture.entry)
        except TritonhookError as exc:  # the timings stand without it: report why the summary is missing
            summary = {"summary_error": str(exc)}
        rows.append({"capture_id": capture.id, "kernel": capture.kernel, "entry": capture.entry,
                     "original_entry": capture.original_entry, "arch": capture.arch, "cubin_size": cubin.size,
                     "ptxas": capture.ptxas_path, "ptxas_version": capture.ptxas_version,
                     "ptxas_options": list(_triton.ptxas_args_of(capture.options) or ()), **summary})
    return rows


def kernel_deltas(store, captures: dict[str, list[int]]) -> dict[str, list[dict]]:
    """Why each variant's rows moved (`ABReport.why`): for every variant but the first (the baseline), a
    `cubin.CubinDelta` (JSON, with the two capture ids) per kernel it built that the baseline built too, for the same
    target and specialization (the newest build of each side). A cubin that does not parse gives a delta of its
    reason only: the timings stand without it."""
    labels = list(captures)
    builds = {label: {(c.original_entry, c.arch, c.specialization): c for c in store.captures(ids=list(ids))
                      if "cubin" in c.artifacts} for label, ids in captures.items()}
    deltas, why = CubinDeltas(), {}
    for label in labels[1:]:
        pairs = [(builds[labels[0]][key], own) for key, own in builds[label].items() if key in builds[labels[0]]]
        try:
            found = [delta.to_json() for delta in deltas.many(
                [(store.read(base, "cubin"), store.read(own, "cubin"), base.entry, own.entry) for base, own in pairs])]
        except TritonhookError as exc:
            found = [{"base_entry": base.entry, "text": f"no cubin delta ({exc})"} for base, _ in pairs]
        why[label] = [{**delta, "captures": [base.id, own.id]} for delta, (base, own) in zip(found, pairs)]
    return why
