"""The report's upgrade section (docs/upgrade.md#in-the-report): real results of `tritonhook upgrade`, of its GPU
timing (replayed on the CPU by tests/sweep_fake_worker.py, as tests/test_upgrade_timing.py does) and of `bisect`
(at the cubin level and timed), built once per session by tests/conftest.py; every figure the page shows is read back from the result it shows."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pytest
from test_report_page import section

from tritonhook.page import relative_paths, write_report
from tritonhook.store import Store
from tritonhook.upgrade.result import BASELINE, CELLS, PTX_ONLY, one_line
from tritonhook.upgrade.timing import RESULT_KIND as TIMING_KIND, SPLITS, UpgradeTiming, time_cells

pytestmark = pytest.mark.release_independent  # the page of saved results: the same under every Triton
FAKE_WORKER = [str(Path(__file__).with_name("sweep_fake_worker.py")), "--time-by-text"]


def upgrade_section(store: Store, out: Path) -> tuple[str, list]:
    """The page's upgrade section, HTML entities decoded, and the problems the report found."""
    path, data = write_report(store, out, sass=False)
    return html.unescape(section(path.read_text(), "upgrade")), data.problems


def block(text: str, heading: str) -> str:
    """From the <h3> that starts with `heading` to the next <h3>."""
    start = text.index(f"<h3 id=\"{heading}\">" if heading.startswith(("upgrade-", "bisect-")) else f"<h3>{heading}")
    end = text.find("<h3", start + 1)
    return text[start:end if end >= 0 else len(text)]


def bisect_rows(text: str, bisected) -> tuple[str, list[tuple]]:
    """A bisect's block of the page and, per kernel of the result, (kernel, its row, its path's steps as (release,
    verdict, what follows)): one row a kernel, in order, each path shown step by step as the result holds it."""
    shown = block(text, f"bisect-{bisected.id}")
    rows = re.findall(r'<tr class="filterable">(.*?)</tr>', shown, re.DOTALL)
    assert len(rows) == len(bisected.kernels)
    kernels = []
    for kernel, row in zip(bisected.kernels, rows):
        steps = re.findall(r"<li><b>(.*?)</b> <span[^>]*>(.*?)</span>(.*?)</li>", row, re.DOTALL)
        assert [(release, verdict) for release, verdict, _ in steps] == [(s.release, s.verdict) for s in kernel.path]
        kernels.append((kernel, row, steps))
    return shown, kernels


def cells_of(kernel_rows: str) -> list[list[tuple[str, str]]]:
    """Each <tr> of a kernel's rows as its <td>s, each (attributes, text)."""
    return [re.findall(r"<td([^>]*)>(.*?)</td>", row, re.DOTALL)
            for row in re.findall(r"<tr>(.*?)</tr>", kernel_rows, re.DOTALL)]


def test_each_kernel_shows_its_four_cells_and_a_compile_error_row(upgraded, upgrade_subjects, tmp_path):
    text, problems = upgrade_section(upgrade_subjects, tmp_path / "r.html")
    assert not problems
    rel = relative_paths(upgrade_subjects.path)  # the page shortens the paths in a compiler's message
    shown = block(text, f"upgrade-{upgraded.id}")
    assert upgraded.describe() in shown and f"--to {upgraded.to_triton}" in shown
    failed = 0
    for kernel in upgraded.kernels:
        title = f"{kernel.capture_id} {kernel.entry}"
        (rows,) = [body.split("</tbody>")[0] for body in shown.split('<tbody class="filterable">')[1:]
                   if f">{title}" in body]
        abi = kernel.abi or ("same" if kernel.ptx_changed is not None else "-")
        assert kernel.ptx_text() in rows and abi in rows
        if kernel.rebuild_error:  # the release refused it: a row with the compiler's error, then the cells it has
            failed += 1
            error = f"compile error: {rel(one_line(kernel.rebuild_error))}</summary><pre>{rel(kernel.rebuild_error)}"
            assert error in rows
        lines = cells_of(rows)[1 if kernel.rebuild_error else 0:]
        names = [tds[-3 if "colspan" in tds[-1][0] else -6][1] for tds in lines]
        assert names == [name for name in CELLS if name in kernel.cells]
        deltas = [cell.delta for cell in kernel.cells.values() if cell.delta is not None]
        for tds in lines:
            if "colspan" in tds[-1][0]:  # not built: why, in one line
                (_, name), (_, ptxas), (_, error) = tds[-3:]
                assert kernel.cells[name].status != "ok" and rel(one_line(kernel.cells[name].error)) in error
                continue
            name, ptxas, registers, spills, text_size, why = (td for _, td in tds[-6:])
            cell = kernel.cells[name]
            assert ptxas == cell.ptxas
            resources = deltas[0].resources if name == BASELINE else cell.delta.resources
            side = 0 if name == BASELINE else 1  # today's build: the figures every delta has on its left
            assert f"{resources['registers'][0]:,}" in registers and f"{resources['registers'][side]:,}" in registers
            assert spills.endswith(f"{resources['spill_stores'][side]}/{resources['spill_loads'][side]}")
            assert text_size.split(" (")[0].endswith(f"{resources['text_size'][side]:,}")
            if name == BASELINE:
                assert why == "today's build"
            else:
                assert why.startswith(cell.delta.sass_change()) and (cell.note is None or cell.note in why)
        assert (PTX_ONLY in kernel.cells) == (kernel.rebuild_error is None)
    assert failed == 1  # tl.advance, which 3.9 removed
    assert f"tritonhook upgrade --store store --time {upgraded.id}" in shown  # not timed yet: how to


def test_the_timing_split_shows_under_its_upgrade_with_the_workload_estimate(recording_upgraded, tmp_path):
    """`upgrade --time` saves its split (the sweep by id); the page shows it under the upgrade it timed, and its
    `--json` output keeps its keys."""
    original, recording, result = recording_upgraded
    store = Store(shutil.copytree(original.path, tmp_path / "store"))  # the shared store stays as it was
    timing = time_cells(recording, store, result, store, rounds=7, worker=FAKE_WORKER)
    assert set(timing.to_json()) == {"upgrade_id", "sweep", "kernels", "workload"}
    (saved,) = [r for r in store.results(TIMING_KIND) if r.id == timing.id]  # the shared store may hold others
    assert isinstance(saved, UpgradeTiming) and saved.id == timing.id and saved.sweep_id == timing.sweep.id
    assert saved.kernels == timing.kernels and saved.cells_store is None
    text, problems = upgrade_section(store, tmp_path / "r.html")
    assert not problems
    shown = block(text, f"upgrade-{result.id}")
    own = shown[shown.index(f"timing {timing.id}, the replay is sweep {timing.sweep.id}"):]
    own = own[:own.index("</pre>")]  # to its command
    rows = re.findall(r'<tr class="filterable">(.*?)</tr>', own, re.DOTALL)
    assert len(rows) == len(timing.kernels) == len(recording.signatures)
    for split, row in zip(timing.kernels, rows):
        tds = re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)
        assert tds[0] == split.label and tds[1] == f"{100 * split.share:.1f}%"
        for td, ratio in zip((tds[2], tds[3], tds[5]), (split.codegen, split.ptxas, split.upgraded)):
            assert re.sub(r"<[^>]+>", "", td) == f"{ratio[0]:.3f} [{ratio[1]:.3f}, {ratio[2]:.3f}]"
        assert tds[4] == f"{split.interaction:.3f}" and tds[6] == split.outputs
    estimate = re.search(r"Workload estimate.*?</p>", own, re.DOTALL).group(0)
    assert [float(x) for x in re.findall(r"<b>([\d.]+)×</b>", estimate)] == [
        pytest.approx(timing.workload(change), abs=5e-4) for change in SPLITS]


def test_a_timing_of_cells_from_another_store_is_not_put_under_this_stores_upgrade(recording_upgraded, tmp_path):
    """Timed with --cells-store: the upgrade id names a result of that store (this copy has one of the same id),
    so the timing shows on its own, saying where the cells are."""
    original, recording, result = recording_upgraded
    store = Store(shutil.copytree(original.path, tmp_path / "store"))
    timing = time_cells(recording, store, result, original, rounds=7, worker=FAKE_WORKER)
    (saved,) = [r for r in store.results(TIMING_KIND) if r.id == timing.id]
    assert saved.cells_store == str(original.path)
    text, _ = upgrade_section(store, tmp_path / "r.html")
    assert f"timing {timing.id}," not in block(text, f"upgrade-{result.id}")
    shown = block(text, f"Timing {timing.id} of upgrade {result.id} in ")
    rel = relative_paths(store.path)
    assert result.describe() in shown and f"--cells-store {rel(original.path)}" in shown
    assert all(split.label in shown for split in timing.kernels)


def test_each_bisect_shows_its_path_in_order_and_what_moved_the_kernel(bisected, bisect_subjects, tmp_path):
    store = bisect_subjects[0]
    text, problems = upgrade_section(store, tmp_path / "r.html")
    assert not problems
    shown, kernels = bisect_rows(text, bisected)
    assert f"--from {bisected.from_release} --to {bisected.to_release}" in shown
    for kernel, row, steps in kernels:
        assert row.startswith(f"<td>{kernel.capture_id} {kernel.entry}")
        for (_, _, what), step in zip(steps, kernel.path):
            assert what == f": {one_line(step.error) if step.error else step.delta.cell()}"
        tds = re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)
        if kernel.first_differing is None:
            assert tds[3] == "-" and "no change" in tds[4]
        else:
            assert tds[3].startswith(f"<b>{kernel.first_differing}</b>") and f"after {kernel.previous}" in tds[3]
            assert tds[4].startswith(f"<b>{kernel.split}")
            for label, text in kernel.between():
                assert f"{label}: {text}" in tds[4]
        assert tds[5] == f"{kernel.rebuilds} (≤ {kernel.bound})"
    assert {k.split for k in bisected.kernels} >= {"PTX", "ptxas"}  # the page showed both kinds of answer


def test_a_timed_bisect_shows_each_step_with_its_time_and_the_split_with_the_single_changes_times(
        timed_bisected, bisect_recording, tmp_path):
    text, problems = upgrade_section(bisect_recording[0], tmp_path / "r.html")
    assert not problems
    shown, kernels = bisect_rows(text, timed_bisected)
    assert "timed (moved: time ≥ 3.0%" in shown and "<th>first moved</th>" in shown
    assert f"--time --rounds {timed_bisected.rounds} --threshold {timed_bisected.threshold}" in shown
    for kernel, row, steps in kernels:
        assert row.startswith(f"<td>{kernel.title()}</td>")
        for (_, _, what), step in zip(steps, kernel.path):
            assert what == f": {step.what()}"
            if step.timing:  # the ratio, its interval and the outputs, as the result holds them
                assert f"x{step.timing['ratio']:.3f} [{step.timing['low']:.3f}, {step.timing['high']:.3f}]" in what
        for label, between in kernel.between() if kernel.first_differing else []:
            assert f"{label}: {between}" in row
    softmax = next(k for k in timed_bisected.kernels if k.kernel == "softmax_kernel")
    assert "3.8.0 PTX, captured ptxas: " in shown and "x1.125 [1.125, 1.125] slower" in shown and softmax.split == "PTX"


def test_a_damaged_upgrade_bisect_or_timing_result_is_one_line_and_the_rest_of_the_page_stands(recording_upgraded,
                                                                                                  tmp_path):
    """Damaged as saved (no kernels), or loadable but not whole (a cell without today's figures): each is one
    problem line naming it, and the good upgrade beside them is shown."""
    upgraded = recording_upgraded[2]
    store = Store(tmp_path / "store")
    good = store.add_result("upgrade", upgraded.to_json())
    no_kernels = store.add_result("upgrade", {"from_triton": "3.6.0", "to_triton": "3.9.0", "new_ptxas": None})
    figures_lost = upgraded.to_json()
    for cell in figures_lost["kernels"][0]["cells"].values():
        if cell["delta"]:
            del cell["delta"]["resources"]["registers"]
    not_whole = store.add_result("upgrade", figures_lost)
    bisect = store.add_result("bisect", {"kernel_pattern": "x", "kernels": [{"path": "not a list"}]})
    timing = store.add_result(TIMING_KIND, {"upgrade_id": good, "kernels": [{"label": "k", "codegen": 1.0}]})
    path, data = write_report(store, tmp_path / "r.html", sass=False)
    assert sorted(p.where for p in data.problems) == sorted([f"upgrade result {no_kernels}",
                                                             f"upgrade result {not_whole}",
                                                             f"bisect result {bisect}", f"upgrade timing {timing}"])
    problems = html.unescape(section(path.read_text(), "problems"))
    assert len(re.findall(r'<div class="problem">', problems)) == 4
    assert f"result {no_kernels} (upgrade): malformed upgrade result (KeyError: 'kernels')" in problems
    text = html.unescape(section(path.read_text(), "upgrade"))
    assert f'<h3 id="upgrade-{good}">' in text and f"upgrade-{not_whole}" not in text
    assert all(f"{k.capture_id} {k.entry}" in text for k in upgraded.kernels)
