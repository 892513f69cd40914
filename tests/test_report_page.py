"""`tritonhook report` and `tritonhook demo` without a browser: what the page holds for real stores.

The stores are real: the demo compiles sample kernels with real Triton and ptxas (plain and renamed), its ptxas
matrix runs every ptxas found, and the report reads the cubins back. A/B results are made by `ab.analyze` from
timings given here (the timing needs a GPU, the statistics do not); the memwatch file is the run recorded on the
H200 (tests/test_memwatch.py).
"""

from __future__ import annotations

import dataclasses

import html
import json
import re
import shutil
import sqlite3
import subprocess
import sys

import pytest

from tritonhook import ab
from tritonhook.cubin import Cubin
from tritonhook.errors import TritonhookError
from tritonhook.measure.variants import parse_variants
from tritonhook.page import SECTIONS, write_report
from tritonhook.page.demo import run_demo
from tritonhook.page.model import PTXAS_MATRIX_KIND, chart_labels, forest_rows
from tritonhook.binaries import find_ptxas, one_per_version
from tritonhook.store import SCHEMA_VERSION, Store

# the page from a store: the same under every Triton (the captures it reads are checked per release elsewhere)
pytestmark = pytest.mark.release_independent

SCHEMA_3_COMMIT = "8edb4ec"  # the last commit whose store.py writes schema 3


def section(page: str, section_id: str) -> str:
    match = re.search(rf'<section id="{section_id}">(.*?)</section>', page, re.DOTALL)
    assert match, f"section {section_id} missing"
    return match.group(1)


def test_demo_pairs_each_kernel_and_target_and_shows_the_cubins_real_figures(demo):
    page = demo.report.read_text()
    for section_id, _ in SECTIONS:
        section(page, section_id)
    store = Store(demo.report.parent / "store", readonly=True)
    captures = store.captures()
    assert len(captures) == 18 and sum(c.renamed for c in captures) == 9
    effect_rows = re.findall(r'<a href="#kernel-(\d+)-(\d+)">', section(page, "cutlass"))
    assert len(effect_rows) == 9
    for plain_id, renamed_id in effect_rows:
        plain, renamed = store.get(plain_id), store.get(renamed_id)
        assert (plain.original_entry, plain.arch) == (renamed.original_entry, renamed.arch)
        assert renamed.entry == "cutlass_" + plain.entry
    # the Blackwell matmul: its capmerc grows under the cutlass name; the page quotes the cubins' own figures
    (matmul_100,) = [c for c in captures if c.arch == "sm_100a" and c.kernel == "matmul_kernel" and not c.renamed]
    (matmul_100r,) = [c for c in captures if c.arch == "sm_100a" and c.kernel == "matmul_kernel" and c.renamed]
    before = Cubin.from_bytes(store.read(matmul_100, "cubin")).kernels[matmul_100.entry].capmerc_size
    after = Cubin.from_bytes(store.read(matmul_100r, "cubin")).kernels[matmul_100r.entry].capmerc_size
    assert after > before > 0
    assert f"{before:,} → {after:,}" in html.unescape(section(page, "cutlass"))
    kernel = html.unescape(section(page, "kernels"))
    assert f"tritonhook diff --store store {matmul_100.id} {matmul_100r.id} --sass" in kernel  # run beside store/
    assert "<details class=\"sass\"><summary>SASS diff" in kernel and "samples.py:" in kernel


def test_demo_saves_a_ptxas_matrix_with_every_ptxas_version_found(demo):
    store = Store(demo.report.parent / "store", readonly=True)
    (matrix,) = store.results(PTXAS_MATRIX_KIND)
    versions = {b.version for b in one_per_version(find_ptxas())}
    assert {row["version"] for row in matrix["rows"]} | {s["version"] for s in matrix["skipped"]} == versions
    table = section(demo.report.read_text(), "ptxas-matrix")
    for row in matrix["rows"]:
        assert f"<td>{row['version']}</td><td>{row['variant']}</td><td>{row['kernel']}</td>" in table


def test_demo_summary_is_five_lines_and_says_what_needs_a_gpu(demo):
    assert len(demo.summary) == 5 and demo.summary[0].startswith(f"report: {demo.report.resolve()}")
    assert "9 plain/renamed pairs" in demo.summary[2]
    assert any("no CUDA GPU" in line for line in demo.skipped)


def test_demo_refuses_to_reuse_a_store(demo):
    with pytest.raises(Exception, match="already holds a store"):
        run_demo(demo.report.parent, samples=["add"], attention=False, progress=False)


def test_a_demo_refused_for_its_input_leaves_nothing_that_would_refuse_the_next(tmp_path):
    """An unknown sample is refused before the store exists (the next demo would refuse a store left behind)."""
    with pytest.raises(TritonhookError, match="--samples: unknown sample"):
        run_demo(tmp_path / "demo", samples=["nope"], attention=False, progress=False)
    assert not (tmp_path / "demo").exists()


def test_a_corrupt_blob_is_named_and_the_rest_of_the_page_stands(demo, tmp_path):
    store_path = tmp_path / "store"
    shutil.copytree(demo.report.parent / "store", store_path)
    store = Store(store_path)
    (victim,) = [c for c in store.captures() if c.renamed and c.arch == "sm_90a" and c.kernel == "add_kernel"]
    store.blob_path(victim.artifacts["cubin"].sha256).write_bytes(b"not the cubin any more")
    path, data = write_report(store, tmp_path / "r.html")
    page = path.read_text()
    problems = section(page, "problems")
    assert f"capture {victim.id} (cutlass_add_kernel, sm_90a)" in problems and "corrupt" in problems
    assert len(data.effects) == 8  # the pair that lost its cubin, and only it, is gone
    assert all(victim.id != e.renamed.id for e in data.effects)
    for section_id, _ in SECTIONS:
        section(page, section_id)


def test_an_empty_store_says_in_each_section_how_to_fill_it(tmp_path):
    path, data = write_report(Store(tmp_path / "store"), tmp_path / "r.html")
    page = path.read_text()
    assert not data.problems
    for section_id in ("captures", "cutlass", "ptxas-matrix", "sweep", "check", "upgrade", "memory", "kernels"):
        assert 'class="empty"' in section(page, section_id), section_id
    assert "tritonhook demo" in section(page, "captures")


def test_a_store_with_only_plain_captures_has_no_pairs_but_its_captures_and_predictions(tmp_path, capture_session):
    from tritonhook.samples import compile_sample

    compile_sample("tma_copy", 120)  # sm_120a TMA on Triton 3.6-: the driver stack routine (docs/tma_stack.md#the-stack-reservation)
    path, data = write_report(capture_session.store, tmp_path / "r.html")
    page = path.read_text()
    assert len(data.captures) == 1 and not data.effects
    assert 'class="empty"' in section(page, "cutlass")
    import triton

    if triton.__version__.startswith("3.6"):
        assert data.warnings and "__cuda_syscall_cp_async_bulk_tensor" in section(page, "memory")


def compile_plain_and_renamed(store_path, samples, monkeypatch, tmp_path) -> Store:
    """Each sample compiled for sm_120a with its own name and renamed `cutlass_`, each variant with its own Triton
    cache (on Triton 3.6 a renamed and a plain build share a cache entry), as the demo does."""
    import tritonhook
    from tritonhook.samples import compile_sample

    for rename in (None, "cutlass_"):
        monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / f"cache-{rename}"))
        with tritonhook.session(store_path, rename=rename):
            for name in samples:
                compile_sample(name, 120)
    return Store(store_path, readonly=True)


def test_chart_labels_tell_one_kernel_at_several_specializations_apart(tmp_path, monkeypatch):
    """matmul_kernel at three specializations for sm_120a: its three bars were all labelled `matmul_kernel
    sm_120a`; each label now carries what sets its specialization apart, and the capture ids where nothing does."""
    store = compile_plain_and_renamed(tmp_path / "store", ["matmul_fp16", "matmul_fp8", "matmul_fp32_ieee"],
                                      monkeypatch, tmp_path)
    path, data = write_report(store, tmp_path / "r.html")
    assert len(data.effects) == 3 and {e.title.split(" [")[0] for e in data.effects} == {"matmul_kernel sm_120a"}
    labels = chart_labels(data.effects)
    assert len(set(labels)) == 3, labels
    by_spec = dict(zip((e.plain.specialization for e in data.effects), labels))
    assert by_spec["fp16 BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 PRECISION=tf32"] == \
        "matmul_kernel sm_120a [fp16 BLOCK_K=64 PRECISION=tf32]"  # BLOCK_M and BLOCK_N are the same in all three
    assert by_spec["fp8e4nv fp16 BLOCK_M=128 BLOCK_N=128 BLOCK_K=128 PRECISION=tf32"] == \
        "matmul_kernel sm_120a [fp8e4nv fp16 BLOCK_K=128 PRECISION=tf32]"
    chart = html.unescape(section(path.read_text(), "cutlass"))
    assert all(f"{n}. {label}" in chart for n, label in enumerate(labels, 1))
    # a pair whose kernel, target and specialization another pair shares (another Triton version) gets its ids
    effect = data.effects[0]
    twin = dataclasses.replace(effect, plain=dataclasses.replace(effect.plain, id=101),
                               renamed=dataclasses.replace(effect.renamed, id=102))
    assert chart_labels([effect, twin, *data.effects[1:]])[:2] == [
        f"{labels[0]} (captures {effect.plain.id}/{effect.renamed.id})", f"{labels[0]} (captures 101/102)"]


ONE_KERNEL = """
import triton
import triton.language as tl


@triton.jit
def one_kernel(x_ptr):
    tl.store(x_ptr, 1)
"""


def test_the_page_spells_out_no_absolute_path_of_the_machine_that_made_it(tmp_path, monkeypatch, demo):
    """Paths under the store's folder or the working directory are relative, one under the home folder starts
    with `~`: a kernel file in the home folder, a store and a memwatch file elsewhere, all under tmp_path."""
    import importlib.util

    import triton
    import tritonhook
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    home, work, cwd = tmp_path / "home", tmp_path / "work", tmp_path / "cwd"
    (home / "kernels").mkdir(parents=True)
    cwd.mkdir()
    (home / "kernels" / "one.py").write_text(ONE_KERNEL)
    spec = importlib.util.spec_from_file_location("one_kernel_module", home / "kernels" / "one.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with tritonhook.session(work / "store"):
        triton.compile(ASTSource(module.one_kernel, {"x_ptr": "*i32"}, {}), target=GPUTarget("cuda", 120, 32))
    (cwd / "bad.json").write_text("{}")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    path, _ = write_report(Store(work / "store"), work / "r.html", memwatch_files=[cwd / "bad.json"])
    page = html.unescape(path.read_text())
    for absolute in {str(tmp_path), str(tmp_path.resolve())}:
        assert absolute not in page
    assert "<td>~/kernels/one.py:6</td>" in page and "tritonhook ls --store store --all" in page
    assert "<b>bad.json</b>" in page
    demo_page = demo.report.read_text()  # the demo's store, sources and ptxas matrix
    assert str(demo.report.parent) not in demo_page and "samples.py:" in demo_page


def ab_result(store: Store) -> ab.SavedABResult:
    """A saved A/B run: `matmul` 10% faster renamed in every round, `attention` unchanged."""
    variants = parse_variants("plain,cutlass_")
    rounds = {"matmul": ([1.00, 1.01, 0.99, 1.00, 1.02], [0.90, 0.91, 0.89, 0.90, 0.92]),
              "attention": ([3.00, 3.03, 2.97, 3.01, 2.99], [3.01, 2.98, 3.00, 3.02, 2.99])}
    benchmarks = [ab.analyze(name, {"plain": a, "cutlass_": b}, variants, flops=None, correctness="allclose")
                  for name, (a, b) in rounds.items()]
    report = ab.ABReport(benchmarks, variants, 5, None, None, {})
    report.save(store, {})
    (saved,) = ab.saved_results(store).results
    return saved


def test_ab_results_become_a_forest_plot_a_workload_estimate_and_the_select_of_the_winners(tmp_path):
    store = Store(tmp_path / "store")
    saved = ab_result(store)
    rows = forest_rows(saved.report)
    assert [(r.benchmark, r.verdict) for r in rows] == [("matmul", "faster"), ("attention", "no difference")]
    assert rows[0].share == pytest.approx(1.00 / 4.00) and rows[0].high < 1.0
    estimate = saved.report.workload_estimate()
    assert estimate.winners == {"matmul": "cutlass_"} and estimate.select == {"cutlass_": "^(?:matmul)$"}
    assert estimate.ratio == pytest.approx((0.90 + 3.00) / (1.00 + 3.00))
    path, _ = write_report(store, tmp_path / "r.html")
    sweep = section(path.read_text(), "sweep")
    assert "<svg" in sweep and 'class="faster">faster' in sweep
    assert "tritonhook run --rename cutlass_ --select '^(?:matmul)$'" in html.unescape(sweep)


def marker_discs(figure):
    """Each plotted marker as a square around its disc, in display pixels (a scatter size is an area in pt^2)."""
    from matplotlib.transforms import Bbox

    axes = figure.axes[0]
    discs = []
    for collection in axes.collections:
        for (x, y), size in zip(axes.transData.transform(collection.get_offsets()), collection.get_sizes()):
            radius = size ** 0.5 / 2 * figure.dpi / 72
            discs.append(Bbox.from_extents(x - radius, y - radius, x + radius, y + radius))
    return discs


def test_the_forest_plot_keeps_each_marker_inside_its_axes_and_clear_of_the_legend(tmp_path):
    """The demo's forest plot (A/B rows, then the sweep's): the legend covered the second row's marker, which sat
    on the axes' bottom edge. Checked in matplotlib's own display geometry, for one row, the A/B run's two, and
    those with a sweep's."""
    import matplotlib.pyplot as plt
    from test_sweep import _result

    from tritonhook.page.model import sweep_forest_rows
    from tritonhook.page.plots import forest_figure, forest_plot

    rows = forest_rows(ab_result(Store(tmp_path / "store")).report)
    for shown in (rows[:1], rows, rows + sweep_forest_rows(_result())):
        figure = forest_figure(shown)
        try:
            figure.canvas.draw()
            axes = figure.axes[0]
            box, legend = axes.get_window_extent(), axes.get_legend().get_window_extent()
            discs = marker_discs(figure)
            assert len(discs) == len(shown)
            margin = 2 * figure.dpi / 72  # 2 pt
            for disc in discs:
                assert min(disc.x0 - box.x0, disc.y0 - box.y0, box.x1 - disc.x1, box.y1 - disc.y1) > margin, (disc, box)
                assert not disc.overlaps(legend), (disc, legend)
            assert not legend.overlaps(box)
        finally:
            plt.close(figure)
    assert forest_plot(rows).startswith("<svg") and forest_plot([]) is None


def test_a_malformed_saved_ab_result_is_a_problem_on_the_page_not_a_traceback(tmp_path):
    store = Store(tmp_path / "store")
    store.add_result(ab.result.RESULT_KIND, {"benchmarks": [{"name": "mm"}]})  # no variants, ...: not an ABReport
    path, data = write_report(store, tmp_path / "r.html")
    assert data.ab_results == [] and data.problems[0].where == "A/B results"
    assert "result 1 (ab): malformed A/B result" in section(path.read_text(), "problems")


def test_memwatch_files_draw_the_timeline_and_a_bad_one_is_named(tmp_path):
    from test_memwatch import H200_GROWTH, recorded_h200_run, result_of

    good, bad = tmp_path / "stack.json", tmp_path / "bad.json"
    good.write_text(json.dumps(result_of(recorded_h200_run()).to_json()))
    bad.write_text('{"not": "memwatch"}')
    path, data = write_report(Store(tmp_path / "store"), tmp_path / "r.html", memwatch_files=[good, bad])
    page = path.read_text()
    memory = section(page, "memory")
    assert "<svg" in memory and f"{H200_GROWTH:,}" in memory and "1024 &rarr; 16384" in memory
    assert "<b>bad.json</b>" in section(page, "problems") and len(data.memwatch) == 1


def test_memwatch_results_in_the_store_are_shown_beside_the_files_given(tmp_path):
    """`tritonhook memwatch --store` saves its result in the store; the report shows it with no --memwatch file,
    before the files given, with the command that reproduces it."""
    from test_memwatch import demo_h200_run, recorded_h200_run, result_of

    store = Store(tmp_path / "store")
    stored = result_of(recorded_h200_run())
    stored.label = "python stack.py --kernel local"
    stored.save(store)
    given = tmp_path / "given.json"
    given.write_text(json.dumps(result_of(demo_h200_run()).to_json()))
    path, data = write_report(store, tmp_path / "r.html", memwatch_files=[given])
    assert [run.source for run in data.memwatch] == [f"result {stored.id}: python stack.py --kernel local",
                                                     str(given)]
    memory = section(path.read_text(), "memory")
    assert memory.count("<svg") == 2 and "tritonhook memwatch --store store -- python stack.py --kernel local" in memory
    assert "tritonhook memwatch --out given.json -- python SCRIPT" in memory


def test_a_memwatch_region_opened_before_the_context_shows_the_limit_it_started_from(tmp_path):
    """The demo's memwatch region opens before its script creates the CUDA context: the page read "stack limit
    None &rarr; 16384"; now the first limit read, or the driver's default said as such."""
    from test_memwatch import demo_h200_run, result_of

    files = []
    for hooks in (True, False):
        files.append(tmp_path / f"hooks-{hooks}.json")
        files[-1].write_text(json.dumps(result_of(demo_h200_run(hooks=hooks)).to_json()))
    path, _ = write_report(Store(tmp_path / "store"), tmp_path / "r.html", memwatch_files=files)
    notes = re.findall(r"stack limit .*? B/thread", section(path.read_text(), "memory"))
    assert notes == ["stack limit 1024 &rarr; 16384 B/thread",
                     "stack limit 1024 (driver default, no context yet) &rarr; 16384 B/thread"]


def test_cli_report_on_a_missing_store_is_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tritonhook", "report", "--store", str(tmp_path / "none"),
                           "-o", str(tmp_path / "r.html")], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no tritonhook store here" in done.stderr


def test_cli_report_writes_the_page_and_prints_five_lines(demo, tmp_path):
    out = tmp_path / "page.html"
    done = subprocess.run([sys.executable, "-m", "tritonhook", "report", "--store", str(demo.report.parent / "store"),
                           "-o", str(out), "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["report"] == str(out.resolve()) and len(printed["summary"]) == 5 and out.stat().st_size > 0


def test_a_schema_3_store_gains_the_results_table(tmp_path, old_store_module):
    old = old_store_module(SCHEMA_3_COMMIT)
    assert old.SCHEMA_VERSION == 3
    old.Store(tmp_path / "v3").close()
    upgraded = Store(tmp_path / "v3")
    assert upgraded.results(PTXAS_MATRIX_KIND) == []
    saved = upgraded.add_result(PTXAS_MATRIX_KIND, {"rows": [], "ratios": [], "skipped": []})
    assert [r["id"] for r in upgraded.results(PTXAS_MATRIX_KIND)] == [saved]
    with sqlite3.connect(tmp_path / "v3" / "index.sqlite") as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)


@pytest.mark.gpu
def test_gpu_demo_adds_the_sweep_and_the_memwatch_timeline(tmp_path):
    """On a GPU the demo A/B-times bundled kernels and watches the stack example; the page shows both."""
    result = run_demo(tmp_path / "demo", samples=["add"], attention=False, progress=False)
    assert not [line for line in result.skipped if "GPU" in line or "memwatch" in line], result.skipped
    store = Store(tmp_path / "demo" / "store", readonly=True)
    saved = ab.saved_results(store).results
    assert saved and all(b.correctness in ("bitwise", "allclose") for r in saved for b in r.report.benchmarks)
    page = result.report.read_text()
    sweep, memory = section(page, "sweep"), section(page, "memory")
    assert "<svg" in sweep and "matmul_fp16 4096^3" in sweep and "Workload estimate" in sweep
    (swept,) = store.results("sweep")
    status = {row.kernel: row.status for row in swept.rows}
    assert status["matmul_kernel"] == "ok", status
    # Gluon's own host-side TMA descriptors are not replayed yet: reported in the row, never a crash
    assert all(s == "ok" or s.startswith("not replayable: arguments of unknown type") for s in status.values())
    assert "Workload estimate (sweep" in sweep
    watched = json.loads((tmp_path / "demo" / "memwatch-stack.json").read_text())
    # the example's 16 KiB frame; the region opens before the context, whose first reading is the driver default
    assert (watched["summary"]["stack_limit_before"], watched["summary"]["stack_limit_after"]) == (1024, 16384)
    assert "<svg" in memory and "stack (local memory) reservation" in memory and "1024 &rarr; 16384" in memory
    (growth,) = watched["stack_growths"]  # the launch is the workload's last event: the timeline goes on after it
    assert len([t for t, *_ in watched["samples"] if t > growth["t"]]) >= 10


def test_sweep_results_join_the_forest_plot_with_their_workload_estimate(tmp_path):
    """A saved `tritonhook sweep` result: one forest row per timed variant of each kernel signature (identical SASS
    and failed rows are not plotted) with its rounds and why they stopped, its estimate and the `tritonhook run
    --select` line that applies it."""
    from test_sweep import _result

    from tritonhook.page.model import sweep_forest_rows
    from tritonhook.sweep.result import RESULT_KIND

    store = Store(tmp_path / "store")
    result = _result()
    result.rows[0].rounds, result.rows[0].stopped = 9, "decided"  # adaptive rounds: how many and why they stopped
    result.id = store.add_result(RESULT_KIND, result.to_json())
    rows = sweep_forest_rows(result)
    assert [r.rounds for r in rows] == ["9 decided", "-"]
    assert [(r.benchmark, r.verdict, r.kind) for r in rows] == [("k_fast [4096]", "faster", "sweep"),
                                                               ("k_slow [64]", "slower", "sweep")]
    assert rows[0].share == pytest.approx(0.6)
    path, data = write_report(store, tmp_path / "r.html")
    sweep = html.unescape(section(path.read_text(), "sweep"))
    assert "<svg" in sweep and f"Workload estimate (sweep {result.id}, cutlass_)" in sweep
    assert "tritonhook run --rename cutlass_ --select '^(?:k_fast)$' -- python train.py" in sweep
    assert "<td>k_fast [4096]</td>" in sweep and "<td>9 decided</td>" in sweep
    assert (f"Sweep {result.id}, L2 cold: replay/workload: 2 of the 2 signatures making 90% of the GPU time "
            "replay within ±10%") in sweep
    dirtied = dataclasses.replace(result, l2_dirt="dirty")
    dirtied.id = store.add_result(RESULT_KIND, dirtied.to_json())
    path, _ = write_report(store, tmp_path / "r2.html")
    assert f"Sweep {dirtied.id}, L2 cold, dirtied before each call: replay/workload" in html.unescape(
        section(path.read_text(), "sweep"))


def test_a_memwatch_file_that_does_not_exist_is_a_one_line_error_and_no_page(tmp_path):
    import subprocess
    import sys

    Store(tmp_path / "store").close()
    missing = tmp_path / "memwatch-typo.json"
    result = subprocess.run([sys.executable, "-m", "tritonhook", "report", "--store", str(tmp_path / "store"), "-o",
                             str(tmp_path / "r.html"), "--memwatch", str(missing)], capture_output=True, text=True)
    assert (result.returncode, result.stderr) == (2, f"tritonhook: error: {missing}: no such memwatch file (give the "
                                                     f"JSON that `tritonhook memwatch --json` wrote)\n")
    assert not (tmp_path / "r.html").exists()
