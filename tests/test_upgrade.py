"""`tritonhook upgrade` on the CPU: kernels compiled and captured under the running Triton (3.6), rebuilt under
Triton 3.9.0 from the capture alone (their module file is deleted first), and the four cells of PTX x ptxas at the
cubin level, checked against what ptxas and the files themselves say.

The 3.9.0 virtualenv is never downloaded here: scripts/test-matrix.sh points $TRITONHOOK_RELEASES_DIR at links to
its own release virtualenvs; without one the tests that need it skip. The subjects, their capture and their upgrade
(fixtures `upgrade_subjects`, `release_39`, `upgraded`) are tests/conftest.py's, shared with the report's tests."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import tritonhook
from tritonhook import _triton, cli, config
from tritonhook import binaries as tools
from tritonhook.cubin import Cubin
from tritonhook.upgrade import CELLS, UpgradeResult, upgrade
from tritonhook.upgrade.worker import rebuild_captures

pytestmark = pytest.mark.release_independent  # the other release runs in its own virtualenv; one run suffices
BASELINE, PTXAS_ONLY, PTX_ONLY, BOTH = CELLS
TARGET = "3.9.0"


def _kernel(result: UpgradeResult, name: str):
    return next(k for k in result.kernels if k.kernel == name)


def _read(cell_folder: str, name: str) -> bytes:
    return (Path(cell_folder) / name).read_bytes()


def _text_sha256(cubin: bytes, entry: str) -> str:
    return Cubin.from_bytes(cubin).summary(entry)["text_sha256"]


def test_a_capture_rebuilds_the_same_ptx_and_sass_under_the_same_release(upgrade_subjects, tmp_path):
    """The recorded module and specialization are all a rebuild needs: the module file is gone, and the worker
    under this very Python gives the captured PTX byte for byte (its line info names the old file) and the same
    SASS. Not the same cubin: ptxas writes the size and time of the file the line info names into .debug_line,
    zeros once it is gone."""
    captures = upgrade_subjects.captures()
    rebuilt = rebuild_captures(Path(sys.executable), upgrade_subjects, captures, tmp_path)
    for capture in captures:
        assert rebuilt[capture.id].error is None, rebuilt[capture.id].error
        assert rebuilt[capture.id].ptx == upgrade_subjects.read(capture, "ptx").decode()
        assert (_text_sha256(rebuilt[capture.id].cubin, capture.entry)
                == _text_sha256(upgrade_subjects.read(capture, "cubin"), capture.entry))


def test_the_four_cells_of_an_upgrade_to_3_9(upgraded, upgrade_subjects, release_39):
    scale = _kernel(upgraded, "scale_kernel")
    assert set(scale.cells) == set(CELLS) and scale.rebuild_error is None and scale.abi is None
    assert upgraded.to_triton == TARGET and upgraded.from_triton == _triton.triton_version()
    # The PTX changed, and its ISA with it, as the .version lines of the two PTX files say.
    old_ptx, new_ptx = (_read(scale.cells[name].variant, "kernel.ptx").decode() for name in (BASELINE, BOTH))
    isa = [re.search(r"^\.version (\d+\.\d+)$", ptx, re.MULTILINE).group(1) for ptx in (old_ptx, new_ptx)]
    assert scale.ptx_changed and tuple(isa) == scale.ptx_isa and isa[0] != isa[1]
    # 3.9 assembles sm_90 with its ptxas-blackwell: the new cubins say so in their own notes.
    blackwell = str(next(release_39.glob("lib/python*/site-packages/triton/backends/nvidia/bin/ptxas-blackwell")))
    version = tools.ptxas_version(blackwell)
    for name in (PTXAS_ONLY, BOTH):
        assert scale.cells[name].status == "ok" and scale.cells[name].ptxas == version
        assert f"V{version}".encode() in _read(scale.cells[name].variant, "kernel.cubin")
    # The old ptxas cannot read the new ISA, which this kernel does not need: assembled at the ISA ptxas 12.8 reads,
    # and said so.
    lowered = scale.cells[PTX_ONLY]
    old_ptxas = upgrade_subjects.get(scale.capture_id).ptxas_path
    assert lowered.status == "ok" and lowered.ptxas == tools.ptxas_version(old_ptxas)
    assert f"{isa[1]} lowered to {isa[0]}" in lowered.note
    lowered_ptx = _read(lowered.variant, "kernel.ptx").decode()
    assert re.search(rf"^\.version {re.escape(isa[0])}$", lowered_ptx, re.MULTILINE)
    report = tools.parse_ptxas_verbose(tools.assemble(lowered_ptx, old_ptxas, "sm_90a").stderr)["scale_kernel"]
    assert lowered.delta.resources["registers"][1] == report.registers
    # The new cell is what 3.9 runs: its PTX assembled by its ptxas with 3.9's flags gives its cubin, and the
    # delta's registers are what that ptxas reports.
    flags = tools.triton_ptxas_args(json.loads(_read(scale.cells[BOTH].variant, "metadata.json")), (3, 9))
    again = tools.assemble(new_ptx, blackwell, "sm_90a", flags)
    assert _text_sha256(again.cubin, "scale_kernel") == _text_sha256(_read(scale.cells[BOTH].variant, "kernel.cubin"),
                                                                      "scale_kernel")
    reported = tools.parse_ptxas_verbose(again.stderr)["scale_kernel"]
    assert scale.cells[BOTH].delta.resources["registers"][1] == reported.registers


def test_a_kernel_the_other_release_rejects_is_a_row_with_its_error(upgraded):
    advance = _kernel(upgraded, "advance_kernel")
    assert "advance" in advance.rebuild_error and advance.ptx_changed is None
    assert set(advance.cells) == {BASELINE, PTXAS_ONLY}  # the ptxas axis needs no rebuild: kept
    assert advance.cells[PTXAS_ONLY].status == "ok" and advance.cells[PTXAS_ONLY].delta is not None
    assert _kernel(upgraded, "scale_kernel").cells[BOTH].status == "ok"  # nothing else lost


def test_the_result_is_saved_and_renders(upgraded, upgrade_subjects):
    (saved,) = [r for r in upgrade_subjects.results("upgrade") if r.id == upgraded.id]  # the store is shared
    assert saved.to_json() == upgraded.to_json()
    from rich.console import Console

    screen = Console(width=300, record=True)
    screen.print(upgraded)
    text = screen.export_text()
    assert "Triton 3.6" in text and "lowered to" in text
    assert re.search(r"advance_kernel .*CompilationError: at \d+:\d+: .*no attribute 'advance'", text), text


def test_ptxas_alone_is_a_cuda_upgrade_under_the_same_triton(upgrade_subjects, release_39, capsys):
    newer = str(next(release_39.glob("lib/python*/site-packages/triton/backends/nvidia/bin/ptxas-blackwell")))
    assert cli.main(["upgrade", "--store", str(upgrade_subjects.path), "--ptxas", newer, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["to_triton"] is None and result["new_ptxas"] == tools.ptxas_version(newer)
    for kernel in result["kernels"]:
        assert set(kernel["cells"]) == {BASELINE, PTXAS_ONLY} and kernel["cells"][PTXAS_ONLY]["status"] == "ok"


@pytest.mark.parametrize("args,message", [
    (["--to", "0.0.1"], r"Triton 0\.0\.1: pip cannot install it \(ERROR: .*triton==0\.0\.1"),
    (["--to", "3.9"], r"give a release as X\.Y\.Z"),
    ([], r"give the release to upgrade to"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, upgrade_subjects, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(config.upgrade.RELEASES_DIR.name, str(tmp_path / "releases"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip answers from no index at once: no download, no network wait
    assert cli.main(["upgrade", "--store", str(upgrade_subjects.path), *args]) == 2
    *notice, err = capsys.readouterr().err.strip().splitlines()  # a virtualenv it starts to make is said first
    assert re.search(message, err) and len(notice) == (args[:2] == ["--to", "0.0.1"]), (notice, err)
    assert not list((tmp_path / "releases").glob("*"))  # no half-made virtualenv left behind


def test_the_virtualenv_of_a_release_is_said_before_it_is_made(upgrade_subjects, tmp_path, monkeypatch, capsys):
    """About 1 GB under a folder the user never named: one line first, naming it and the setting that moves it."""
    monkeypatch.setenv(config.upgrade.RELEASES_DIR.name, str(tmp_path / "releases"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    assert cli.main(["upgrade", "--store", str(upgrade_subjects.path), "--to", "0.0.1"]) == 2
    notice, err = capsys.readouterr().err.strip().splitlines()
    assert notice == (f"tritonhook: installing Triton 0.0.1 into a virtualenv of its own, "
                      f"{tmp_path / 'releases' / 'triton-0.0.1'} (about 1 GB, once; $TRITONHOOK_RELEASES_DIR moves it)")
    assert err.startswith("tritonhook: error: Triton 0.0.1: pip cannot install it"), err


@pytest.mark.parametrize("where, why", [("/proc/tritonhook-releases", "No such file or directory"),
                                        ("a-file", "a file, not a folder")])
def test_a_releases_dir_that_cannot_be_a_folder_is_one_line_naming_the_setting(upgrade_subjects, tmp_path, where, why):
    import os
    import subprocess

    releases = tmp_path / where
    if where == "a-file":
        releases.write_text("not a folder")
    done = subprocess.run([sys.executable, "-m", "tritonhook", "upgrade", "--store", str(upgrade_subjects.path), "--to",
                           "3.7.1"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, config.upgrade.RELEASES_DIR.name: str(releases)})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines() == [f"tritonhook: error: {releases}: cannot make Triton 3.7.1's virtualenv here "
                                        f"({why}; $TRITONHOOK_RELEASES_DIR names this folder)"]


def test_a_mistyped_cells_store_is_one_line_naming_it_and_no_store_is_made(upgrade_subjects, tmp_path, capsys):
    """`upgrade --time ID --cells-store DIR` reads upgrade results from DIR: a wrong path used to open as a new,
    empty store, leaving a stray store behind and blaming the result id."""
    missing = tmp_path / "cells-store-typo"
    assert cli.main(["upgrade", "--store", str(upgrade_subjects.path), "--time", "1",
                     "--cells-store", str(missing)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(missing) in err and "no tritonhook store" in err, err
    assert not missing.exists()


def test_a_recording_upgrades_the_kernels_it_launched(tmp_path, release_39):
    """`--recording`: the captures its signatures link to, not every build in the store."""
    pytest.importorskip("torch")
    from sample_recording import sample_recording  # tests/sample_recording.py: real captures, no GPU

    store, recording = sample_recording(tmp_path / "store", 2)  # an add and an fp32 matmul signature
    with tritonhook.session(store.path):
        from tritonhook.samples import compile_sample

        compile_sample("add", 80)  # in the store, not in the recording
    newer = str(next(release_39.glob("lib/python*/site-packages/triton/backends/nvidia/bin/ptxas-blackwell")))
    result = upgrade(store, ptxas=newer, recording=str(recording.id))
    assert result.recording_id == recording.id
    assert sorted(k.capture_id for k in result.kernels) == sorted({s.capture_id for s in recording.signatures})
