"""benchmarks/dirt_threshold.py: what a dirt threshold makes of a recording replayed on a dirty and on a clean L2,
read off per row (the replays' JSON as `tritonhook replay --json` writes it)."""

from __future__ import annotations

import pytest

from benchmark_scripts import load_benchmark

pytestmark = pytest.mark.release_independent  # a benchmark script's arithmetic on given JSON

dirt_threshold = load_benchmark("dirt_threshold")


def _replay(rows: list[tuple[str, float | None, float, str]]) -> dict:
    return {"recording_id": 7, "rows": [{"label": label, "l2_dirt": probe, "share": 0.1, "fidelity": ratio,
                                         "status": status} for label, probe, ratio, status in rows]}


def test_a_threshold_takes_the_clean_replay_below_it_and_the_dirty_one_elsewhere():
    """a: within only clean, probe 0.1; b: within only dirty, probe 0.3; c: never probed (replayed dirty); d failed
    in the clean replay (left out)."""
    dirty = _replay([("a", 0.1, 1.15, "ok"), ("b", 0.3, 1.02, "ok"), ("c", None, 1.0, "ok"), ("d", 0.0, 1.0, "ok")])
    clean = _replay([("a", 0.1, 1.01, "ok"), ("b", 0.3, 0.85, "ok"), ("c", None, 0.7, "ok"), ("d", 0.0, 1.0, "error")])
    rows = dirt_threshold.rows_of(dirty, clean)
    assert [(r["kernel"], r["dirty"], r["clean"]) for r in rows] == [("a", 1.15, 1.01), ("b", 1.02, 0.85),
                                                                     ("c", 1.0, 0.7)]
    assert [dirt_threshold.within_at(rows, t) for t in (0.0, 0.2, 0.5)] == [2, 3, 2]
