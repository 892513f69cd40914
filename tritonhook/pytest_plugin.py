"""The regression gate as a pytest plugin: `pytest --tritonhook-baseline=RECORDING|FILE` fails the tests whose
kernels regressed against the baseline (docs/check.md#the-pytest-plugin). Registered as a `pytest11` entry point;
without `--tritonhook-baseline` it only declares its options and does nothing else, so a suite that does not ask
for the gate runs exactly as before.

With it: each test runs inside an in-process recording (`sweep.recorder.record`, one recording per test, in the
store; a capture session is held open for the whole session), then, once the last test ran, the gate replays all
the tests' signatures merged into one recording, once (`check.check`), and maps each failing signature back to
the test that launched it.

How the failure reaches the reports: a regression is known only after every test ran, and a report once logged
cannot be taken back (the terminal has counted it, `--junitxml` has written its testcase). So the plugin runs each
test through pytest's own protocol without logging (`runtestprotocol(log=False)`), holds its reports, and after
the replay logs them in order, the `call` report of a test with a failing kernel turned into a failure that names
the kernel, its ratio and interval. Every reporter (terminal, exit status, junitxml, others) sees one ordinary
failed test. The price, documented: progress shows after the replay, and `-x` stops nothing before it. A gate
that left more of the GPU time unchecked than `--tritonhook-max-unchecked` belongs to no test: it fails the
session (exit status 1) with the summary's line saying so.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import secrets
import tempfile

import pytest

from . import config as settings  # `config` is pytest's, in every hook
from .errors import TritonhookError


def pytest_addoption(parser) -> None:
    group = parser.getgroup("tritonhook", "tritonhook regression gate (docs/check.md#the-pytest-plugin)")
    group.addoption("--tritonhook-baseline", default=None, metavar="RECORDING|FILE",
                    help="fail the tests whose Triton kernels regressed against this baseline file (tritonhook check "
                         "--save-baseline) or recording id in --tritonhook-store")
    group.addoption("--tritonhook-store", default=None, metavar="DIR",
                    help="the store the tests' kernels are recorded into (default: $TRITONHOOK_STORE or "
                         "./tritonhook-store)")
    group.addoption("--tritonhook-threshold", type=float, default=settings.check.THRESHOLD, metavar="FRACTION",
                    help=f"a kernel regressed when at least this much slower and its interval excludes 1 (default "
                         f"{settings.check.THRESHOLD})")
    group.addoption("--tritonhook-max-unchecked", type=float, default=settings.check.MAX_UNCHECKED,
                    metavar="FRACTION",
                    help=f"fail the session when the kernel signatures not checked (unmatched, not replayed) make "
                         f"more than this share of the GPU time (default {settings.check.MAX_UNCHECKED}; 1: never)")
    group.addoption("--tritonhook-rounds", type=int, default=settings.sweep.DEFAULT_ROUNDS, metavar="N",
                    help=f"the most interleaved rounds per signature; each stops once its always-valid interval "
                         f"has decided (default {settings.sweep.DEFAULT_ROUNDS})")
    group.addoption("--tritonhook-fixed-rounds", action="store_true",
                    help="time every signature --tritonhook-rounds rounds (as tritonhook check --fixed-rounds)")
    group.addoption("--tritonhook-junit", default=None, metavar="FILE",
                    help="also write the gate's per-kernel JUnit XML (as tritonhook check --junit)")
    group.addoption("--tritonhook-retune", action="store_true",
                    help="let the tests' autotuners pick their own configs instead of running the baseline's picks "
                         "(as tritonhook check --retune)")


MIRRORED_FLAG = re.compile(r"(?<![\w-])--(threshold|max-unchecked|rounds|fixed-rounds|junit)\b(?!-)")
"""The `tritonhook check` flags the plugin takes as `--tritonhook-NAME`: the library's errors name the CLI's."""


def in_plugin_terms(message: str) -> str:
    """`message` with each mirrored `tritonhook check` flag named as the plugin's option, so that a refusal names
    the option the user gave."""
    return MIRRORED_FLAG.sub(r"--tritonhook-\1", message)


def pytest_configure(config) -> None:
    if config.getoption("tritonhook_baseline") is not None:
        config.pluginmanager.register(Gate(config), "tritonhook-gate")


class Gate:
    """The plugin's state for one session (registered only with --tritonhook-baseline). `record` and `worker`
    are what a GPU-less test of the plugin replaces (tests/test_check.py), as `replay`'s `worker` is."""

    worker: list[str] | None = None  # None: the real replay worker

    @staticmethod
    def record(store, label: str):
        from .sweep.recorder import record

        return record(store, label=label)

    def __init__(self, config):
        from .check import JUNIT_WHAT, load_baseline
        from .check.gate import checked_max_unchecked, gate_plan
        from .files import check_writable
        from .store import Store

        self.config = config
        try:
            self.plan = gate_plan(threshold=config.getoption("tritonhook_threshold"),
                                  rounds=config.getoption("tritonhook_rounds"),
                                  fixed_rounds=config.getoption("tritonhook_fixed_rounds"))
            self.max_unchecked = checked_max_unchecked(config.getoption("tritonhook_max_unchecked"))
            check_writable(config.getoption("tritonhook_junit"), JUNIT_WHAT)
            self.store = Store.of(config.getoption("tritonhook_store"), create=True)
            self.baseline = load_baseline(config.getoption("tritonhook_baseline"), self.store)
        except TritonhookError as exc:
            raise pytest.UsageError(f"tritonhook: {in_plugin_terms(str(exc))}") from None
        self.label = f"pytest-{os.getpid()}-{secrets.token_hex(4)}"
        self.tests: list[tuple] = []     # (item, held reports, its recording or None), in run order
        self.result = None
        self.error: str | None = None    # why the gate could not run (fails the session)
        self.held = contextlib.ExitStack()
        self.retune = config.getoption("tritonhook_retune")

    def pytest_sessionstart(self, session) -> None:
        from .ptx_capture import session as capture_session

        # one capture session: each test's recording joins it; the baseline's autotune picks pinned in it
        folder = self.held.enter_context(tempfile.TemporaryDirectory(prefix="tritonhook-check-"))
        pins = None if self.retune else self.baseline.pins_file(folder, None, self.store)
        self.held.enter_context(capture_session(self.store, apply=pins))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        from _pytest.runner import runtestprotocol

        recorder = None
        with contextlib.ExitStack() as recording:
            if self.error is None:
                try:
                    recorder = recording.enter_context(self.record(self.store, f"{self.label}-{len(self.tests)}"))
                except TritonhookError as exc:
                    self.error = f"recording could not start: {exc}"
            reports = runtestprotocol(item, nextitem=nextitem, log=False)
        self.tests.append((item, reports, getattr(recorder, "recording", None)))
        return True

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtestloop(self, session):
        outcome = yield
        failures: dict[str, list] = {}
        try:
            if outcome.excinfo is None:  # interrupted: the reports held so far are logged, nothing is replayed
                failures = self._judge()
        except TritonhookError as exc:
            self.error = str(exc)
        finally:
            self._log(failures)

    def _judge(self) -> dict[str, list]:
        """Replay every test's signatures once; the failing kernels by the node id of the test that launched them."""
        from .check import check
        from .sweep.recording import RESULT_KIND, Recording
        from .sweep.schedule import WORKER

        if self.error is not None:
            return {}
        owners, recordings = [], []
        for item, _, recording in self.tests:
            if recording is not None and recording.signatures:
                recordings.append(recording)
                owners += [item.nodeid] * len(recording.signatures)  # `merged` numbers them in this order
        if not recordings:
            return {}
        merged = Recording.merged(recordings)
        merged.id = self.store.add_result(RESULT_KIND, {**merged.to_json(), "label": f"{self.label}-merged"})
        self.result = check(self.baseline, merged, self.store, self.plan, max_unchecked=self.max_unchecked,
                            worker=self.worker or WORKER)
        failures: dict[str, list] = {}
        for kernel in self.result.failures:
            failures.setdefault(owners[kernel.signature], []).append(kernel)
        return failures

    def _log(self, failures: dict[str, list]) -> None:
        """Log every held report, in run order; a failing test's call report turned into a failure."""
        for item, reports, _ in self.tests:
            item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
            for report in reports:
                if report.when == "call" and item.nodeid in failures:
                    text = "\n".join(f"tritonhook check: {kernel.why(self.plan.min_effect)}"
                                     for kernel in failures[item.nodeid])
                    if report.failed:
                        report.sections.append(("tritonhook check", text))
                    else:
                        report.outcome, report.longrepr = "failed", text
                item.ihook.pytest_runtest_logreport(report=report)
            item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        terminalreporter.section("tritonhook check")
        if self.error is not None:
            terminalreporter.write_line(f"tritonhook check: error: {self.error}", red=True)
        elif self.result is None:
            terminalreporter.write_line("tritonhook check: no test launched a Triton kernel; nothing to check")
        else:
            from rich.console import Console

            text = io.StringIO()
            Console(file=text, width=160, no_color=True).print(self.result, crop=False)
            terminalreporter.write(in_plugin_terms(text.getvalue()))  # its FAILED line on the unchecked share
            for warning in self.result.warnings:
                terminalreporter.write_line(f"tritonhook check: {warning}", yellow=True)

    def pytest_sessionfinish(self, session) -> None:
        self.held.close()
        junit = self.config.getoption("tritonhook_junit")
        if junit and self.result is not None:
            try:
                self.result.write_junit(junit)
            except TritonhookError as exc:  # a traceback from pytest's hook otherwise; the summary says it
                self.error = str(exc)
        if self.error is not None or (self.result is not None and self.result.too_unchecked):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a gate that could not run, or checked too little,
            # never passes
