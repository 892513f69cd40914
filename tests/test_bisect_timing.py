"""`tritonhook bisect --time` on a machine with no GPU: a recording of the sm_90 bisect subjects (captured under
Triton 3.6.0; tests/release_subjects.py) searched over 3.6.0-3.9.0 for the first release whose build moved each
signature's time or outputs, each release's cells built by the real rebuild worker and ptxas, each step replayed by
the real replay engine and scheduler with tests/sweep_fake_worker.py --time-by-text as the worker (a variant
"takes" a time inversely proportional to its kernel's .text size). So the answer is known from cubins alone: each
release compiling the subjects itself (conftest's `direct_builds`, no capture, no rebuild worker) gives each
release's .text, hence its time over the captured build's.

The recording, its timed bisect and the independent compiles are tests/conftest.py's session fixtures
(`bisect_recording`, `timed_bisected`, `direct_builds`), shared with the report's tests."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest

import tritonhook
from tritonhook import cli, config
from tritonhook.cubin import Cubin
from tritonhook.page.model import bisect_view
from tritonhook.upgrade.bisect import FAILED, SAME, BisectResult
from tritonhook.upgrade.bisect_timing import MOVED, NOT_MOVED, bisect_time
from tritonhook.upgrade.result import BASELINE, PTX_ONLY, PTXAS_ONLY

pytestmark = pytest.mark.release_independent  # the other releases run in their own virtualenvs; one run suffices
FIRST, LAST = config.SUPPORTED_RELEASES[0], config.SUPPORTED_RELEASES[-1]
AFTER = config.SUPPORTED_RELEASES[1:]
ANOTHER_ARCH = "a recording from another arch"


def _text_size(folder: str) -> int:
    cubin = Cubin.from_bytes((Path(folder) / "kernel.cubin").read_bytes())
    return cubin.summary(next(iter(cubin.kernels)))["text_size"]


def _moves(ratio: float, threshold: float) -> bool:
    """The fake worker's rounds are one time each, so the interval is the ratio itself: moved when 3% away."""
    return abs(ratio - 1) >= threshold


def _known(direct: dict, name: str, release: str, threshold: float) -> tuple[str, float | None]:
    """What a step at `release` must say, from that release's own compile alone: refused (compile error), the
    captured .text (same, not timed), else timed at captured size / its size."""
    own, captured = direct[release][name], direct[FIRST][name]
    if own is None:
        return FAILED, None
    if own["text_sha256"] == captured["text_sha256"]:
        return SAME, None
    ratio = captured["text_size"] / own["text_size"]
    return (MOVED if _moves(ratio, threshold) else NOT_MOVED), ratio


def _kernel(result: BisectResult, name: str):
    return next(k for k in result.kernels if k.kernel == name)


def test_the_first_release_that_moved_is_the_one_the_releases_own_cubins_say(timed_bisected, direct_builds,
                                                                            bisect_recording):
    """3.9 changes the scale kernel's SASS but not its .text size: timed, not moved, no change (the cubin bisect
    says 3.9.0). The softmax's .text shrinks at 3.8 (2304 → 2048 B: x1.125 slower by the fake worker) and stays so;
    3.9 refuses tl.advance. Every step's verdict and ratio is what that release's own compile says."""
    threshold = timed_bisected.threshold
    assert timed_bisected.timed and threshold == config.CHECK_THRESHOLD
    store, recording = bisect_recording
    known = {k.kernel: next((r for r in AFTER if _known(direct_builds, k.kernel, r, threshold)[0] in (MOVED, FAILED)),
                            None) for k in timed_bisected.kernels}
    assert known == {"scale_kernel": None, "softmax_kernel": "3.8.0", "advance_kernel": "3.9.0"}
    assert sorted(k.signature for k in timed_bisected.kernels) == [s.id for s in recording.signatures]
    for found in timed_bisected.kernels:
        captured = store.get(found.capture_id)
        summary = Cubin.from_bytes(store.read(captured, "cubin")).summary(captured.entry)
        assert summary["text_sha256"] == direct_builds[FIRST][found.kernel]["text_sha256"]
        assert found.first_differing == known[found.kernel], (found.kernel, [s.text() for s in found.path])
        for step in found.path:
            verdict, ratio = _known(direct_builds, found.kernel, step.release, threshold)
            assert step.verdict == verdict, (found.kernel, step.text())
            if ratio is None:
                assert step.timing is None
            else:
                assert step.timing["ratio"] == pytest.approx(ratio, rel=1e-6)
                assert step.timing["outputs"] == "bitwise"


def test_at_most_log2_n_plus_one_rebuilds_and_replays_one_of_each_a_release_a_round(timed_bisected,
                                                                                    bisect_recording):
    """Each signature tries ≤ ⌈log2 3⌉ + 1 = 3 releases; the store got one upgrade (rebuild) per release tried and
    one replay per round that had something to time, holding exactly the signatures timed at that release."""
    store = bisect_recording[0]
    bound = math.ceil(math.log2(len(AFTER))) + 1
    for found in timed_bisected.kernels:
        assert found.rebuilds == len(found.path) <= found.bound == bound
        assert sum(step.timing is not None for step in found.path) <= bound
        assert found.path[0].release == LAST
    upgrades = [r for r in store.results("upgrade") if r.id < timed_bisected.id]
    assert sorted(r.to_triton for r in upgrades) == sorted({s.release for k in timed_bisected.kernels for s in k.path})
    assert len(upgrades) <= bound
    timed = {(step.timing["sweep_id"], k.signature) for k in timed_bisected.kernels for step in k.path if step.timing}
    sweeps = [r for r in store.results("sweep") if r.id < timed_bisected.id]
    assert {(sweep.id, row.signature) for sweep in sweeps for row in sweep.rows} == timed
    assert len(sweeps) <= bound and _kernel(timed_bisected, "scale_kernel").rebuilds == 1


def test_a_release_with_the_captured_sass_is_same_and_not_replayed(timed_bisected, direct_builds):
    """The softmax's 3.7.1 and the tl.advance kernel's 3.8.0 build have the captured SASS: "same" from the cells'
    CubinDelta alone, no replay (no timing; the replays' rows are checked in the test above)."""
    same = [(k.kernel, step) for k in timed_bisected.kernels for step in k.path if step.verdict == SAME]
    assert sorted((kernel, step.release) for kernel, step in same) == [("advance_kernel", "3.8.0"),
                                                                       ("softmax_kernel", "3.7.1")]
    for kernel, step in same:
        assert step.timing is None and step.delta.sass_identical
        assert direct_builds[step.release][kernel]["text_sha256"] == direct_builds[FIRST][kernel]["text_sha256"]


def test_the_split_is_what_the_single_change_builds_time_against_the_captured_build(timed_bisected):
    """At 3.8.0 the softmax moved by its PTX: 3.8's PTX assembled by the captured ptxas has the smaller .text, the
    captured PTX assembled by 3.8's ptxas the captured one. Each ratio from the cells' own cubins."""
    softmax = _kernel(timed_bisected, "softmax_kernel")
    assert (softmax.previous, softmax.first_differing) == ("3.7.1", "3.8.0")
    step = next(s for s in softmax.path if s.release == "3.8.0")
    today = _text_size(softmax.cells[BASELINE].variant)
    moved = {}
    for key, cell, axis in (("codegen", PTX_ONLY, "PTX"), ("ptxas", PTXAS_ONLY, "ptxas")):
        ratio = today / _text_size(softmax.cells[cell].variant)
        assert step.timing[key]["ratio"] == pytest.approx(ratio, rel=1e-6)
        moved[axis] = _moves(ratio, timed_bisected.threshold)
    assert moved == {"PTX": True, "ptxas": False} and softmax.split == "PTX"
    advance = _kernel(timed_bisected, "advance_kernel")
    assert advance.split == FAILED and "advance" in advance.note
    assert _kernel(timed_bisected, "scale_kernel").split == "none"


@pytest.mark.parametrize("kernel,flags,first,moved", [
    ("softmax", ["--time-with-text"], "3.8.0", {"verdict": "faster", "outputs": "bitwise"}),
    ("scale", ["--time-by-text", "--differ", "scale_kernel"], "3.9.0", {"verdict": "no difference",
                                                                        "outputs": "differ"}),
])
def test_a_faster_build_or_other_outputs_move_a_kernel_too(kernel, flags, first, moved, timed_bisected,
                                                         bisect_recording, time_by_text_worker):
    """Time proportional to .text (the softmax's smaller 3.8 build is faster, x0.889), or the same time with
    outputs beyond the spread (the scale kernel's 3.9 build): each moves the kernel."""
    store, recording = bisect_recording
    again = bisect_time(recording, store, kernel=kernel, from_release=FIRST, to_release=LAST,
                        rounds=config.MIN_ROUNDS, worker=[time_by_text_worker[0], *flags])
    (found,) = again.kernels
    assert found.first_differing == first
    step = next(s for s in found.path if s.release == first)
    assert step.verdict == MOVED and {key: step.timing[key] for key in moved} == moved
    if kernel == "softmax":
        assert step.timing["ratio"] == pytest.approx(2048 / 2304, rel=1e-6)


@pytest.mark.parametrize("kernel,flags,moved_by,first", [
    ("softmax", ["--time-with-text"], "time", "3.8.0"),
    ("softmax", ["--time-with-text"], "outputs", None),
    ("scale", ["--time-by-text", "--differ", "scale_kernel"], "outputs", "3.9.0"),
    ("scale", ["--time-by-text", "--differ", "scale_kernel"], "time", None),
])
def test_moved_by_time_or_outputs_alone(kernel, flags, moved_by, first, bisect_recording, time_by_text_worker):
    """The same two kernels with one criterion: the softmax's faster build (outputs bitwise) moves it by time only,
    the scale kernel's other outputs (time the same) by outputs only; the result says which criterion it used."""
    store, recording = bisect_recording
    again = bisect_time(recording, store, kernel=kernel, from_release=FIRST, to_release=LAST,
                        rounds=config.MIN_ROUNDS, moved_by=moved_by, worker=[time_by_text_worker[0], *flags])
    (found,) = again.kernels
    assert found.first_differing == first
    assert again.moved_by == moved_by and f"moved: {moved_by}" in again.how()
    view = bisect_view(again)  # the report's bisect section says the criterion and the command that gives it
    assert f"moved: {moved_by}" in view.title and view.args.endswith(f"--moved-by {moved_by}")


def test_cells_in_another_store_are_used_and_nothing_is_rebuilt(timed_bisected, bisect_recording, tmp_path,
                                                                time_by_text_worker, monkeypatch):
    """The recording's store as copied to a GPU machine, without upgrade results: every release's cells are found
    in --cells-store (the store that built them), nothing is installed or rebuilt, and the answer is the same."""
    store, recording = bisect_recording
    gpu = tritonhook.Store(shutil.copytree(store.path, tmp_path / "gpu"))
    for result in gpu.results("upgrade"):
        gpu.remove_result("upgrade", result.id)
    shutil.rmtree(gpu.path / "upgrades")
    monkeypatch.setenv(config.RELEASES_DIR.name, str(tmp_path / "releases"))  # a rebuild would fail here
    again = bisect_time(recording, gpu, kernel="_kernel$", from_release=FIRST, to_release=LAST, cells_store=store,
                        rounds=config.MIN_ROUNDS, worker=time_by_text_worker)
    assert [(k.first_differing, k.split, [(s.release, s.verdict) for s in k.path]) for k in again.kernels] == \
        [(k.first_differing, k.split, [(s.release, s.verdict) for s in k.path]) for k in timed_bisected.kernels]
    assert not gpu.results("upgrade") and not (gpu.path / "upgrades").exists()


def test_the_result_is_saved_renders_timed_and_an_old_result_still_loads(timed_bisected, bisect_recording):
    store = bisect_recording[0]
    (saved,) = [r for r in store.results("bisect") if r.id == timed_bisected.id]
    assert saved.to_json() == timed_bisected.to_json()
    assert BisectResult.from_json(json.loads(json.dumps(timed_bisected.to_json()))).to_json() == \
        timed_bisected.to_json()
    old = json.loads(json.dumps(timed_bisected.to_json()))  # as saved before: no timed, threshold, rounds, ...
    for field in ("timed", "threshold", "rounds"):
        old.pop(field)
    for kernel in old["kernels"]:
        kernel.pop("signature")
        for step in kernel["path"]:
            step.pop("timing")
    loaded = BisectResult.from_json(old)
    assert not loaded.timed and loaded.threshold is None and loaded.rounds is None
    assert all(k.signature is None and all(s.timing is None for s in k.path) for k in loaded.kernels)
    from rich.console import Console

    screen = Console(width=500, record=True)
    screen.print(timed_bisected)
    text = screen.export_text()
    assert "timed (moved: time ≥ 3.0% away" in text and "first moved" in text
    assert re.search(r"softmax_kernel .*signature 1 .* 3\.9\.0 moved \(regs 22→17, .* x1\.125 \[1\.125, 1\.125\] "
                     r"slower, outputs bitwise\) +│ 3\.8\.0 +│ PTX +│ 3 \(≤ 3\)", text), text
    assert re.search(r"3\.8\.0 PTX, captured ptxas: regs 22→17, .* x1\.125", text), text


def test_the_command_prints_json(timed_bisected, bisect_recording, tmp_path, monkeypatch, capsys):
    """The tl.advance kernel: 3.9.0 refuses it, 3.8.0 has the captured SASS: no replay, so no GPU needed; each
    release's cells are in the store already (nothing installed)."""
    monkeypatch.setenv(config.RELEASES_DIR.name, str(tmp_path / "releases"))
    assert cli.main(["bisect", "--time", "--store", str(bisect_recording[0].path), "--kernel", "advance",
                     "--from", FIRST, "--to", LAST, "--rounds", "7", "--threshold", "0.05", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["timed"] and out["rounds"] == 7 and out["threshold"] == 0.05
    (advance,) = out["kernels"]
    assert advance["first_differing"] == "3.9.0" and advance["split"] == FAILED
    assert [(s["release"], s["verdict"]) for s in advance["path"]] == [("3.9.0", FAILED), ("3.8.0", SAME)]


# ----- a recording from another arch --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def other_arch(tmp_path_factory):
    """The `add` sample compiled (really, under capture) for sm_100 and a recording of it made on sm_90a (as
    tests/sample_recording.py records): (store, recording)."""
    torch = pytest.importorskip("torch")
    from sample_recording import save_recording

    from tritonhook.samples import compile_sample

    folder = tmp_path_factory.mktemp("other-arch")
    with tritonhook.session(folder) as session:
        kernel = compile_sample("add", 100)
    store = tritonhook.Store(folder)
    assert {c.arch for c in store.captures()} == {"sm_100a"}
    return store, save_recording(store, [(kernel, (torch.randn(64), torch.randn(64), torch.empty(64), 64, 1024))],
                                 session.capture_ids)


def test_a_recording_from_another_arch_is_refused_before_anything_is_built(other_arch, tmp_path, monkeypatch):
    store, recording = other_arch
    monkeypatch.setenv(config.RELEASES_DIR.name, str(tmp_path / "releases"))
    before = _saved(store)
    with pytest.raises(tritonhook.TritonhookError, match=rf"signature 0 \(add_kernel\) was recorded on sm_90a, "
                                                         rf"their captured builds are for sm_100a: {ANOTHER_ARCH}"):
        bisect_time(recording, store, kernel="add", from_release=FIRST, to_release=LAST)
    assert _saved(store) == before and not (tmp_path / "releases").exists()


def test_upgrade_time_refuses_cells_of_another_arch(other_arch, release_39, recording_upgraded):
    """The sm_100 kernel's cells (rebuilt for real under 3.9.0) timed with the sm_90a recording of it, or with
    another sm_90a recording none of whose kernels they hold: one line each, nothing replayed."""
    from tritonhook.upgrade import upgrade
    from tritonhook.upgrade.timing import time_cells

    store, recording = other_arch
    cells = upgrade(store, to="3.9.0", recording=str(recording.id))
    assert {k.arch for k in cells.kernels} == {"sm_100a"}
    with pytest.raises(tritonhook.TritonhookError, match=rf"signature 0 \(add_kernel\) was recorded on sm_90a, "
                                                         rf"upgrade {cells.id}'s cells are for sm_100a: {ANOTHER_ARCH}"):
        time_cells(recording, store, cells, store)
    theirs, their_recording, _ = recording_upgraded
    with pytest.raises(tritonhook.TritonhookError, match=rf"recording {their_recording.id} was recorded on sm_90a, "
                                                         rf"upgrade {cells.id}'s cells are for sm_100a: {ANOTHER_ARCH}"):
        time_cells(their_recording, theirs, cells, store)
    assert not store.results("sweep")


@pytest.mark.parametrize("args,message", [
    (["--time", "--kernel", "add", "--from", FIRST, "--to", LAST], ANOTHER_ARCH),
    (["--time", "--kernel", "add", "--from", FIRST, "--to", LAST, "--rounds", "3"], r"--rounds 3: at least 5"),
    (["--time", "--kernel", "add", "--from", FIRST, "--to", LAST, "--threshold", "1.5"],
     r"--threshold 1\.5: a fraction above 0 and below 1"),
    (["--time", "--kernel", "nothing", "--from", FIRST, "--to", LAST], r"no launched kernel matching 'nothing'"),
    (["--time", "--kernel", "add", "--from", "3.7.1", "--to", LAST],
     rf"recorded under Triton {FIRST}, not --from 3\.7\.1"),
    (["--time", "--kernel", "add", "--from", FIRST, "--to", LAST, "--recording", "99"], r"no recording with id 99"),
    (["--time", "--kernel", "add", "--from", FIRST, "--to", LAST, "--cells-store", "{tmp}/none"],
     r"none: no tritonhook store here"),
    (["--kernel", "add", "--from", FIRST, "--to", LAST, "--rounds", "5", "--threshold", "0.1", "--moved-by", "time"],
     r"--rounds, --threshold, --moved-by: only with --time"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, other_arch, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(config.RELEASES_DIR.name, str(tmp_path / "releases"))  # nothing installed, nothing there
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    before = _saved(other_arch[0])
    assert cli.main(["bisect", "--store", str(other_arch[0].path), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(message, err), err
    assert not (tmp_path / "releases").exists() and _saved(other_arch[0]) == before


def _saved(store) -> list[int]:
    """The ids of the upgrades, replays and bisects saved in `store`: what a refused command must not add to."""
    return [r.id for kind in ("upgrade", "sweep", "bisect") for r in store.results(kind)]
