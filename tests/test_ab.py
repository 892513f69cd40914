"""The A/B child protocol and results, the store's A/B table, and the interleaving runner with real compiles in real
child processes (no GPU here: the children report their compile wall time instead of a kernel time)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap

import pytest

import tritonhook
from tritonhook import ab
from tritonhook.cubin import SUMMARY_FIELDS
from tritonhook.samples import compile_sample
from tritonhook.errors import TritonhookError
from tritonhook.measure.timing import round_order
from tritonhook.measure.variants import parse_variants
from tritonhook.store import SCHEMA_VERSION, Store

SCHEMA_1_COMMIT = "15899f8"  # the first commit: its store.py writes schema 1 (before the A/B tables)


def test_collect_takes_one_median_per_round_and_keeps_flops_and_digests():
    records = [{"name": "mm", "variant": v, "round": r, "ms": ms, "flops": 2e9, "output_sha256": f"h{v}"}
               for r in range(2) for v, ms in (("plain", 1.0 + r), ("plain", 3.0 + r), ("cutlass_", 5.0))]
    [(name, (per_variant, flops, digests))] = ab.collect(records).items()
    assert name == "mm" and flops == 2e9
    assert per_variant == {"plain": [2.0, 3.0], "cutlass_": [5.0, 5.0]}
    assert digests == {"plain": {"hplain"}, "cutlass_": {"hcutlass_"}}


def test_analyze_reports_tflops_ratio_and_missing_variants():
    variants = parse_variants("plain,cutlass_")
    result = ab.analyze("mm", {"plain": [2.0] * 5, "cutlass_": [1.0] * 5}, variants, flops=2e12,
                        correctness="bitwise")
    base, other = result.variants
    assert (base.tflops, other.tflops) == (pytest.approx(1000.0), pytest.approx(2000.0))
    assert (other.ratio, other.verdict, base.verdict) == (0.5, "faster", "baseline")
    with pytest.raises(TritonhookError, match="no timings for variant"):
        ab.analyze("mm", {"plain": [1.0]}, variants, flops=None, correctness="not checked")


# ----- the store ----------------------------------------------------------------------------------------------------
def test_a_schema_1_store_is_upgraded_and_keeps_its_captures(store_path, old_store_module):
    old_store_module(SCHEMA_1_COMMIT).Store(store_path).close()
    with sqlite3.connect(store_path / "index.sqlite") as conn:
        conn.execute("INSERT INTO captures (created, pid, event, frontend, kernel, entry, original_entry, arch, "
                     "triton_version, options, metadata, times) VALUES (0, 1, 'compile', 'triton', 'k', 'k', 'k', "
                     "'sm_90a', '3.6.0', '{}', '{}', '{}')")
    store = Store(store_path)
    assert [c.kernel for c in store.captures()] == ["k"]
    assert store.captures()[0].frontend_label == "triton 3.6.0"
    variants = parse_variants("plain,cutlass_")
    report = ab.ABReport([ab.analyze("mm", {"plain": [1.0] * 5, "cutlass_": [1.0] * 5}, variants, flops=None,
                                     correctness="bitwise")], variants, 5, None, None, {})
    ab_id = report.save(store, {"plain": [1]})
    [saved] = ab.saved_results(store).results
    assert (saved.id, [b.name for b in saved.report.benchmarks], saved.captures) == (ab_id, ["mm"], {"plain": [1]})
    with sqlite3.connect(store_path / "index.sqlite") as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (str(SCHEMA_VERSION),)


# ----- the interleaving runner, end to end ---------------------------------------------------------------------------
BENCH = textwrap.dedent("""
    import os, time
    from tritonhook import ab
    from tritonhook.samples import compile_sample
    start = time.perf_counter()
    kernel = compile_sample("add", 90)
    ab.record("compile_add", (time.perf_counter() - start) * 1e3, flops=1e6)
    round_, variant = os.environ["TRITONHOOK_AB_ROUND"], os.environ["TRITONHOOK_AB_VARIANT"]
    with open(os.environ["ORDER_LOG"], "a") as log:
        log.write(f"{round_} {variant} {kernel.metadata.name}\\n")
""")


def tritonhook_ab(store_path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tritonhook", "ab", "--store", str(store_path), *map(str, args)],
                          capture_output=True, text=True)


def test_ab_cli_interleaves_fresh_processes_and_saves_the_result_beside_the_captures(tmp_path, store_path,
                                                                                      monkeypatch):
    script, order = tmp_path / "bench.py", tmp_path / "order.log"
    script.write_text(BENCH)
    monkeypatch.setenv("ORDER_LOG", str(order))
    done = tritonhook_ab(store_path, "--rounds", "5", "--json", "--", sys.executable, script)
    assert done.returncode == 0, done.stderr
    lines = order.read_text().split("\n")[:-1]
    arms = (("plain", "add_kernel"), ("cutlass_", "cutlass_add_kernel"))
    assert lines == [f"{r} {arms[a][0]} {arms[a][1]}" for r in range(5) for a in round_order(r, 2)]
    assert lines[:4] == ["0 plain add_kernel", "0 cutlass_ cutlass_add_kernel",  # each variant first in turn
                         "1 cutlass_ cutlass_add_kernel", "1 plain add_kernel"]
    result = json.loads(done.stdout)
    [bench] = result["benchmarks"]
    assert bench["name"] == "compile_add" and bench["correctness"] == "not checked"
    assert [(v["label"], v["summary"]["n"]) for v in bench["variants"]] == [("plain", 5), ("cutlass_", 5)]
    assert bench["variants"][1]["verdict"] in ("faster", "slower", "no difference")
    store = Store(store_path, create=False)
    [saved] = ab.saved_results(store).results
    assert saved.id == result["ab_id"]
    by_id = {c.id: c for c in store.captures()}
    assert {by_id[i].entry for i in saved.captures["plain"]} == {"add_kernel"}
    assert {by_id[i].entry for i in saved.captures["cutlass_"]} == {"cutlass_add_kernel"}
    [plain_kernel], [renamed_kernel] = result["kernels"]["plain"], result["kernels"]["cutlass_"]
    assert (plain_kernel["entry"], renamed_kernel["original_entry"]) == ("add_kernel", "add_kernel")
    assert plain_kernel["registers"] > 0 and renamed_kernel["text_size"] > 0
    [why] = result["why"]["cutlass_"]  # issue 38: why the renamed rows moved (the add kernel: they did not)
    assert (why["base_entry"], why["variant_entry"]) == ("add_kernel", "cutlass_add_kernel") and why["sass_identical"]

    listed = tritonhook_ab(store_path, "--list")
    assert listed.returncode == 0, listed.stderr
    assert "compile_add" in listed.stdout and bench["variants"][1]["verdict"] in listed.stdout
    as_json = tritonhook_ab(store_path, "--list", "--json")
    [listed_json] = json.loads(as_json.stdout)
    assert listed_json["id"] == result["ab_id"] and listed_json["captures"] == saved.captures
    # the store's record reads back through the result type, to the report the run printed
    assert saved.report.to_json() == result
    assert store.result(result["ab_id"]).report.to_json() == result
    assert store.results(ab.result.RESULT_KIND, label="compile_add") == [saved]  # found by its benchmark names


@pytest.mark.release_independent  # argument checks and the exit of a child that compiles nothing: no Triton
def test_ab_cli_one_line_errors(tmp_path, store_path):
    failing = tmp_path / "fail.py"
    failing.write_text("raise SystemExit('boom')\n")
    silent = tmp_path / "silent.py"
    silent.write_text("pass\n")
    for args, message in ((["--rounds", "3"], "--rounds 3: use at least 5"),
                          (["--variants", "plain"], "at least two"),
                          ([], "exited with status 1 (round 1, variant plain): boom")):
        done = tritonhook_ab(store_path, *args, "--", sys.executable, failing)
        assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1, done.stderr
    done = tritonhook_ab(store_path, "--", sys.executable, silent)
    assert "reported no timings (round 1, variant plain)" in done.stderr


@pytest.mark.parametrize("sample,identical", [("matmul_fp8", True), ("matmul_fp32_ieee", False)])
def test_sass_identical_compares_real_builds(store_path, sample, identical):
    """docs/ptxas_cutlass.md#the-cutlass-name-path: on sm_90a the name leaves wgmma matmuls byte-identical but changes FFMA loops."""
    store = tritonhook.Store(store_path)
    kernels, captures = {}, {}
    for label, rename in (("plain", None), ("cutlass_", "cutlass_")):
        with tritonhook.session(store, subprocesses=False, rename=rename) as session:
            compile_sample(sample, 90)
        kernels[label] = ab.kernel_summaries(store, session.capture_ids)
        captures[label] = session.capture_ids
    report = ab.ABReport([], [], 0, None, None, kernels)
    assert report.sass_identical() is identical
    # why the renamed rows moved (issue 38): the two builds' own summaries, and the mix only where the SASS differs
    [why] = ab.kernel_deltas(store, captures)["cutlass_"]
    [plain], [renamed] = kernels["plain"], kernels["cutlass_"]
    assert why["captures"] == [plain["capture_id"], renamed["capture_id"]]
    assert why["resources"] == {field: {"base": plain[field], "variant": renamed[field]} for field in SUMMARY_FIELDS}
    assert why["sass_identical"] is identical and bool(why["mix"]) is not identical
    assert why["text"].endswith("SASS identical") is identical
    variants = parse_variants("plain,cutlass_")
    bench = ab.analyze("mm", {"plain": [1.0] * 5, "cutlass_": [1.0] * 5}, variants, flops=None, correctness="bitwise")
    report = ab.ABReport([bench], variants, 5, None, None, kernels, why={"cutlass_": [why]})
    assert ab.ABReport.from_json(json.loads(json.dumps(report.to_json()))).why == report.why
    from rich.console import Console

    console = Console(width=400, record=True)
    console.print(report)
    text = console.export_text()
    assert "why it moved" in text and why["text"] in text
    from tritonhook.page.model import forest_rows

    assert [row.why for row in forest_rows(report)] == [why["text"]]  # the HTML report's column
