"""Blob holds and the blob files: the content-addressed `blobs/` directory (one file per distinct artifact, named
by its sha256, written to a temporary file and renamed into place) and the holds that keep a writer's blobs from a
repair until the row that refers to them is saved (`BlobHold`)."""

from __future__ import annotations

import hashlib
import os
import secrets
import sqlite3
import time
from pathlib import Path

from .. import processes
from ..errors import TritonhookError
from ..files import disk_full_reason, read_input
from .records import Capture


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class BlobHold:
    """The blobs one writer has stored for a result it has not saved yet (a recording's input snapshots while the
    workload runs, a decision's control file), registered in the index as held by this process.

    Why: `verify --repair` removes the blobs no row refers to once they are older than its age. A workload that
    records for longer than that, or a snapshot whose bytes equal an old orphan's, would otherwise lose its blobs to
    a concurrent repair before its row exists. A repair leaves held blobs alone until the holder saves the row
    (`Store.add_result(..., hold=)` drops the hold in the row's own transaction), calls `release`, or dies (its pid
    gone or reused: `processes`). Get one from `Store.hold()`."""

    def __init__(self, store: Blobs):
        self.store = store
        self.token = secrets.token_hex(8)
        self.digests: set[str] = set()

    def put_blob(self, data: bytes) -> str:
        """`Store.put_blob`, and the blob held: once this returns, the blob is on disk and no repair removes it."""
        digest = self.store.put_blob(data)
        if digest not in self.digests:
            self.store._hold_blob(self, digest, data)
            self.digests.add(digest)
        return digest

    def release(self) -> None:
        """Give the blobs up without saving a row (what was held and is referred to by no row is an orphan again)."""
        if self.digests:
            self.store._release_hold(self)
            self.digests.clear()

    def __enter__(self) -> "BlobHold":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class Blobs:
    """The store's blob files: writing and reading them hash-checked, writing again what a repair
    removed, and the holds of blobs not referred to by a row yet."""

    def blob_path(self, digest: str) -> Path:
        return self.blobs_dir / digest[:2] / digest

    def put_blob(self, data: bytes) -> str:
        """Store `data` under its sha256 and return the digest. Atomic: temp file, then rename. An existing blob
        is kept only when its content verifies, so a corrupt one is healed by the next write of that content."""
        digest = sha256_hex(data)
        final = self.blob_path(digest)
        if _blob_matches(final, digest, len(data)):
            return digest
        try:
            self._write_blob(final, data)
        except OSError as exc:
            reason = disk_full_reason(self.path, exc)
            if reason is None:
                raise
            raise TritonhookError(f"{final}: cannot write the blob ({reason})") from None
        return digest

    @staticmethod
    def _write_blob(final: Path, data: bytes) -> None:
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.parent / f".{final.name[:8]}-{os.getpid()}-{secrets.token_hex(4)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask decides who may read it
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, final)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def read_blob(self, digest: str, *, what: str = "") -> bytes:
        path = self.blob_path(digest)
        label = f"{path}{' (' + what + ')' if what else ''}"
        try:
            os.lstat(path)
        except FileNotFoundError:
            raise TritonhookError(f"{label}: blob missing from the store") from None
        except OSError:  # a folder of the blob tree this user may not enter: `read_input` says so below
            pass
        data = read_input(path, "blob", label=label)
        if sha256_hex(data) != digest:
            raise TritonhookError(f"{label}: blob is corrupt (its sha256 does not match its name)")
        return data

    def read(self, capture: Capture, stage: str) -> bytes:
        """The bytes of one stage of a capture, hash-checked."""
        artifact = capture.artifacts.get(stage)
        if artifact is None:
            have = ", ".join(sorted(capture.artifacts)) or "none"
            raise TritonhookError(f"capture {capture.id} ({capture.entry}): no '{stage}' artifact (has: {have})")
        return self.read_blob(artifact.sha256, what=f"capture {capture.id} {stage}")

    def _restore_removed_blobs(self, digests: dict[str, tuple[str, int]], artifacts: dict[str, bytes]) -> None:
        """Write again any blob of this capture that is gone. Called inside the write transaction: a repair
        removes orphans only inside one (`remove_unreferenced`, which counts itself in `_repairs`), so a blob
        present now stays until the rows that refer to it are committed."""
        for stage, (digest, _) in digests.items():
            path = self.blob_path(digest)
            if not os.path.isfile(path):
                self._write_blob(path, artifacts[stage])

    def hold(self) -> BlobHold:
        """A new hold for the blobs of a result not saved yet (see `BlobHold`); use it as a context manager or pass
        it to `add_result`."""
        return BlobHold(self)

    def _hold_blob(self, hold: BlobHold, digest: str, data: bytes) -> None:
        """Register `digest` as held by `hold`'s writer, and write it again if a repair removed it since
        `put_blob`: a repair removes files only inside its own write transaction, so once this one commits the blob
        is there and held."""
        if self.readonly:
            raise TritonhookError(f"{self.path}: opened read-only; cannot write blobs")
        me = processes.identity() or {"pid": os.getpid(), "start": None}
        with self._write_transaction() as conn:
            conn.execute("INSERT OR IGNORE INTO held_blobs VALUES (?, ?, ?, ?, ?, ?)",
                         (digest, hold.token, processes.host(), me["pid"], me["start"], time.time()))
            path = self.blob_path(digest)
            if not os.path.isfile(path):
                self._write_blob(path, data)

    def _release_hold(self, hold: BlobHold, conn: sqlite3.Connection | None = None) -> None:
        """Drop `hold`'s registrations: in `conn`'s transaction when given (the row that refers to its blobs is
        written in it), else in one of its own."""
        if conn is None:
            with self._write_transaction() as conn:
                return self._release_hold(hold, conn)
        conn.execute("DELETE FROM held_blobs WHERE holder = ?", (hold.token,))


def _blob_matches(path: Path, digest: str, size: int) -> bool:
    try:
        return sha256_hex(read_input(path, "blob", limit=size)) == digest
    except TritonhookError:
        return False
