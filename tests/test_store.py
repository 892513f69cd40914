"""The store under concurrent writers, bad stores, corrupt blobs."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest

import tritonhook
from tritonhook.samples import compile_sample
from tritonhook.store import SCHEMA_VERSION, Store

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
    assert store.verify() == []
    for capture in captures:  # every record complete: no half-written rows
        assert {"ptx", "cubin", "json"} <= set(capture.artifacts)
        assert store.read(capture, "cubin")[:4] == b"\x7fELF"


def test_a_corrupt_blob_is_detected_on_read(capture_session):
    compile_sample("add", 90)
    (capture,) = capture_session.captures()
    store = capture_session.store
    blob = store.blob_path(capture.artifacts["ptx"].sha256)
    blob.write_bytes(blob.read_bytes()[:-10])  # truncated, as after a crash mid-write by another tool
    with pytest.raises(tritonhook.TritonhookError, match="corrupt"):
        store.read(capture, "ptx")
    assert any("corrupt" in problem for problem in store.verify())
    blob.unlink()
    with pytest.raises(tritonhook.TritonhookError, match="missing"):
        store.read(capture, "ptx")


def test_a_store_from_a_newer_schema_is_refused(store_path):
    Store(store_path).close()
    with sqlite3.connect(store_path / "index.sqlite") as conn:
        conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(tritonhook.TritonhookError, match="newer tritonhook"):
        Store(store_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_an_unwritable_store_fails_at_open(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(tritonhook.TritonhookError, match="not writable"):
        Store(locked / "store")


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
