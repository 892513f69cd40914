"""A/B results: per-benchmark statistics (`analyze`), `ABReport`, which renders itself, saves itself in the store
(`save`) and reads back from the JSON the store keeps (`from_json`), and the store's saved results through these
types (`saved_results`): the `results` kind `RESULT_KIND`, declared here."""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Iterable, Sequence

from .. import config, format
from ..errors import TritonhookError
from ..measure.stats import Summary, median, ratio_interval, summarize, verdict
from ..measure.variants import Variant
from ..rename import exact_names_pattern
from ..store import ResultKind, Store, register_result_kind

RESULT_KIND = "ab"
"""`Store.results` kind of a saved A/B report; its label column holds the benchmark names, comma-separated."""


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

    def interval(self) -> str:
        """"0.9876 [0.9801, 0.9950]": the time ratio and its 95% interval; "-" for the baseline."""
        if self.ratio is None:
            return "-"
        return f"{self.ratio:.4f} [{self.ci_low:.4f}, {self.ci_high:.4f}]"


@dataclasses.dataclass(frozen=True)
class BenchmarkResult:
    name: str
    flops: float | None
    correctness: str              # "bitwise", "allclose", "MISMATCH", "not checked"
    variants: list[VariantResult]


def analyze(name: str, samples: dict[str, list[float]], variants: Sequence[Variant], *, flops: float | None,
            correctness: str, min_effect: float = config.ab.DEFAULT_MIN_EFFECT) -> BenchmarkResult:
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
                                         verdict=verdict(ratio, low, high, min_effect, baseline_ms=median(base)))
        results.append(result)
    return BenchmarkResult(name, flops, correctness, results)


@dataclasses.dataclass(frozen=True)
class ABWorkloadEstimate:
    """An A/B run with every benchmark given its fastest winning variant (or the baseline where none won),
    computed from the report (`ABReport.workload_estimate`) and rendered by the page. Not a sweep's
    `WorkloadEstimate`: that one is one variant's share-weighted gain over the kernels of a recorded workload."""

    ab_id: int
    baseline_ms: float
    chosen_ms: float
    winners: dict[str, str]  # benchmark -> winning variant
    select: dict[str, str]  # variant -> the regex that gives it exactly to its winners

    @property
    def ratio(self) -> float:
        return self.chosen_ms / self.baseline_ms if self.baseline_ms else 1.0


@dataclasses.dataclass
class ABReport:
    benchmarks: list[BenchmarkResult]
    variants: list[Variant]
    rounds: int
    select: str | None
    command: list[str] | None
    kernels: dict[str, list[dict]]   # variant label -> cubin summaries of the kernels it built
    min_effect: float = config.ab.DEFAULT_MIN_EFFECT
    ab_id: int | None = None          # id in the store
    why: dict[str, list[dict]] = dataclasses.field(default_factory=dict)  # variant label -> its kernels'
    # cubin.CubinDelta.to_json() against the baseline's builds (`runner.kernel_deltas`): why its rows moved

    def why_text(self, label: str) -> str:
        """One cell: why `label`'s rows moved, each kernel's delta (named when there are several); "-" for none."""
        deltas = self.why.get(label) or []
        if len(deltas) == 1:
            return deltas[0]["text"]
        return "; ".join(f"{d['base_entry']}: {d['text']}" for d in deltas) or "-"

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["variants"] = [{**v.to_json(), "rename": v.describe()} for v in self.variants]  # what made each arm
        data["sass_identical"] = self.sass_identical()
        data["benchmark_names"] = ",".join(b.name for b in self.benchmarks)  # the store's label column
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

    def workload_estimate(self) -> "ABWorkloadEstimate | None":
        """Total baseline time of an A/B run against the time with each benchmark's fastest winning variant (a
        variant wins only with the verdict "faster"); None for a run with no benchmarks. The `--select` regex per
        winning variant names the kernels its builds renamed (from the run's kernel summaries) when the run timed
        one benchmark, else the benchmark names (name benchmarks after their kernels for it to apply as is)."""
        if not self.benchmarks:
            return None
        baseline = chosen = 0.0
        winners: dict[str, str] = {}
        for bench in self.benchmarks:
            base_ms = bench.variants[0].summary.median_ms
            faster = [v for v in bench.variants[1:] if v.verdict == "faster"]
            best = min(faster, key=lambda v: v.summary.median_ms, default=None)
            baseline += base_ms
            chosen += best.summary.median_ms if best else base_ms
            if best:
                winners[bench.name] = best.label
        select = {}
        for label in dict.fromkeys(winners.values()):
            names = [k["original_entry"] for k in self.kernels.get(label, [])] if len(self.benchmarks) == 1 \
                else [name for name, won in winners.items() if won == label]
            select[label] = exact_names_pattern(names)
        return ABWorkloadEstimate(self.ab_id or 0, baseline, chosen, winners, select)

    def save(self, store: Store | str | os.PathLike | None, captures: dict[str, Iterable[int]]) -> int:
        """Keep this report in `store` (a Store or its path; None: the default store) with the ids of the captures
        each variant wrote (`SavedABResult.captures`); returns and sets its id."""
        linked = {label: sorted(set(ids)) for label, ids in captures.items()}
        self.ab_id = Store.of(store).add_result(RESULT_KIND, {**self.to_json(), "captures": linked})
        return self.ab_id

    @classmethod
    def from_json(cls, data: dict, *, source: str = "A/B result") -> "ABReport":
        """The report `to_json` wrote (as the store keeps it); `ab_id` from the store's `id` when it has one."""
        try:
            benchmarks = [BenchmarkResult(b["name"], b["flops"], b["correctness"],
                                          [_variant_result(v) for v in b["variants"]]) for b in data["benchmarks"]]
            variants = [Variant.from_json(v) for v in data["variants"]]
            return cls(benchmarks, variants, data["rounds"], data["select"], data["command"], data["kernels"],
                       data.get("min_effect", config.ab.DEFAULT_MIN_EFFECT), data.get("id", data.get("ab_id")),
                       why=data.get("why") or {})
        except (KeyError, TypeError, IndexError) as exc:
            raise TritonhookError(f"{source}: malformed A/B result ({type(exc).__name__}: {exc})") from None

    def rows(self) -> list[tuple]:
        """Table rows: one per benchmark and variant."""
        rows = []
        for bench in self.benchmarks:
            for variant in bench.variants:
                s = variant.summary
                rows.append((bench.name, variant.label, s.n, f"{s.median_ms:.4f}", f"{s.spread_pct:.2f}%",
                             "-" if variant.tflops is None else f"{variant.tflops:.1f}", variant.interval(),
                             variant.verdict, bench.correctness,
                             "-" if variant is bench.variants[0] else self.why_text(variant.label)))
        return rows

    def __rich_console__(self, console, options):
        yield format.table(("benchmark", "variant", "rounds", "median ms", "IQR", "TFLOPS", "time ratio [95% CI]",
                            "verdict", "outputs", "why it moved"), self.rows(),
                           title=f"A/B, {self.rounds} interleaved rounds (store id {self.ab_id})",
                           right_align=("rounds", "median ms", "IQR", "TFLOPS"))
        kernel_rows = [(label, k["entry"], k["arch"], _built_by(k), k.get("registers", "-"),
                        f"{k.get('spill_stores', '-')}/{k.get('spill_loads', '-')}", k.get("capmerc_size", "-"),
                        k.get("text_size", "-")) for label, kernels in self.kernels.items() for k in kernels]
        if kernel_rows:
            yield format.table(("variant", "entry", "arch", "ptxas", "regs", "spill st/ld B", "capmerc B", ".text B"),
                               kernel_rows, right_align=("regs", "spill st/ld B", "capmerc B", ".text B"))
        if self.sass_identical():
            yield format.line("note: every variant built byte-identical SASS, so any difference measured here is "
                              "noise (between processes it can exceed the interval: prefer ab.compare, which "
                              "alternates call by call)")


def _built_by(kernel: dict) -> str:
    """One cell: the ptxas version and extra options that built a kernel row, the control file by its sha256."""
    options = [o for o in kernel.get("ptxas_options") or () if not o.startswith("--apply-controls=")]
    controls = [f"acf {kernel['controls_sha256'][:12]}"] if kernel.get("controls_sha256") else []
    return " ".join([kernel.get("ptxas_version") or "-", *options, *controls])


def _variant_result(data: dict) -> VariantResult:
    summary = {k: v for k, v in data["summary"].items() if k != "spread_pct"}  # a property, written for readers
    return VariantResult(**{**data, "summary": Summary(**summary)})


@dataclasses.dataclass(frozen=True)
class SavedABResult:
    """One A/B result as the store keeps it: the report, when it was saved, and the captures each variant wrote."""

    report: ABReport
    created: float
    captures: dict[str, list[int]]  # variant label -> capture ids

    @property
    def id(self) -> int:
        return self.report.ab_id

    @classmethod
    def from_record(cls, record: dict, *, source: str | None = None) -> "SavedABResult":
        """From one saved record (the JSON `ABReport.save` wrote, with the store's `id` and `created`): the loader
        of `RESULT_KIND`; `source` names the row in errors."""
        source = source or f"A/B result {record.get('id')}"
        report = ABReport.from_json(record, source=source)
        try:
            created, captures = float(record["created"]), {k: list(v) for k, v in record["captures"].items()}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise TritonhookError(f"{source}: malformed store record ({type(exc).__name__}: {exc})") from None
        return cls(report, created, captures)

    def to_json(self) -> dict:
        """The report's JSON with `id`, `created` and `captures`: the keys of the record it was read from."""
        return {**self.report.to_json(), "id": self.id, "created": self.created, "captures": self.captures}


@dataclasses.dataclass
class SavedABResults:
    """The A/B results a store holds (`tritonhook ab --list`): one row per benchmark and compared variant."""

    results: list[SavedABResult]

    def to_json(self) -> list[dict]:
        return [result.to_json() for result in self.results]

    def __rich_console__(self, console, options):
        rows = []
        for saved in self.results:
            report = saved.report
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(saved.created))
            same_sass = {True: "yes", False: "no"}.get(report.sass_identical(), "-")
            for bench in report.benchmarks:
                for variant in bench.variants[1:]:
                    rows.append((saved.id, when, bench.name, f"{variant.label} vs {bench.variants[0].label}",
                                 variant.interval(), variant.verdict, bench.correctness, same_sass))
        if not rows:
            yield format.line("no A/B results")
            return
        yield format.table(("id", "time", "benchmark", "variants", "time ratio [95% CI]", "verdict", "outputs",
                            "same SASS"), rows, right_align=("id",))


register_result_kind(ResultKind(RESULT_KIND, SavedABResult.from_record, label="benchmark_names"))


def saved_results(store: Store) -> SavedABResults:
    """The A/B results `store` holds, in id order, typed (`Store.results(RESULT_KIND)`; a malformed one is a
    `TritonhookError` naming it)."""
    return SavedABResults(store.results(RESULT_KIND))
