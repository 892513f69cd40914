"""`tritonhook doctor`: what it reports is what the rest of tritonhook sees (the installed Triton, the ptxas the
finder and the wrapper status find, a real TritonParse in Triton's hook slots, a damaged store), on this machine's
real Triton and ptxas binaries."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import triton

from tritonhook import _triton

from tritonhook.ptxas import wrapper as ptxas_wrapper
from tritonhook.doctor import FAIL, TARGETS, diagnose
from tritonhook.samples import compile_sample
from tritonhook.store import Store
from tritonhook.binaries import find_ptxas

# the hook slots and the ptxas each target uses are read off the installed Triton
pytestmark = pytest.mark.every_release  # reaches what differs between Triton releases (scripts/test-matrix.sh)


def by_topic(report) -> dict[str, list]:
    found: dict[str, list] = {}
    for check in report.checks:
        found.setdefault(check.topic, []).append(check)
    return found


def test_report_names_the_installed_triton_and_the_ptxas_each_target_uses(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no default store here: the report says so and verifies nothing
    checks = by_topic(diagnose())
    [release] = checks["triton"]
    assert (release.verdict, release.data["version"]) == ("ok", triton.__version__)
    assert triton.__version__ in release.found
    finder = {os.path.realpath(b.path): b for b in find_ptxas()}
    for capability in TARGETS:
        [line] = checks[f"ptxas sm_{capability}"]
        path = _triton.ptxas_for(capability)[0]
        assert line.data["path"] == path
        # the version the ptxas finder (`tritonhook ptxas list`) reads, the state `tritonhook ptxas status` reads
        assert line.data["version"] == finder[os.path.realpath(path)].version
        assert line.data["version"] in line.found
        assert line.data["wrapper"] == ptxas_wrapper.status(path).state
    listed = {os.path.realpath(c.data["path"]) for topic, lines in checks.items() if topic.startswith("ptxas")
              for c in lines}
    assert listed == set(finder)  # every ptxas on the machine, Triton's once
    assert checks["store"][0].verdict == "info" and "no store at" in checks["store"][0].found


def test_tritonparse_in_the_hook_slots_is_named(tritonparse, tmp_path):
    assert [c.topic for c in diagnose().checks if c.topic.startswith("hook")] == ["hooks"]  # all empty
    tritonparse.init(str(tmp_path / "trace"), enable_trace_launch=True)
    owners = {c.data["slot"]: c.data["owners"] for c in diagnose().checks if c.topic.startswith("hook ")}
    assert owners["compilation.listener"] == [{"tool": "TritonParse",
                                               "callable": "tritonparse.structured_logging.maybe_trace_triton"}]
    assert [o["tool"] for o in owners["runtime.launch_enter_hook"]] == ["TritonParse"]


def test_cli_json_parses_and_a_corrupt_blob_is_a_fail_line_naming_it_with_status_1(tmp_path):
    store = tmp_path / "store"
    Store(store).close()
    doctor = [sys.executable, "-m", "tritonhook", "doctor", "--store", str(store)]
    done = subprocess.run(doctor, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok    store" in done.stdout and "0 fail" in done.stdout

    import tritonhook

    with tritonhook.session(store) as session:
        compile_sample("add", 90)
    blob = Store(store, readonly=True).blob_path(session.captures()[0].artifacts["ptx"].sha256)
    blob.write_bytes(b"not the PTX any more")
    done = subprocess.run([*doctor, "--json"], capture_output=True, text=True, timeout=60)
    report = json.loads(done.stdout)
    failed = [c for c in report["checks"] if c["verdict"] == FAIL]
    assert (done.returncode, report["ok"], [c["topic"] for c in failed]) == (1, False, ["store"])
    assert str(blob) in failed[0]["found"] and failed[0]["advice"]


def test_a_directory_that_is_no_store_is_a_fail_line(tmp_path):
    [line] = by_topic(diagnose(tmp_path))["store"]
    assert (line.verdict, line.found) == (FAIL, f"{tmp_path}: no tritonhook store here (missing index.sqlite)")


def test_a_store_from_a_newer_tritonhook_is_called_newer_not_damaged(tmp_path):
    """Moving aside a store that a newer tritonhook reads whole would lose it for nothing."""
    import sqlite3

    store = tmp_path / "store"
    Store(store).close()
    with sqlite3.connect(store / "index.sqlite") as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    [line] = by_topic(diagnose(store))["store"]
    assert line.verdict == FAIL and "store written by a newer tritonhook (schema 99" in line.found
    assert "move it aside" not in line.advice and "pip install -U tritonhook" in line.advice, line.advice
    assert "only newer than tritonhook " in line.advice
