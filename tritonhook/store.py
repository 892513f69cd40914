"""The capture store: an SQLite index (WAL mode) plus a content-addressed blob directory.

Layout of a store directory::

    index.sqlite          captures, their artifacts, schema version
    blobs/ab/abcdef...    one file per distinct artifact, named by its sha256

Why this shape: many processes (torchrun ranks, pytest-xdist workers, Inductor compile workers) write at once.
Blobs are written to a temporary file and renamed into place, so a reader never sees half a blob under its
final name; the index rows of one capture are inserted in a single transaction, so a capture is either fully
listed or absent. Identical artifacts (the same PTX compiled twice, a cache hit) share one blob.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import sqlite3
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterable

from .errors import TritonhookError

SCHEMA_VERSION = 2  # 2: ab_results / ab_captures (A/B timings); a schema-1 store is upgraded in place
DEFAULT_STORE = "tritonhook-store"
STORE_ENV = "TRITONHOOK_STORE"
_BUSY_TIMEOUT_MS = 60_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS captures (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL,
    pid INTEGER NOT NULL,
    event TEXT NOT NULL,            -- 'compile' or 'cache_hit'
    frontend TEXT NOT NULL,         -- 'triton', 'gluon', 'ir'
    kernel TEXT NOT NULL,           -- source-level name (the Python function)
    entry TEXT NOT NULL,            -- PTX .entry name the launcher looks up (after any rename)
    original_entry TEXT NOT NULL,   -- PTX .entry name before tritonhook renamed it (== entry when not renamed)
    src_file TEXT,
    src_line INTEGER,
    arch TEXT NOT NULL,             -- e.g. sm_90a, from the PTX .target
    triton_version TEXT NOT NULL,
    ptxas_path TEXT,
    ptxas_version TEXT,
    triton_hash TEXT,               -- Triton's cache key hash
    options TEXT NOT NULL,          -- JSON
    metadata TEXT NOT NULL,         -- JSON, as Triton wrote it
    times TEXT NOT NULL             -- JSON: seconds per stage
);
CREATE INDEX IF NOT EXISTS captures_kernel ON captures(kernel);
CREATE INDEX IF NOT EXISTS captures_entry ON captures(entry);
CREATE TABLE IF NOT EXISTS artifacts (
    capture_id INTEGER NOT NULL REFERENCES captures(id),
    stage TEXT NOT NULL,            -- ttir, ttgir, llir, ptx, cubin, source, json, ...
    sha256 TEXT NOT NULL,
    size INTEGER NOT NULL,
    PRIMARY KEY (capture_id, stage)
);
CREATE TABLE IF NOT EXISTS ab_results (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL,
    names TEXT NOT NULL,            -- the benchmark names, comma-separated
    result TEXT NOT NULL            -- JSON: variants, timings, verdicts, correctness, cubin summaries
);
CREATE TABLE IF NOT EXISTS ab_captures (
    ab_id INTEGER NOT NULL REFERENCES ab_results(id),
    capture_id INTEGER NOT NULL REFERENCES captures(id),
    variant TEXT NOT NULL,          -- the A/B variant label whose processes wrote the capture
    PRIMARY KEY (ab_id, capture_id)
);
"""

_CAPTURE_COLUMNS = (
    "created", "pid", "event", "frontend", "kernel", "entry", "original_entry", "src_file", "src_line", "arch",
    "triton_version", "ptxas_path", "ptxas_version", "triton_hash", "options", "metadata", "times",
)


@dataclasses.dataclass(frozen=True)
class Artifact:
    stage: str
    sha256: str
    size: int


@dataclasses.dataclass(frozen=True)
class CaptureRecord:
    """The fields of one capture that its producer knows (see the `captures` table for their meaning)."""

    event: str
    frontend: str
    kernel: str
    entry: str
    original_entry: str
    src_file: str | None
    src_line: int | None
    arch: str
    triton_version: str
    ptxas_path: str | None
    ptxas_version: str | None
    triton_hash: str | None
    options: dict
    metadata: dict
    times: dict


@dataclasses.dataclass(frozen=True)
class NewCapture(CaptureRecord):
    """What a producer (the Triton hook, the ptxas wrapper, the CuTe DSL adapter) hands the store."""

    artifacts: dict[str, bytes]


@dataclasses.dataclass(frozen=True)
class Capture(CaptureRecord):
    """One row of the store, with its artifacts' hashes; read the bytes through `Store.read`."""

    id: int
    created: float
    pid: int
    artifacts: dict[str, Artifact]

    @property
    def renamed(self) -> bool:
        return self.entry != self.original_entry

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["artifacts"] = {stage: {"sha256": a.sha256, "size": a.size} for stage, a in self.artifacts.items()}
        return data


def default_store_path() -> Path:
    return Path(os.environ.get(STORE_ENV) or DEFAULT_STORE)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Store:
    """A capture store on disk. Safe to share between processes and threads.

    `Store(path)` opens (creating when `create=True`) the store; `captures(...)` queries it; `read(capture, stage)`
    returns an artifact's bytes after checking its hash.
    """

    def __init__(self, path: str | os.PathLike | None = None, *, create: bool = True):
        self.path = Path(path) if path is not None else default_store_path()
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._conn_pid: int | None = None
        if not create and not (self.path / "index.sqlite").exists():
            raise TritonhookError(f"{self.path}: no tritonhook store here (missing index.sqlite)")
        self._open()

    # ----- opening -------------------------------------------------------------------------------------------
    @property
    def blobs_dir(self) -> Path:
        return self.path / "blobs"

    def _open(self) -> None:
        try:
            self.blobs_dir.mkdir(parents=True, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=self.blobs_dir, prefix=".probe-", delete=True)
            probe.close()
        except OSError as exc:
            raise TritonhookError(f"{self.path}: store is not writable ({exc.strerror or exc})") from None
        try:
            conn = sqlite3.connect(self.path / "index.sqlite", timeout=_BUSY_TIMEOUT_MS / 1000,
                                   check_same_thread=False, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._migrate(conn)
        except sqlite3.DatabaseError as exc:
            raise TritonhookError(f"{self.path / 'index.sqlite'}: not a usable tritonhook index ({exc})") from None
        self._conn, self._conn_pid = conn, os.getpid()

    def _migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            # executescript() would commit on its own: run the statements one by one inside this transaction.
            for statement in filter(str.strip, _SCHEMA.split(";")):
                conn.execute(statement)
            row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) < SCHEMA_VERSION:  # the CREATE ... IF NOT EXISTS above added what was missing
                conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))
            elif int(row[0]) > SCHEMA_VERSION:
                raise TritonhookError(
                    f"{self.path}: store written by a newer tritonhook (schema {row[0]}, this one reads up to "
                    f"{SCHEMA_VERSION}); upgrade tritonhook or use another --store")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _connection(self) -> sqlite3.Connection:
        """The connection for this process: a forked child must not reuse its parent's SQLite handle."""
        if self._conn is None or self._conn_pid != os.getpid():
            self._open()
        return self._conn

    def close(self) -> None:
        if self._conn is not None and self._conn_pid == os.getpid():
            self._conn.close()
        self._conn = None

    # ----- blobs ---------------------------------------------------------------------------------------------
    def blob_path(self, digest: str) -> Path:
        return self.blobs_dir / digest[:2] / digest

    def put_blob(self, data: bytes) -> str:
        """Store `data` under its sha256 (once) and return the digest. Atomic: temp file, then rename."""
        digest = sha256_hex(data)
        final = self.blob_path(digest)
        if final.exists() and final.stat().st_size == len(data):
            return digest
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=f".{digest[:8]}-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, final)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return digest

    def read_blob(self, digest: str, *, what: str = "") -> bytes:
        path = self.blob_path(digest)
        label = f"{path}{' (' + what + ')' if what else ''}"
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise TritonhookError(f"{label}: blob missing from the store") from None
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

    # ----- writing -------------------------------------------------------------------------------------------
    def add(self, new: NewCapture) -> int:
        """Write the blobs, then the index rows in one transaction; returns the capture id."""
        digests = {stage: (self.put_blob(data), len(data)) for stage, data in new.artifacts.items()}
        row = (
            time.time(), os.getpid(), new.event, new.frontend, new.kernel, new.entry, new.original_entry,
            new.src_file, new.src_line, new.arch, new.triton_version, new.ptxas_path, new.ptxas_version,
            new.triton_hash, _dumps(new.options), _dumps(new.metadata), _dumps(new.times),
        )
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                cursor = conn.execute(
                    f"INSERT INTO captures ({', '.join(_CAPTURE_COLUMNS)}) "
                    f"VALUES ({', '.join('?' * len(_CAPTURE_COLUMNS))})", row)
                capture_id = cursor.lastrowid
                conn.executemany("INSERT INTO artifacts VALUES (?, ?, ?, ?)",
                                 [(capture_id, stage, d, size) for stage, (d, size) in digests.items()])
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return capture_id

    def add_ab_result(self, result: dict, captures: dict[str, Iterable[int]]) -> int:
        """Save one A/B result (JSON-able) and link it to the captures each variant wrote; returns its id."""
        names = ",".join(b["name"] for b in result.get("benchmarks", []))
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                ab_id = conn.execute("INSERT INTO ab_results (created, names, result) VALUES (?, ?, ?)",
                                     (time.time(), names, _dumps(result))).lastrowid
                conn.executemany("INSERT OR IGNORE INTO ab_captures VALUES (?, ?, ?)",
                                 [(ab_id, cid, label) for label, ids in captures.items() for cid in ids])
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return ab_id

    def ab_results(self) -> list[dict]:
        """Saved A/B results in id order, each with its `id`, `created` and linked `captures` {variant: ids}."""
        with self._lock:
            conn = self._connection()
            rows = conn.execute("SELECT id, created, result FROM ab_results ORDER BY id").fetchall()
            links = conn.execute("SELECT ab_id, variant, capture_id FROM ab_captures ORDER BY capture_id").fetchall()
        captures: dict[int, dict[str, list[int]]] = {}
        for ab_id, variant, capture_id in links:
            captures.setdefault(ab_id, {}).setdefault(variant, []).append(capture_id)
        return [{**json.loads(result), "id": ab_id, "created": created, "captures": captures.get(ab_id, {})}
                for ab_id, created, result in rows]

    # ----- reading -------------------------------------------------------------------------------------------
    def captures(self, *, kernel: str | None = None, arch: str | None = None, event: str | None = None,
                 ids: Iterable[int] | None = None, after: int | None = None) -> list[Capture]:
        """Captures in id order. `kernel` is a regex searched in the source name and the entry name; `after`
        keeps the ids above it (what a command wrote, given `last_id()` from before it ran)."""
        clauses, params = [], []
        if after is not None:
            clauses.append("id > ?")
            params.append(after)
        if arch is not None:
            clauses.append("arch = ?")
            params.append(arch)
        if event is not None:
            clauses.append("event = ?")
            params.append(event)
        if ids is not None:
            id_list = list(ids)
            clauses.append(f"id IN ({', '.join('?' * len(id_list))})")
            params.extend(id_list)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._lock:
            conn = self._connection()
            rows = conn.execute(f"SELECT id, {', '.join(_CAPTURE_COLUMNS)} FROM captures {where} ORDER BY id",
                                params).fetchall()
            artifact_rows = conn.execute("SELECT capture_id, stage, sha256, size FROM artifacts WHERE capture_id IN "
                                         f"(SELECT id FROM captures {where})", params).fetchall()
        artifacts: dict[int, dict[str, Artifact]] = {}
        for capture_id, stage, digest, size in artifact_rows:
            artifacts.setdefault(capture_id, {})[stage] = Artifact(stage, digest, size)
        pattern = _compile_regex(kernel) if kernel else None
        result = []
        for row in rows:
            capture = _capture_from_row(row, artifacts.get(row[0], {}))
            if pattern is None or pattern.search(capture.kernel) or pattern.search(capture.entry):
                result.append(capture)
        return result

    def last_id(self) -> int:
        """The highest capture id so far (0 for an empty store)."""
        with self._lock:
            return self._connection().execute("SELECT COALESCE(MAX(id), 0) FROM captures").fetchone()[0]

    def get(self, capture_id: int | str) -> Capture:
        try:
            wanted = int(capture_id)
        except (TypeError, ValueError):
            raise TritonhookError(f"{capture_id!r}: a capture id is a whole number (see `tritonhook ls`)") from None
        found = self.captures(ids=[wanted])
        if not found:
            raise TritonhookError(f"{self.path}: no capture with id {wanted}")
        return found[0]

    def verify(self) -> list[str]:
        """Check every blob against its name; returns one message per problem (empty when all is well)."""
        problems = []
        with self._lock:
            digests = [r[0] for r in self._connection().execute("SELECT DISTINCT sha256 FROM artifacts")]
        for digest in digests:
            try:
                self.read_blob(digest)
            except TritonhookError as exc:
                problems.append(str(exc))
        return problems

    def size_bytes(self) -> int:
        """Bytes on disk: index files plus blobs."""
        return sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())


def _dumps(value) -> str:
    return json.dumps(value, default=_json_fallback, sort_keys=True)


def _json_fallback(value):
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    if hasattr(value, "_asdict"):
        return value._asdict()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if isinstance(value, bytes):
        return value.hex()
    return repr(value)


def _compile_regex(pattern: str) -> re.Pattern:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise TritonhookError(f"--kernel {pattern!r}: not a valid regular expression ({exc})") from None


def _capture_from_row(row: tuple, artifacts: dict[str, Artifact]) -> Capture:
    values = dict(zip(("id",) + _CAPTURE_COLUMNS, row))
    for key in ("options", "metadata", "times"):
        values[key] = json.loads(values[key])
    return Capture(**values, artifacts=artifacts)
