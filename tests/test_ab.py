"""A/B statistics (pure), the store's A/B table, and the interleaving runner with real compiles in real
child processes (no GPU here: the children report their compile wall time instead of a kernel time)."""

from __future__ import annotations

import json
import random
import sqlite3
import statistics
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings, strategies as st

import tritonhook
from tritonhook import ab
from tritonhook.samples import compile_sample
from tritonhook.errors import TritonhookError
from tritonhook.store import SCHEMA_VERSION, Store

samples = st.lists(st.floats(min_value=0.01, max_value=100.0, allow_nan=False), min_size=2, max_size=40)


# ----- statistics -------------------------------------------------------------------------------------------------
@given(values=samples)
def test_quantiles_agree_with_the_standard_library(values):
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    assert ab.quantile(values, 0.25) == pytest.approx(q1)
    assert ab.median(values) == pytest.approx(statistics.median(values)) == pytest.approx(q2)
    assert ab.quantile(values, 0.75) == pytest.approx(q3)


@settings(max_examples=30, deadline=None)
@given(values=samples)
def test_the_interval_holds_the_ratio_and_an_identical_copy_gives_one(values):
    ratio, low, high = ab.bootstrap_ratio(values, [v * 1.5 for v in values], resamples=300)
    assert low <= ratio <= high
    assert ratio == pytest.approx(1.5)
    assert ab.bootstrap_ratio(values, list(values), resamples=300) == (1.0, 1.0, 1.0)


def noisy(center: float, count: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [center * (1 + rng.gauss(0, 0.01)) for _ in range(count)]


def test_verdicts_from_known_distributions():
    base = noisy(1.0, 15, 1)
    for other, expected in ((noisy(1.0, 15, 2), "no difference"), (noisy(0.9, 15, 3), "faster"),
                            (noisy(1.1, 15, 4), "slower"), (noisy(1.003, 15, 5), "no difference")):
        assert ab.verdict(*ab.bootstrap_ratio(base, other)) == expected


def test_min_effect_keeps_tiny_but_certain_differences_as_no_difference():
    assert ab.verdict(0.998, 0.997, 0.999) == "no difference"
    assert ab.verdict(0.998, 0.997, 0.999, min_effect=0.001) == "faster"
    assert ab.verdict(1.02, 1.01, 1.03) == "slower"


def test_interquartile_mean_resolves_below_the_quantum_and_ignores_stragglers():
    quantum = 0.032
    base = [100 * quantum] * 60 + [101 * quantum] * 40 + [900 * quantum]      # a straggler, 40% one step up
    other = [100 * quantum] * 45 + [101 * quantum] * 55 + [900 * quantum]
    assert (ab.median(base), ab.median(other)) == (100 * quantum, 101 * quantum)  # medians jump a whole step
    mean_base, mean_other = ab.stats.interquartile_mean(base), ab.stats.interquartile_mean(other)
    assert 100 * quantum < mean_base < mean_other < 101 * quantum  # the 15% shift shows, the straggler does not
    assert ab.stats.interquartile_mean([2.0]) == 2.0


def test_rotation_sets():
    l2 = 50 * 2**20
    assert ab.rotation_sets(3 * 2**20, l2) == 64            # 67 sets would span four L2s: capped
    assert ab.rotation_sets(20 * 2**20, l2) == 10          # four L2s' worth of 20 MiB sets
    assert ab.rotation_sets(l2 + 1, l2) == 1                 # does not fit: no copies
    assert ab.rotation_sets(0, l2) == 1


def test_parse_variants():
    parsed = ab.parse_variants("plain,cutlass_,strip,plain")
    assert [(v.label, v.describe()) for v in parsed] == [
        ("plain", "no rename"), ("cutlass_", "prefix=cutlass_"), ("strip", "strip"), ("plain#2", "no rename")]
    with pytest.raises(TritonhookError, match="at least two"):
        ab.parse_variants("plain")
    with pytest.raises(TritonhookError, match="rename prefix 'a-b'"):
        ab.parse_variants("plain,a-b")


def test_collect_takes_one_median_per_round_and_keeps_flops_and_digests():
    records = [{"name": "mm", "variant": v, "round": r, "ms": ms, "flops": 2e9, "output_sha256": f"h{v}"}
               for r in range(2) for v, ms in (("plain", 1.0 + r), ("plain", 3.0 + r), ("cutlass_", 5.0))]
    [(name, (per_variant, flops, digests))] = ab.collect(records).items()
    assert name == "mm" and flops == 2e9
    assert per_variant == {"plain": [2.0, 3.0], "cutlass_": [5.0, 5.0]}
    assert digests == {"plain": {"hplain"}, "cutlass_": {"hcutlass_"}}


def test_analyze_reports_tflops_ratio_and_missing_variants():
    variants = ab.parse_variants("plain,cutlass_")
    result = ab.analyze("mm", {"plain": [2.0] * 5, "cutlass_": [1.0] * 5}, variants, flops=2e12,
                        correctness="bitwise")
    base, other = result.variants
    assert (base.tflops, other.tflops) == (pytest.approx(1000.0), pytest.approx(2000.0))
    assert (other.ratio, other.verdict, base.verdict) == (0.5, "faster", "baseline")
    with pytest.raises(TritonhookError, match="no timings for variant"):
        ab.analyze("mm", {"plain": [1.0]}, variants, flops=None, correctness="not checked")


# ----- the store ----------------------------------------------------------------------------------------------------
def test_a_schema_1_store_is_upgraded_and_keeps_its_captures(store_path):
    Store(store_path).close()
    with sqlite3.connect(store_path / "index.sqlite") as conn:  # what a schema-1 store looks like
        conn.execute("DROP TABLE ab_captures")
        conn.execute("DROP TABLE ab_results")
        conn.execute("ALTER TABLE captures RENAME COLUMN frontend_version TO triton_version")  # its name until 5
        conn.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
        conn.execute("INSERT INTO captures (created, pid, event, frontend, kernel, entry, original_entry, arch, "
                     "triton_version, options, metadata, times) VALUES (0, 1, 'compile', 'triton', 'k', 'k', 'k', "
                     "'sm_90a', '3.6.0', '{}', '{}', '{}')")
    store = Store(store_path)
    assert [c.kernel for c in store.captures()] == ["k"]
    assert store.captures()[0].frontend_label == "triton 3.6.0"
    ab_id = store.add_ab_result({"benchmarks": [{"name": "mm"}]}, {"plain": [1]})
    [saved] = store.ab_results()
    assert (saved["id"], saved["benchmarks"], saved["captures"]) == (ab_id, [{"name": "mm"}], {"plain": [1]})
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
    assert lines == [f"{r} {v} {n}" for r in range(5)
                     for v, n in (("plain", "add_kernel"), ("cutlass_", "cutlass_add_kernel"))]
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

    listed = tritonhook_ab(store_path, "--list")
    assert listed.returncode == 0, listed.stderr
    assert "compile_add" in listed.stdout and bench["variants"][1]["verdict"] in listed.stdout
    as_json = tritonhook_ab(store_path, "--list", "--json")
    [listed_json] = json.loads(as_json.stdout)
    assert listed_json["id"] == result["ab_id"] and listed_json["captures"] == saved.captures
    # the store's record reads back through the result type, to the report the run printed
    assert saved.report.to_json() == result
    assert ab.ABReport.from_json(store.ab_results()[0]).to_json() == result


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
    """docs/notes.md §1.1: on sm_90a the name leaves wgmma matmuls byte-identical but changes FFMA loops."""
    store = tritonhook.Store(store_path)
    kernels = {}
    for label, rename in (("plain", None), ("cutlass_", "cutlass_")):
        with tritonhook.session(store, subprocesses=False, rename=rename) as session:
            compile_sample(sample, 90)
        kernels[label] = ab.kernel_summaries(store, session.capture_ids)
    report = ab.ABReport([], [], 0, None, None, kernels)
    assert report.sass_identical() is identical


def test_a_a_false_positives_stay_near_five_percent_with_few_rounds():
    """Simulated A/A runs of 6 rounds with 1% noise per round and arm: the percentile bootstrap alone calls
    7.3% of them different; the interval used (widened by the t interval) must stay at or under 5%."""
    trials = 300
    false_positives = 0
    for seed in range(trials):
        rng = random.Random(seed)
        base, other = ([1 + rng.gauss(0, 0.01) for _ in range(6)] for _ in range(2))
        false_positives += ab.verdict(*ab.ratio_interval(base, other), min_effect=0.0) != "no difference"
    assert false_positives / trials <= 0.05


# ----- outputs: NaN as data, ULPs, the baseline's own spread ---------------------------------------------------------
def test_nan_and_inf_at_the_same_positions_are_equal_and_moved_ones_are_counted():
    torch = pytest.importorskip("torch")
    from tritonhook.ab.outputs import difference

    x = torch.randn(4096).log()  # NaN wherever randn was negative: what random inputs do to many kernels
    x[7] = float("inf")
    assert torch.isnan(x).any() and not torch.equal(x, x.clone())  # what used to read as "differ"
    assert difference(torch, x, x.clone()).bitwise
    moved = x.clone()
    first_nan = int(torch.isnan(x).nonzero()[0])
    moved[first_nan] = 0.5
    found = difference(torch, x, moved)
    assert (found.differing, found.nonfinite_mismatch, found.beyond_tolerance) == (1, 1, 1)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_ulp_distance_counts_representable_steps_across_zero(dtype):
    torch = pytest.importorskip("torch")
    from tritonhook.ab.outputs import difference

    dt = getattr(torch, dtype)
    one = torch.ones(1, dtype=dt)
    up = torch.nextafter(one, one * 2)
    up3 = torch.nextafter(torch.nextafter(up, one * 2), one * 2)
    assert difference(torch, one, up3).max_ulp == 3
    tiny = torch.nextafter(torch.zeros(1, dtype=dt), one)  # the smallest subnormal
    assert difference(torch, tiny, -tiny).max_ulp == 2  # +tiny -> +0/-0 -> -tiny
    assert difference(torch, torch.zeros(1, dtype=dt), -torch.zeros(1, dtype=dt)).max_ulp == 0


def test_fp8_and_integer_buffers_are_compared_too():
    torch = pytest.importorskip("torch")
    from tritonhook.ab.outputs import difference

    values = torch.tensor([1.0, 2.0, -3.0]).to(torch.float8_e4m3fn)
    other = torch.tensor([1.0, 2.25, -3.0]).to(torch.float8_e4m3fn)  # e4m3 steps by 0.25 between 2 and 4
    assert difference(torch, values, other).max_ulp == 1
    counts = torch.tensor([5, 9, 2], dtype=torch.int32)
    found = difference(torch, counts, torch.tensor([5, 7, 2], dtype=torch.int32))
    assert (found.differing, found.max_ulp, found.beyond_tolerance) == (1, 2, 1)


def test_a_variant_is_judged_against_the_baselines_own_run_to_run_spread():
    """A nondeterministic baseline (atomics: the sum's rounding depends on the order) makes a variant that is
    just as nondeterministic "within spread", not "differ"; a deterministic one makes any bit change "close" or
    "differ" by the tolerance."""
    torch = pytest.importorskip("torch")
    from tritonhook.ab.outputs import BITWISE, CLOSE, DIFFER, WITHIN_SPREAD, check_outputs

    parts = torch.randn(64, 1024)

    def racy_sum() -> dict:  # the order atomics would add the rows in, different at every run
        return {0: parts[torch.randperm(64)].sum(0)}

    runs = [racy_sum() for _ in range(3)]
    assert not all(torch.equal(runs[0][0], r[0]) for r in runs[1:])  # the spread is real
    check = check_outputs(torch, runs, {"plain#2": racy_sum(), "bad": {0: runs[0][0] + 1.0}})
    assert not check.deterministic and check.verdicts == {"plain#2": WITHIN_SPREAD, "bad": DIFFER}
    assert check.verdict == DIFFER and check.variants["plain#2"].max_ulp > 0

    steady = [{0: parts.sum(0)} for _ in range(3)]
    rounded = {0: torch.nextafter(steady[0][0], steady[0][0] * 2)}
    same = {0: steady[0][0].clone()}
    check = check_outputs(torch, steady, {"rounded": rounded, "same": same})
    assert check.deterministic and check.verdicts == {"rounded": CLOSE, "same": BITWISE}
    assert check.variants["rounded"].max_ulp == 1 and "1 ulp" in check.text()


def test_compare_outputs_of_ab_calls_a_kernel_that_makes_nan_equal_to_itself():
    torch = pytest.importorskip("torch")

    produced = torch.randn(1000).sqrt()
    assert ab.compare_outputs({"plain": produced, "cutlass_": produced.clone()}, "bitwise") == "bitwise"
    assert ab.compare_outputs({"plain": produced, "cutlass_": produced.nan_to_num()}, "allclose") == "MISMATCH"
