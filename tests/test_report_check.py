"""The report's check section (docs/report.md, docs/check.md): real results of `tritonhook check`, made on the CPU as
tests/test_check.py makes them (its `runs`: real compiles and recordings, replayed with the fake worker timing each
build by its cubin's .text size), saved in the store; every figure the page shows is read back from the result."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from test_check import BY_TEXT, PLAN, runs  # noqa: F401 - `runs`: test_check's module fixture, built for this one
from test_report_page import section

from tritonhook.check import Baseline, CheckResult, check
from tritonhook.page import relative_paths, write_report
from tritonhook.store import Store

pytestmark = pytest.mark.release_independent  # the page of saved results: the same under every Triton


def check_section(store: Store, out: Path) -> tuple[str, list]:
    """The page's check section, HTML entities decoded, and the problems the report found."""
    path, data = write_report(store, out, sass=False)
    return html.unescape(section(path.read_text(), "check")), data.problems


def block(text: str, result_id: int) -> str:
    """From the check's <h3> to the next one."""
    start = text.index(f'<h3 id="check-{result_id}">')
    end = text.find("<h3", start + 1)
    return text[start:end if end >= 0 else len(text)]


def table_rows(shown: str, table: str) -> list[tuple[str, list[str]]]:
    """Each row of the table of that class: (its tr's classes, its <td>s' text)."""
    body = shown[shown.index(f'<table class="{table}">'):]
    body = body[:body.index("</table>")]
    return [(classes, re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL))
            for classes, row in re.findall(r'<tr class="([^"]*)">(.*?)</tr>', body, re.DOTALL)]


def expected_row(kernel) -> list[str]:
    share = "" if kernel.share is None else f"{kernel.share:.1%}"
    ratio = "-" if kernel.ratio is None else f"{kernel.ratio:.3f} [{kernel.low:.3f}, {kernel.high:.3f}]"
    rounds = f"{kernel.rounds} {kernel.stopped}" if kernel.rounds else "-"
    return [kernel.kernel, kernel.label, share, ratio, kernel.verdict, rounds, kernel.outputs,
            kernel.status.upper() if kernel.failed else kernel.status]


def test_a_check_shows_its_verdict_the_regressed_kernel_first_and_marked_and_what_it_left_unmatched(runs, tmp_path):
    _, _, store, grown, _, baseline_file = runs
    result = check(Baseline.load(baseline_file), grown, store, PLAN, worker=BY_TEXT)
    passed = check(Baseline.from_recording(grown, store), grown, store, PLAN, worker=BY_TEXT)
    assert result.failures and result.unmatched and not passed.failures  # what the page must mark and list
    text, problems = check_section(store, tmp_path / "r.html")
    assert not problems
    rel = relative_paths(store.path)  # the page shortens the paths of the baseline file and the store
    shown = block(text, result.id)
    assert rel(result.title()) in shown and "FAILED" in result.title()
    assert (f"Baseline: {rel(result.baseline)}; current run: recording {result.recording_id}; threshold "
            f"{result.threshold:.1%}; at most {result.rounds} rounds, adaptive, L2 {result.l2}; the replay is sweep {result.sweep_id}.")\
        in shown
    rows = table_rows(shown, "check")
    ordered = result.failures + [k for k in result.kernels if not k.failed]
    assert [cells for _, cells in rows] == [expected_row(k) for k in ordered]
    assert [classes == "filterable failed" for classes, _ in rows] == [k.failed for k in ordered]
    (regressed,) = result.failures  # the kernel whose code grew: its ratio, interval and why on the page
    assert regressed.status == "regressed" and rows[0][1][3] == \
        f"{regressed.ratio:.3f} [{regressed.low:.3f}, {regressed.high:.3f}]"
    assert f'<div class="problem">FAILED {regressed.why(result.threshold)}</div>' in shown
    assert table_rows(shown, "check-unmatched") == [("filterable", [u.label, "" if u.share is None else
                                                                   f"{u.share:.1%}", u.why]) for u in result.unmatched]
    assert result.too_unchecked and f'<div class="problem">FAILED {result.too_unchecked}</div>' in shown
    assert f"Not compared ({result.unchecked_share:.1%} of the GPU time unchecked in all; the gate fails above " \
        f"10.0%)" in shown
    assert all(f'<div class="warn">{rel(warning)}</div>' in shown for warning in result.warnings)
    assert (f"tritonhook check --store {rel(store.path)} --baseline {rel(baseline_file)} --current {grown.id} "
            f"--threshold {result.threshold:g} --rounds {result.rounds} --l2 {result.l2} --l2-dirt {result.l2_dirt} "
            f"--max-unchecked 0.1</pre>") in shown
    aa = block(text, passed.id)  # against a recording of this store: repeated with its id
    assert rel(passed.title()) in aa and "FAILED" not in aa and "filterable failed" not in aa
    assert [cells for _, cells in table_rows(aa, "check")] == [expected_row(k) for k in passed.kernels]
    assert f"--baseline {grown.id} --current {grown.id} " in aa


def test_a_damaged_check_result_is_one_line_and_the_rest_of_the_page_stands(runs, tmp_path):
    """Damaged as saved (no kernels), or loadable but not whole (a ratio that is not a number): each is one problem
    line naming it, and the good check beside them is shown, its failure first though saved last."""
    _, _, store, grown, _, baseline_file = runs
    result = check(Baseline.load(baseline_file), grown, store, PLAN, worker=BY_TEXT)
    fresh = Store(tmp_path / "store")
    saved = result.to_json()
    saved["kernels"].sort(key=lambda k: k["status"] == "regressed")  # the regressed kernel last
    good = fresh.add_result("check", saved)
    no_kernels = fresh.add_result("check", {"baseline": "b.json", "recording_id": 1, "threshold": 0.03})
    not_numbers = result.to_json()
    not_numbers["kernels"][0]["ratio"] = "fast"
    not_whole = fresh.add_result("check", not_numbers)
    path, data = write_report(fresh, tmp_path / "r.html", sass=False)
    assert sorted(p.where for p in data.problems) == sorted([f"check result {no_kernels}",
                                                             f"check result {not_whole}"])
    problems = html.unescape(section(path.read_text(), "problems"))
    assert len(re.findall(r'<div class="problem">', problems)) == 2
    assert f"result {no_kernels} (check): malformed check result ('kernels'); the check section leaves it out" \
        in problems
    assert f"check result {not_whole}</b>: malformed check result (ValueError: " in problems
    text = html.unescape(section(path.read_text(), "check"))
    assert f'<h3 id="check-{good}">' in text and f"check-{not_whole}" not in text
    shown = CheckResult.from_json(saved)
    assert shown.kernels[-1].failed and not shown.kernels[0].failed
    rows = table_rows(block(text, good), "check")
    assert [cells for _, cells in rows] == [expected_row(k) for k in shown.kernels[::-1]]
    assert [classes for classes, _ in rows] == ["filterable failed", "filterable"]
