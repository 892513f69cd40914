"""`tritonhook bisect --time` on a machine with no GPU: a recording of the sm_90 bisect subjects (captured under
Triton 3.6.0; tests/release_subjects.py) searched over 3.6.0-3.9.0 for the first release whose build moved each
signature's time or outputs, each release's cells built by the real rebuild worker and ptxas, each step replayed by
the real replay engine and scheduler with tests/sweep_fake_worker.py --time-by-text as the worker (a variant
"takes" a time inversely proportional to its kernel's .text size). So the answer is known from cubins alone: each
release compiling the subjects itself (conftest's `direct_builds`, no capture, no rebuild worker) gives each
release's .text, hence its time over the captured build's.

The recording, its timed bisect and the independent compiles are tests/conftest.py's session fixtures
(`bisect_recording`, `timed_bisected`, `direct_builds`), shared with the report's tests. An autotuned kernel (the
softmax under `triton.autotune`, each config captured) is searched as its autotune group; its answers come from the
rebuilt configs' cubins."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest
import triton

import tritonhook
from release_subjects import BISECT_COMPILES
from tritonhook.measure.sequential import SEQUENCE_MIN_ROUNDS
from tritonhook import cli, config
from tritonhook.cubin import Cubin
from tritonhook.page.model import bisect_view
from tritonhook.sweep import recording as rec
from tritonhook.sweep.autotune import autotune_groups, config_text
from tritonhook.upgrade.bisect import FAILED, SAME, BisectResult
from tritonhook.upgrade.bisect_timing import MOVED, NOT_MOVED, bisect_time
from tritonhook.upgrade.result import BASELINE, BOTH, PTX_ONLY, PTXAS_ONLY

pytestmark = pytest.mark.release_independent  # the other releases run in their own virtualenvs; one run suffices
FIRST, LAST = config.upgrade.SUPPORTED_RELEASES[0], config.upgrade.SUPPORTED_RELEASES[-1]
AFTER = config.upgrade.SUPPORTED_RELEASES[1:]
ANOTHER_ARCH = "a recording from another arch"


def _text(folder: str) -> dict:
    """A cell's cubin summary (`text_size`, `text_sha256`, ...)."""
    cubin = Cubin.from_bytes((Path(folder) / "kernel.cubin").read_bytes())
    return cubin.summary(next(iter(cubin.kernels)))


def _captured_text(store, capture_id: int) -> dict:
    """The captured build's cubin summary."""
    captured = store.get(capture_id)
    return Cubin.from_bytes(store.read(captured, "cubin")).summary(captured.entry)


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
    assert timed_bisected.timed and threshold == config.check.THRESHOLD
    store, recording = bisect_recording
    known = {k.kernel: next((r for r in AFTER if _known(direct_builds, k.kernel, r, threshold)[0] in (MOVED, FAILED)),
                            None) for k in timed_bisected.kernels}
    assert known == {"scale_kernel": None, "softmax_kernel": "3.8.0", "advance_kernel": "3.9.0"}
    assert sorted(k.signature for k in timed_bisected.kernels) == [s.id for s in recording.signatures]
    for found in timed_bisected.kernels:
        summary = _captured_text(store, found.capture_id)
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
    today = _text(softmax.cells[BASELINE].variant)["text_size"]
    moved = {}
    for key, cell, axis in (("codegen", PTX_ONLY, "PTX"), ("ptxas", PTXAS_ONLY, "ptxas")):
        ratio = today / _text(softmax.cells[cell].variant)["text_size"]
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
                        rounds=SEQUENCE_MIN_ROUNDS, worker=[time_by_text_worker[0], *flags])
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
                        rounds=SEQUENCE_MIN_ROUNDS, moved_by=moved_by, worker=[time_by_text_worker[0], *flags])
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
    monkeypatch.setenv(config.upgrade.RELEASES_DIR.name, str(tmp_path / "releases"))  # a rebuild would fail here
    again = bisect_time(recording, gpu, kernel="_kernel$", from_release=FIRST, to_release=LAST, cells_store=store,
                        rounds=SEQUENCE_MIN_ROUNDS, worker=time_by_text_worker)
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
    monkeypatch.setenv(config.upgrade.RELEASES_DIR.name, str(tmp_path / "releases"))
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
    monkeypatch.setenv(config.upgrade.RELEASES_DIR.name, str(tmp_path / "releases"))
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
    (["--kernel", "add", "--from", FIRST, "--to", LAST, "--rounds", "5", "--threshold", "0.1", "--moved-by", "time",
      "--autotune-top", "2"], r"--rounds, --threshold, --moved-by, --autotune-top: only with --time"),
    (["--time", "--kernel", "add", "--from", FIRST, "--to", LAST, "--autotune-top", "0"],
     r"--autotune-top 0: at least 1"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, other_arch, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(config.upgrade.RELEASES_DIR.name, str(tmp_path / "releases"))  # nothing installed, nothing there
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    before = _saved(other_arch[0])
    assert cli.main(["bisect", "--store", str(other_arch[0].path), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(message, err), err
    assert not (tmp_path / "releases").exists() and _saved(other_arch[0]) == before


def _saved(store) -> list[int]:
    """The ids of the upgrades, replays and bisects saved in `store`: what a refused command must not add to."""
    return [r.id for kind in ("upgrade", "sweep", "bisect") for r in store.results(kind)]


# ----- an autotuned kernel ------------------------------------------------------------------------------------------
SOFTMAX_CONFIGS = [triton.Config({"BLOCK": 256}, num_warps=2), triton.Config({"BLOCK": 512}, num_warps=2),
                   triton.Config({"BLOCK": 1024}, num_warps=4)]
"""The autotuned softmax's configs, picked for the fake worker's ranking (the larger .text, the faster): the larger
two's captured builds time alike, and 3.8 shrinks the 512 one's .text more than the 1024 one's, so a build's own
autotuner there picks 1024 where the workload's picked 512 (the test reads all of it from the cubins)."""


@pytest.fixture(scope="module")
def autotuned_softmax(bisect_subjects, tmp_path_factory):
    """The bisect subjects' softmax under `triton.autotune` with `SOFTMAX_CONFIGS`, each config compiled for sm_90a
    under capture by the oldest supported release: (store, the autotuned kernel, the compiled configs)."""
    from release_subjects import load_module
    from sample_recording import compile_configs

    autotuned = triton.autotune(SOFTMAX_CONFIGS, key=["n"])(load_module(bisect_subjects[1]).softmax_kernel)
    store, compiled = compile_configs(tmp_path_factory.mktemp("autotuned"), autotuned,
                                      BISECT_COMPILES["softmax_kernel"][0])
    return store, autotuned, compiled


def _autotuned_bisect(autotuned_softmax, picked: int, worker: list[str], **options):
    """A recording of the autotuned softmax whose autotuner picked config `picked` (its benchmark timed it fastest),
    saved in the store and bisected with --time (5 rounds): (store, recording, result)."""
    torch = pytest.importorskip("torch")
    from sample_recording import autotune_signatures

    store, autotuned, compiled = autotuned_softmax
    bench_ms = [0.020 if index == picked else 0.030 + 0.001 * index for index in range(len(compiled))]
    signatures, decision = autotune_signatures(store, autotuned, compiled, bench_ms, ["200", "torch.float32"])
    recording = rec.Recording(signatures, arch="sm_90a", device=None, triton_version=FIRST,
                              torch_version=torch.__version__, pid=1, autotune=[decision])
    recording.id = store.add_result(rec.RESULT_KIND, recording.to_json())
    return store, recording, bisect_time(recording, store, kernel="softmax", from_release=FIRST, to_release=LAST,
                                         rounds=SEQUENCE_MIN_ROUNDS, worker=worker, **options)


@pytest.fixture(scope="module", params=[1, 2], ids=["picked-512", "picked-1024"])
def autotuned_bisected(request, autotuned_softmax, releases, time_by_text_worker):
    """`_autotuned_bisect` with the workload's autotuner having picked BLOCK 512, or 1024."""
    return _autotuned_bisect(autotuned_softmax, request.param, time_by_text_worker)


def _built(store, release: str, signature) -> dict:
    """The cubin summary of `release`'s own build of a signature's kernel, from the store's upgrade to it."""
    return next(_text(k.cells[BOTH].variant) for r in store.results("upgrade") if r.to_triton == release
                for k in r.kernels if k.triton_hash == signature.triton_hash)


def _sweep(store, sweep_id: int):
    return next(r for r in store.results("sweep") if r.id == sweep_id)


def test_an_autotuned_kernel_is_timed_at_the_config_each_build_would_pick(autotuned_bisected):
    """Each timed step replays every config of the group, each with its own build at that release; the captured
    build runs at the workload's config and the release's build at the one its own autotuner would pick: the config
    whose build at that release has the largest .text (the fake worker's fastest). Where that is not the
    workload's (it picked 512: from 3.8 on 1024 is larger) the step names it and keeps the comparison at the
    workload's config beside it. A release where no config's SASS changed is "same", not replayed."""
    store, recording, result = autotuned_bisected
    (group,) = autotune_groups(recording)
    workload, by_id = group.workload_winner, {s.id: s for s in group.candidates}
    (found,) = result.kernels
    assert found.signature == workload.id and found.rebuilds == len(found.path) <= found.bound
    captured = {s.id: _captured_text(store, s.capture_id) for s in group.candidates}
    flipped = []
    for step in found.path:
        built = {s.id: _built(store, step.release, s) for s in group.candidates}
        if all(built[sid]["text_sha256"] == captured[sid]["text_sha256"] for sid in built):
            assert step.verdict == SAME and step.timing is None, step.text()
            continue
        sizes = sorted(b["text_size"] for b in built.values())
        assert sizes[-1] > sizes[-2]  # one fastest config: the pick the answer rests on
        own = max(built, key=lambda sid: built[sid]["text_size"])
        ratio = captured[workload.id]["text_size"] / built[own]["text_size"]
        assert step.verdict == (MOVED if _moves(ratio, result.threshold) else NOT_MOVED), step.text()
        assert step.timing["ratio"] == pytest.approx(ratio, rel=1e-6)
        assert step.timing["workload_config"] == config_text(workload.autotune["config"])
        assert step.timing["config"] == config_text(by_id[own].autotune["config"])
        if own != workload.id:
            flipped.append(step.release)
            same = step.timing["same_config"]
            assert same["config"] == step.timing["workload_config"]
            assert same["ratio"] == pytest.approx(captured[workload.id]["text_size"]
                                                  / built[workload.id]["text_size"], rel=1e-6)
        else:
            assert "same_config" not in step.timing
        sweep = _sweep(store, step.timing["sweep_id"])
        (row,) = sweep.rows
        assert sorted(row.autotune["replayed"]) == sorted(by_id)
        for candidate in sweep.candidates:  # each config timed with its own build at this release
            upgraded = next(v for v in candidate.variants if v.label == "upgraded")
            assert upgraded.facts["text_sha256"] == built[candidate.signature]["text_sha256"]
    assert bool(flipped) == (workload.autotune["config"]["BLOCK"] == 512), found.path
    assert found.first_differing == min((s.release for s in found.path if s.verdict == MOVED), key=AFTER.index)


def test_autotune_top_bounds_the_configs_replayed(autotuned_softmax, releases, time_by_text_worker):
    """`autotune_top=1`: the config the workload's autotuner timed fastest alone, its pick, so the release's build
    runs there too: each ratio is that config's build against its captured one."""
    store, recording, result = _autotuned_bisect(autotuned_softmax, 1, time_by_text_worker, autotune_top=1)
    workload = autotune_groups(recording)[0].workload_winner
    assert result.autotune_top == 1 and bisect_view(result).args.endswith("--autotune-top 1")
    timed = [step for step in result.kernels[0].path if step.timing is not None]
    assert timed
    for step in timed:
        assert [c.signature for c in _sweep(store, step.timing["sweep_id"]).candidates] == [workload.id]
        assert step.timing["config"] == step.timing["workload_config"] and "same_config" not in step.timing
        ratio = _captured_text(store, workload.capture_id)["text_size"] / _built(store, step.release,
                                                                                   workload)["text_size"]
        assert step.timing["ratio"] == pytest.approx(ratio, rel=1e-6)


def test_an_autotuned_step_shows_its_config_where_it_changed_and_round_trips(autotuned_bisected):
    """A step whose build ran at another config than the workload's names it, with the comparison at the
    workload's; the result round-trips through JSON, and one saved before (no configs) loads and renders."""
    from rich.console import Console

    _, recording, result = autotuned_bisected
    assert BisectResult.from_json(json.loads(json.dumps(result.to_json()))).to_json() == result.to_json()
    screen = Console(width=2000, record=True)
    screen.print(result)
    text = screen.export_text()
    shown = []
    for step in result.kernels[0].path:
        assert step.text() in text
        if step.timing is None:
            continue
        same = step.timing.get("same_config")
        own = (f"at its own config {step.timing['config']} (at the workload's {step.timing['workload_config']}: "
               f"x{same['ratio']:.3f} [" if same else "at its own config")
        assert (own in step.text()) == bool(same), step.text()
        shown += [step.release] if same else []
    picked = autotune_groups(recording)[0].workload_winner.autotune["config"]["BLOCK"]
    assert bool(shown) == (picked == 512)
    old = result.to_json()  # as saved before autotuned kernels were timed at their own config
    for step in old["kernels"][0]["path"]:
        for figures in [step["timing"] or {}] + [(step["timing"] or {}).get(key) or {} for key in ("codegen", "ptxas")]:
            for key in ("config", "workload_config", "same_config"):
                figures.pop(key, None)
    loaded = BisectResult.from_json(old)
    assert all("at its own config" not in step.text() for step in loaded.kernels[0].path)
