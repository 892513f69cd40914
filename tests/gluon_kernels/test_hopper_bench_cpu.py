"""The non-GPU parts of benchmarks/hopper_attention.py: its arguments, the arms of a run, and the per-shape
summary over runs (median TFLOPS, min-max over runs, speed ratios with intervals) that the table prints."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "hopper_attention_bench", Path(__file__).resolve().parents[2] / "benchmarks" / "hopper_attention.py")
bench = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench)


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
