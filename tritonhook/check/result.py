"""`CheckResult`: per kernel signature of the current run, its build against the baseline's build of the same
kernel and specialization (time ratio with its interval, output check, verdict), the signatures left unmatched
with their share of the GPU time, and the gate's exit status. Renders itself (rich), to JSON and to JUnit XML;
saved as result kind `check`."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from xml.etree import ElementTree

from .. import format
from ..errors import TritonhookError
from ..files import write_file
from ..store import ResultKind, register_result_kind

RESULT_KIND = "check"
REGRESSED, OUTPUTS_CHANGED, PASSED = "regressed", "outputs changed", "passed"
"""A checked signature's status; anything else is why it was not checked (a replay error), which fails no kernel
and counts in the unchecked share."""
PASSED_EXIT, FAILED_EXIT, UNCHECKED_EXIT = 0, 1, 3
"""`CheckResult.exit_code`: passed; a kernel regressed or its outputs changed; no kernel failed but more of the GPU
time than `max_unchecked` was not checked. (2 is the CLI's: bad input.)"""
JUNIT_WHAT = "JUnit XML"
"""What the --junit file is called in the line that says it cannot be written (`files.write_file`)."""


@dataclasses.dataclass
class KernelCheck:
    """One current signature replayed against its baseline build: `ratio` the current build's time over the
    baseline's (median of rounds) with its 95% interval (None: not timed, `verdict` says why: "SASS identical"),
    `outputs` the current build's outputs against the baseline build's (`measure.outputs`)."""

    signature: int
    kernel: str
    label: str
    key: str
    share: float | None
    ratio: float | None
    low: float | None
    high: float | None
    verdict: str
    outputs: str
    status: str
    baseline_ms: float | None = None    # the two builds' median times (the tick floor compares them)
    current_ms: float | None = None
    rounds: int | None = None           # rounds timed, and why they stopped (measure.sequential)
    stopped: str | None = None
    retest: str | None = None           # a "slower" replayed again in new worker processes: that replay's figures
    baseline_kernel: str | None = None  # the baseline build's kernel name, where it met one of another name by
                                        # its machine code (`gate._same_machine_code`)

    @property
    def failed(self) -> bool:
        return self.status in (REGRESSED, OUTPUTS_CHANGED)

    @property
    def checked(self) -> bool:
        return self.status in (PASSED, REGRESSED, OUTPUTS_CHANGED)

    def why(self, threshold: float) -> str:
        """The failure in one line (the JUnit failure message, the pytest plugin's report)."""
        if self.status == REGRESSED:
            again = f"; again in a second replay: {self.retest}" if self.retest else ""
            return (f"{self.label}: {self.ratio:.3f}x the baseline's time [95% interval {self.low:.3f}, "
                    f"{self.high:.3f}], beyond the {threshold:.1%} threshold{again}")
        if self.status == OUTPUTS_CHANGED:
            return f"{self.label}: outputs {self.outputs} from the baseline build's"
        return f"{self.label}: {self.status}"

    def interval(self) -> str:
        """The ratio with its 95% interval, "1.046 [1.040, 1.052]"; "-" when not timed (the table, the page)."""
        if self.ratio is None:
            return "-"
        if self.low is None or self.high is None:
            return f"{self.ratio:.3f}"
        return f"{self.ratio:.3f} [{self.low:.3f}, {self.high:.3f}]"

    def rounds_text(self) -> str:
        """"7 decided", "21 cap": the rounds timed and why they stopped; "-" when not timed."""
        return f"{self.rounds} {self.stopped}" if self.rounds else "-"


@dataclasses.dataclass
class Unmatched:
    """A signature of the current run with no baseline build to compare with, with its `share` of the run's GPU
    time, or a baseline build the current run did not launch or matched none (`signature` and `share` None); fails
    no kernel, and its share counts in the unchecked share."""

    label: str
    why: str
    signature: int | None = None
    share: float | None = None


@dataclasses.dataclass
class CheckResult:
    baseline: str
    recording_id: int | None
    threshold: float
    kernels: list[KernelCheck]
    unmatched: list[Unmatched] = dataclasses.field(default_factory=list)
    rounds: int | None = None
    l2: str | None = None
    fixed_rounds: bool = False          # every signature timed `rounds` rounds, else `rounds` is the adaptive cap
    l2_dirt: str | None = None          # the L2's dirt before each replayed call (`config.sweep.L2_DIRT`)
    sweep_id: int | None = None         # the replay behind it, saved as a sweep result
    max_unchecked: float | None = None  # the most of the GPU time left unchecked that passes (None: no limit)
    warnings: list[str] = dataclasses.field(default_factory=list)
    id: int | None = None
    warning_prefix = "tritonhook check"

    @property
    def failures(self) -> list[KernelCheck]:
        return [k for k in self.kernels if k.failed]

    @property
    def unchecked_share(self) -> float:
        """The share of the current run's GPU time in signatures not checked: unmatched, or not replayed."""
        return sum(u.share or 0.0 for u in self.unmatched) + sum(k.share or 0.0 for k in self.kernels
                                                                 if not k.checked)

    @property
    def too_unchecked(self) -> str | None:
        """The line that fails the gate on what it did not check; None within `max_unchecked`."""
        if self.max_unchecked is None or self.unchecked_share <= self.max_unchecked + 1e-12:
            return None
        count = sum(u.signature is not None for u in self.unmatched) + sum(not k.checked for k in self.kernels)
        return (f"{self.unchecked_share:.1%} of the current run's GPU time was not checked ({count} signature(s) "
                f"unmatched or not replayed), beyond --max-unchecked {self.max_unchecked:g}")

    @property
    def exit_code(self) -> int:
        """`FAILED_EXIT` when a kernel regressed or its outputs changed, else `UNCHECKED_EXIT` when more of the GPU
        time than `max_unchecked` was not checked, else `PASSED_EXIT`."""
        return FAILED_EXIT if self.failures else UNCHECKED_EXIT if self.too_unchecked else PASSED_EXIT

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "unchecked_share": self.unchecked_share,
                "unchecked_failure": self.too_unchecked, "exit_code": self.exit_code}

    @classmethod
    def from_json(cls, data: dict, *, source: str = "check result") -> "CheckResult":
        fields = {f.name for f in dataclasses.fields(cls)} - {"kernels", "unmatched"}
        try:
            return cls(kernels=[KernelCheck(**k) for k in data["kernels"]],
                       unmatched=[Unmatched(**u) for u in data.get("unmatched", [])],
                       # a result saved without the field was timed in fixed rounds
                       **{"fixed_rounds": "rounds" in data, **{k: v for k, v in data.items() if k in fields}})
        except (KeyError, TypeError) as exc:
            raise TritonhookError(f"{source}: malformed check result ({exc})") from None

    def title(self) -> str:
        verdict = f"{len(self.failures)} FAILED" if self.failures else "FAILED: too much unchecked" \
            if self.too_unchecked else "passed"
        rounds = f", {self.rounds_text()}" if self.rounds else ""
        return (f"tritonhook check against {self.baseline}: {verdict} ({sum(k.checked for k in self.kernels)} "
                f"signature(s) checked, {self.unchecked_share:.1%} of the GPU time not, threshold "
                f"{self.threshold:.1%}{rounds})")

    def rounds_text(self) -> str:
        """"at most 21 rounds, adaptive" or "21 rounds" (fixed); "- rounds" when not known."""
        if not self.rounds:
            return "- rounds"
        return f"{self.rounds} rounds" if self.fixed_rounds else f"at most {self.rounds} rounds, adaptive"

    def junit_xml(self) -> str:
        """JUnit XML: one testcase per checked signature (classname the kernel), a `failure` element for a
        regression or changed outputs, `skipped` for one not checked; the unmatched as skipped testcases; and,
        when too much was not checked, a testcase "unchecked share" with that failure."""
        unchecked = self.too_unchecked
        suite = ElementTree.Element("testsuite", name="tritonhook check", tests=str(len(self.kernels)
                                                                                    + len(self.unmatched)
                                                                                    + bool(unchecked)),
                                    failures=str(len(self.failures) + bool(unchecked)),
                                    skipped=str(sum(not k.checked for k in self.kernels) + len(self.unmatched)))
        for kernel in self.kernels:
            case = ElementTree.SubElement(suite, "testcase", classname=kernel.kernel, name=kernel.label)
            if kernel.failed:
                ElementTree.SubElement(case, "failure", message=kernel.why(self.threshold), type=kernel.status)
            elif kernel.status != PASSED:
                ElementTree.SubElement(case, "skipped", message=kernel.status)
        for missing in self.unmatched:
            case = ElementTree.SubElement(suite, "testcase", classname="unmatched", name=missing.label)
            ElementTree.SubElement(case, "skipped", message=missing.why)
        if unchecked:
            case = ElementTree.SubElement(suite, "testcase", classname="tritonhook check", name="unchecked share")
            ElementTree.SubElement(case, "failure", message=unchecked, type="unchecked")
        ElementTree.indent(suite)
        return ElementTree.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"

    def write_junit(self, path: str | Path) -> Path:
        return write_file(path, self.junit_xml(), JUNIT_WHAT)

    def __rich_console__(self, console, options):
        from rich.markup import escape  # labels hold brackets rich would read as markup

        rows = [[escape(k.label), format.share(k.share), k.interval(), escape(k.verdict), k.rounds_text(),
                 escape(k.outputs), k.status.upper() if k.failed else k.status] for k in self.kernels]
        yield format.table(("signature", "share", "current / baseline [95%]", "time", "rounds", "outputs", "gate"),
                           rows, title=self.title())
        if self.unmatched:
            yield format.table(("unmatched", "share", "why"),
                               [[escape(u.label), format.share(u.share), escape(u.why)] for u in self.unmatched],
                               title=f"not compared: {self.unchecked_share:.1%} of the GPU time unchecked in all"
                                     f"{self._limit_text()}")
        for failed in self.failures:
            yield format.line(f"FAILED {failed.why(self.threshold)}")
        if self.too_unchecked:
            yield format.line(f"FAILED {self.too_unchecked}")

    def _limit_text(self) -> str:
        return "" if self.max_unchecked is None else f" (the gate fails above {self.max_unchecked:.1%})"


register_result_kind(ResultKind(RESULT_KIND, CheckResult.from_json, label="baseline", source="recording_id"))
