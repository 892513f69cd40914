"""The non-GPU parts of benchmarks/hopper_attention.py: its arguments, the arms of a run, and the per-shape
summary over runs (median TFLOPS, min-max over runs, speed ratios with intervals) that the table prints; and
benchmarks/hopper_attention_bound.py's reading of a real ncu run."""
from __future__ import annotations

from pathlib import Path

import pytest

from benchmark_scripts import load_benchmark


bench = load_benchmark("hopper_attention")


def test_runs_default_to_three_and_quick_narrows_the_shapes():
    args = bench.parse_args([])
    assert (args.runs, args.head_dims, args.seqlens) == (3, "64,128", "1024,2048,4096,8192,16384")
    quick = bench.parse_args(["--quick", "--runs", "5"])
    assert (quick.runs, quick.head_dims, quick.seqlens) == (5, "128", "1024,4096,16384")
    for bad in (["--runs", "0"], ["--variants", "ws,nope"]):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)


def test_arms_pin_cudnn_and_flash_then_ours():
    assert bench.arm_names(["ws"], fp8=True, efficient=False) == ["cudnn", "flash", "ws:bf16", "ws:fp8", "ws:fp8+T"]
    assert bench.arm_names(["ws", "simple"], fp8=False, efficient=True) == [
        "cudnn", "flash", "efficient", "ws:bf16", "simple:bf16"]
    assert bench.arm_names(["ws"], fp8=True, efficient=False, dtype="fp16")[2:4] == ["ws:fp16", "ws:fp8"]
    assert bench.parse_args(["--dtype", "fp16"]).dtype == "fp16"


def test_an_fp16_run_compares_fp8_with_our_fp16():
    row = _row()
    row["runs"] = [{name.replace(":bf16", ":fp16"): ms for name, ms in run.items()} for run in row["runs"]]
    ratios = bench.summarize_row(row)["ratios"]
    assert set(ratios) == {"ours/cudnn", "fp8/fp16"} and ratios["fp8/fp16"] == pytest.approx((2.0, 2.0, 2.0))


def _row():
    """Three runs of 1 TFLOP; cuDNN takes 2.0/2.2/2.1 ms, ours 2.0 ms every run, our fp8 1.0 ms."""
    runs = [{"cudnn": [c] * 9, "flash": [4.0] * 9, "ws:bf16": [2.0] * 9, "ws:fp8": [1.0] * 9} for c in (2.0, 2.2, 2.1)]
    return dict(D=128, causal=True, S=4096, flops=1e12, runs=runs)


def test_summary_gives_median_and_min_max_over_runs_and_ratios():
    summary = bench.summarize_row(_row())
    cudnn = summary["arms"]["cudnn"]
    assert cudnn["tflops"] == pytest.approx(1e12 / 2.1e-3 / 1e12)
    assert (cudnn["tflops_min"], cudnn["tflops_max"]) == pytest.approx((1e12 / 2.2e-3 / 1e12, 500.0))
    assert summary["arms"]["ws:bf16"]["tflops"] == pytest.approx(500.0)
    ratio, low, high = summary["ratios"]["ours/cudnn"]  # cuDNN's time / ours: ours is faster here
    assert ratio == pytest.approx(1.05) and 1.0 - 1e-9 <= low < 1.05 < high <= 1.1 + 1e-9
    assert summary["ratios"]["fp8/bf16"] == pytest.approx((2.0, 2.0, 2.0))


def test_table_prints_each_arm_with_its_spread_and_the_ratios():
    row = _row()
    row["summary"] = bench.summarize_row(row)
    meta = dict(device="NVIDIA H200", torch="2.11", triton="3.6.0", runs=3)
    lines = bench.format_table(meta, [row]).splitlines()
    assert "3 runs" in lines[0] and "min-max" in lines[0]
    assert lines[1].split()[:8] == ["D", "causal", "S", "cudnn", "flash", "ws:bf16", "ws:fp8", "ours/cudnn"]
    assert "476 [455-500]" in lines[2] and "500 [500-500]" in lines[2] and "2.000 [2.000,2.000]" in lines[2]


def test_fa4_arms_come_before_ours_and_the_name_ratio_says_what_cutlass_costs(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(bench.__file__).parent))  # the benchmark imports fa4_arms beside it
    assert bench.arm_names(["ws"], fp8=False, efficient=False, fa4=True) == [
        "cudnn", "flash", "fa4", "fa4-nocutlass", "ws:bf16"]
    row = _row()
    for run in row["runs"]:  # FA4 2.4 ms with `cutlass` in its name, 2.0 ms without
        run.update({"fa4": [2.4] * 9, "fa4-nocutlass": [2.0] * 9})
    ratios = bench.summarize_row(row)["ratios"]
    assert ratios["ours/fa4"] == pytest.approx((1.2, 1.2, 1.2))
    assert ratios["nocutlass/fa4"] == pytest.approx((1.2, 1.2, 1.2))


def test_a_second_variant_is_compared_with_the_first_and_with_fa4():
    row = _row()
    for run in row["runs"]:  # three consumers 1.6 ms beside two consumers' 2.0 ms and FA4's 2.4 ms
        run.update({"fa4": [2.4] * 9, "ws-3wg:bf16": [1.6] * 9})
    ratios = bench.summarize_row(row)["ratios"]
    assert ratios["ws-3wg/ws"] == pytest.approx((1.25, 1.25, 1.25))
    assert ratios["ws-3wg/fa4"] == pytest.approx((1.5, 1.5, 1.5))
    assert ratios["ours/fa4"] == pytest.approx((1.2, 1.2, 1.2))


bound = load_benchmark("hopper_attention_bound")
NCU_H200 = Path(__file__).resolve().parents[1] / "data" / "ncu_hopper_attention_h200.csv.xz"
"""ncu's raw CSV of `hopper_attention_bound.py run` with its default shapes on the H200 (ncu 2025.3.1.0), the run
behind docs/hopper_attention.md#what-bounds-it."""


@pytest.mark.release_independent
def test_the_bound_table_reads_every_arm_and_metric_from_a_real_ncu_run():
    """Each profiled kernel gets its arm by name and its shape by launch order, and every column's metric is one ncu
    collected (a metric named wrongly reads as None: the first version asked for three that ncu does not have)."""
    import lzma

    with lzma.open(NCU_H200, "rt") as f:
        raw = bound.read_ncu_csv(f.read().splitlines())
    profiled = bound.shapes(bound.parse_args(["table", str(NCU_H200)]))
    rows = bound.kernel_rows(raw, profiled)
    assert [(r["shape"], r["arm"]) for r in rows] == [(s.label, arm) for s in profiled
                                                      for arm in ("ours", "fa4", "cudnn")]
    for row in rows:
        missing = [column for column in bound.COLUMNS if row[column] is None]
        assert not missing and row["top_stalls"], (row["arm"], row["shape"], missing)
    ours_d64 = next(r for r in rows if r["arm"] == "ours" and r["shape"] == profiled[0].label)
    assert bound.arms_of(profiled[0], ["ws", "ws-3wg"]) == ["ours", "ours:ws-3wg", "fa4", "cudnn"]
    assert bound.arms_of(profiled[2], ["ws", "ws-3wg"]) == ["ours", "fa4", "cudnn"]  # D=128: no three consumers
    assert ours_d64["kernel"].startswith("_attn_fwd_ws") and ours_d64["warps_per_scheduler"] == 3.0


NCU_DRAM_H200 = Path(__file__).resolve().parents[1] / "data" / "ncu_hopper_dram_h200.csv.xz"
"""ncu's raw CSV of `hopper_attention_bound.py run --shapes 128:1:16384,128:1:8192 --ours ws,ws-np-hg2,ws-np-hg4`
under `--metrics dram__bytes_read.sum,gpu__time_duration.sum,gpc__cycles_elapsed.avg.per_second` on the H200,
behind docs/hopper_attention.md#under-sustained-load (the causal D=128 builds before one program a tile)."""


@pytest.mark.release_independent
def test_the_bound_table_reads_dram_bytes_and_the_clock_from_a_real_ncu_run():
    """The memory columns name metrics ncu collects: every kernel of the run gets its DRAM bytes and SM clock."""
    import lzma

    with lzma.open(NCU_DRAM_H200, "rt") as f:
        raw = bound.read_ncu_csv(f.read().splitlines())
    profiled = bound.shapes(bound.parse_args(["table", "x", "--shapes", "128:1:16384,128:1:8192"]))
    ours = ["ws", "ws-np-hg2", "ws-np-hg4"]
    rows = bound.kernel_rows(raw, profiled, ours)
    assert [r["arm"] for r in rows] == [arm for s in profiled for arm in bound.arms_of(s, ours)]
    assert all(r[column] > 0 for r in rows for column in bound.MEMORY_COLUMNS), rows


NCU_CLOSE_H200 = Path(__file__).resolve().parents[1] / "data" / "ncu_hopper_close_h200.csv.xz"
"""ncu's raw CSV behind docs/hopper_attention.md#the-goals-at-the-close: `hopper_attention_bound.py run --ours ws,fp8`
over ten shapes on the H200 (the command: benchmarks/results/hopper_goals_close_h200.json)."""


@pytest.mark.release_independent
def test_the_fp8_arm_is_told_from_the_bf16_build_of_the_same_kernel_name():
    """Our fp8 and bf16 builds share the kernel's name, so launch order alone labels them: labelled right, the fp8
    launch is the shorter one at every D=128 shape (1.3-1.5x our bf16's speed on the H200), and both read the
    same inputs' bytes from DRAM at the non-causal shapes in the ratio of their element sizes or less."""
    import lzma

    with lzma.open(NCU_CLOSE_H200, "rt") as f:
        raw = bound.read_ncu_csv(f.read().splitlines())
    shapes = "64:0:16384,64:1:16384,128:0:16384,128:1:16384,64:0:4096,64:1:4096,128:0:4096,128:1:4096,128:0:1024,128:1:1024"
    profiled = bound.shapes(bound.parse_args(["table", "x", "--shapes", shapes]))
    ours = ["ws", bound.FP8]
    rows = bound.kernel_rows(raw, profiled, ours)
    assert [(r["shape"], r["arm"]) for r in rows] == [(s.label, a) for s in profiled for a in bound.arms_of(s, ours)]
    by = {(r["shape"], r["arm"]): r for r in rows}
    for shape in (s for s in profiled if s.D == 128):
        bf16, fp8 = by[(shape.label, "ours")], by[(shape.label, "ours:fp8")]
        assert 1.25 < bf16["duration_us"] / fp8["duration_us"] < 1.6, shape.label


def test_an_aa_arm_runs_the_tuned_build_again_and_is_compared_with_it():
    """`--variants ws,ws-aa`: the same build as two arms of one run, so the table's `ws-aa/ws` says how much an
    arm's place in the interleaving moves a kernel (up to 5% at S <= 2k on the H200: two arms of one fp8 build read
    899 and 856 TFLOPS, docs/hopper_attention.md#the-d128-goals-on-two-more-starts)."""
    args = bench.parse_args(["--variants", "ws,ws-aa"])
    assert bench.VARIANT_KWARGS["ws-aa"] == bench.VARIANT_KWARGS["ws"] and args.variants == "ws,ws-aa"
    row = _row()
    for run in row["runs"]:
        run["ws-aa:bf16"] = [2.1] * 9
    assert bench.summarize_row(row)["ratios"]["ws-aa/ws"] == pytest.approx((2.0 / 2.1,) * 3)


power = load_benchmark("hopper_power")
POWER_H200 = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "hopper_power_h200.json"
"""`hopper_power.py`'s run on the H200 (docs/hopper_attention.md#under-sustained-load)."""


def test_power_names_nvmls_clock_event_reasons():
    assert power.reason_names(0x4) == ["power cap"] and power.reason_names(0x5) == ["idle", "power cap"]
    assert power.reason_names(0) == [] and power.reason_names(0x200) == ["0x200"]


def test_power_summarizes_each_arms_phases_and_prints_them_against_fa4():
    """The phases of a real run, summarized again: per arm the median of its phases' TFLOPS, clocks and power, the
    reasons they saw; the table puts every arm over FA4 in speed and per clock."""
    import json

    for row in json.loads(POWER_H200.read_text())["sustained"]["rows"]:
        arms = power.summarize(row["phases"])
        assert list(arms) == list(row["arms"]) and "fa4" in arms
        for arm, summary in arms.items():
            mine = sorted(p["tflops"] for p in row["phases"] if p["arm"] == arm)
            assert summary["tflops_min"] == mine[0] and summary["tflops_max"] == mine[-1]
            assert mine[0] <= summary["tflops"] <= mine[-1] and summary["reasons"] == ["power cap"]
            assert summary["tflops_per_ghz"] == pytest.approx(summary["tflops"] / summary["mhz"] * 1e3)
    table = power.format_table([dict(row, arms=power.summarize(row["phases"]))
                                for row in json.loads(POWER_H200.read_text())["sustained"]["rows"]])
    assert all(" 1.000 " in line for line in table.splitlines() if " fa4 " in line)
