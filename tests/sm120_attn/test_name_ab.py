"""CPU test of the sm120 name experiment's A/B table (benchmarks/sm120_name_ab.py, loaded from its file)."""

import pytest

from benchmark_scripts import load_benchmark

pytestmark = pytest.mark.release_independent  # statistics over given samples: no compile at all


def test_summarize_ab_adds_strip_over_ext():
    """The A/B table: each arm against plain from the report, and strip against ext with the same bootstrap."""
    from tritonhook import ab
    from tritonhook.measure.variants import parse_variants

    summarize_ab = load_benchmark("sm120_name_ab").summarize_ab

    variants = parse_variants("plain,strip,ext")
    samples = {"plain": [1.00, 1.01, 0.99, 1.00, 1.02, 1.00], "strip": [0.90, 0.91, 0.90, 0.89, 0.92, 0.90],
               "ext": [1.00, 1.00, 1.01, 0.99, 1.00, 1.01]}
    bench = ab.analyze("tma-full", samples, variants, flops=1e12, correctness="bitwise")
    report = ab.ABReport([bench], variants, 6, None, ["python"], {}).to_json()
    (row,) = summarize_ab(report)
    assert row["correctness"] == "bitwise"
    assert set(row["vs"]) == {"strip/plain", "ext/plain", "strip/ext"}
    ratio, low, high, verdict = row["vs"]["strip/ext"]
    assert ratio < 0.92 and high < 1.0 and verdict == "faster"
    assert row["vs"]["ext/plain"][3] == "no difference"
