"""The store under concurrent writers, bad stores, corrupt blobs, other users, killed writers."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

import tritonhook
from tritonhook.samples import compile_sample
from tritonhook.store import SCHEMA_VERSION, NewCapture, Store

# the store's SQL, concurrency and upgrades: the same under every Triton (capture through each release's hooks is
# checked per release in test_capture.py)
pytestmark = pytest.mark.release_independent

REPO = Path(__file__).resolve().parents[1]
SCHEMA_1_COMMIT = "15899f8"  # the first commit: its store.py writes schema 1
SCHEMA_2_COMMIT = "c77a38a"  # the last commit whose store.py writes schema 2 (before `specialization`)
SCHEMA_3_COMMIT = "8edb4ec"  # the last commit whose store.py writes schema 3 (before the `results` table)
SCHEMA_4_COMMIT = "e26f29c"  # a commit whose store.py writes schema 4 (before `frontend_version`) from the standard
#                              library alone (later ones import tritonhook.config, which moves on)
SCHEMA_5_COMMIT = "3aac431"  # a commit whose store.py writes schema 5 (before the results' label and source)
SCHEMA_6_COMMIT = "5d42560"  # the last commit whose store.py writes schema 6 (A/B results in their own tables)
SCHEMA_7_COMMIT = "c96289c"  # the last commit whose store.py writes schema 7 (no result_blobs, no held_blobs)

WRITERS = 8
KERNELS_PER_WRITER = 4

_WRITER = textwrap.dedent("""
    import sys, triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    import tritonhook
    from tritonhook.samples import add_kernel
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    with tritonhook.session(sys.argv[1]):
        sys.stdin.read()  # start line: every writer waits here until all are up
        for block in (128, 256, 512, 1024)[:int(sys.argv[2])]:
            triton.compile(ASTSource(add_kernel, sig, {"BLOCK": block}), target=GPUTarget("cuda", 90, 32))
""")


def test_many_processes_writing_at_once_lose_nothing(store_path, tmp_path):
    env = dict(os.environ, TRITON_DEFAULT_FP_FUSION="1")
    writers = []
    for rank in range(WRITERS):
        # Half the writers share one Triton cache (so they race on cache hits), half compile fresh.
        env["TRITON_CACHE_DIR"] = str(tmp_path / ("shared-cache" if rank % 2 else f"cache-{rank}"))
        writers.append(subprocess.Popen([sys.executable, "-c", _WRITER, str(store_path), str(KERNELS_PER_WRITER)],
                                        stdin=subprocess.PIPE, env=dict(env)))
    for writer in writers:  # release them together
        writer.stdin.close()
    assert [w.wait(timeout=300) for w in writers] == [0] * WRITERS

    store = Store(store_path, create=False)
    captures = store.captures()
    assert len(captures) == WRITERS * KERNELS_PER_WRITER
    assert len({c.pid for c in captures}) == WRITERS
    assert store.verify().ok
    for capture in captures:  # every record complete: no half-written rows
        assert {"ptx", "cubin", "json"} <= set(capture.artifacts)
        assert store.read(capture, "cubin")[:4] == b"\x7fELF"


def test_a_new_store_opens_while_another_opener_holds_its_first_write(store_path):
    """A brand-new index is in rollback mode until its first opener has created the schema; meanwhile SQLite answers
    the next opener's `journal_mode=WAL` "database is locked" at once, without the busy timeout. The opener waits
    for the write to end (half a second here) instead of failing."""
    store_path.mkdir(parents=True)
    first = sqlite3.connect(store_path / "index.sqlite", isolation_level=None, check_same_thread=False)
    first.execute("BEGIN IMMEDIATE")
    first.execute("CREATE TABLE early (x)")
    threading.Timer(0.5, first.execute, ["COMMIT"]).start()
    started = time.monotonic()
    store = Store(store_path)
    assert time.monotonic() - started >= 0.4 and store.captures() == []
    first.close()


def test_a_corrupt_blob_is_detected_on_read(capture_session):
    compile_sample("add", 90)
    (capture,) = capture_session.captures()
    store = capture_session.store
    blob = store.blob_path(capture.artifacts["ptx"].sha256)
    blob.write_bytes(blob.read_bytes()[:-10])  # truncated, as after a crash mid-write by another tool
    with pytest.raises(tritonhook.TritonhookError, match="corrupt"):
        store.read(capture, "ptx")
    assert [os.path.basename(p) for p in store.verify().corrupt] == [blob.name]
    blob.unlink()
    with pytest.raises(tritonhook.TritonhookError, match="missing"):
        store.read(capture, "ptx")


def test_a_store_from_a_newer_schema_is_refused(store_path):
    Store(store_path).close()
    with sqlite3.connect(store_path / "index.sqlite") as conn:
        conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(tritonhook.TritonhookError, match="newer tritonhook"):
        Store(store_path)


def test_an_unwritable_store_fails_at_open(shared_dir, as_other_user):
    locked = shared_dir / "locked"
    locked.mkdir(mode=0o555)
    result = as_other_user(sys.executable, "-c", f"from tritonhook.store import Store; Store({str(locked)!r} + '/s')")
    assert result.returncode != 0 and "TritonhookError" in result.stderr and "not writable" in result.stderr


def test_a_store_path_that_is_a_file_fails_at_open(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    with pytest.raises(tritonhook.TritonhookError, match="not writable"):
        Store(not_a_dir)


def test_a_non_database_index_is_a_clear_error(store_path):
    store_path.mkdir()
    (store_path / "index.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(tritonhook.TritonhookError, match="index.sqlite"):
        Store(store_path)


def test_query_by_kernel_regex_and_arch(capture_session):
    compile_sample("add", 90)
    compile_sample("matmul_fp16", 100)
    store = capture_session.store
    assert [c.entry for c in store.captures(kernel="^matmul")] == ["matmul_kernel"]
    assert [c.entry for c in store.captures(arch="sm_90a")] == ["add_kernel"]
    with pytest.raises(tritonhook.TritonhookError, match="regular expression"):
        store.captures(kernel="(")


def test_a_corrupt_blob_is_healed_by_the_next_write_of_its_content(capture_session):
    compile_sample("add", 90)
    (capture,) = capture_session.captures()
    store = capture_session.store
    blob = store.blob_path(capture.artifacts["ptx"].sha256)
    damaged = bytearray(blob.read_bytes())
    damaged[100] ^= 0xFF  # same size: a flipped bit on disk
    blob.write_bytes(bytes(damaged))
    compile_sample("add", 90)  # a cache hit: the same PTX captured again
    assert store.read(capture, "ptx") == store.read(capture_session.captures()[1], "ptx")
    assert store.verify().ok


@pytest.mark.parametrize("value", ["two", "0", "-3", "1.5", str(2**63)])
def test_a_schema_version_out_of_range_names_the_index_in_every_command(store_path, value):
    """Every number the meta table keeps is range-checked where it is read: a schema version of 0 or below used to
    be a KeyError from the upgrade steps, in every command."""
    Store(store_path).close()
    with sqlite3.connect(store_path / "index.sqlite") as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (value,))
    expected = f"{store_path / 'index.sqlite'}: schema version {value!r} is not a whole number of 1 or more"
    for readonly in (False, True):
        with pytest.raises(tritonhook.TritonhookError) as raised:
            Store(store_path, readonly=readonly)
        assert str(raised.value) == f"{expected} (damaged index?)"
    for command in (["ls"], ["decisions", "ls"], ["store", "verify"], ["run", "--", "true"]):
        at = command.index("--") if "--" in command else len(command)
        run = subprocess.run([sys.executable, "-m", "tritonhook", *command[:at], "--store", str(store_path),
                              *command[at:]], capture_output=True, text=True, timeout=120)
        assert _one_error_line(run) == f"tritonhook: error: {expected} (damaged index?)", command


def test_a_repair_count_that_is_no_number_names_the_index_when_a_writer_reads_it(store_path):
    Store(store_path).close()
    with sqlite3.connect(store_path / "index.sqlite") as conn:
        conn.execute("INSERT INTO meta VALUES ('repairs', 'many')")
    with pytest.raises(tritonhook.TritonhookError) as raised:
        Store(store_path).add(_SAMPLE_CAPTURE)
    assert str(raised.value) == (f"{store_path / 'index.sqlite'}: repairs 'many' is not a whole number of 0 or more "
                                 f"(damaged index?)")


def test_a_missing_column_names_the_index_and_the_column(store_path):
    Store(store_path).close()
    with sqlite3.connect(store_path / "index.sqlite") as conn:
        conn.execute("ALTER TABLE captures DROP COLUMN triton_hash")
    for readonly in (False, True):
        with pytest.raises(tritonhook.TritonhookError, match=r"index\.sqlite: .*captures is missing triton_hash"):
            Store(store_path, readonly=readonly)


@pytest.mark.parametrize("commit, version", [(SCHEMA_1_COMMIT, 1), (SCHEMA_2_COMMIT, 2), (SCHEMA_3_COMMIT, 3),
                                             (SCHEMA_4_COMMIT, 4)])
def test_an_older_store_is_upgraded_and_keeps_its_captures(capture_session, tmp_path, old_store_module, commit,
                                                           version):
    """The store.py of an older commit writes a store (a Triton capture and a ptxas-wrapper one); this code opens
    it, upgrades it, and reads it: the old `triton_version` is the new `frontend_version`."""
    import triton

    old = old_store_module(commit)
    assert old.SCHEMA_VERSION == version
    compile_sample("matmul_fp16", 90)
    (new,) = capture_session.captures()
    fields = {f.name: getattr(new, "frontend_version" if f.name == "triton_version" else f.name)
              for f in dataclasses.fields(old.NewCapture) if f.name != "artifacts"}
    artifacts = {stage: capture_session.store.read(new, stage) for stage in new.artifacts}
    old_store = old.Store(tmp_path / "old")
    old_id = old_store.add(old.NewCapture(**fields, artifacts=artifacts))
    ptxas_id = old_store.add(old.NewCapture(**{**fields, "frontend": "ptxas", "triton_version": ""}, artifacts={}))
    old_store.close()

    upgraded = Store(tmp_path / "old", readonly=True)  # a reader allowed to write it upgrades it once
    (capture,) = upgraded.captures(kernel="matmul", arch="sm_90", ids=[old_id])
    specialization = new.specialization if version >= 3 else ""
    assert (capture.id, capture.entry, capture.specialization) == (old_id, "matmul_kernel", specialization)
    assert (capture.frontend, capture.frontend_version) == ("triton", triton.__version__)
    assert upgraded.get(ptxas_id).frontend_label == "ptxas" and upgraded.get(ptxas_id).frontend_version == ""
    assert upgraded.read(capture, "cubin") == artifacts["cubin"]
    assert _recorded_version(tmp_path / "old") == SCHEMA_VERSION
    assert _schema_shape(tmp_path / "old") == _schema_shape(capture_session.store.path)


def _recorded_version(store: Path) -> int:
    with sqlite3.connect(store / "index.sqlite") as conn:
        return int(conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0])


def _schema_shape(store: Path) -> dict:
    """Each table's columns (name, type, not null, default, key) and each index's table and columns: what a store
    upgraded step by step must share with a new one."""
    with sqlite3.connect(store / "index.sqlite") as conn:
        named = "SELECT name, tbl_name FROM sqlite_master WHERE type = ? AND name NOT LIKE 'sqlite_%'"
        return {"tables": {table: [row[1:] for row in conn.execute(f"PRAGMA table_info({table})")]
                           for table, _ in conn.execute(named, ("table",)).fetchall()},
                "indexes": {index: (table, [row[2] for row in conn.execute(f"PRAGMA index_info({index})")])
                            for index, table in conn.execute(named, ("index",)).fetchall()}}


def test_an_upgrade_stopped_between_steps_is_finished_by_the_next_opener(tmp_path, old_store_module, monkeypatch):
    """Each upgrade step commits the version it reached: a step that fails (here the one from 5) leaves a store of
    schema 5, not a half-upgraded one, and the next opener carries on from there to the current schema."""
    from tritonhook.store import connection

    old = old_store_module(SCHEMA_2_COMMIT)
    old.Store(tmp_path / "v2").close()

    def stopped(conn):
        raise RuntimeError("stopped")

    monkeypatch.setitem(connection._UPGRADES, 5, stopped)
    with pytest.raises(RuntimeError, match="stopped"):
        Store(tmp_path / "v2")
    assert _recorded_version(tmp_path / "v2") == 5
    monkeypatch.undo()
    Store(tmp_path / "v2").close()
    Store(tmp_path / "new").close()
    assert _recorded_version(tmp_path / "v2") == SCHEMA_VERSION
    assert _schema_shape(tmp_path / "v2") == _schema_shape(tmp_path / "new")


def _recording(label: str, kernel: str):
    from tritonhook.sweep import recording as rec

    signature = rec.Signature(id=0, kernel=kernel, triton_hash="0" * 64, capture_id=None, arch="sm_90a",
                              grid=[4, 1, 1], args=[{"kind": "scalar", "name": "n", "value": 1024}], arg_names=["n"],
                              signature={"n": "i32"}, constexprs={}, launches=10, times_ms=[0.01, 0.012])
    return rec.Recording([signature], arch="sm_90a", device="H100", triton_version="3.6.0", torch_version=None,
                         pid=1, label=label, command=["python", "train.py"])


def test_a_schema_5_store_upgrades_and_finds_its_results_by_label_source_and_id(tmp_path, old_store_module):
    """The schema-5 store.py writes recordings, a sweep result and a signature journal row; this code upgrades it
    in place (the new columns filled from each row's JSON) and finds them through the columns, typed, intact."""
    from test_sweep import _result

    from tritonhook.sweep.recording import Recording
    from tritonhook.sweep.replay import SIGNATURE_KIND
    from tritonhook.sweep.result import SweepResult

    old = old_store_module(SCHEMA_5_COMMIT)
    assert old.SCHEMA_VERSION == 5
    old_store = old.Store(tmp_path / "v5")
    recordings = [_recording("record-1-aa", "add_kernel"), _recording("record-1-aa", "mul_kernel"),
                  _recording("record-2-bb", "add_kernel")]
    for recording in recordings:
        recording.id = old_store.add_result("recording", recording.to_json())
    swept = dataclasses.replace(_result(), recording_id=recordings[2].id)
    swept.id = old_store.add_result("sweep", swept.to_json())
    journal = old_store.add_result(SIGNATURE_KIND, {"recording": recordings[2].id, "signature": 0, "status": "ok"})
    old_store.close()

    store = Store(tmp_path / "v5")
    with sqlite3.connect(tmp_path / "v5" / "index.sqlite") as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
        columns = conn.execute("SELECT kind, label, source FROM results ORDER BY id").fetchall()
        plan = " ".join(row[-1] for row in conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM results WHERE kind = 'recording' AND label = 'x'"))
    assert columns == [("recording", "record-1-aa", None), ("recording", "record-1-aa", None),
                       ("recording", "record-2-bb", None), ("sweep", "", recordings[2].id),
                       (SIGNATURE_KIND, "", recordings[2].id)]
    assert "results_kind_label" in plan  # found through the index, no row loaded to filter
    assert store.results("recording", label="record-1-aa") == recordings[:2]
    assert all(isinstance(r, Recording) for r in store.results("recording"))
    assert store.results("recording", limit=1) == [recordings[2]] and store.result(recordings[1].id) == recordings[1]
    (again,) = store.results("sweep", source=recordings[2].id)
    assert isinstance(again, SweepResult) and again.to_json() == swept.to_json() and store.result(swept.id) == again
    (row,) = store.results(SIGNATURE_KIND, source=recordings[2].id)
    assert (row["id"], row["signature"], row["status"]) == (journal, 0, "ok")
    assert store.results("recording", label="record-3-cc") == [] and store.result(journal + 1) is None
    merged = dataclasses.replace(recordings[0], label="record-1-aa-merged")
    merged.id = store.add_result("recording", merged.to_json())  # a new row's columns come from its declaration
    assert store.results("recording", label="record-1-aa-merged") == [merged]


def test_the_upgrade_fills_the_columns_as_the_producers_declare_them():
    """The upgrades to schemas 6 and 7 read the columns of older rows from fixed tables (no producer is loaded
    then): they must say what the producers' `ResultKind`s say."""
    import tritonhook.page.model  # noqa: F401 - the producers declare their kinds at import
    import tritonhook.mem.result  # noqa: F401
    import tritonhook.sweep.replay  # noqa: F401
    from tritonhook.store.connection import _AB_BEFORE_7, _COLUMNS_BEFORE_6
    from tritonhook.store.results import _RESULT_KINDS

    import tritonhook.decisions  # noqa: F401
    import tritonhook.decisions.confirm  # noqa: F401
    import tritonhook.sweep.tune  # noqa: F401
    import tritonhook.upgrade  # noqa: F401
    import tritonhook.check  # noqa: F401
    # kinds no older store holds (nothing to fill); every producer imported here, so the set never depends on what
    # an earlier test in the same process happened to import
    new_in_7 = {"tune": (None, "recording_id"), "upgrade": (None, "recording_id"),
                "bisect": ("kernel_pattern", "recording_id"), "check": ("baseline", "recording_id"),
                "confirmation": (None, "sweep_id")}
    assert {name: (kind.label, kind.source) for name, kind in _RESULT_KINDS.items()
            if kind.label or kind.source} == {**_COLUMNS_BEFORE_6, "memwatch": ("label", None),
                                              _AB_BEFORE_7.name: (_AB_BEFORE_7.label, None), **new_in_7}


def test_a_schema_6_store_moves_its_ab_results_into_the_results_table(tmp_path, old_store_module):
    """The schema-6 store.py writes two captures, a ptxas-matrix result (results id 1) and two A/B results linked
    to the captures (ab_results ids 1 and 2); this code upgrades it in place: the A/B rows become `results` rows of
    kind 'ab' (ids renumbered past the taken one, the old id kept in their JSON), created times, captures and
    reports intact, found by their benchmark names, and the old tables gone."""
    from test_report_page import ab_result

    from tritonhook import ab
    from tritonhook.page.model import PTXAS_MATRIX_KIND

    old = old_store_module(SCHEMA_6_COMMIT)
    assert old.SCHEMA_VERSION == 6
    old_store = old.Store(tmp_path / "v6")
    fields = dict(event="compile", frontend="triton", kernel="mm", entry="mm", original_entry="mm", src_file=None,
                  src_line=None, arch="sm_90a", frontend_version="3.6.0", ptxas_path=None, ptxas_version=None,
                  triton_hash=None, options={}, metadata={}, times={})
    plain_id = old_store.add(old.NewCapture(**fields, artifacts={"ptx": b"plain"}))
    renamed_id = old_store.add(old.NewCapture(**{**fields, "entry": "cutlass_mm"}, artifacts={"ptx": b"renamed"}))
    old.register_result_kind(old.ResultKind(PTXAS_MATRIX_KIND))  # that module keeps its own table of kinds
    matrix = old_store.add_result(PTXAS_MATRIX_KIND, {"rows": [], "ratios": [], "skipped": []})
    report = ab_result(Store(tmp_path / "scratch")).report  # a real A/B report, as the runner saves it
    report.ab_id = None
    first = old_store.add_ab_result(report.to_json(), {"plain": [plain_id], "cutlass_": [renamed_id]})
    second = old_store.add_ab_result({**report.to_json(), "rounds": 7}, {})
    with sqlite3.connect(tmp_path / "v6" / "index.sqlite") as conn:
        old_rows = conn.execute("SELECT id, created, names FROM ab_results ORDER BY id").fetchall()
    old_store.close()
    assert (matrix, first, second) == (1, 1, 2) and [row[2] for row in old_rows] == ["matmul,attention"] * 2

    store = Store(tmp_path / "v6", readonly=True)  # a reader allowed to write it upgrades it once
    with sqlite3.connect(tmp_path / "v6" / "index.sqlite") as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        rows = conn.execute("SELECT id, kind, created, label, json_extract(data, '$.ab_id') FROM results "
                            "ORDER BY id").fetchall()
    assert not {"ab_results", "ab_captures"} & tables
    assert rows[0][:2] == (1, PTXAS_MATRIX_KIND)
    assert rows[1:] == [(2, "ab", old_rows[0][1], "matmul,attention", 1), (3, "ab", old_rows[1][1],
                                                                         "matmul,attention", 2)]
    saved = ab.saved_results(store).results
    assert [(s.id, s.created, s.captures) for s in saved] == [
        (2, old_rows[0][1], {"plain": [plain_id], "cutlass_": [renamed_id]}), (3, old_rows[1][1], {})]
    assert [s.report.rounds for s in saved] == [5, 7]
    assert saved[0].report.to_json() == {**report.to_json(), "ab_id": 2}
    assert store.results("ab", label="matmul,attention") == saved and store.result(3) == saved[1]
    assert [m["id"] for m in store.results(PTXAS_MATRIX_KIND)] == [matrix]
    assert {store.get(i).entry for i in saved[0].captures["cutlass_"]} == {"cutlass_mm"}


def test_a_result_of_an_undeclared_kind_reads_as_its_json_with_a_note_and_a_bad_row_is_named(store_path):
    from tritonhook.store import UnknownResult
    from tritonhook.sweep.result import RESULT_KIND

    store = Store(store_path)
    with sqlite3.connect(store_path / "index.sqlite") as conn:  # as a newer tritonhook would write them
        conn.execute("INSERT INTO results (created, kind, data) VALUES (1.0, 'from-the-future', '{\"a\": [1]}')")
        conn.execute("INSERT INTO results (created, kind, data) VALUES (2.0, ?, '{\"rows\": 3}')", (RESULT_KIND,))
    (unknown,) = store.results("from-the-future")
    assert unknown == store.result(1) and isinstance(unknown, UnknownResult)
    assert unknown.data == {"a": [1], "id": 1, "created": 1.0} and unknown.to_json()["data"] == unknown.data
    assert "kind 'from-the-future' is not declared in this process (a newer tritonhook wrote it" in unknown.note
    with pytest.raises(tritonhook.TritonhookError, match=r"result 2 \(sweep\): malformed sweep result"):
        store.results(RESULT_KIND)
    refused = []
    assert store.results(RESULT_KIND, on_error=lambda result_id, exc: refused.append(result_id)) == []
    assert refused == [2]
    with pytest.raises(LookupError, match="'from-the-future' is not declared"):
        store.add_result("from-the-future", {})


def test_verify_finds_orphans_and_temporary_files_and_repair_removes_the_old_ones(capture_session):
    compile_sample("add", 90)
    store = capture_session.store
    orphan = store.blob_path(store.put_blob(b"a blob whose capture row was never written"))
    old_tmp = orphan.parent / ".deadbeef-4242-0000.tmp"  # a writer killed mid-blob
    young_tmp = orphan.parent / ".deadbeef-4243-0000.tmp"  # a writer at work right now
    old_tmp.write_bytes(b"half")
    young_tmp.write_bytes(b"half")
    an_hour_ago = time.time() - 3600
    for path in (orphan, old_tmp):
        os.utime(path, (an_hour_ago, an_hour_ago))

    found = store.verify()
    assert found.ok and found.orphans == [str(orphan)] and found.temporary == sorted([str(old_tmp), str(young_tmp)])
    repaired = store.verify(repair=True)
    assert sorted(repaired.removed) == sorted([str(orphan), str(old_tmp)])
    assert young_tmp.exists() and not orphan.exists() and not old_tmp.exists()
    (capture,) = capture_session.captures()
    assert store.read(capture, "cubin")[:4] == b"\x7fELF"  # what rows refer to is never touched


_LOSES_CAPTURES = textwrap.dedent("""
    import shutil, sys
    import tritonhook
    from tritonhook.samples import compile_sample
    session = tritonhook.enable(sys.argv[1])
    compile_sample("add", 90)
    shutil.rmtree(session.store.blobs_dir)
    session.store.blobs_dir.write_text("a file where the blobs directory was")  # every blob write now fails
    compile_sample("add", 100)
    compile_sample("matmul_fp16", 90)
    print("compiled", len(session.capture_ids))
""")


def test_lost_captures_are_counted_and_reported_at_exit(store_path):
    result = subprocess.run([sys.executable, "-c", _LOSES_CAPTURES, str(store_path)], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "compiled 1"  # the compiles went on
    assert result.stderr.count("capture failed") == 1  # warned once
    assert "tritonhook: 2 capture(s) lost (first error: NotADirectoryError" in result.stderr


# ----- another user on a shared store ---------------------------------------------------------------------------
@pytest.fixture
def shared_dir():
    """A directory under /tmp that another user may enter (pytest's tmp_path is private to its owner)."""
    path = Path(tempfile.mkdtemp(prefix="tritonhook-shared-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def as_other_user(shared_dir):
    """Run a command as `nobody` (CI runs as root, which may read and write anything), with this checkout's
    tritonhook copied where `nobody` can read it."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to switch to an unprivileged user")
    package = shared_dir / "pythonpath"
    shutil.copytree(REPO / "tritonhook", package / "tritonhook", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(package), "HOME": str(shared_dir),
           "TRITON_CACHE_DIR": str(shared_dir / "nobody-cache"), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("TRITONHOOK_STORE", None)
    probe = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c",
                            "import tritonhook"], env=env, capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"nobody cannot run this Python ({probe.stderr.strip()[-200:]})")

    def run(*command: str, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *map(str, command)],
                              env=env, capture_output=True, text=True, cwd=shared_dir, **kwargs)

    return run


def test_another_user_reads_a_store_it_may_not_write(shared_dir, as_other_user):
    """Written by root under umask 022: nobody may read it (blobs 0644) but not write it (directories 0755)."""
    store_path = shared_dir / "store"
    with tritonhook.session(store_path) as session:
        compile_sample("add", 90)
        compile_sample("add", 100)
        (first, second) = session.captures()
        assert Path(f"{store_path}/index.sqlite-wal").exists()  # a writer holds it: read through its -shm
        while_open = as_other_user(sys.executable, "-m", "tritonhook", "ls", "--store", store_path, "--json")
    session.store.close()
    assert not Path(f"{store_path}/index.sqlite-wal").exists()  # no writer: read the file as it is
    (shared_dir / "out").mkdir()
    (shared_dir / "out").chmod(0o777)
    listed = as_other_user(sys.executable, "-m", "tritonhook", "ls", "--store", store_path, "--arch", "sm_90")
    ptx = as_other_user(sys.executable, "-m", "tritonhook", "show", "--store", store_path, first.id, "--ptx")
    exported = as_other_user(sys.executable, "-m", "tritonhook", "export", "--store", store_path, second.id,
                             shared_dir / "out" / "export")
    assert while_open.returncode == 0, while_open.stderr
    assert [c["id"] for c in json.loads(while_open.stdout)] == [first.id, second.id]
    assert listed.returncode == 0 and "add_kernel" in listed.stdout and "sm_90a" in listed.stdout, listed.stderr
    assert ptx.returncode == 0 and ".entry add_kernel" in ptx.stdout, ptx.stderr
    assert exported.returncode == 0, exported.stderr
    assert not any(p.owner() == "nobody" for p in store_path.rglob("*"))  # the readers wrote nothing

    blob = session.store.blob_path(first.artifacts["ptx"].sha256)
    blob.chmod(0o600)  # e.g. written by an older tritonhook
    refused = as_other_user(sys.executable, "-m", "tritonhook", "show", "--store", store_path, first.id, "--ptx")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.strip() == (f"tritonhook: error: {blob} (capture {first.id} ptx): cannot read the blob "
                                      f"(Permission denied)")


UNREADABLE_STORE_READERS = {"ls": ["ls"], "show": ["show", "1"], "store verify": ["store", "verify"],
                            "report": ["report", "--no-sass", "-o", "report.html"], "decisions ls": ["decisions", "ls"]}
"""The commands that read a store (and nothing else the test could make unreadable)."""


@pytest.fixture
def private_store(shared_dir, as_other_user) -> Path:
    """A store of one real capture, in a folder `nobody` may write its outputs to."""
    store = shared_dir / "store"
    with tritonhook.session(store):
        compile_sample("add", 90)
    shared_dir.chmod(0o777)
    return store


@pytest.mark.parametrize("command", UNREADABLE_STORE_READERS)
def test_a_store_folder_another_user_may_not_enter_is_one_line_naming_it(private_store, as_other_user, command):
    private_store.chmod(0o000)
    run = as_other_user(sys.executable, "-m", "tritonhook", *UNREADABLE_STORE_READERS[command], "--store",
                        private_store)
    line = _one_error_line(run)
    assert line == (f"tritonhook: error: {private_store}: cannot read the store (Permission denied); its owner may "
                    f"give you access (chmod) or you may use another --store"), line


@pytest.mark.parametrize("command, names", [(["store", "verify"], "{blobs}: cannot list the store's blobs"),
                                            (["show", "1", "--ptx"], "{blobs}/")])
def test_a_blob_folder_another_user_may_not_enter_is_one_line_naming_it(private_store, as_other_user, command,
                                                                         names):
    (private_store / "blobs").chmod(0o000)
    run = as_other_user(sys.executable, "-m", "tritonhook", *command, "--store", private_store)
    line = _one_error_line(run)
    assert line.startswith(f"tritonhook: error: {names.format(blobs=private_store / 'blobs')}"), line
    assert "Permission denied" in line, line


def test_blobs_follow_the_umask_of_a_team_store(store_path):
    previous = os.umask(0o002)
    try:
        with tritonhook.session(store_path) as session:
            compile_sample("add", 90)
    finally:
        os.umask(previous)
    (capture,) = session.captures()
    for artifact in capture.artifacts.values():
        assert session.store.blob_path(artifact.sha256).stat().st_mode & 0o777 == 0o664


_SAMPLE_CAPTURE = NewCapture(
    event="compile", frontend="ptxas", kernel="k", entry="k", original_entry="k", src_file=None, src_line=None,
    arch="sm_90a", frontend_version="", ptxas_path=None, ptxas_version=None, triton_hash=None, options={},
    metadata={}, times={}, artifacts={})


# ----- a repair racing writers ------------------------------------------------------------------------------------
def _orphan_every_blob_of(store: Store) -> None:
    """Leave the store as a writer killed between its blobs and its rows leaves it: blobs with no row, an hour old."""
    with sqlite3.connect(store.index_path) as conn:
        conn.execute("DELETE FROM artifacts")
        conn.execute("DELETE FROM captures")
    an_hour_ago = time.time() - 3600
    for blob in store.blobs_dir.glob("??/*"):
        os.utime(blob, (an_hour_ago, an_hour_ago))


def test_a_capture_of_an_orphans_content_during_a_repair_keeps_its_blob(store_path):
    """The repair's scan (hashing every blob: seconds on a big store) runs before its removal; a real compile in
    between, a Triton cache hit giving the orphan's very bytes, must keep the blob its new rows point at."""
    with tritonhook.session(store_path):
        compile_sample("add", 90)
    store = Store(store_path)
    _orphan_every_blob_of(store)
    scanned = store.verify()
    assert scanned.ok and len(scanned.orphans) >= 2

    with tritonhook.session(store_path) as session:
        compile_sample("add", 90)  # the same kernel again: its blobs are the orphans' content
    (capture,) = session.captures()
    assert {store.blob_path(a.sha256) for a in capture.artifacts.values()} <= set(map(Path, scanned.orphans))

    removed = store.remove_unreferenced(scanned.orphans, min_age=0)
    assert removed == []
    after = store.verify()
    assert after.ok and not after.missing and not after.orphans
    assert store.read(capture, "cubin")[:4] == b"\x7fELF"


_REPAIR_LOOP = textwrap.dedent("""
    import sys, time
    from tritonhook.store import Store
    store, deadline, removed = Store(sys.argv[1]), time.monotonic() + float(sys.argv[2]), 0
    while time.monotonic() < deadline:  # orphan blobs with no age margin (a writer's temporary file needs one)
        removed += len(store.remove_unreferenced(store.verify().orphans, min_age=0))
    print(removed)
""")


def test_a_repair_loop_racing_writers_never_removes_a_referenced_blob(store_path):
    """Real processes: one repairs with no age margin at all, as fast as it can, while another adds captures whose
    content keeps turning into orphans (rows deleted behind it, as a killed writer leaves them) and back."""
    store = Store(store_path)
    repair = subprocess.Popen([sys.executable, "-c", _REPAIR_LOOP, str(store_path), "6"], stdout=subprocess.PIPE,
                              text=True)
    deadline = time.monotonic() + 5
    rounds = 0
    while time.monotonic() < deadline:
        new = dataclasses.replace(_SAMPLE_CAPTURE, artifacts={"ptx": f"ptx {rounds % 3}".encode(),
                                                              "cubin": b"\x7fELF shared by every round"})
        capture = store.get(store.add(new))
        for artifact in capture.artifacts.values():
            assert store.read_blob(artifact.sha256)  # what was just committed is there
        if rounds % 2:
            with sqlite3.connect(store.index_path, timeout=60) as conn:  # orphan every blob again
                conn.execute("DELETE FROM artifacts")
        rounds += 1
    removed = int(repair.communicate(timeout=120)[0])
    assert repair.returncode == 0
    report = store.verify()
    assert rounds > 20 and removed > 0  # both sides really raced
    assert report.ok and report.missing == [], report.missing


def test_repair_leaves_directories_in_the_blob_tree_alone(capture_session):
    compile_sample("add", 90)
    store = capture_session.store
    fanout = next(store.blobs_dir.glob("??"))
    snapshot = fanout / ".snapshot"  # what an NFS server shows in every directory
    snapshot.mkdir()
    (store.blobs_dir / ".snapshot").mkdir()
    report = store.verify(repair=True, min_age=0)
    assert report.ok and report.temporary == [] and report.removed == []
    assert snapshot.is_dir() and (store.blobs_dir / ".snapshot").is_dir()


# ----- the store removed or replaced under a running capture --------------------------------------------------------
_REMOVES_ITS_STORE = textwrap.dedent("""
    import os, shutil, sys
    from tritonhook.samples import compile_sample
    compile_sample("add", 90)
    store = os.environ["TRITONHOOK_STORE"]
    if sys.argv[1] == "replace":
        os.rename(store, store + ".old")
        os.mkdir(store)
    else:
        shutil.rmtree(store)
    compile_sample("add", 100)
    compile_sample("matmul_fp16", 90)
    print("compiled")
""")


@pytest.mark.parametrize("how", ["remove", "replace"])
def test_captures_into_a_store_removed_during_the_run_are_counted_lost(store_path, how):
    result = subprocess.run([sys.executable, "-m", "tritonhook", "run", "--store", str(store_path), "--",
                             sys.executable, "-c", "import triton\n" + _REMOVES_ITS_STORE, how],
                            capture_output=True, text=True, timeout=300)
    assert result.stdout.strip() == "compiled", result.stderr  # the workload went on
    assert "Traceback" not in result.stderr
    assert "tritonhook: 2 capture(s) lost" in result.stderr  # the two compiles after the removal
    assert result.returncode == 2 and "capture(s) written" not in result.stdout + result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"tritonhook: error: {store_path.resolve() / 'index.sqlite'}: the store was removed or replaced while this "
        f"process was using it; what it wrote since is lost")


# ----- a team store and a full disk --------------------------------------------------------------------------------
_AS_GROUP_MEMBER = textwrap.dedent("""
    import dataclasses, os, sys
    import tritonhook.store as store_module  # every module and extension loaded before the privileges go
    uid, gid, path, text = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    os.setgroups([gid]); os.setgid(gid); os.setuid(uid)
    os.umask(0o002)
    store = store_module.Store(path)
    new = store_module.NewCapture(event="compile", frontend="ptxas", kernel=text, entry=text, original_entry=text,
                                  src_file=None, src_line=None, arch="sm_90a", frontend_version="", ptxas_path=None,
                                  ptxas_version=None, triton_hash=None, options={}, metadata={}, times={},
                                  artifacts={"ptx": text.encode()})
    print(store.add(new), len(store.captures()))
""")


def test_two_members_of_one_group_share_a_store_made_under_umask_002(tmp_path):
    """The first member creates the store, the second writes it: the index and its -wal/-shm files too must be
    group-writable, as the blobs are. Two real users (uids 50101, 50102 of group 50100), no root left."""
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to two unprivileged users")
    team = Path(tempfile.mkdtemp(prefix="tritonhook-team-", dir="/tmp"))
    try:
        os.chown(team, 0, 50100)
        team.chmod(0o2775)

        def as_member(uid: int, text: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-c", _AS_GROUP_MEMBER, str(uid), "50100", str(team / "store"),
                                   text], capture_output=True, text=True, timeout=120)

        first = as_member(50101, "first")
        assert first.returncode == 0, first.stderr
        index = team / "store" / "index.sqlite"
        assert index.stat().st_mode & 0o777 == 0o664 and index.stat().st_uid == 50101
        second = as_member(50102, "second")
        assert second.returncode == 0, second.stderr
        assert second.stdout.split() == ["2", "2"]
        for path in (index, Path(f"{index}-wal"), Path(f"{index}-shm")):
            if path.exists():
                assert path.stat().st_mode & 0o020, path  # group-writable
    finally:
        shutil.rmtree(team, ignore_errors=True)


@pytest.fixture
def small_disk(tmp_path):
    """A 512 KiB tmpfs (skips where mounting is not allowed)."""
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root and mount permission)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave: int = 0) -> Path:
    """Fill `disk` with one file, returned (remove it to free the space), to the last byte or until `leave` bytes
    are free."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while _free(disk) > leave and os.write(fd, b"\0" * 512):
            pass
    except OSError:  # ENOSPC: full
        pass
    finally:
        os.close(fd)
    return filler


def _free(disk: Path) -> int:
    stats = os.statvfs(disk)
    return stats.f_bavail * stats.f_frsize


def _one_error_line(run: subprocess.CompletedProcess) -> str:
    """The one line a failed command printed, checked to be all it printed on stderr."""
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith("tritonhook: error: "), line
    return line


@pytest.fixture
def full_disk(small_disk):
    fill(small_disk)
    return small_disk


def test_a_store_on_a_full_disk_says_disk_full_and_leaves_nothing_behind(full_disk):
    store_path = full_disk / "store"
    run = subprocess.run([sys.executable, "-m", "tritonhook", "run", "--store", str(store_path), "--", "true"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith(f"tritonhook: error: {store_path}") and "disk full" in line, line
    assert not (store_path / "index.sqlite").exists()  # no schema-less index for readers to stumble on
    listed = subprocess.run([sys.executable, "-m", "tritonhook", "ls", "--store", str(store_path)],
                            capture_output=True, text=True, timeout=120)
    assert "a store never finished" in _one_error_line(listed)


def test_a_write_failed_on_a_full_disk_leaves_readers_reading_and_the_next_open_heals(small_disk):
    """A real write that fails on a full disk leaves a torn -shm and an empty -wal; readers (`ls`) still read
    every capture, and once there is space again a reader's open rebuilds the -shm for everyone."""
    store_path = small_disk / "store"
    store = Store(store_path)
    store.add(dataclasses.replace(_SAMPLE_CAPTURE, artifacts={"ptx": b"kept"}))
    store.close()  # the last connection: SQLite checkpoints its -wal into the index
    filler = fill(small_disk)
    write = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import json, sys
        from tritonhook.store import NewCapture, Store
        Store(sys.argv[1]).add(NewCapture(**json.loads(sys.argv[2]), artifacts={"ptx": b"x" * 99999}))
    """), str(store_path), json.dumps({k: v for k, v in dataclasses.asdict(_SAMPLE_CAPTURE).items()
                                       if k != "artifacts"})], capture_output=True, text=True, timeout=120)
    assert write.returncode != 0 and "disk full" in write.stderr, write.stderr
    wal, shm = store_path / "index.sqlite-wal", store_path / "index.sqlite-shm"
    assert wal.stat().st_size == 0 and shm.stat().st_size < 1024  # what the hostile test found left behind

    def ls():
        return subprocess.run([sys.executable, "-m", "tritonhook", "ls", "--json", "--store", str(store_path)],
                              capture_output=True, text=True, timeout=120)

    listed = ls()
    assert listed.returncode == 0, listed.stderr
    assert [c["artifacts"]["ptx"]["size"] for c in json.loads(listed.stdout)] == [4]
    filler.unlink()
    assert ls().returncode == 0 and shm.stat().st_size >= 32768  # rebuilt by the reader's writable open


@pytest.mark.parametrize("free_kib", [8, 16, 28])
def test_a_commit_that_fails_on_a_full_disk_names_the_disk_in_one_line(small_disk, tmp_path, free_kib):
    """A real `decisions import` whose COMMIT runs out of space (SQLite rolls the transaction back itself): one
    line naming the index and the full disk, never a second ROLLBACK's "no transaction is active". Another
    process has the store open meanwhile (its -shm file is made): the import's open needs no space, its commit
    does."""
    store_path = small_disk / "store"
    neighbour = Store(store_path)
    neighbour.last_id()
    key = {"arch": "sm_90a", "ptxas_version": "12.8.93", "gpu": "NVIDIA H200"}
    evidence = {"ratio": 0.97, "low": 0.96, "high": 0.98, "outputs": "bitwise", "date": "2026-11-24",
                "tritonhook_version": "0.1.0", "source_kind": "sweep", "source_id": 3}
    entries = [{"key": {**key, "ptx_sha256": f"{i:064x}"}, "evidence": {**evidence, "kernel": f"k{i}_" + "k" * 100},
                "choice": {"name": "cutlass_", "ptxas_version": None, "options": ["-O2"], "controls": None}}
               for i in range(300)]
    decisions_file = tmp_path / "decisions.json"
    decisions_file.write_text(json.dumps({"format": "tritonhook-decisions", "version": 1, "decisions": entries}))
    fill(small_disk, leave=free_kib * 1024)
    run = subprocess.run([sys.executable, "-m", "tritonhook", "decisions", "import", str(decisions_file), "--store",
                          str(store_path)], capture_output=True, text=True, timeout=120)
    neighbour.close()
    line = _one_error_line(run)
    assert f"{store_path / 'index.sqlite'}: cannot write the index (" in line, line
    assert f"disk full: 0 bytes free on the file system of {store_path})" in line, line


def test_a_store_that_cannot_be_made_for_another_reason_is_not_called_a_full_disk():
    """/proc has 0 bytes free and refuses the folder for another reason (ENOENT): that reason, not "disk full"."""
    run = subprocess.run([sys.executable, "-m", "tritonhook", "run", "--store", "/proc/x", "--", "true"],
                         capture_output=True, text=True, timeout=120)
    line = _one_error_line(run)
    assert line.startswith("tritonhook: error: /proc/x: store is not writable (") and "disk full" not in line, line


def test_a_store_whose_index_could_not_be_made_says_it_was_never_finished(small_disk):
    """Creating a store with a few KiB free makes its folder and blobs/, then the index fails: a later reader is
    told the store was never finished and that the disk is nearly full, not only "missing index.sqlite"."""
    store_path = small_disk / "store"
    fill(small_disk, leave=4096)
    made = subprocess.run([sys.executable, "-m", "tritonhook", "run", "--store", str(store_path), "--", "true"],
                          capture_output=True, text=True, timeout=120)
    assert "disk full" in _one_error_line(made)
    if not (store_path / "blobs").is_dir():
        pytest.skip("this file system refused blobs/ too: nothing was left behind to read")
    listed = subprocess.run([sys.executable, "-m", "tritonhook", "ls", "--store", str(store_path)],
                            capture_output=True, text=True, timeout=120)
    line = _one_error_line(listed)
    assert line.startswith(f"tritonhook: error: {store_path}: a store never finished: blobs/ is here but "
                           f"index.sqlite is not"), line
    assert "a full disk may have stopped it: " in line and "bytes free on its file system now" in line, line


def test_a_reader_of_an_index_never_set_up_is_told_why(store_path):
    """An index file with no table at all (its first writer was stopped before the schema): one line saying so."""
    store_path.mkdir()
    (store_path / "index.sqlite").touch()
    listed = subprocess.run([sys.executable, "-m", "tritonhook", "ls", "--store", str(store_path)],
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 2, listed.stderr
    assert "the index is empty: its first writer stopped before setting it up" in listed.stderr
    assert len(Store(store_path).captures()) == 0  # a writer sets it up


# ----- blobs a writer holds until its result row exists -------------------------------------------------------------
_SLOW_RECORDER = textwrap.dedent("""
    import sys, torch
    from tritonhook.store import Store
    from tritonhook.sweep import recording as rec
    store, held = Store(sys.argv[1]), sys.argv[2] == "held"
    snapshots = store.hold() if held else store  # a plain put_blob: what record and decisions did before holds
    x = torch.arange(4096, dtype=torch.float32)
    args = rec.describe_args((x, 4096), ["x", "n"], {"x": "*fp32", "n": "i32"}, {}, blobs=snapshots,
                             budget=rec.SnapshotBudget(per_signature=2**23, total=2**30))
    print(args[0]["blob"], flush=True)
    sys.stdin.readline()  # the workload runs on, a repair meanwhile
    signature = rec.Signature(id=0, kernel="k", triton_hash="h", capture_id=None, arch="sm_90a", grid=[1, 1, 1],
                              args=args, arg_names=["x", "n"], signature={"x": "*fp32", "n": "i32"}, constexprs={},
                              launches=1, times_ms=[0.01])
    recording = rec.Recording([signature], arch="sm_90a", device=None, triton_version="3.6.0",
                              torch_version=torch.__version__, pid=1, command=["python", "train.py"])
    print(store.add_result(rec.RESULT_KIND, recording.to_json(), **({"hold": snapshots} if held else {})), flush=True)
""")


def _recording_racing_a_repair(store_path: Path, *, held: bool) -> tuple[dict, dict, str]:
    """A real recording process snapshots a tensor whose bytes equal an old orphan's (so the blob is older than a
    repair's age however short the workload), then waits; meanwhile a real `tritonhook store verify --repair` runs;
    then the recording is saved and the store verified. Returns (the repair's report, the final report, digest)."""
    import torch

    store = Store(store_path)
    orphan = store.put_blob(torch.arange(4096, dtype=torch.float32).numpy().tobytes())
    os.utime(store.blob_path(orphan), (time.time() - 3600, time.time() - 3600))  # an hour-old orphan
    recorder = subprocess.Popen([sys.executable, "-c", _SLOW_RECORDER, str(store_path), "held" if held else "plain"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    digest = recorder.stdout.readline().strip()
    repair = subprocess.run([sys.executable, "-m", "tritonhook", "store", "verify", "--repair", "--json",
                             "--store", str(store_path)], capture_output=True, text=True, timeout=120)
    recorder.stdin.write("go\n")
    recorder.stdin.close()
    assert recorder.wait(timeout=120) == 0 and digest == orphan
    final = subprocess.run([sys.executable, "-m", "tritonhook", "store", "verify", "--json", "--store",
                            str(store_path)], capture_output=True, text=True, timeout=120)
    return json.loads(repair.stdout), json.loads(final.stdout), digest


def test_a_repair_racing_a_slow_recording_leaves_its_held_snapshot(store_path):
    repaired, final, digest = _recording_racing_a_repair(store_path, held=True)
    assert repaired["removed"] == [] and [Path(p).name for p in repaired["held"]] == [digest]
    assert final["ok"] and final["missing"] == [] and final["held"] == [] and final["blobs_checked"] == 1


def test_without_a_hold_the_repair_deletes_the_snapshot_and_verify_names_the_result(store_path):
    """The race is real (the counter-proof of the test above), and verify checks the blobs results refer to."""
    repaired, final, digest = _recording_racing_a_repair(store_path, held=False)
    assert [Path(p).name for p in repaired["removed"]] == [digest]
    assert not final["ok"] and final["missing"] == [{"result_id": 1, "kind": "recording", "sha256": digest}]


def test_the_hold_of_a_killed_writer_ends_and_its_blob_is_an_orphan_again(store_path):
    store = Store(store_path)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sys
        from tritonhook.store import Store
        print(Store(sys.argv[1]).hold().put_blob(b"snapshot of a killed recording"), flush=True)
        sys.stdin.readline()
    """), str(store_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    digest = holder.stdout.readline().strip()
    os.utime(store.blob_path(digest), (time.time() - 3600, time.time() - 3600))
    assert store.verify(repair=True).removed == [] and store.blob_path(digest).exists()  # alive: held
    holder.kill()
    holder.wait()
    assert store.verify(repair=True).removed == [str(store.blob_path(digest))]
    with sqlite3.connect(store.index_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM held_blobs").fetchone()[0] == 0


def test_a_repair_in_a_process_that_never_imported_a_producer_keeps_the_blobs_of_its_results(store_path, tmp_path):
    """The blobs a saved result refers to are indexed with its row: `tritonhook store verify --repair` (a process
    that imports no recording or decision module) keeps a recording's snapshots and a decision's control file,
    however old, and verify checks them."""
    import base64
    import hashlib

    from tritonhook import decisions
    from tests.sample_recording import sample_recording

    store, recording = sample_recording(store_path, 2)
    acf = b"// a control file"
    entry = {"key": {"ptx_sha256": "a" * 64, "arch": "sm_90a", "ptxas_version": "12.8.93", "gpu": "NVIDIA H200"},
             "choice": {"name": "plain", "ptxas_version": None, "options": [], "controls": {
                 "sha256": hashlib.sha256(acf).hexdigest(), "base64": base64.b64encode(acf).decode()}},
             "evidence": {"kernel": "k", "ratio": 0.97, "low": 0.96, "high": 0.98, "outputs": "bitwise",
                          "date": "2026-11-24", "tritonhook_version": "0.1.0", "source_kind": "sweep", "source_id": 3}}
    (tmp_path / "d.json").write_text(json.dumps({"format": "tritonhook-decisions", "version": 1, "decisions": [entry]}))
    assert not decisions.import_file(store, str(tmp_path / "d.json")).warnings
    blobs = {t["blob"] for s in recording.signatures for t in rec_tensors(s.args)} | {hashlib.sha256(acf).hexdigest()}
    for digest in blobs:
        os.utime(store.blob_path(digest), (time.time() - 3600, time.time() - 3600))
    repair = subprocess.run([sys.executable, "-m", "tritonhook", "store", "verify", "--repair", "--json", "--store",
                             str(store_path)], capture_output=True, text=True, timeout=120)
    report = json.loads(repair.stdout)
    assert report["ok"] and report["removed"] == [] and report["orphans"] == [], repair.stdout
    assert all(store.blob_path(digest).exists() for digest in blobs)
    captured = {a.sha256 for c in store.captures() for a in c.artifacts.values()}
    assert report["blobs_checked"] == len(captured | blobs)


def rec_tensors(args):
    from tritonhook.sweep.recording import tensors_of

    return tensors_of(args)


def test_a_schema_7_store_upgrades_with_the_blobs_of_its_results_indexed_as_their_kinds_declare(
        tmp_path, old_store_module):
    """The schema-7 store.py saves a recording with real input snapshots and a decision with a control file; this
    code upgrades the store (`_BLOBS_BEFORE_8`: SQL, no producer loaded) and indexes exactly the blobs the
    declared `ResultKind.blobs` give; a repair by the CLI then keeps them all, however old."""
    import torch

    from tritonhook.store import results as store_results
    from tritonhook.decisions import keep  # noqa: F401 - declares the decision kind
    from tritonhook.sweep import recording as rec

    old = old_store_module(SCHEMA_7_COMMIT)
    assert old.SCHEMA_VERSION == 7
    old_store = old.Store(tmp_path / "v7")
    for kind in ("recording", "decision"):
        old.register_result_kind(old.ResultKind(kind))
    x, y = torch.randn(256), torch.arange(64, dtype=torch.int32)
    args = rec.describe_args((x, y, 256), ["x", "y", "n"], {"x": "*fp32", "y": "*i32", "n": "i32"}, {},
                             blobs=old_store, budget=rec.SnapshotBudget(per_signature=2**23, total=2**30))
    recording = dataclasses.replace(_recording("r", "k"), signatures=[dataclasses.replace(
        _recording("r", "k").signatures[0], args=args, arg_names=["x", "y", "n"])])
    decision = {"choice": {"controls": {"sha256": old_store.put_blob(b"// ACF")}}}
    datas = {"recording": recording.to_json(), "decision": decision}
    ids = {kind: old_store.add_result(kind, data) for kind, data in datas.items()}
    old_store.close()

    store = Store(tmp_path / "v7")
    with sqlite3.connect(store.index_path) as conn:
        indexed = set(conn.execute("SELECT result_id, sha256 FROM result_blobs"))
    declared = {(ids[kind], digest) for kind, data in datas.items()
                for digest in store_results._RESULT_KINDS[kind].blobs(data)}
    assert indexed == declared and len(declared) == 3
    for _, digest in declared:
        os.utime(store.blob_path(digest), (time.time() - 3600, time.time() - 3600))
    report = json.loads(subprocess.run([sys.executable, "-m", "tritonhook", "store", "verify", "--repair", "--json",
                                        "--store", str(store.path)], capture_output=True, text=True).stdout)
    assert report["ok"] and report["removed"] == [] and report["blobs_checked"] == 3


def test_runs_started_in_one_second_of_one_process_get_a_folder_each(tmp_path, monkeypatch):
    """A bisect upgrades to several releases within a second when their builds are cached: each upgrade's cells
    in a folder of its own (one shared folder had a later release's cells overwrite an earlier one's)."""
    store = Store(tmp_path / "store")
    monkeypatch.setattr(time, "strftime", lambda *_: "20261129-070000")  # the same second, however slow this runs
    folders = [store.run_folder("upgrades") for _ in range(3)]
    stem = f"20261129-070000-{os.getpid()}"
    assert [f.name for f in folders] == [stem, f"{stem}-2", f"{stem}-3"] and all(f.is_dir() for f in folders)


def test_a_run_folder_that_cannot_be_made_is_one_error_naming_it(tmp_path):
    store = Store(tmp_path / "store")
    (store.path / "tune").write_text("a file where the runs' folder goes\n")
    with pytest.raises(tritonhook.TritonhookError, match=r"/store/tune/[0-9-]+: cannot make this run's folder \("):
        store.run_folder("tune")
