"""The GPU half of `tritonhook upgrade` on a machine with no GPU: a recording's kernels (tests/sample_recording.py)
upgraded to Triton 3.9.0, then replayed with their four cells as variants by the real replay engine and scheduler,
the worker replaced by tests/sweep_fake_worker.py --time-by-text (a variant "takes" a time inversely proportional to
its kernel's .text size), so the ratios the split reports are known from the cells' cubins alone. The recording and
its upgrade (fixture `recording_upgraded`) are tests/conftest.py's, shared with the report's tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tritonhook.cubin import Cubin
from tritonhook.store import Store
from tritonhook.upgrade.timing import LABELS, time_cells

pytestmark = pytest.mark.release_independent
FAKE_WORKER = [str(Path(__file__).with_name("sweep_fake_worker.py")), "--time-by-text"]


def _text_size(folder: str) -> int:
    cubin = Cubin.from_bytes((Path(folder) / "kernel.cubin").read_bytes())
    return cubin.summary(next(iter(cubin.kernels)))["text_size"]


def test_each_kernel_is_split_into_codegen_ptxas_and_their_interaction_from_its_cells(recording_upgraded):
    store, recording, result = recording_upgraded
    timing = time_cells(recording, store, result, store, rounds=7, worker=FAKE_WORKER)
    by_hash = {k.triton_hash: k for k in result.kernels}
    assert len(timing.kernels) == len(recording.signatures) == 2
    signatures = {s.id: s for s in recording.signatures}
    for split in timing.kernels:
        signature = signatures[split.signature]
        cells = {LABELS[name]: cell for name, cell in by_hash[signature.triton_hash].cells.items()}
        today = _text_size(cells["today"].variant)
        for label, ratio in (("new PTX", split.codegen), ("new ptxas", split.ptxas), ("upgraded", split.upgraded)):
            expected = today / _text_size(cells[label].variant)  # the fake worker's time: inverse to .text
            assert ratio is not None and ratio[0] == pytest.approx(expected, rel=1e-6), (split.label, label)
        assert split.interaction == pytest.approx(split.upgraded[0] / (split.codegen[0] * split.ptxas[0]))
    assert timing.to_json()["kernels"][0]["interaction"] is not None
    shares = {s.id: recording.share(s) for s in recording.signatures}
    expected = sum(shares[k.signature] * k.upgraded[0] for k in timing.kernels) / sum(shares.values())
    assert timing.workload("upgraded") == pytest.approx(expected)


def test_cells_built_elsewhere_are_found_in_the_copied_store_by_the_kernels_cache_key(recording_upgraded, tmp_path):
    store, recording, result = recording_upgraded
    copied = Store(shutil.copytree(store.path, tmp_path / "copied"))  # the cells' store as carried to a GPU machine
    shutil.rmtree(Path(result.variants))  # the folders the result names exist only in the copy now
    try:
        timing = time_cells(recording, store, result, copied, rounds=7, worker=FAKE_WORKER)
    finally:
        shutil.copytree(copied.path / Path(result.variants).relative_to(store.path), result.variants)
    assert all(split.upgraded is not None for split in timing.kernels)
