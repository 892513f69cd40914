"""`SweepResult`: per kernel signature, its share of the workload, the variants' times, ratios and verdicts,
output equality and the cubin facts; and the estimate for the whole workload. Renders itself (rich) and to JSON."""

from __future__ import annotations

import collections
import dataclasses
import shlex

from .. import config, format
from ..cubin import CubinDeltas
from ..measure.sequential import FIXED, ratio_sequence
from ..measure.stats import median, ratio_interval, verdict
from ..measure.variants import config_of_label
from ..errors import TritonhookError
from ..rename import exact_names_pattern
from ..store import ResultKind, register_result_kind
from .builds import IDENTICAL, BuiltVariant
from .fusion import TemplateFusion, fusions_line


TRITON_CACHE = "Triton's autotune cache (an earlier run's benchmark)"
"""Where a pick read from Triton's autotune cache came from (`triton.autotune(cache_results=True)`), as rows say."""
RESULT_KIND = "sweep"
"""The kind a `SweepResult` is saved under in the store's results table (declared below it: found by its recording)."""


def cached_pick_counts(tunes: list[dict | None]) -> tuple[int, int]:
    """Of rows' `autotune` fields, (how many ran a pick not made at their own call, how many of those the recording's
    own benchmark would have picked otherwise)."""
    picks = [tune["cached_pick"] for tune in tunes if (tune or {}).get("cached_pick")]
    return len(picks), sum(1 for pick in picks if pick["agrees"] is False)


@dataclasses.dataclass
class VariantTiming:
    label: str
    median_ms: float | None
    ratio: float | None = None        # time / the baseline's; < 1 is faster
    low: float | None = None
    high: float | None = None
    verdict: str = "baseline"
    facts: dict = dataclasses.field(default_factory=dict)   # cubin summary of this variant's kernel
    why: dict | None = None           # cubin.CubinDelta.to_json() against the baseline's cubin (`explain`)
    samples: list[float] = dataclasses.field(default_factory=list)  # the per-round times behind `ratio`


@dataclasses.dataclass
class SweepRow:
    signature: int
    kernel: str
    label: str
    share: float | None               # of the recorded Triton GPU time
    launches: int
    recorded_ms: float | None          # median sampled time per launch inside the workload
    inputs: str                        # snapshot / synthetic / partly synthetic / none
    status: str                        # ok, or what went wrong (build, replay error, fault)
    outputs: str = "-"                 # bitwise / within spread / close / differ / no output (measure.outputs)
    output_check: dict | None = None   # measure.outputs.OutputCheck.to_json(): the figures behind `outputs`
    detail: str = ""                   # the worker's traceback when the replay failed (in --json, not the table)
    replayed_on: str = ""              # host/gpuN of the worker that replayed it
    retried_after: str = ""            # where and why earlier workers died on it, when it was retried
    variants: list[VariantTiming] = dataclasses.field(default_factory=list)
    autotune: dict | None = None       # a candidate: {"group", "config"}; a group's row: see autotune.analyze_group
    behind_ms: float | None = None     # how far the GPU ran behind the host at it inside the workload (recorded)
    l2_dirt: float | None = None       # how dirty the recording's dirt probe found the L2 for it (l2probe)
    recorded_empty_ms: float | None = None  # the empty kernel after it inside the workload (measure.timing)
    recorded_late_us: float | None = None  # inside the workload, queued this long after its hold ran out (median)
    empty_ms: float | None = None      # the same after each replayed call
    clock_mhz: float | None = None     # the SM clock after its rounds (measure.timing.sm_clock_mhz)
    miss: dict | None = None           # why it missed the fidelity bar, measured (misses.py; replay._explain_misses)
    rounds: int | None = None          # rounds timed (adaptive: where its stop rule stopped them)
    stopped: str | None = None         # why they stopped (measure.sequential: decided, precise enough, cap, fixed)

    def rounds_text(self) -> str:
        """The rounds it was timed and why they stopped ("7 decided"), "-" where not timed."""
        return f"{self.rounds} {self.stopped}" if self.rounds else "-"

    @property
    def lead_ms(self) -> float | None:
        """How much longer the empty kernel queued after each timed kernel (`measure.timing.time_empty_kernel`) took in
        the replay than inside the workload: the difference in launch lead between the two places, which a kernel of
        a few µs carries in its replay/workload ratio (`net_fidelity` takes it out). None unless both were timed."""
        if self.empty_ms is None or self.recorded_empty_ms is None:
            return None
        return self.empty_ms - self.recorded_empty_ms

    @property
    def fidelity(self) -> float | None:
        """Replayed (baseline) time over the time inside the workload; 1.0 is perfect agreement."""
        base = self.variants[0].median_ms if self.variants else None
        return base / self.recorded_ms if base and self.recorded_ms else None

    @property
    def net_fidelity(self) -> float | None:
        """`fidelity` with the launch-lead difference (`lead_ms`) taken out of the replayed time. Beside the plain
        ratio, not instead of it: the correction over-shoots some short kernels, which lean low net of the lead
        (docs/sweep_fidelity.md#the-launch-lead). None without a lead."""
        base = self.variants[0].median_ms if self.variants else None
        lead = self.lead_ms
        return (base - lead) / self.recorded_ms if base and self.recorded_ms and lead is not None else None


def analyze_row(row: SweepRow, samples: dict[str, list[float]], facts: dict[str, dict],
                identical: dict[str, str], min_effect: float = config.ab.DEFAULT_MIN_EFFECT, sequential: bool = False
                ) -> SweepRow:
    """Fill `row.variants` from the per-round medians of each timed variant (the first label is the baseline);
    a variant in `identical` (label -> the label whose .text it equals) is not timed and says so. `sequential`:
    the rounds stopped by a rule looking after each one, so the interval is the always-valid one
    (`measure.sequential.ratio_sequence`), else the fixed-n `ratio_interval`."""
    interval = _sequence_interval if sequential else ratio_interval
    labels = list(facts)
    base = samples.get(labels[0]) or []
    for label in labels:
        own = samples.get(label)
        timing = VariantTiming(label, median(own) if own else None, facts=facts[label], samples=list(own or []))
        if label == labels[0]:
            pass
        elif label in identical:  # not timed: the rounds of the variant whose SASS it shares stand for it
            twin = list(samples.get(identical[label]) or [])
            timing.samples, timing.verdict = twin, IDENTICAL
            if identical[label] == labels[0]:
                timing.ratio, timing.low, timing.high = 1.0, 1.0, 1.0
            elif twin and base:  # SASS identical to another variant: that variant's ratio to the baseline
                timing.ratio, timing.low, timing.high = interval(base, twin)
        elif own and base:
            ratio, low, high = interval(base, own)
            timing.ratio, timing.low, timing.high = ratio, low, high
            timing.verdict = verdict(ratio, low, high, min_effect, baseline_ms=median(base))
        else:
            timing.verdict = "-"
        row.variants.append(timing)
    return row


def _sequence_interval(base: list[float], other: list[float]) -> tuple[float, float, float]:
    found = ratio_sequence(base, other)
    return found.ratio, found.low, found.high


def explain(rows: list[SweepRow], built: dict[int, dict[str, BuiltVariant]], deltas: CubinDeltas | None = None
            ) -> None:
    """Set `why` on every timed variant of every replayed row: what changed between the baseline's cubin and its
    own (`cubin.CubinDelta`; docs/sweep.md#why-a-row-moved). An autotune group's row compares the candidates each
    variant ran at (`winner_signatures`). `built`: signature id -> label -> built variant. Variants with identical
    SASS and untimed ones are left out: the disassembly behind the instruction mix is the slow part."""
    deltas = deltas or CubinDeltas()
    wanted = []
    for row in rows:
        if row.status != "ok" or len(row.variants) < 2:
            continue
        at = (row.autotune or {}).get("winner_signatures") or {}
        of = lambda label: built.get(at.get(label, row.signature), {}).get(label)  # noqa: E731
        base = of(row.variants[0].label)
        for timing in row.variants[1:]:
            own = of(timing.label)
            if base is not None and own is not None and timing.verdict != IDENTICAL and timing.median_ms is not None:
                wanted.append((timing, (base.cubin, own.cubin, base.entry, own.entry)))
    for (timing, _), delta in zip(wanted, deltas.many([pair for _, pair in wanted])):
        timing.why = delta.to_json()


FIDELITY_COVERAGE, FIDELITY_TOLERANCE = 0.9, 0.1
"""The fidelity the sweep is held to: the signatures making up 90% of the recorded GPU time, each
replayed within ±10% of its time inside the workload."""


@dataclasses.dataclass
class Fidelity:
    """How far the replay can be trusted: of the signatures making up `coverage` of the recorded GPU time (largest
    share first), how many replayed within ±`tolerance` of their time inside the workload and the share of the GPU
    time they make (`within_share`: how much of the workload's time the replay reproduces), the median
    replayed / in-workload ratio among them (its distance from 1 is a bias shared by the whole replay), the
    median launch-lead difference between replay and workload (`SweepRow.lead_ms`), and how many are within the
    tolerance net of it (`within_net`, `SweepRow.net_fidelity`; None when no row has a lead)."""

    signatures: int
    share: float
    within: int
    median_ratio: float | None
    coverage: float = FIDELITY_COVERAGE
    tolerance: float = FIDELITY_TOLERANCE
    median_lead_ms: float | None = None
    within_share: float = 0.0
    within_net: int | None = None

    @staticmethod
    def members(rows: list[SweepRow], coverage: float = FIDELITY_COVERAGE) -> list[SweepRow]:
        """The rows the bar is held to: largest share first, until they make `coverage` of the GPU time."""
        covered, top = 0.0, []
        for row in sorted((r for r in rows if r.share), key=lambda r: r.share, reverse=True):
            if covered >= coverage - 1e-9:  # shares are floats: 0.6 + 0.3 is 0.8999...
                break
            top.append(row)
            covered += row.share
        return top

    @classmethod
    def of(cls, rows: list[SweepRow], coverage: float = FIDELITY_COVERAGE,
           tolerance: float = FIDELITY_TOLERANCE) -> "Fidelity":
        top = cls.members(rows, coverage)
        covered = sum(row.share for row in top)
        ratios = [r.fidelity for r in top if r.fidelity is not None]
        faithful = [r for r in top if r.fidelity is not None and abs(r.fidelity - 1.0) <= tolerance]
        leads = [r.lead_ms for r in top if r.lead_ms is not None]
        net = [r for r in top if r.net_fidelity is not None and abs(r.net_fidelity - 1.0) <= tolerance]
        return cls(len(top), covered, len(faithful), median(ratios) if ratios else None, coverage, tolerance,
                   median(leads) if leads else None, sum(r.share for r in faithful), len(net) if leads else None)

    def line(self) -> str:
        if not self.signatures:
            return "replay/workload: no signature has a measured share of the GPU time"
        bias = f"; median replay/workload {self.median_ratio:.3f}" if self.median_ratio is not None else ""
        lead = (f"; launch lead (an empty kernel after each) {self.median_lead_ms * 1e3:+.2f} µs in the replay, "
                f"{self.within_net} within ±{self.tolerance:.0%} net of it"
                if self.median_lead_ms is not None else "")
        return (f"replay/workload: {self.within} of the {self.signatures} signatures making {self.share:.0%} of the "
                f"GPU time replay within ±{self.tolerance:.0%} of their time inside the workload "
                f"({self.within_share:.0%} of the GPU time){bias}{lead}")


def within_fidelity_bar(row: SweepRow, tolerance: float = FIDELITY_TOLERANCE) -> bool:
    """Whether the row's replay ran within ±`tolerance` of its time inside the workload: only then does a ratio the
    replay measured stand for the workload. A row never timed inside the workload is not within it."""
    return row.fidelity is not None and abs(row.fidelity - 1.0) <= tolerance


@dataclasses.dataclass
class WorkloadEstimate:
    """What renaming (or re-assembling) only the kernels that got faster does to the recorded Triton GPU time.
    `unconfirmed`: the kernels that read faster only on rows whose replay missed the fidelity bar: left out of the
    ratio and the command, each with its rows' replay/workload ratios and the command that measures it inside the
    workload (`tritonhook ab` of the workload, that kernel alone renamed, fresh processes)."""

    variant: str
    kernels: list[str]
    ratio: float                      # new / old Triton GPU time
    select: str | None                # regex of exactly those kernel names
    command: str | None               # the `tritonhook run` line that does it
    unconfirmed: list[dict] = dataclasses.field(default_factory=list)  # {"kernel", "rows", "confirm"}


def estimate(rows: list[SweepRow], variant: str, command: list[str] | None) -> WorkloadEstimate:
    """Kernels (by name, as `--select` matches) where `variant` is faster for some signature, slower for none and
    the outputs agree, and every faster signature replayed within the fidelity bar; the ratio is
    1 - sum(share x (1 - ratio)) over all their signatures. A kernel faster only where the replay missed the bar is
    listed in `unconfirmed` instead: a replay that does not reproduce the workload's time cannot say what the
    workload gains."""
    by_kernel: dict[str, list[tuple[SweepRow, VariantTiming]]] = {}
    for row in rows:
        timing = next((v for v in row.variants if v.label == variant), None)
        if timing is not None:
            by_kernel.setdefault(row.kernel, []).append((row, timing))
    faster = {kernel: [(r, t) for r, t in pairs if t.verdict == "faster"] for kernel, pairs in by_kernel.items()
              if any(t.verdict == "faster" for _, t in pairs)
              and not any(t.verdict == "slower" or r.outputs == "differ" for r, t in pairs)}
    chosen = [kernel for kernel, pairs in faster.items() if all(within_fidelity_bar(r) for r, _ in pairs)]
    saved = sum((row.share or 0.0) * (1.0 - (timing.ratio or 1.0))
                for kernel in chosen for row, timing in by_kernel[kernel])
    select = exact_names_pattern(chosen) if chosen else None
    unconfirmed = [{"kernel": kernel, "confirm": _confirm_line(variant, kernel, command),
                    "rows": [{"label": r.label, "ratio": t.ratio, "replay_workload": r.fidelity,
                              "why": (r.miss or {}).get("why")} for r, t in pairs if not within_fidelity_bar(r)]}
                   for kernel, pairs in sorted(faster.items()) if kernel not in chosen]
    return WorkloadEstimate(variant, sorted(chosen), 1.0 - saved, select, _run_line(variant, select, command),
                            unconfirmed)


def _confirm_line(variant: str, kernel: str, command: list[str] | None) -> str | None:
    """The `tritonhook ab` line that times the workload with `kernel` alone built as `variant` against plain,
    interleaved in fresh processes; None for a variant `ab` does not take (an autotune config)."""
    if config_of_label(variant):
        return None
    tail = f" -- {shlex.join(command)}" if command else " -- CMD"
    return (f"tritonhook ab --variants {shlex.quote(f'plain,{variant}')} "
            f"--select {shlex.quote(exact_names_pattern([kernel]))}{tail}")


def _run_line(variant: str, select: str | None, command: list[str] | None) -> str | None:
    if select is None or "@" in variant or variant.startswith("plain"):
        return None
    how = "--strip" if variant == "strip" else f"--rename {shlex.quote(variant)}"
    tail = f" -- {shlex.join(command)}" if command else " -- CMD"
    return f"tritonhook run {how} --select {shlex.quote(select)}{tail}"


def against_workload(tune: dict, signature: int) -> dict:
    """How the candidate `signature` of an autotuned row (`tune`: its `autotune`) ran against the workload's config
    on one input set (`replay._compare_configs`): outputs, ratio, interval, verdict; {} where it was not checked."""
    return (tune.get("against_workload") or {}).get(str(signature)) or {}


def _shared_key_text(shared: list[dict]) -> str:
    """Where a regret's tuning key runs at other input shapes (`autotune.regrets_at_shared_keys`): a pin of its
    config holds there too, and how that config ran there."""
    if not shared:
        return ""
    ran = [f"{mate['row']}: {mate['ran'][0]:.3f}x the workload's config there ({mate['ran'][2]})" if mate["ran"]
           else f"{mate['row']}: not timed there" for mate in shared]
    return f"; its tuning key also runs at {'; '.join(ran)}, where a pin of it holds too"


DERIVED = ("fidelity", "lead_ms", "net_fidelity")
"""A row's properties that `to_json` writes beside its fields (`from_json` recomputes them)."""


@dataclasses.dataclass
class SweepResult:
    rows: list[SweepRow]
    variants: list[str]
    rounds: int
    recording_id: int | None
    command: list[str] | None
    times_s: dict[str, float]          # record, build, replay, and with local workers "replay idle": the
                                       # GPU-seconds they replayed no signature (starting, or out of work)
    min_effect: float = config.ab.DEFAULT_MIN_EFFECT
    estimates: list[WorkloadEstimate] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    candidates: list[SweepRow] = dataclasses.field(default_factory=list)  # autotune candidates (rows: per group)
    l2: str = "cold"                   # the replay's L2 rule (see `replay.replay`)
    l2_dirt: str = "none"              # the L2 dirt set before each call (`config.sweep.L2_DIRT`)
    fusions: list[dict] = dataclasses.field(default_factory=list)  # Inductor's template fusions (`fusion`)
    fusion_near_tie: float = config.sweep.FUSION_NEAR_TIE.default   # within it a fusion is a draw
    id: int | None = None              # in the store's results table
    warning_prefix = "tritonhook sweep"

    @property
    def template_fusions(self) -> list[TemplateFusion]:
        return [TemplateFusion.from_json(data) for data in self.fusions]

    def finish(self) -> "SweepResult":
        """The workload estimate of every variant that is not the baseline again (an A/A's `plain#2` estimates
        nothing: whatever it finds "faster" is noise)."""
        baseline = self.variants[0].split("#")[0]
        self.estimates = [estimate(self.rows, label, self.command) for label in self.variants[1:]
                          if label.split("#")[0] != baseline]
        return self

    @property
    def l2_rule(self) -> str:
        """How the replay prepared the L2, in words (the table's time line, the HTML report)."""
        return {"measured": f"{self.l2}, dirtied or cleaned before each call as measured",
                "dirty": f"{self.l2}, dirtied before each call", "clean": f"{self.l2}, cleaned before each call",
                "half": f"{self.l2}, half dirtied before each call"}.get(
            self.l2_dirt, self.l2)

    @property
    def fidelity(self) -> Fidelity:
        return Fidelity.of(self.rows)

    @property
    def adaptive(self) -> bool:
        """Whether a stop rule set the rounds (`measure.sequential`), rather than a fixed count."""
        return any(row.stopped not in (None, FIXED) for row in self.rows + self.candidates)

    def rounds_line(self) -> str:
        """The rounds rows and candidates took, and why they stopped."""
        def spent(rows: list[SweepRow], what: str) -> str:
            timed = [row for row in rows if row.rounds]
            if not timed:
                return f"no {what}"
            why = collections.Counter(row.stopped for row in timed)
            return (f"{what} {sum(row.rounds for row in timed)} in all, median {median([r.rounds for r in timed]):g} ("
                    + ", ".join(f"{count} {reason}" for reason, count in why.most_common()) + ")")
        return f"rounds: {spent(self.rows, 'rows')}; {spent(self.candidates, 'autotune candidates')}"

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        for row_data, row in zip(data["rows"] + data["candidates"], self.rows + self.candidates):
            row_data.update({name: getattr(row, name) for name in DERIVED})
        data["fidelity"] = dataclasses.asdict(self.fidelity)
        return data

    @classmethod
    def from_json(cls, data: dict, *, source: str = "sweep result") -> "SweepResult":
        def rows_of(key: str) -> list[SweepRow]:
            return [SweepRow(**{**{k: v for k, v in row.items() if k not in DERIVED},
                                "variants": [VariantTiming(**v) for v in row["variants"]]})
                    for row in data.get(key, [])]

        fields = {f.name for f in dataclasses.fields(cls)} - {"rows", "estimates", "candidates"}
        try:
            result = cls(rows=rows_of("rows"), candidates=rows_of("candidates"),
                         **{k: v for k, v in data.items() if k in fields})
            result.estimates = [WorkloadEstimate(**e) for e in data.get("estimates", [])]
        except (KeyError, TypeError, AttributeError) as exc:
            raise TritonhookError(f"{source}: malformed sweep result ({type(exc).__name__}: {exc})") from None
        return result

    def __rich_console__(self, console, options):
        others = self.variants[1:]
        columns = ["kernel", "share", "launches", "inputs", *[f"{v} µs" for v in self.variants],
                   *[f"{v} ratio [95%]" for v in others], *[f"{v} verdict" for v in others], "outputs",
                   "regs", "spills", "stack", "capmerc", *[f"{v} why" for v in others], "replay/workload"]
        cells = [self._cells(row, len(columns)) for row in self.rows]
        if len({row.replayed_on for row in self.rows} - {""}) > 1:  # spread over GPUs (an autotune row has none)
            columns.insert(1, "replayed on")
            for row, line in zip(self.rows, cells):
                line.insert(1, row.replayed_on or "-")
        if self.adaptive:
            at = columns.index("inputs") + 1
            columns.insert(at, "rounds")
            for row, line in zip(self.rows, cells):
                line.insert(at, row.rounds_text())
        rounds = f"at most {self.rounds} rounds, adaptive" if self.adaptive else f"{self.rounds} rounds"
        yield format.table(columns, cells,
                           title=f"tritonhook sweep: {len(self.rows)} kernel signature(s), {rounds}, "
                                 f"baseline {self.variants[0]}",
                           right_align=[c for c in columns if c not in ("kernel", "inputs", "outputs")
                                        and not c.endswith(("verdict", " why"))])
        split = ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in self.times_s.items())
        yield format.line(f"time: {split}; L2 {self.l2_rule}; outputs: each variant against the baseline's own "
                          f"run-to-run spread, NaN/Inf positions compared as data")
        if self.adaptive:
            yield format.line(self.rounds_line())
        yield format.line(self.fidelity.line())
        for row in self.rows:
            if row.miss is not None:
                yield format.line(f"{row.label}: replay/workload {row.fidelity:.3f}, why: {row.miss['why']}")
        for row in self.rows:
            if row.autotune is not None and row.autotune.get("winners"):
                yield format.line(self._autotune_line(row))
        cached, other = cached_pick_counts([row.autotune for row in self.rows])
        if cached:
            yield format.line(f"autotune: {cached} row(s) ran a pick not made at their own call (Triton's autotune "
                              f"cache; the autotuner's decision at another input shape); the recording's own "
                              f"benchmark there picks another config for {other} of them")
        if self.fusions:
            yield format.line(fusions_line(self.template_fusions, self.fusion_near_tie))
        for est in self.estimates:
            yield format.line(self._estimate_line(est))
            for unconfirmed in est.unconfirmed:
                yield format.line(self._unconfirmed_line(est, unconfirmed))

    @staticmethod
    def _label(row: SweepRow) -> str:
        if row.autotune is None or "configs" not in row.autotune:
            return row.label
        replayed, configs = len(row.autotune["replayed"]), row.autotune["configs"]
        return f"{row.label} (autotuned: {configs} configs" + (f", {replayed} replayed)" if replayed < configs else ")")

    def _autotune_line(self, row: SweepRow) -> str:
        tune = row.autotune
        each = "; ".join(f"{label}: {config}" for label, config in tune["winners"].items())
        changed = "the config changed" if tune["changed"] else "one config for all variants"
        text = f"{row.label}: autotuned, {changed}; config per variant: {each} (in the workload: {tune['workload']}"
        cached = tune.get("cached_pick")
        if cached:
            own = ("agrees" if cached["agrees"] else f"picks {cached['benchmark_pick']}") \
                if cached["benchmark_pick"] else "timed none of its configs"
            text += f", the pick of {cached.get('held') or TRITON_CACHE}; the recording's own benchmark {own}"
        text += ")"
        flips = tune.get("flips") or {}
        if flips:
            text += "; a faster config within noise not taken: " + "; ".join(
                f"{label} {flip['fastest']}" for label, flip in flips.items())
        for label, same in (tune.get("same_config") or {}).items():
            if same.get("ratio") is not None:
                text += (f"; {label} at {same['config']} (the same config as the baseline): {same['ratio']:.3f} "
                         f"[{same['low']:.3f}, {same['high']:.3f}] {same['verdict']}")
        return text + self._regret_text(tune)

    @staticmethod
    def _regret_text(tune: dict) -> str:
        """The autotune regret in words: where the replay found a config faster than the workload's, how much, how
        it ran against the workload's config on one input set and its outputs there, why the autotuner missed it,
        and whether the workload confirmed it (only then is it the autotuner's)."""
        regret = tune.get("regret")
        if not regret or regret["verdict"] != "faster":
            return ""
        standing = (regret.get("confirmation") or {}).get("standing") or \
            "measured in the replay, not confirmed inside the workload (a replay bias until it is)"
        why = f"; why: {'; '.join(regret['why'])}" if regret.get("why") else ""
        checked = against_workload(tune, regret["signature"])
        paired = (f"; on the workload config's inputs, interleaved with it: {checked['ratio']:.3f} "
                  f"[{checked['low']:.3f}, {checked['high']:.3f}]" if checked.get("ratio") is not None else "")
        outputs = f", outputs {checked['outputs']}" if checked.get("outputs") else ""
        checked = paired + outputs
        return (f"; autotune regret: {regret['config']} runs {regret['ratio']:.3f} [{regret['low']:.3f}, "
                f"{regret['high']:.3f}] of the workload's config, {standing}{checked}{why}"
                f"{_shared_key_text(regret.get('shared_key') or [])}")

    def _cells(self, row: SweepRow, width: int) -> list[str]:
        if row.status != "ok" or not row.variants:  # what went wrong, in the last column
            head = [self._label(row), format.share(row.share), format.count(row.launches), row.inputs]
            return head + [""] * (width - len(head) - 1) + [row.status]
        times = [f"{v.median_ms * 1e3:.2f}" if v.median_ms else "-" for v in row.variants]
        ratios = [f"{v.ratio:.3f} [{v.low:.3f}, {v.high:.3f}]" if v.ratio is not None else "-"
                  for v in row.variants[1:]]
        verdicts = [v.verdict for v in row.variants[1:]]
        facts = [v.facts for v in row.variants]
        joined = lambda key: "/".join(format.count(f.get(key)) for f in facts)  # noqa: E731
        spills = "/".join(f"{f.get('spill_stores', 0)}+{f.get('spill_loads', 0)}" for f in facts)
        return [self._label(row), format.share(row.share), format.count(row.launches), row.inputs, *times, *ratios,
                *verdicts, (row.output_check or {}).get("text", row.outputs), joined("registers"), spills,
                joined("frame_size"), joined("capmerc_size"),
                *[(v.why or {}).get("text", "-") for v in row.variants[1:]], format.times(row.fidelity)]

    def _estimate_line(self, est: WorkloadEstimate) -> str:
        if not est.kernels:
            where = " where the replay reproduces the workload" if est.unconfirmed else ""
            return f"{est.variant}: no kernel got faster{where}; renaming none leaves the workload as it is"
        text = (f"{est.variant}: renaming only the {len(est.kernels)} kernel(s) that got faster changes the "
                f"recorded Triton GPU time by {est.ratio - 1:+.1%} (x{est.ratio:.3f})")
        return text + (f": {est.command}" if est.command else f"; kernels: {est.select}")

    @staticmethod
    def _unconfirmed_line(est: WorkloadEstimate, unconfirmed: dict) -> str:
        """A kernel read faster only where the replay missed the fidelity bar: not recommended, and how to know."""
        rows = "; ".join(f"{r['label']} {r['ratio']:.3f}, replay/workload "
                         + (f"{r['replay_workload']:.3f}" if r["replay_workload"] is not None else "not timed")
                         + (f" ({r['why']})" if r.get("why") else "") for r in unconfirmed["rows"])
        how = f"; confirm it in the workload: {unconfirmed['confirm']}" if unconfirmed["confirm"] else ""
        return (f"{est.variant}: {unconfirmed['kernel']} not recommended: faster only in a replay that missed the "
                f"fidelity bar ({rows}){how}")


register_result_kind(ResultKind(RESULT_KIND, SweepResult.from_json, source="recording_id"))
