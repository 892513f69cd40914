"""A/B-test kernel variants (plain vs renamed): does the `cutlass` name pay on this GPU, for this kernel?

Two ways in:

* `compare(run, variants=("plain", "cutlass_"), flops=..., check=...)` in one process: each round enables
  each variant's rename in turn (Triton's in-memory cache keeps one build per variant) and times `run` with
  `bench`.
* `tritonhook ab [--variants plain,cutlass_] [--rounds N] -- python bench.py`: `run_interleaved` starts the
  script once per variant per round, in fresh processes, interleaved A B A B ...; the script reports its
  timings with `bench(fn, name=...)` or `record(name, ms)`.

Timing (`bench`): CUDA events around every call, warm-up by time, inputs rotated through copies when they fit
in L2 (so every call reads from DRAM as in a real model), and the median of the calls. The unit of comparison
is a round: one median per variant per round. The statistics are pure functions: `summarize`,
`ratio_interval` (ratio of medians; the wider of a percentile bootstrap with rounds resampled in pairs, so
that slow drift of clocks and temperature cancels, and a Student-t interval on the per-round log ratios, which
stays honest with few rounds) and `verdict`. torch is imported only when something is timed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import math
import os
import random
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Sequence

from .errors import TritonhookError
from .rename import STRIP, Rename, Selector, prefixer, rename_description, rename_env

PLAIN = "plain"
STRIP_LABEL = "strip"
OUT_ENV = "TRITONHOOK_AB_OUT"          # JSON-lines file a child appends its records to
VARIANT_ENV = "TRITONHOOK_AB_VARIANT"  # the child's variant label
ROUND_ENV = "TRITONHOOK_AB_ROUND"      # the child's round (outputs are saved in round 0 only)
OUTPUTS_ENV = "TRITONHOOK_AB_OUTPUTS"  # directory for round-0 outputs (allclose check across processes)
MIN_ROUNDS = 5
DEFAULT_MIN_EFFECT = 0.005
"""Differences below 0.5% are called "no difference" even when the interval excludes 1: that is the A/A noise
floor `benchmarks/ab_noise.py` targets, and below it a difference says more about the machine than the kernel."""


# ----- variants ---------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Variant:
    label: str                # unique within one comparison: "plain", "cutlass_", "plain#2"
    rename: Rename | None     # None: Triton's own name

    def describe(self) -> str:
        return "no rename" if self.rename is None else rename_description(self.rename)


def parse_variants(spec: str | Sequence[str]) -> list[Variant]:
    """"plain,cutlass_" -> variants. `plain`: no rename; `strip`: remove `cutlass`; anything else: a prefix.
    A repeated name (an A/A run) gets `#2`, `#3` so the two arms stay apart."""
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec)]
    if len(names) < 2 or not all(names):
        raise TritonhookError(f"variants {spec!r}: give at least two, e.g. plain,cutlass_ (or plain,plain for A/A)")
    variants, seen = [], {}
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        label = name if seen[name] == 1 else f"{name}#{seen[name]}"
        if name == PLAIN:
            rename = None
        elif name == STRIP_LABEL:
            rename = STRIP
        else:
            prefixer(name)  # validates the prefix now rather than in the middle of a compile
            rename = name
        variants.append(Variant(label, rename))
    return variants


# ----- statistics (pure) ------------------------------------------------------------------------------------------
def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default) of a non-empty sample."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float:
    return quantile(values, 0.5)


@dataclasses.dataclass(frozen=True)
class Summary:
    n: int
    median_ms: float
    p25_ms: float
    p75_ms: float
    min_ms: float
    max_ms: float

    @property
    def spread_pct(self) -> float:
        """Interquartile range relative to the median, in percent."""
        return 100.0 * (self.p75_ms - self.p25_ms) / self.median_ms if self.median_ms else 0.0


def summarize(samples_ms: Sequence[float]) -> Summary:
    if not samples_ms:
        raise TritonhookError("no timings to summarize")
    return Summary(len(samples_ms), median(samples_ms), quantile(samples_ms, 0.25), quantile(samples_ms, 0.75),
                   min(samples_ms), max(samples_ms))


def bootstrap_ratio(base: Sequence[float], other: Sequence[float], *, resamples: int = 4000,
                    level: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """(median(other) / median(base), low, high): a percentile-bootstrap interval of the time ratio.

    Samples of equal length are rounds of an interleaved run: they are resampled in pairs (a round that ran
    while the GPU was hot is drawn for both arms). The seed is fixed so a report is reproducible.
    """
    if not base or not other:
        raise TritonhookError("bootstrap_ratio: both variants need at least one timing")
    rng = random.Random(seed)
    paired = len(base) == len(other)
    ratios = []
    for _ in range(resamples):
        picks = [rng.randrange(len(base)) for _ in base]
        others = picks if paired else [rng.randrange(len(other)) for _ in other]
        ratios.append(median([other[i] for i in others]) / median([base[i] for i in picks]))
    tail = (1.0 - level) / 2
    return median(other) / median(base), quantile(ratios, tail), quantile(ratios, 1.0 - tail)


# Two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom (beyond 30: the normal's 1.96 is within 4%).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t_interval_ratio(base: Sequence[float], other: Sequence[float]) -> tuple[float, float] | None:
    """A 95% Student-t interval of the per-round time ratio (on its logarithm), from paired rounds.

    With few rounds the percentile bootstrap is too narrow (it cannot know the spread it has not seen); measured
    between fresh processes it called a kernel with byte-identical SASS 1.7% "faster". The t interval widens
    with the small-sample factor. None when the rounds are not paired or fewer than two."""
    if len(base) != len(other) or len(base) < 2:
        return None
    logs = [math.log(o / b) for b, o in zip(base, other)]
    mean = sum(logs) / len(logs)
    spread = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1) / len(logs))
    t = _T975[len(logs) - 2] if len(logs) - 1 <= len(_T975) else 1.96
    return math.exp(mean - t * spread), math.exp(mean + t * spread)


def ratio_interval(base: Sequence[float], other: Sequence[float]) -> tuple[float, float, float]:
    """(ratio of medians, low, high): the wider of the paired percentile bootstrap and the t interval, so the
    verdict errs towards "no difference" when rounds are few or noisy."""
    ratio, low, high = bootstrap_ratio(base, other)
    t_bounds = t_interval_ratio(base, other)
    if t_bounds is not None:
        low, high = min(low, t_bounds[0]), max(high, t_bounds[1])
    return ratio, low, high


def verdict(ratio: float, low: float, high: float, min_effect: float = DEFAULT_MIN_EFFECT) -> str:
    """"faster" / "slower" when the interval excludes 1 and the change is at least `min_effect`."""
    if high < 1.0 and ratio <= 1.0 - min_effect:
        return "faster"
    if low > 1.0 and ratio >= 1.0 + min_effect:
        return "slower"
    return "no difference"


# ----- results ------------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class VariantResult:
    label: str
    rename: str
    summary: Summary
    samples_ms: list[float]
    tflops: float | None
    ratio: float | None = None     # median time / the baseline's; < 1 is faster
    ci_low: float | None = None
    ci_high: float | None = None
    verdict: str = "baseline"


@dataclasses.dataclass(frozen=True)
class BenchmarkResult:
    name: str
    flops: float | None
    correctness: str              # "bitwise", "allclose", "MISMATCH", "not checked"
    variants: list[VariantResult]


def analyze(name: str, samples: dict[str, list[float]], variants: Sequence[Variant], *, flops: float | None,
            correctness: str, min_effect: float = DEFAULT_MIN_EFFECT) -> BenchmarkResult:
    """One benchmark's per-variant statistics; the first variant is the baseline."""
    missing = [v.label for v in variants if not samples.get(v.label)]
    if missing:
        raise TritonhookError(f"benchmark {name!r}: no timings for variant(s) {', '.join(missing)}")
    base = samples[variants[0].label]
    results = []
    for index, variant in enumerate(variants):
        own = samples[variant.label]
        summary = summarize(own)
        tflops = flops / (summary.median_ms * 1e-3) / 1e12 if flops else None
        result = VariantResult(variant.label, variant.describe(), summary, list(own), tflops)
        if index:
            ratio, low, high = ratio_interval(base, own)
            result = dataclasses.replace(result, ratio=ratio, ci_low=low, ci_high=high,
                                         verdict=verdict(ratio, low, high, min_effect))
        results.append(result)
    return BenchmarkResult(name, flops, correctness, results)


@dataclasses.dataclass
class ABReport:
    benchmarks: list[BenchmarkResult]
    variants: list[Variant]
    rounds: int
    select: str | None
    command: list[str] | None
    kernels: dict[str, list[dict]]   # variant label -> cubin summaries of the kernels it built
    min_effect: float = DEFAULT_MIN_EFFECT
    ab_id: int | None = None          # id in the store

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["variants"] = [{"label": v.label, "rename": v.describe()} for v in self.variants]
        data["sass_identical"] = self.sass_identical()
        for bench_data, bench in zip(data["benchmarks"], self.benchmarks):
            for variant_data, variant in zip(bench_data["variants"], bench.variants):
                variant_data["summary"]["spread_pct"] = variant.summary.spread_pct
        return data

    def sass_identical(self) -> bool | None:
        """True when every variant built byte-identical SASS (`.text`) for every kernel: then no measured
        difference can come from the code, only from noise. None when the cubins were not summarized."""
        hashes = {label: {k.get("text_sha256") for k in kernels} for label, kernels in self.kernels.items()}
        if not hashes or any(not h or None in h for h in hashes.values()):
            return None
        return len({frozenset(h) for h in hashes.values()}) == 1

    def benchmark(self, name: str) -> BenchmarkResult:
        for bench in self.benchmarks:
            if bench.name == name:
                return bench
        raise TritonhookError(f"no benchmark {name!r} in this A/B report "
                              f"(have: {', '.join(b.name for b in self.benchmarks)})")


# ----- timing on the GPU ------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class BenchResult:
    median_ms: float
    samples_ms: list[float]
    input_sets: int                  # > 1: inputs were rotated through this many copies
    output: object = dataclasses.field(default=None, repr=False, compare=False)


def rotation_sets(working_set_bytes: int, l2_bytes: int, *, factor: int = 4, most: int = 64) -> int:
    """How many copies of the inputs to rotate through so that a call never finds its inputs in L2: enough to
    span `factor` times the L2 when one set fits in it, else 1."""
    if working_set_bytes <= 0 or working_set_bytes > l2_bytes:
        return 1
    return max(2, min(most, math.ceil(factor * l2_bytes / working_set_bytes)))


def _torch():
    try:
        import torch
    except ImportError:
        raise TritonhookError("timing needs torch with CUDA (import torch failed)") from None
    if not torch.cuda.is_available():
        raise TritonhookError("timing needs a CUDA GPU: torch.cuda.is_available() is False")
    return torch


def _input_sets(torch, inputs: tuple) -> list[tuple]:
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    size = sum(t.numel() * t.element_size() for t in tensors)
    l2_bytes = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    count = rotation_sets(size, l2_bytes)
    copies = [tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in inputs) for _ in range(count - 1)]
    return [inputs, *copies]


def bench(fn: Callable, *, inputs: Sequence = (), warmup_ms: float = 25.0, rep_ms: float = 100.0,
          min_reps: int = 10, name: str | None = None, flops: float | None = None) -> BenchResult:
    """Time `fn(*inputs)` with CUDA events: the median of per-call times after a timed warm-up.

    With `name`, the result is also reported through `record` (what `tritonhook ab` collects), with the
    first call's return value as the output whose equality across variants is checked.
    """
    (result,) = bench_interleaved([(contextlib.nullcontext, fn)], inputs=inputs, warmup_ms=warmup_ms,
                                  rep_ms=rep_ms, min_reps=min_reps)
    if name is not None:
        record(name, result.median_ms, flops=flops, output=result.output)
    return result


Arm = tuple  # (context-manager factory entered around each call, callable)


def bench_interleaved(arms: Sequence[Arm], *, inputs: Sequence = (), warmup_ms: float = 25.0,
                      rep_ms: float = 100.0, min_reps: int = 10) -> list[BenchResult]:
    """Time several arms call by call, A B A B ..., so that clock and power swings (a GPU at its power limit
    moves by several percent within a second) fall on every arm alike. Each call runs inside its arm's
    context (for A/B: the variant's capture session); the events bracket the call alone."""
    torch = _torch()
    sets = _input_sets(torch, tuple(inputs))
    outputs = []
    for enter, fn in arms:  # first call of each arm: compiles; its result is the output compared across arms
        with enter():
            outputs.append(_snapshot(fn(*sets[0])))
    torch.cuda.synchronize()
    estimate_ms = max(_estimate_ms(torch, arms, sets), 1e-4)
    _timed_calls(torch, arms, sets, max(1, int(warmup_ms / estimate_ms)))
    samples = _timed_calls(torch, arms, sets, max(min_reps, int(rep_ms / estimate_ms)))
    return [BenchResult(median(arm_samples), arm_samples, len(sets), output)
            for arm_samples, output in zip(samples, outputs)]


def _estimate_ms(torch, arms, sets) -> float:
    """Mean time of one call of the slowest arm, from a short burst (sizes the warm-up and the repetitions)."""
    return max(sum(arm_samples) / len(arm_samples) for arm_samples in _timed_calls(torch, arms, sets, 5))


def _timed_calls(torch, arms, sets, count: int) -> list[list[float]]:
    """`count` rounds of one call per arm, each bracketed by CUDA events; ms per call, per arm."""
    events = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in arms]
              for _ in range(count)]
    for i, pairs in enumerate(events):
        for (enter, fn), (begin, finish) in zip(arms, pairs):
            with enter():
                begin.record()
                fn(*sets[i % len(sets)])
                finish.record()
    torch.cuda.synchronize()
    return [[pairs[a][0].elapsed_time(pairs[a][1]) for pairs in events] for a in range(len(arms))]


# ----- reporting from a benchmark script ------------------------------------------------------------------------
def attention_flops(batch: int, heads: int, seq: int, dim: int, causal: bool = False) -> float:
    """FLOPs of one attention forward pass, the count `flops=` expects for an attention kernel: two GEMMs
    (Q K^T and P V), 4 * B * H * S^2 * D, halved when causal (FlashAttention's convention)."""
    return 4.0 * batch * heads * seq * seq * dim / (2 if causal else 1)


def record(name: str, ms: float, *, flops: float | None = None, output=None) -> dict:
    """Report one timing. Under `tritonhook ab` it goes to the runner; outside, it is printed.

    `output` (a tensor) is what the variants' results are compared on: its sha256 is recorded, and in round 0
    the tensor itself is saved so the runner can fall back to allclose when the bits differ.
    """
    entry = {"name": name, "ms": float(ms), "flops": flops, "variant": os.environ.get(VARIANT_ENV),
             "round": int(os.environ.get(ROUND_ENV, "0")), "pid": os.getpid()}
    if output is not None:
        entry["output_sha256"] = _tensor_digest(output)
        if os.environ.get(OUTPUTS_ENV) and entry["round"] == 0:
            import torch

            torch.save(output.detach().cpu(), Path(os.environ[OUTPUTS_ENV]) / _output_file(entry["variant"], name))
    path = os.environ.get(OUT_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
    else:
        print(f"tritonhook.ab.record: {name} {ms:.4f} ms")
    return entry


def _tensor_digest(tensor) -> str:
    """sha256 of the tensor's bytes (read through ctypes: torch does not require numpy)."""
    import ctypes

    host = tensor.detach().contiguous().cpu()
    return hashlib.sha256(ctypes.string_at(host.data_ptr(), host.numel() * host.element_size())).hexdigest()


def _output_file(variant: str | None, name: str) -> str:
    return hashlib.sha256(f"{variant}\0{name}".encode()).hexdigest()[:24] + ".pt"


# ----- correctness ------------------------------------------------------------------------------------------------
def compare_outputs(outputs: dict[str, object], check, *, rtol: float = 1e-2, atol: float = 1e-2) -> str:
    """Compare every variant's output with the first one's: "bitwise" when all are identical, "allclose" when
    `check` allows tolerance and all are close, else "MISMATCH"; "not checked" without outputs or `check`."""
    values = [v for v in outputs.values() if v is not None]
    if check is None or len(values) < 2:
        return "not checked"
    import torch

    base, others = values[0], values[1:]
    if callable(check):
        return "check passed" if all(check(base, other) for other in others) else "MISMATCH"
    if check not in ("bitwise", "allclose"):
        raise TritonhookError(f"check={check!r}: use 'bitwise', 'allclose', a callable (a, b) -> bool, or None")
    if all(torch.equal(base, other) for other in others):
        return "bitwise"
    if check == "allclose" and all(torch.allclose(base.float(), other.float(), rtol=rtol, atol=atol)
                                   for other in others):
        return "allclose"
    return "MISMATCH"


# ----- in one process -----------------------------------------------------------------------------------------------
def compare(run: Callable, variants: str | Sequence[str] = (PLAIN, "cutlass_"), *, flops: float | None = None,
            check="allclose", inputs: Sequence = (), rounds: int = 10, select: Selector = None, store=None,
            name: str | None = None, warmup_ms: float = 25.0, rep_ms: float = 100.0,
            min_effect: float = DEFAULT_MIN_EFFECT, progress: bool = True) -> ABReport:
    """Time `run(*inputs)` under each variant, `rounds` times interleaved, in this process.

    `run` launches the workload and returns its output (compared with `check`). Every build is captured into
    `store`, and the report is saved there, linked to those captures.
    """
    from . import ptx_capture
    from .store import Store

    if ptx_capture.active_session() is not None:
        raise TritonhookError("ab.compare() enables each variant itself: call tritonhook.disable() first")
    parsed = parse_variants(variants)
    opened = store if isinstance(store, Store) else Store(store)
    samples = {v.label: [] for v in parsed}
    outputs, captures = {}, {v.label: [] for v in parsed}
    label = name or getattr(run, "__name__", "run")

    @contextlib.contextmanager
    def variant_session(variant: Variant):
        """The capture session of one variant; the ids it captures are kept for the report."""
        with ptx_capture.session(opened, subprocesses=False, rename=variant.rename,
                                 select=select if variant.rename is not None else None) as active:
            yield
            captures[variant.label] += active.capture_ids

    arms = [(functools.partial(variant_session, variant), run) for variant in parsed]
    with _progress(progress, rounds) as step:
        for round_index in range(rounds):
            results = bench_interleaved(arms, inputs=inputs, warmup_ms=warmup_ms, rep_ms=rep_ms)
            for variant, result in zip(parsed, results):
                samples[variant.label].append(result.median_ms)
                outputs.setdefault(variant.label, result.output)
            step(f"round {round_index + 1}/{rounds}")
    benchmark = analyze(label, samples, parsed, flops=flops, correctness=compare_outputs(outputs, check),
                        min_effect=min_effect)
    return _finish(opened, [benchmark], parsed, rounds, select, None, captures, min_effect)


def _snapshot(output):
    clone = getattr(output, "clone", None)
    return clone() if callable(clone) else output


# ----- in fresh processes (the CLI) -----------------------------------------------------------------------------
def run_interleaved(command: list[str], variants: Sequence[Variant], *, rounds: int, store, select: str | None,
                    check: str | None = "allclose", min_effect: float = DEFAULT_MIN_EFFECT,
                    progress: bool = True) -> ABReport:
    """Run `command` once per variant per round (A B A B ...), each in a fresh process, and analyse the timings
    it reports. Each child captures into `store` with its variant's rename."""
    from .ptx_capture import child_env

    if rounds < MIN_ROUNDS:
        raise TritonhookError(f"--rounds {rounds}: use at least {MIN_ROUNDS} so the interval means something")
    records, pids = [], {v.label: set() for v in variants}
    last_before = store.last_id()  # the children's captures are the ones after it
    with tempfile.TemporaryDirectory(prefix="tritonhook-ab-") as scratch, \
            _progress(progress, rounds * len(variants)) as step:
        for round_index in range(rounds):
            for variant in variants:
                out = Path(scratch) / f"round{round_index}-{len(records)}.jsonl"
                env = {**child_env(store.path),
                       **rename_env(variant.rename, select if variant.rename is not None else None),
                       OUT_ENV: str(out), VARIANT_ENV: variant.label, ROUND_ENV: str(round_index),
                       OUTPUTS_ENV: scratch}
                reported = _run_child(command, env, out, f"round {round_index + 1}, variant {variant.label}")
                records += reported
                pids[variant.label].update(r["pid"] for r in reported)
                step(f"round {round_index + 1}/{rounds} {variant.label}")
        benchmarks = [analyze(name, samples, variants, flops=flops,
                              correctness=_check_across_processes(name, by_variant, variants, scratch, check),
                              min_effect=min_effect)
                      for name, (samples, flops, by_variant) in collect(records).items()]
    written = store.captures(after=last_before)
    captures = {label: [c.id for c in written if c.pid in ids] for label, ids in pids.items()}
    return _finish(store, benchmarks, variants, rounds, select, command, captures, min_effect)


def _run_child(command: list[str], env: dict, out: Path, where: str) -> list[dict]:
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True)
    except FileNotFoundError:
        raise TritonhookError(f"{command[0]}: command not found") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise TritonhookError(f"{' '.join(command)}: exited with status {done.returncode} ({where}): {tail[0]}")
    reported = read_records(out)
    if not reported:
        raise TritonhookError(f"{' '.join(command)}: reported no timings ({where}); time with "
                              f"tritonhook.ab.bench(fn, name=...) or report with tritonhook.ab.record(name, ms)")
    return reported


def read_records(path: Path) -> list[dict]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    try:
        return [json.loads(line) for line in lines if line.strip()]
    except json.JSONDecodeError as exc:
        raise TritonhookError(f"{path}: a timing record is not JSON ({exc})") from None


def collect(records: Iterable[dict]) -> dict[str, tuple[dict[str, list[float]], float | None, dict[str, set]]]:
    """Per benchmark name: ({variant: one median per round}, flops, {variant: output digests})."""
    grouped: dict[str, dict[tuple[str, int], list[float]]] = {}
    flops: dict[str, float | None] = {}
    digests: dict[str, dict[str, set]] = {}
    for entry in records:
        grouped.setdefault(entry["name"], {}).setdefault((entry["variant"], entry["round"]), []).append(entry["ms"])
        flops[entry["name"]] = entry.get("flops") or flops.get(entry["name"])
        if entry.get("output_sha256"):
            digests.setdefault(entry["name"], {}).setdefault(entry["variant"], set()).add(entry["output_sha256"])
    result = {}
    for name, runs in grouped.items():
        samples: dict[str, list[float]] = {}
        for (variant, _round), values in sorted(runs.items(), key=lambda item: item[0][1]):
            samples.setdefault(variant, []).append(median(values))
        result[name] = (samples, flops[name], digests.get(name, {}))
    return result


def _check_across_processes(name: str, digests: dict[str, set], variants: Sequence[Variant], scratch: str,
                            check) -> str:
    if check is None or len(digests) < len(variants):
        return "not checked"
    if len(set().union(*digests.values())) == 1:
        return "bitwise"
    import torch

    outputs = {}
    for variant in variants:
        path = Path(scratch) / _output_file(variant.label, name)
        outputs[variant.label] = torch.load(path) if path.exists() else None
    return compare_outputs(outputs, check)


# ----- shared ending ------------------------------------------------------------------------------------------------
def _finish(store, benchmarks, variants, rounds, select, command, captures, min_effect) -> ABReport:
    report = ABReport(benchmarks, list(variants), rounds, _select_text(select), command,
                      {label: kernel_summaries(store, ids) for label, ids in captures.items()}, min_effect)
    report.ab_id = store.add_ab_result(report.to_json(), captures)
    return report


def _select_text(select) -> str | None:
    if select is None or isinstance(select, str):
        return select
    return getattr(select, "pattern", None) or repr(select)


def kernel_summaries(store, capture_ids: Iterable[int]) -> list[dict]:
    """One row per distinct cubin the variant built: names, and registers / spills / capmerc size."""
    rows, seen = [], set()
    for capture in store.captures(ids=list(capture_ids)):
        cubin = capture.artifacts.get("cubin")
        if cubin is None or (capture.entry, cubin.sha256) in seen:
            continue
        seen.add((capture.entry, cubin.sha256))
        try:
            summary = cubin_summary(store.read(capture, "cubin"), capture.entry)
        except TritonhookError as exc:  # the timings stand without it: report why the summary is missing
            summary = {"summary_error": str(exc)}
        rows.append({"capture_id": capture.id, "kernel": capture.kernel, "entry": capture.entry,
                     "original_entry": capture.original_entry, "arch": capture.arch, "cubin_size": cubin.size,
                     **summary})
    return rows


def cubin_summary(data: bytes, entry: str) -> dict:
    """Registers, spills and section sizes of `entry` in a cubin (through tritonhook.cubin)."""
    from .cubin import Cubin

    cubin = Cubin.from_bytes(data)
    kernel = cubin.kernels[entry]
    summary = {field: getattr(kernel, field) for field in ("registers", "spill_stores", "spill_loads",
                                                           "capmerc_size", "text_size", "frame_size")}
    summary["text_sha256"] = next((s.sha256 for s in cubin.sections if s.name == f".text.{entry}"), None)
    return summary


# ----- presentation -----------------------------------------------------------------------------------------------
class _progress:
    """A rich progress bar on a terminal's stderr: `with _progress(on, total) as step: step("label")`."""

    def __init__(self, enabled: bool, total: int):
        self.enabled, self.total, self.bar = enabled, total, None

    def __enter__(self):
        from .report import console

        screen = console(stderr=True)
        if self.enabled and screen.is_terminal:  # a log file gets no bar (rich would leave blank lines there)
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("A/B {task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), console=screen, transient=True)
            self.bar.start()
            self.task = self.bar.add_task("starting", total=self.total)
        return self._step

    def _step(self, description: str) -> None:
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=description)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()
        return False


def report_rows(report: ABReport) -> list[tuple]:
    """Table rows: one per benchmark and variant."""
    rows = []
    for bench in report.benchmarks:
        for variant in bench.variants:
            s = variant.summary
            interval = "-" if variant.ratio is None else \
                f"{variant.ratio:.4f} [{variant.ci_low:.4f}, {variant.ci_high:.4f}]"
            rows.append((bench.name, variant.label, s.n, f"{s.median_ms:.4f}", f"{s.spread_pct:.2f}%",
                         "-" if variant.tflops is None else f"{variant.tflops:.1f}", interval, variant.verdict,
                         bench.correctness))
    return rows


def print_report(report: ABReport) -> None:
    from . import report as render

    render.print_table(("benchmark", "variant", "rounds", "median ms", "IQR", "TFLOPS", "time ratio [95% CI]",
                        "verdict", "outputs"), report_rows(report),
                       title=f"A/B, {report.rounds} interleaved rounds (store id {report.ab_id})",
                       right_align=("rounds", "median ms", "IQR", "TFLOPS"))
    kernel_rows = [(label, k["entry"], k["arch"], k.get("registers", "-"),
                    f"{k.get('spill_stores', '-')}/{k.get('spill_loads', '-')}", k.get("capmerc_size", "-"),
                    k.get("text_size", "-")) for label, kernels in report.kernels.items() for k in kernels]
    if kernel_rows:
        render.print_table(("variant", "entry", "arch", "regs", "spill st/ld B", "capmerc B", ".text B"),
                           kernel_rows, right_align=("regs", "spill st/ld B", "capmerc B", ".text B"))
    if report.sass_identical():
        print("note: every variant built byte-identical SASS, so any difference measured here is noise "
              "(between processes it can exceed the interval: prefer ab.compare, which alternates call by call)")

