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

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import re
import secrets
import sqlite3
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator

from . import config, format, processes
from .config import HOLD_MAX_AGE_S, REPAIR_MIN_AGE_S
from .errors import TritonhookError
from .files import FULL_BELOW_BYTES, create_new, disk_full_reason, free_bytes, holding_others, read_input

# What each version changed is the numbered step of `_UPGRADES` that leads to it. An older store is upgraded in place,
# step by step, when opened by a writer (or by a reader allowed to write it).
SCHEMA_VERSION = 8
_BUSY_TIMEOUT_MS = 60_000

_BLOB_TABLES = """
CREATE TABLE IF NOT EXISTS result_blobs (
    result_id INTEGER NOT NULL REFERENCES results(id),
    sha256 TEXT NOT NULL,           -- a blob the result refers to, as its kind declares (`ResultKind.blobs`)
    PRIMARY KEY (result_id, sha256)
);
CREATE INDEX IF NOT EXISTS result_blobs_sha256 ON result_blobs(sha256);
CREATE TABLE IF NOT EXISTS held_blobs (
    sha256 TEXT NOT NULL,
    holder TEXT NOT NULL,           -- one writer's hold (`BlobHold.token`)
    host TEXT NOT NULL,             -- the holding process: its host, pid and start time (`processes.identity`)
    pid INTEGER NOT NULL,
    start TEXT,                     -- NULL where /proc could not say: then held until HOLD_MAX_AGE_S
    created REAL NOT NULL,
    PRIMARY KEY (holder, sha256)
);
CREATE INDEX IF NOT EXISTS held_blobs_sha256 ON held_blobs(sha256);
"""
"""Schema 8's tables as they are today: the end of `_SCHEMA`, and what the step to schema 8 adds (a later schema that
changes them gives that step the text they have here first)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS captures (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL,
    pid INTEGER NOT NULL,
    event TEXT NOT NULL,            -- 'compile', 'cache_hit', or 'loaded' (seen at a launch, compiled before capture began)
    frontend TEXT NOT NULL,         -- 'triton', 'gluon', 'ir', 'cute', 'cutile', 'ptxas' (see CaptureRecord)
    kernel TEXT NOT NULL,           -- source-level name (the Python function)
    entry TEXT NOT NULL,            -- PTX .entry name the launcher looks up (after any rename)
    original_entry TEXT NOT NULL,   -- PTX .entry name before tritonhook renamed it (== entry when not renamed)
    src_file TEXT,
    src_line INTEGER,
    arch TEXT NOT NULL,             -- e.g. sm_90a, from the PTX .target
    frontend_version TEXT NOT NULL, -- the version of that frontend, '' when unknown
    ptxas_path TEXT,
    ptxas_version TEXT,
    triton_hash TEXT,               -- Triton's cache key hash
    options TEXT NOT NULL,          -- JSON
    metadata TEXT NOT NULL,         -- JSON, as Triton wrote it
    times TEXT NOT NULL,            -- JSON: seconds per stage
    specialization TEXT NOT NULL DEFAULT ''  -- short: pointer dtypes and constexprs, e.g. 'fp16 BLOCK_M=128'
);
CREATE INDEX IF NOT EXISTS captures_kernel ON captures(kernel);
CREATE INDEX IF NOT EXISTS captures_entry ON captures(entry);
CREATE INDEX IF NOT EXISTS captures_arch ON captures(arch);
CREATE INDEX IF NOT EXISTS captures_event ON captures(event);
CREATE TABLE IF NOT EXISTS artifacts (
    capture_id INTEGER NOT NULL REFERENCES captures(id),
    stage TEXT NOT NULL,            -- ttir, ttgir, llir, ptx, cubin, source, json, ...
    sha256 TEXT NOT NULL,
    size INTEGER NOT NULL,
    PRIMARY KEY (capture_id, stage)
);
CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL,
    kind TEXT NOT NULL,             -- what produced it, e.g. 'ptxas-matrix' (a registered `ResultKind`)
    data TEXT NOT NULL,             -- JSON, as that command's to_json() wrote it
    label TEXT NOT NULL DEFAULT '', -- what its producer names it by (a recording's label), from its JSON
    source INTEGER                  -- the result it was made from (a sweep's recording), from its JSON
);
CREATE INDEX IF NOT EXISTS results_kind ON results(kind);
CREATE INDEX IF NOT EXISTS results_kind_label ON results(kind, label);
CREATE INDEX IF NOT EXISTS results_kind_source ON results(kind, source);
""" + _BLOB_TABLES
"""The current schema: what a new store is made with."""

_CAPTURE_COLUMNS = (
    "created", "pid", "event", "frontend", "kernel", "entry", "original_entry", "src_file", "src_line", "arch",
    "frontend_version", "ptxas_path", "ptxas_version", "triton_hash", "options", "metadata", "times", "specialization",
)


TRITON_FRONTENDS = ("triton", "gluon", "ir")
"""The frontends Triton compiles: their `frontend_version` is Triton's version."""


@dataclasses.dataclass(frozen=True)
class Artifact:
    stage: str
    sha256: str
    size: int


@dataclasses.dataclass(frozen=True)
class CaptureRecord:
    """The fields of one capture that its producer knows (see the `captures` table for their meaning).

    `frontend` names what produced the PTX and `frontend_version` its version: "triton" / "gluon" / "ir"
    (Triton compiled it: Triton's version), "cute" (the CuTe DSL: the nvidia-cutlass-dsl version), "cutile" (the
    ptxas wrapper saw cuTile's `tileiras` run ptxas: the cuda-tile version installed beside that tileiras),
    "ptxas" (the ptxas wrapper could not tell who ran ptxas). The version is "" wherever it is not known: always
    for "ptxas", and for "cute" / "cutile" when the package's metadata cannot be found.
    """

    event: str
    frontend: str
    kernel: str
    entry: str
    original_entry: str
    src_file: str | None
    src_line: int | None
    arch: str
    frontend_version: str
    ptxas_path: str | None
    ptxas_version: str | None
    triton_hash: str | None
    options: dict
    metadata: dict
    times: dict
    specialization: str = dataclasses.field(default="", kw_only=True)  # see `specialization_label`

    @property
    def frontend_label(self) -> str:
        """"triton 3.6.0", "cute 4.8.1", "ptxas": the frontend and, when known, its version."""
        return f"{self.frontend} {self.frontend_version}" if self.frontend_version else self.frontend


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


def specialization_label(signature: dict[str, str], constexprs: dict[str, object]) -> str:
    """What tells two compiles of one kernel apart, short enough for a table column: the distinct pointer element
    types, then the constexpr values. `({'a': '*fp16', 'n': 'i32'}, {'BLOCK': 64})` -> 'fp16 BLOCK=64'."""
    dtypes = dict.fromkeys(kind[1:] for kind in signature.values() if isinstance(kind, str) and kind.startswith("*"))
    return " ".join([*dtypes, *(f"{name}={value}" for name, value in constexprs.items())])


@dataclasses.dataclass(frozen=True)
class ResultKind:
    """One kind of saved result, declared once by the module that produces it (`register_result_kind`, at its
    import): its name in the `results` table, the loader that builds the typed result from its JSON, and the JSON
    keys its indexed columns are read from. Why a table in the store and not imports: the store sits below every
    feature (tests/test_layers.py), so each feature tells it how to read its own results, as pyelftools' `ELFFile`
    builds a section with the class its table names for the section's type.

    `load(record, source=...)` gets the saved JSON with the store's `id` and `created` added, and a text naming the
    row for its errors (a `TritonhookError`); None keeps the record as it is (a plain-dict result). `label` and
    `source` name the JSON keys the `label` and `source` columns are filled from (None: that column stays empty);
    `Store.results(kind, label=..., source=...)` finds rows through them in SQL. `blobs(data)` gives the blob
    digests a result refers to (a recording's input snapshots, a decision's control file): `add_result` indexes them
    with the row (table `result_blobs`), so `verify` checks them and a repair never removes them, in any process,
    whether or not it imported the producer."""

    name: str
    load: Callable[..., object] | None = None
    label: str | None = None
    source: str | None = None
    blobs: Callable[[dict], Iterable[str]] | None = None

    def columns(self, data: dict) -> tuple[str, int | None]:
        """The (label, source) columns of a result with this JSON."""
        label = data.get(self.label) if self.label else None
        source = data.get(self.source) if self.source else None
        return str(label or ""), (source if isinstance(source, int) else None)


_RESULT_KINDS: dict[str, ResultKind] = {}

_COLUMNS_BEFORE_6 = {"recording": ("label", None), "sweep": (None, "recording_id"),
                     "sweep-signature": (None, "recording")}
"""The kinds with columns that a store of schema 4 or 5 can hold, and the JSON keys (label, source) their
`ResultKind`s declare: the upgrade to schema 6 fills the columns of the rows it finds from these, in SQL, with no
producer module loaded (tests/test_store.py checks they agree with the declarations)."""

_BLOBS_BEFORE_8 = {
    "recording": "SELECT r.id, t.value FROM results r, json_tree(r.data) t WHERE r.kind = 'recording' "
                 "AND t.key = 'blob' AND t.type = 'text'",
    "decision": "SELECT id, json_extract(data, '$.choice.controls.sha256') FROM results WHERE kind = 'decision' "
                "AND json_type(data, '$.choice.controls.sha256') = 'text'",
}
"""The kinds whose results refer to blobs, and how to read their digests in SQL: the upgrade to schema 8 indexes
the rows it finds with no producer module loaded (tests/test_store.py checks they agree with the declarations)."""

_AB_BEFORE_7 = ResultKind("ab", label="benchmark_names")
"""What the A/B package declares its results as (tests/test_store.py checks it): the upgrade to schema 7 moves the
rows of the old `ab_results` table into `results` under this kind, with no A/B module loaded."""


def register_result_kind(kind: ResultKind) -> ResultKind:
    """Declare a result kind (its producer's module does, once, at import); returns it. A module imported again
    declares it again: the later declaration replaces the earlier."""
    _RESULT_KINDS[kind.name] = kind
    return kind


def result_kind_text(result) -> str:
    """What `Store.result` gave, for an error saying it is not the kind wanted: "none" or "a sweep result"."""
    if result is None:
        return "none"
    kind = getattr(result, "kind", type(result).__name__)
    return f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind} result"


class NewerStoreError(TritonhookError):
    """The store's schema is newer than this tritonhook reads: not damage (a newer tritonhook reads it whole), so
    `doctor` advises upgrading rather than moving it aside."""


@dataclasses.dataclass(frozen=True)
class UnknownResult:
    """A saved result of a kind no module of this process declared (a newer tritonhook wrote it, or its producer's
    module is not imported): its JSON as saved, and a note saying why it is not typed. Never an error: a reader
    lists what it cannot type rather than failing on it."""

    id: int
    kind: str
    created: float
    data: dict

    @property
    def note(self) -> str:
        return (f"result {self.id}: kind {self.kind!r} is not declared in this process (a newer tritonhook wrote "
                f"it, or the module producing it is not imported); shown as its JSON as saved")

    def to_json(self) -> dict:
        return {"id": self.id, "kind": self.kind, "created": self.created, "note": self.note, "data": self.data}

    def __rich_console__(self, console, options):
        yield format.line(self.note)


ROW_ID_MAX = 2**63 - 1
"""The largest id SQLite can hold (a signed 64-bit integer): a larger one raises OverflowError in any query."""


def row_id(value: int | str, what: str, *, hint: str = "") -> int:
    """`value` (an id as typed or as read from a file) as an id of a `what` row, range-checked once for every query
    that takes one: "9223372036854775808: a capture id is a whole number from 0 to 9223372036854775807"."""
    try:
        wanted = int(value)
    except (TypeError, ValueError):
        wanted = -1
    if not 0 <= wanted <= ROW_ID_MAX:
        raise TritonhookError(f"{value!r}: a {what} id is a whole number from 0 to {ROW_ID_MAX}{hint}")
    return wanted


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

    def __init__(self, store: "Store"):
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


class Store:
    """A capture store on disk. Safe to share between processes and threads.

    `Store(path)` opens (creating when `create=True`) the store; `readonly=True` opens an existing store without
    writing anything, for users who may read a shared store but not write it; `captures(...)` queries it;
    `read(capture, stage)` returns an artifact's bytes after checking its hash.
    """

    def __init__(self, path: str | os.PathLike | None = None, *, create: bool = True, readonly: bool = False):
        self.path = Path(path) if path is not None else config.store_path()
        self.readonly = readonly
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._conn_pid: int | None = None
        if (readonly or not create) and not self._index_exists():
            raise TritonhookError(f"{self.path}: {_unfinished(self.path)}")
        self._open()

    def _index_exists(self) -> bool:
        """Whether the index file is there; a store folder this user may not enter is a `TritonhookError` saying so
        (its owner's umask or a chmod made it private), where `exists()` would raise PermissionError."""
        try:
            os.stat(self.index_path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise TritonhookError(f"{self.path}: cannot read the store ({exc.strerror or exc}); its owner may "
                                  f"give you access (chmod) or you may use another --store") from None
        return True

    @classmethod
    def of(cls, store: "Store | str | os.PathLike | None", *, create: bool = True, readonly: bool = False) -> "Store":
        """`store` itself when it is a Store, else the store at that path (None: $TRITONHOOK_STORE or
        ./tritonhook-store) opened with these flags: the one place where an argument that may be either a store or
        its path becomes a Store, for every function that takes both."""
        return store if isinstance(store, cls) else cls(store, create=create, readonly=readonly)

    # ----- opening -------------------------------------------------------------------------------------------
    def run_folder(self, feature: str) -> Path:
        """Where one run of `feature` (upgrade, bisect, tune) keeps its files in this store: `FEATURE/<time>-<pid>`,
        so runs never share a folder and a listing sorts them by start (the caller creates it)."""
        return self.path / feature / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"

    @property
    def blobs_dir(self) -> Path:
        return self.path / "blobs"

    @property
    def index_path(self) -> Path:
        return self.path / "index.sqlite"

    def _open(self) -> None:
        created = False if self.readonly else self._create_index_file()
        try:
            conn = self._connect_readonly() if self.readonly else self._connect_writable()
        except (sqlite3.DatabaseError, TritonhookError) as exc:
            if created and self.index_path.stat().st_size == 0:
                self.index_path.unlink(missing_ok=True)  # leave no schema-less index behind (a full disk, say)
            if isinstance(exc, TritonhookError):
                raise
            raise TritonhookError(f"{self.index_path}: not a usable tritonhook index "
                                  f"({_sqlite_reason(exc, self.path)})") from None
        self._conn, self._conn_pid = conn, os.getpid()
        self._index_identity = _file_identity(self.index_path)

    def _create_index_file(self) -> bool:
        """Create an empty index file (an empty file is an empty SQLite database) with the mode the umask allows,
        as blobs get: SQLite would create it 0644 whatever the umask, and gives its -wal/-shm files the index's
        mode, so a team store under umask 002 would be writable by its creator alone. True if this call made it;
        then the folder must hold nothing but a store's own files (`_check_own_folder`)."""
        try:
            made = create_new(self.index_path)
        except OSError as exc:
            raise TritonhookError(f"{self.path}: store is not writable "
                                  f"({disk_full_reason(self.path, exc) or exc.strerror or exc})") from None
        if made:
            self._check_own_folder()
        return made

    def _check_own_folder(self) -> None:
        """Refuse (taking back the index just made) a folder that holds files of its own: a store is made in a new
        or empty folder only, so that a mistyped --store (a home folder, `/`) does not turn into one. Checked once
        the index is made, not before: of processes making one store together, only that one checks, and what
        the others add meanwhile is a store's own."""
        if others := holding_others(self.path, _STORE_FILES):
            self.index_path.unlink(missing_ok=True)
            raise TritonhookError(f"{self.path}: {others}, not a tritonhook store; give a new or empty folder")

    def check_in_place(self) -> None:
        """Raise if the index this store opened was removed or replaced since (the store folder deleted, or moved
        and another put in its place): rows written through the open handle would go to a file nobody can see."""
        if _file_identity(self.index_path) != self._index_identity:
            raise TritonhookError(f"{self.index_path}: the store was removed or replaced while this process was "
                                  f"using it; what it wrote since is lost")

    @contextlib.contextmanager
    def _write_transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction under this process's lock: committed only while the index is still the one this
        store opened (else rolled back and a `TritonhookError`), rolled back on any error (`_transaction`)."""
        with self._lock:
            conn = self._connection()
            with _transaction(conn, self.index_path, before_commit=self.check_in_place):
                yield conn

    def _connect_writable(self) -> sqlite3.Connection:
        """Open for writing and bring the schema up to date, trying again for up to the busy timeout where SQLite
        says "database is locked" at once. It does so, without waiting, where waiting could deadlock: one such place
        is `journal_mode=WAL` while another connection holds the write lock of a database still in rollback mode,
        which a brand-new store is while its first opener creates the schema. Eight processes opening one new store
        together failed that way about once in 500 opens (CI, tests/test_store.py)."""
        try:
            self.blobs_dir.mkdir(parents=True, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=self.blobs_dir, prefix=".probe-", delete=True)
            probe.close()
        except OSError as exc:
            raise TritonhookError(f"{self.path}: store is not writable ({exc.strerror or exc})") from None
        deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
        while True:
            conn = sqlite3.connect(self.index_path, timeout=_BUSY_TIMEOUT_MS / 1000, check_same_thread=False,
                                   isolation_level=None)
            try:
                conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                self._migrate(conn)
                return conn
            except sqlite3.OperationalError as exc:
                conn.close()
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01 + secrets.randbelow(40) / 1000)

    def _connect_readonly(self) -> sqlite3.Connection:
        """Open without writing. A WAL database opened `mode=ro` needs a usable -shm file (a writer has it open) or
        a directory where SQLite may create one. Without: where this user may write the store, a writable open
        rebuilds them (a write that failed on a full disk leaves a torn -shm and an empty -wal that every reader
        trips on); where the -wal file is absent or empty, the main file is the whole database and `immutable=1`
        reads it as it is; else one line says why, naming a full disk when it is one."""
        try:
            conn = self._connect_uri("mode=ro")
            version = self._schema_version(conn)
        except sqlite3.OperationalError as exc:
            wal = Path(f"{self.index_path}-wal")
            if wal.exists() and self._healed_by_a_writer():
                return self._connect_readonly()
            if wal.exists() and wal.stat().st_size > 0:
                raise TritonhookError(f"{self.index_path}: cannot open read-only while its -wal file holds "
                                      f"changes and its -shm file cannot be made "
                                      f"({_sqlite_reason(exc, self.path)})") from None
            conn = self._connect_uri("immutable=1")
            version = self._schema_version(conn)
        if version is None:
            why = _never_initialised(conn, self.path)
            conn.close()
            raise TritonhookError(f"{self.index_path}: not a tritonhook index (no schema version{why})")
        if version < SCHEMA_VERSION:
            conn.close()
            self._upgrade_for_reader(version)
            return self._connect_readonly()
        _check_columns(conn, self.index_path)
        return conn

    def _connect_uri(self, mode: str) -> sqlite3.Connection:
        uri = f"{self.index_path.resolve().as_uri()}?{mode}"
        conn = sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT_MS / 1000, check_same_thread=False,
                               isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        return conn

    def _healed_by_a_writer(self) -> bool:
        """Open the store writable once, where this user may, so that SQLite rebuilds a -shm/-wal pair that a failed
        write left behind; False where it may not or cannot (the disk still full)."""
        if not (os.access(self.path, os.W_OK) and os.access(self.index_path, os.W_OK)):
            return False
        try:
            Store(self.path, create=False).close()
        except TritonhookError:
            return False
        try:
            self._connect_uri("mode=ro").close()
        except sqlite3.OperationalError:
            return False
        return True

    def _upgrade_for_reader(self, version: int) -> None:
        if not (os.access(self.path, os.W_OK) and os.access(self.index_path, os.W_OK)):
            raise TritonhookError(
                f"{self.path}: store schema {version} predates this tritonhook's {SCHEMA_VERSION} and you may not "
                f"write it to upgrade it; ask its owner to run `tritonhook store verify --store {self.path} --repair`")
        Store(self.path).close()  # a writable open upgrades it

    def _schema_version(self, conn: sqlite3.Connection) -> int | None:
        """The schema version the index records; None where it records none: a new index (or an empty one whose
        first writer stopped before setting it up). This number is the one place a store's schema is told, never
        its tables or columns: every tritonhook since schema 1 writes its tables and this row in one transaction,
        so an index without it holds no tritonhook table to upgrade. A malformed version, or one newer than this
        code's, is a `TritonhookError`."""
        try:
            version = _meta_number(conn, "schema_version", self.index_path, least=1)
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
            return None
        if version is not None and version > SCHEMA_VERSION:
            raise NewerStoreError(
                f"{self.path}: store written by a newer tritonhook (schema {version}, this one reads up to "
                f"{SCHEMA_VERSION}); upgrade tritonhook or use another --store")
        return version

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Bring the index to `SCHEMA_VERSION`, one write transaction per step (`_migrate_step`). Why steps and not
        one transaction: each commit records the version it reached, so a process stopped midway leaves a store of
        one known version that the next opener carries on from; and openers racing on one store never apply a step
        twice, as each reads the version inside its own write transaction."""
        while True:
            with _transaction(conn, self.index_path):
                version = self._migrate_step(conn)
            if version == SCHEMA_VERSION:
                return

    def _migrate_step(self, conn: sqlite3.Connection) -> int:
        """One step inside the caller's transaction: a new index gets `_SCHEMA` whole, an older one the numbered
        step of `_UPGRADES` from its version; returns the version the index is at now (its columns checked once it
        is the current one)."""
        version = self._schema_version(conn)
        if version is None:
            _execute_script(conn, _SCHEMA)
            version = SCHEMA_VERSION
            _record_version(conn, version)
        elif version < SCHEMA_VERSION:
            _UPGRADES[version](conn)
            version += 1
            _record_version(conn, version)
        if version == SCHEMA_VERSION:
            _check_columns(conn, self.index_path)
        return version

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

    # ----- writing -------------------------------------------------------------------------------------------
    def add(self, new: NewCapture) -> int:
        """Write the blobs, then the index rows in one transaction; returns the capture id."""
        return self.add_many([new])[0]

    def add_many(self, captures: Iterable[NewCapture]) -> list[int]:
        """`add` for many captures in one transaction (an importer, a benchmark filling a store)."""
        repairs_before = self._repairs()
        prepared = []
        for new in captures:
            digests = {stage: (self.put_blob(data), len(data)) for stage, data in new.artifacts.items()}
            row = (time.time(), os.getpid(), new.event, new.frontend, new.kernel, new.entry, new.original_entry,
                   new.src_file, new.src_line, new.arch, new.frontend_version, new.ptxas_path, new.ptxas_version,
                   new.triton_hash, _dumps(new.options), _dumps(new.metadata), _dumps(new.times),
                   new.specialization)
            prepared.append((row, digests, new.artifacts))
        insert = (f"INSERT INTO captures ({', '.join(_CAPTURE_COLUMNS)}) "
                  f"VALUES ({', '.join('?' * len(_CAPTURE_COLUMNS))})")
        ids = []
        with self._write_transaction() as conn:
            repaired = self._repairs(conn) != repairs_before
            for row, digests, artifacts in prepared:
                if repaired:
                    self._restore_removed_blobs(digests, artifacts)
                capture_id = conn.execute(insert, row).lastrowid
                conn.executemany("INSERT INTO artifacts VALUES (?, ?, ?, ?)",
                                 [(capture_id, stage, d, size) for stage, (d, size) in digests.items()])
                ids.append(capture_id)
        return ids

    def _repairs(self, conn: sqlite3.Connection | None = None) -> int:
        """How many repairs have removed files from this store: a writer that sees it change between its blobs
        and its rows re-checks those blobs (`_restore_removed_blobs`) inside its write transaction."""
        if conn is None:
            with self._lock:
                return self._repairs(self._connection())
        return _meta_number(conn, "repairs", self.index_path) or 0

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

    def add_result(self, kind: str, data: dict, *, hold: BlobHold | None = None) -> int:
        """Save one JSON-able result of a command (a recording, a sweep, a memwatch run, ...) under `kind`, a
        declared `ResultKind` whose columns are read from `data`; returns its id. `hold`: the blobs this result
        refers to, held until now; the hold ends in the row's own transaction, so no repair ever sees them
        unreferenced."""
        declared = _RESULT_KINDS.get(kind)
        if declared is None:
            raise LookupError(f"result kind {kind!r} is not declared (register_result_kind, in its producer's module)")
        label, source = declared.columns(data)
        blobs = sorted(set(declared.blobs(data))) if declared.blobs is not None else []
        with self._write_transaction() as conn:
            result_id = conn.execute("INSERT INTO results (created, kind, data, label, source) VALUES (?, ?, ?, ?, ?)",
                                     (time.time(), kind, _dumps(data), label, source)).lastrowid
            conn.executemany("INSERT INTO result_blobs VALUES (?, ?)", [(result_id, digest) for digest in blobs])
            if hold is not None:
                self._release_hold(hold, conn)
        if hold is not None:
            hold.digests.clear()
        return result_id

    def remove_result(self, kind: str, result_id: int) -> bool:
        """Delete the saved result `result_id` if it is of `kind` (`tritonhook decisions rm`); False when there is
        none. Kind-checked so that removing one kind's row never removes another command's result."""
        with self._write_transaction() as conn:
            wanted = row_id(result_id, "result")
            if not conn.execute("DELETE FROM results WHERE id = ? AND kind = ?", (wanted, kind)).rowcount:
                return False
            conn.execute("DELETE FROM result_blobs WHERE result_id = ?", (wanted,))
            return True

    def results(self, kind: str, *, label: str | None = None, source: int | None = None, limit: int | None = None,
                on_error: Callable[[int, TritonhookError], None] | None = None) -> list:
        """The saved results of `kind` in id order, typed by its declared loader (`ResultKind`; an undeclared
        kind gives `UnknownResult`s). `label` / `source` keep those whose column has that value (found through
        their indexes, no row is loaded to filter); `limit` keeps the newest that many. A row its loader
        refuses is a `TritonhookError` naming it, or, given `on_error`, passed to it (id, error) and left out."""
        clauses, params = ["kind = ?"], [kind]
        for column, value in (("label", label), ("source", source)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        newest = f"SELECT id FROM results WHERE {' AND '.join(clauses)} ORDER BY id DESC LIMIT ?"
        with self._lock:
            rows = self._connection().execute(f"SELECT id, kind, created, data FROM results WHERE id IN ({newest}) "
                                              f"ORDER BY id", [*params, -1 if limit is None else limit]).fetchall()
        found = []
        for row in rows:
            try:
                found.append(self._typed_result(*row))
            except TritonhookError as exc:
                if on_error is None:
                    raise
                on_error(row[0], exc)
        return found

    def result(self, result_id: int | str):
        """The saved result with this id, of any kind, typed as `results` types it; None when there is none."""
        wanted = row_id(result_id, "result")
        with self._lock:
            row = self._connection().execute("SELECT id, kind, created, data FROM results WHERE id = ?",
                                             (wanted,)).fetchone()
        return None if row is None else self._typed_result(*row)

    def _typed_result(self, result_id: int, kind: str, created: float, data: str):
        where = f"{self.path} result {result_id} ({kind})"
        try:
            record = {**json.loads(data), "id": result_id, "created": created}
        except (ValueError, TypeError) as exc:
            raise TritonhookError(f"{where}: its JSON is damaged ({exc})") from None
        declared = _RESULT_KINDS.get(kind)
        if declared is None:
            return UnknownResult(result_id, kind, created, record)
        return record if declared.load is None else declared.load(record, source=where)

    # ----- reading -------------------------------------------------------------------------------------------
    def captures(self, *, kernel: str | None = None, arch: str | None = None, event: str | None = None,
                 ids: Iterable[int] | None = None, after: int | None = None, triton_hashes: Iterable[str] | None = None,
                 limit: int | None = None) -> list[Capture]:
        """Captures in id order. `kernel` is a regex searched in the source name and the entry name; `arch`
        `sm_90` also matches its variants `sm_90a`/`sm_90f`; `after` keeps the ids above it (what a command
        wrote, given `last_id()` from before it ran); `triton_hashes` keeps the builds of those Triton cache keys;
        `limit` keeps the newest that many."""
        with self._lock:
            conn = self._connection()
            where, params = self._where(conn, kernel=kernel, arch=arch, event=event, ids=ids, after=after,
                                        triton_hashes=triton_hashes)
            newest = f"SELECT id FROM captures {where} ORDER BY id DESC LIMIT ?"
            params.append(-1 if limit is None else limit)
            rows = conn.execute(f"SELECT id, {', '.join(_CAPTURE_COLUMNS)} FROM captures WHERE id IN ({newest}) "
                                f"ORDER BY id", params).fetchall()
            artifact_rows = conn.execute("SELECT capture_id, stage, sha256, size FROM artifacts "
                                         f"WHERE capture_id IN ({newest})", params).fetchall()
        artifacts: dict[int, dict[str, Artifact]] = {}
        for capture_id, stage, digest, size in artifact_rows:
            artifacts.setdefault(capture_id, {})[stage] = Artifact(stage, digest, size)
        return [_capture_from_row(row, artifacts.get(row[0], {})) for row in rows]

    def count(self, *, kernel: str | None = None, arch: str | None = None, event: str | None = None) -> int:
        """How many captures `captures(...)` with these filters would return, without reading them."""
        with self._lock:
            conn = self._connection()
            where, params = self._where(conn, kernel=kernel, arch=arch, event=event)
            return conn.execute(f"SELECT COUNT(*) FROM captures {where}", params).fetchone()[0]

    def archs(self) -> list[str]:
        """The distinct targets in the store (read from the arch index)."""
        with self._lock:
            return [row[0] for row in self._connection().execute("SELECT DISTINCT arch FROM captures ORDER BY 1")]

    @staticmethod
    def _where(conn: sqlite3.Connection, *, kernel=None, arch=None, event=None, ids=None,
               after=None, triton_hashes=None) -> tuple[str, list]:
        """The WHERE clause of a capture query. The kernel regex runs in Python over the distinct kernel and entry
        names (read from their indexes); the rows are then selected through those indexes, never scanned."""
        clauses, params = [], []
        if kernel is not None:
            pattern = _compile_regex(kernel)
            names = [name for (name,) in conn.execute("SELECT kernel FROM captures UNION SELECT entry FROM captures")
                     if pattern.search(name)]
            listed = "IN (SELECT value FROM json_each(?))"
            clauses.append(f"(kernel {listed} OR entry {listed})")
            params += [json.dumps(names)] * 2
        if arch is not None:
            clauses.append("(arch = ? OR arch GLOB ?)")
            params += [arch, f"{arch}[a-z]" if arch[-1:].isdigit() else arch]
        if event is not None:
            clauses.append("event = ?")
            params.append(event)
        if ids is not None:
            clauses.append("id IN (SELECT value FROM json_each(?))")
            params.append(json.dumps([int(i) for i in ids]))
        if after is not None:
            clauses.append("id > ?")
            params.append(after)
        if triton_hashes is not None:
            clauses.append("triton_hash IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(sorted(triton_hashes)))
        return (f"WHERE {' AND '.join(clauses)}" if clauses else ""), params

    def last_id(self) -> int:
        """The highest capture id so far (0 for an empty store)."""
        with self._lock:
            return self._connection().execute("SELECT COALESCE(MAX(id), 0) FROM captures").fetchone()[0]

    def get(self, capture_id: int | str) -> Capture:
        wanted = row_id(capture_id, "capture", hint=" (see `tritonhook ls`)")
        found = self.captures(ids=[wanted])
        if not found:
            raise TritonhookError(f"{self.path}: no capture with id {wanted}")
        return found[0]

    def page(self, *, kernel: str | None = None, arch: str | None = None, event: str | None = None,
             after: int | None = None, before: int | None = None, limit: int | None = None) -> list[Capture]:
        """One page of a listing (`tritonhook ls`), in id order, by keyset: with `after`, the first `limit`
        captures above that id (the next page, oldest first); else the newest `limit` below `before` (no `before`:
        the newest of all). Filters as in `captures`, but the kernel regex is matched against names read by seeking
        through the name indexes (`_distinct`), not by walking them: a page costs the same in a store of 100,000."""
        with self._lock:
            conn = self._connection()
            where, params = self._page_where(conn, kernel=kernel, arch=arch, event=event, after=after, before=before)
            order = "" if after is not None else " DESC"
            ids = [row[0] for row in conn.execute(f"SELECT id FROM captures {where} ORDER BY id{order} LIMIT ?",
                                                  [*params, -1 if limit is None else limit])]
            listed = json.dumps(ids)
            rows = conn.execute(f"SELECT id, {', '.join(_CAPTURE_COLUMNS)} FROM captures "
                                "WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id", (listed,)).fetchall()
            artifact_rows = conn.execute("SELECT capture_id, stage, sha256, size FROM artifacts "
                                         "WHERE capture_id IN (SELECT value FROM json_each(?))", (listed,)).fetchall()
        artifacts: dict[int, dict[str, Artifact]] = {}
        for capture_id, stage, digest, size in artifact_rows:
            artifacts.setdefault(capture_id, {})[stage] = Artifact(stage, digest, size)
        return [_capture_from_row(row, artifacts.get(row[0], {})) for row in rows]

    def page_count(self, *, kernel: str | None = None, arch: str | None = None, event: str | None = None,
                   after: int | None = None, before: int | None = None) -> int:
        """How many captures the pages of `page(...)` with these filters hold together (every `limit`)."""
        with self._lock:
            conn = self._connection()
            where, params = self._page_where(conn, kernel=kernel, arch=arch, event=event, after=after, before=before,
                                             counting=True)
            return conn.execute(f"SELECT COUNT(*) FROM captures {where}", params).fetchone()[0]

    def _page_where(self, conn: sqlite3.Connection, *, kernel, arch, event, after, before,
                    counting: bool = False) -> tuple[str, list]:
        """`_where`'s clause for `page`: arch and event as there; the id bounds; the kernel regex over the distinct
        kernel and entry names, left out where it matches every kernel name or every entry name (then it keeps
        every row, and an IN list of every name costs a pass over both indexes). `counting`: the bounds as `+id`,
        which keeps SQLite from counting along the table itself (its rows hold the JSON columns, so that is several
        times slower) rather than along an index's."""
        where, params = self._where(conn, arch=arch, event=event)
        clauses = [where.removeprefix("WHERE ")] if where else []
        key = "+id" if counting else "id"
        for bound, sign in ((after, ">"), (before, "<")):
            if bound is not None:
                clauses.append(f"{key} {sign} ?")
                params.append(row_id(bound, "capture"))
        if kernel is not None:
            pattern = _compile_regex(kernel)
            kernels, entries = self._distinct(conn, "kernel"), self._distinct(conn, "entry")
            matched = sorted({name for name in (*kernels, *entries) if pattern.search(name)})
            if not (all(map(pattern.search, kernels)) or all(map(pattern.search, entries))):
                listed = "IN (SELECT value FROM json_each(?))"
                clauses.append(f"(kernel {listed} OR entry {listed})")
                params += [json.dumps(matched)] * 2
        return (f"WHERE {' AND '.join(clauses)}" if clauses else ""), params

    @staticmethod
    def _distinct(conn: sqlite3.Connection, column: str, seeks: int = 5000) -> list[str]:
        """The distinct values of an indexed column (`kernel` or `entry`), each found by one seek in its index
        (SQLite walks the whole index for DISTINCT): a few hundred names in a large table cost a fraction of the
        walk. Past `seeks` names the walk is the cheaper and is taken instead."""
        found = [value for (value,) in conn.execute(
            f"WITH RECURSIVE names(value) AS (SELECT MIN({column}) FROM captures UNION ALL SELECT (SELECT MIN({column}) "
            f"FROM captures WHERE {column} > names.value) FROM names WHERE names.value IS NOT NULL) "
            "SELECT value FROM names WHERE value IS NOT NULL LIMIT ?", (seeks + 1,))]
        if len(found) > seeks:
            found = [value for (value,) in conn.execute(f"SELECT DISTINCT {column} FROM captures")]
        return found

    # ----- checking ------------------------------------------------------------------------------------------
    def verify(self, *, repair: bool = False, min_age: float = REPAIR_MIN_AGE_S) -> VerifyReport:
        """Check every blob a row refers to (a capture's artifacts, a saved result's blobs as its kind declares
        them) against its name, and find the files no row needs: orphan blobs (a writer killed between its blobs
        and its rows) and temporary files (killed mid-blob). Blobs held by a live writer whose row is not saved yet
        (`BlobHold`) are listed apart, never orphans. `repair=True` removes the orphans and temporary files older
        than `min_age` seconds (younger ones may belong to a writer at work); it never touches a blob a row refers
        to or a live writer holds."""
        if repair and self.readonly:
            raise TritonhookError(f"{self.path}: opened read-only; repair needs a writable store")
        with self._lock:
            conn = self._connection()
            wanted = {digest: {"capture_id": capture_id, "stage": stage} for digest, capture_id, stage in conn.execute(
                "SELECT sha256, MIN(capture_id), MIN(stage) FROM artifacts GROUP BY sha256")}
            for digest, owner in self._result_blobs(conn).items():
                wanted.setdefault(digest, owner)
            held = self._live_holds(conn)
        found = _blob_files(self.blobs_dir)
        report = VerifyReport(store=str(self.path), blobs_checked=0)
        for digest, owner in wanted.items():
            path = self.blob_path(digest)
            if path not in found["blobs"]:
                report.missing.append({**owner, "sha256": digest})
                continue
            report.blobs_checked += 1
            try:
                self.read_blob(digest)
            except TritonhookError as exc:
                (report.corrupt if "corrupt" in str(exc) else report.unreadable).append(str(path))
        unreferenced = found["blobs"] - {self.blob_path(digest) for digest in wanted}
        report.held = sorted(str(p) for p in unreferenced if p.name in held)
        report.orphans = sorted(str(p) for p in unreferenced if p.name not in held)
        report.temporary = sorted(str(p) for p in found["temporary"])
        if repair:
            report.removed = self.remove_unreferenced(report.orphans + report.temporary, min_age=min_age)
        return report

    def remove_unreferenced(self, paths: Iterable[str], *, min_age: float = REPAIR_MIN_AGE_S) -> list[str]:
        """Remove those of `paths` (orphan blobs and temporary files that `verify` found) that are older than
        `min_age` seconds, that no row refers to and no live writer holds now; returns the removed ones. The check
        and the removal happen inside one write transaction, and writers re-check their blobs inside theirs (a
        capture's rows, a held blob's registration), so a writer that reuses an orphan's content while a long
        `verify` runs keeps its blob. The holds of writers that died are dropped here."""
        if self.readonly:
            raise TritonhookError(f"{self.path}: opened read-only; repair needs a writable store")
        removed = []
        with self._write_transaction() as conn:
            cutoff = time.time() - min_age
            held = self._live_holds(conn, drop_dead=True)
            for name in paths:
                path = Path(name)
                if _DIGEST.fullmatch(path.name) and (path.name in held or _referenced(conn, path.name)):
                    continue
                try:
                    if not path.is_file() or path.stat().st_mtime >= cutoff:
                        continue
                    path.unlink()
                except FileNotFoundError:
                    continue
                removed.append(name)
            if removed:
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('repairs', ?)", (str(self._repairs(conn) + 1),))
        return removed

    @staticmethod
    def _result_blobs(conn: sqlite3.Connection) -> dict[str, dict]:
        """The blob digests the saved results refer to (indexed when each was saved), each with the first result
        naming it ({"result_id", "kind"})."""
        return {digest: {"result_id": result_id, "kind": kind} for digest, result_id, kind in conn.execute(
            "SELECT b.sha256, MIN(b.result_id), r.kind FROM result_blobs b JOIN results r ON r.id = b.result_id "
            "GROUP BY b.sha256")}

    @staticmethod
    def _live_holds(conn: sqlite3.Connection, *, drop_dead: bool = False) -> set[str]:
        """The digests held by writers still alive (`BlobHold`). A holder on this host is alive while its pid has
        its recorded start time; one on another host (or where /proc could not say) for HOLD_MAX_AGE_S.
        `drop_dead` (inside a write transaction) deletes the dead holders' rows."""
        here, now = processes.host(), time.time()
        live, dead = set(), set()
        for digest, holder, host, pid, start, created in conn.execute("SELECT sha256, holder, host, pid, start, "
                                                                      "created FROM held_blobs"):
            if host == here and start is not None:
                alive = not processes.is_dead({"pid": pid, "start": start})
            else:
                alive = now - created < HOLD_MAX_AGE_S
            (live.add(digest) if alive else dead.add(holder))
        if drop_dead and dead:
            conn.execute("DELETE FROM held_blobs WHERE holder IN (SELECT value FROM json_each(?))",
                         (json.dumps(sorted(dead)),))
        return live

    def size_bytes(self) -> int:
        """Bytes on disk: index files plus blobs."""
        return sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())


@dataclasses.dataclass
class VerifyReport:
    """What `Store.verify` found, and removed with `repair=True`. Paths are blob files; `missing` lists the
    rows whose blob is gone (a capture's stage, or a saved result); `held`, the blobs a live writer holds for a
    result it has not saved yet. Renders itself (rich: `format.show`) or to JSON (`to_json`)."""

    store: str
    blobs_checked: int
    corrupt: list[str] = dataclasses.field(default_factory=list)
    unreadable: list[str] = dataclasses.field(default_factory=list)
    missing: list[dict] = dataclasses.field(default_factory=list)
    held: list[str] = dataclasses.field(default_factory=list)
    orphans: list[str] = dataclasses.field(default_factory=list)
    temporary: list[str] = dataclasses.field(default_factory=list)
    removed: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No captured content lost or damaged (orphans and temporary files only waste space)."""
        return not (self.corrupt or self.unreadable or self.missing)

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "ok": self.ok}

    def __rich_console__(self, console, options):
        missing = [(f"capture {m['capture_id']} {m['stage']}" if "capture_id" in m else
                    f"result {m['result_id']} ({m['kind']})") + f" {m['sha256'][:16]}" for m in self.missing]
        checks = [("corrupt blobs (hash mismatch)", self.corrupt), ("unreadable blobs", self.unreadable),
                  ("rows whose blob is missing", missing), ("held by a writer at work", self.held),
                  ("orphan blobs (no row)", self.orphans),
                  ("temporary files", self.temporary), ("removed", self.removed)]
        yield format.table(("check", "count", "first"), [(name, len(items), items[0] if items else "-")
                                                         for name, items in checks],
                           title=f"{self.store}: {self.blobs_checked} blobs checked, "
                                 f"{'all good' if self.ok else 'PROBLEMS'}", right_align=("count",))


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


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection, index_path: Path, *,
                 before_commit: Callable[[], None] | None = None) -> Iterator[None]:
    """BEGIN IMMEDIATE, the block, `before_commit`, COMMIT; on any error, ROLLBACK unless SQLite has already rolled
    back (a COMMIT that fails on a full disk does, and a second ROLLBACK would raise "no transaction is active" in
    place of why), and an SQLite failure to write (`_write_failure`) as one line naming the index."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        if before_commit is not None:
            before_commit()
        conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):  # the error that got here says why; a failed ROLLBACK does not
                conn.execute("ROLLBACK")
        failure = _write_failure(exc, index_path)
        if failure is None:
            raise
        raise failure from None


_WRITE_FAILURES = {sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN,
                   sqlite3.SQLITE_PERM, sqlite3.SQLITE_BUSY}
"""The primary SQLite error codes that say the index could not be written where it is (its disk, its file, its
permissions, another process's lock past the busy timeout): the user's to fix, so one line. Any other code
(a misuse, a constraint) is this code's bug and keeps its traceback."""


def _write_failure(exc: BaseException, index_path: Path) -> TritonhookError | None:
    """The one line for an SQLite error that failed a write of the index, naming the disk where it is full; None
    for any other error."""
    code = getattr(exc, "sqlite_errorcode", None) if isinstance(exc, sqlite3.Error) else None
    if code is None or code & 0xFF not in _WRITE_FAILURES:
        return None
    return TritonhookError(f"{index_path}: cannot write the index ({_sqlite_reason(exc, index_path.parent)})")


def _sqlite_reason(exc: sqlite3.Error, folder: Path) -> str:
    """Why SQLite failed in `folder`, in words: a full disk named where the error says so. SQLite's "disk I/O
    error" keeps the system's errno to itself, so there a write of one -shm file's size beside the index asks the
    file system the same question and names the disk only where that write fails for want of space."""
    reason = disk_full_reason(folder, exc)
    if reason is None and (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF == sqlite3.SQLITE_IOERR:
        try:
            with tempfile.TemporaryFile(dir=folder) as probe:
                probe.write(bytes(_SHM_BYTES))
                probe.flush()
        except OSError as probe_error:
            reason = disk_full_reason(folder, probe_error)
    return f"{exc}: {reason}" if reason else str(exc)


_SHM_BYTES = 32768
"""The size of an index's -shm file, what SQLite's first write of a WAL store makes beside it."""


# ----- the upgrade steps: each takes an index of schema N to N + 1, inside the transaction that records N + 1 --------
def _execute_script(conn: sqlite3.Connection, script: str) -> None:
    """Run `script`'s statements one by one: `executescript()` would commit the caller's transaction on its own."""
    for statement in filter(str.strip, script.split(";")):
        conn.execute(statement)


def _meta_number(conn: sqlite3.Connection, key: str, index_path: Path, *, least: int = 0) -> int | None:
    """The whole number the index's meta table keeps under `key` (None: none kept), range-checked where it is read,
    for every number kept there: text, a fraction or a number below `least` is a damaged index, one line, never a
    KeyError from the upgrade steps or an OverflowError from a query later."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    if row is None:
        return None
    try:
        value = int(row[0])
    except (TypeError, ValueError):
        value = None
    if value is None or not least <= value <= ROW_ID_MAX:
        raise TritonhookError(f"{index_path}: {key.replace('_', ' ')} {row[0]!r} is not a whole number of "
                              f"{least} or more (damaged index?)")
    return value


def _record_version(conn: sqlite3.Connection, version: int) -> None:
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(version),))


def _add_ab_tables(conn: sqlite3.Connection) -> None:
    """1 -> 2: A/B results and the captures each was timed on (the step to 7 moves them into `results`)."""
    conn.execute("CREATE TABLE ab_results (id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL, "
                 "names TEXT NOT NULL, result TEXT NOT NULL)")
    conn.execute("CREATE TABLE ab_captures (ab_id INTEGER NOT NULL REFERENCES ab_results(id), "
                 "capture_id INTEGER NOT NULL REFERENCES captures(id), variant TEXT NOT NULL, "
                 "PRIMARY KEY (ab_id, capture_id))")


def _add_specialization(conn: sqlite3.Connection) -> None:
    """2 -> 3: `captures.specialization` ('' for the captures already there), and indexes on arch and event."""
    conn.execute("ALTER TABLE captures ADD COLUMN specialization TEXT NOT NULL DEFAULT ''")
    conn.execute("CREATE INDEX captures_arch ON captures(arch)")
    conn.execute("CREATE INDEX captures_event ON captures(event)")


def _add_results_table(conn: sqlite3.Connection) -> None:
    """3 -> 4: `results`, any other command's saved result by kind (ptxas-matrix, ...)."""
    conn.execute("CREATE TABLE results (id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL, "
                 "kind TEXT NOT NULL, data TEXT NOT NULL)")
    conn.execute("CREATE INDEX results_kind ON results(kind)")


def _rename_triton_version(conn: sqlite3.Connection) -> None:
    """4 -> 5: `captures.triton_version` is `frontend_version`, the version of whichever frontend `frontend` names
    (the rows keep their value)."""
    conn.execute("ALTER TABLE captures RENAME COLUMN triton_version TO frontend_version")


def _add_result_columns(conn: sqlite3.Connection) -> None:
    """5 -> 6: the results table's label and source columns, indexed, filled from the JSON of the rows already
    there as their kinds declare (`_COLUMNS_BEFORE_6`)."""
    conn.execute("ALTER TABLE results ADD COLUMN label TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE results ADD COLUMN source INTEGER")
    conn.execute("CREATE INDEX results_kind_label ON results(kind, label)")
    conn.execute("CREATE INDEX results_kind_source ON results(kind, source)")
    for kind, (label, source) in _COLUMNS_BEFORE_6.items():
        if label:
            conn.execute("UPDATE results SET label = COALESCE(json_extract(data, ?), '') WHERE kind = ?",
                         (f"$.{label}", kind))
        if source:
            conn.execute("UPDATE results SET source = json_extract(data, ?) WHERE kind = ? "
                         "AND json_type(data, ?) = 'integer'", (f"$.{source}", kind, f"$.{source}"))


def _move_ab_results(conn: sqlite3.Connection) -> None:
    """6 -> 7: every row of `ab_results` becomes a `results` row of kind 'ab', then the old tables go. Its JSON gains
    what the A/B package now writes there: `captures` {variant: capture ids} from `ab_captures` and
    `benchmark_names` from the old `names` column (also its label). It keeps its `created`, and its id unless a
    result already has that id (or keeping it would put it before an A/B result moved earlier): then it gets the
    next free id and its JSON's `ab_id` keeps the old one. JSON that does not parse is moved as it is, for the
    reader to report on that row."""
    captures: dict[int, dict[str, list[int]]] = {}
    for ab_id, variant, capture_id in conn.execute("SELECT ab_id, variant, capture_id FROM ab_captures "
                                                   "ORDER BY capture_id"):
        captures.setdefault(ab_id, {}).setdefault(variant, []).append(capture_id)
    taken = {row[0] for row in conn.execute("SELECT id FROM results")}
    last = 0
    for ab_id, created, names, result in conn.execute("SELECT id, created, names, result FROM ab_results "
                                                      "ORDER BY id").fetchall():
        try:
            data = json.loads(result)
        except (ValueError, TypeError):
            data = None
        if isinstance(data, dict):
            result = _dumps({**data, "ab_id": ab_id, _AB_BEFORE_7.label: names, "captures": captures.get(ab_id, {})})
        kept = ab_id if ab_id not in taken and ab_id > last else None
        last = conn.execute("INSERT INTO results (id, created, kind, data, label) VALUES (?, ?, ?, ?, ?)",
                            (kept, created, _AB_BEFORE_7.name, result, names)).lastrowid
        taken.add(last)
    conn.execute("DROP TABLE ab_captures")
    conn.execute("DROP TABLE ab_results")


def _add_blob_tables(conn: sqlite3.Connection) -> None:
    """7 -> 8: `result_blobs` (the blobs each saved result refers to), filled for the results already there as
    their kinds declare (`_BLOBS_BEFORE_8`), and `held_blobs` (blobs a writer holds until the result that refers to
    them is saved; see `BlobHold`)."""
    _execute_script(conn, _BLOB_TABLES)
    for select in _BLOBS_BEFORE_8.values():
        conn.execute(f"INSERT OR IGNORE INTO result_blobs {select}")


_UPGRADES: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _add_ab_tables, 2: _add_specialization, 3: _add_results_table, 4: _rename_triton_version,
    5: _add_result_columns, 6: _move_ab_results, 7: _add_blob_tables,
}
"""The upgrade steps in order, by the schema each upgrades from: `_UPGRADES[n]` takes schema n to n + 1."""


def _referenced(conn: sqlite3.Connection, digest: str) -> bool:
    """Whether a capture's artifact or a saved result refers to the blob `digest` (through their indexes)."""
    return conn.execute("SELECT 1 FROM artifacts WHERE sha256 = ?1 UNION ALL SELECT 1 FROM result_blobs "
                        "WHERE sha256 = ?1 LIMIT 1", (digest,)).fetchone() is not None


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


@functools.lru_cache(maxsize=1)
def _expected_columns() -> dict[str, list[str]]:
    """Each table's columns as `_SCHEMA` declares them (read from a scratch in-memory database)."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(_SCHEMA)
    tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE "
                                             "'sqlite_%'")]
    return {table: _columns(conn, table) for table in tables}


def _check_columns(conn: sqlite3.Connection, index_path: Path) -> None:
    """A damaged or foreign index fails here, naming what it lacks, not later in a query with a traceback."""
    for table, wanted in _expected_columns().items():
        have = set(_columns(conn, table))
        missing = [column for column in wanted if column not in have]
        if missing:
            what = f"table {table} is missing" if have else f"table {table} is missing entirely:"
            raise TritonhookError(f"{index_path}: not a usable tritonhook index ({what} {', '.join(missing)})")


def _file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of `path`, None when it is gone: what tells a file from another put in its place."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_dev, stat.st_ino


def _never_initialised(conn: sqlite3.Connection, store: Path) -> str:
    """What to add to "no schema version" when the index has no table at all: its creator stopped first."""
    if conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]:
        return ""
    cause = _likely_cause(store)
    return (f"; the index is empty: its first writer stopped before setting it up{'; ' + cause if cause else ''}"
            f"; any capture into this store sets it up")


def _unfinished(store: Path) -> str:
    """Why `store` has no index.sqlite, for the error saying so: a folder that holds blobs/ is a store whose
    creation stopped before its index was made (a full disk, a permission: no error is left to say which)."""
    if not (store / "blobs").is_dir():
        return "no tritonhook store here (missing index.sqlite)"
    cause = _likely_cause(store) or "a full disk or a permission error may have stopped it"
    return (f"a store never finished: blobs/ is here but index.sqlite is not, its creation stopped before making "
            f"the index ({cause}); any capture into this store finishes it")


def _likely_cause(store: Path) -> str | None:
    """"a full disk may have stopped it: N bytes free ..." where under `FULL_BELOW_BYTES` are free now, else None:
    the guess at why a store's creation stopped, where no error is left to tell."""
    free = free_bytes(store)
    if free is None or free >= FULL_BELOW_BYTES:
        return None
    return f"a full disk may have stopped it: {free} bytes free on its file system now"


def _blob_matches(path: Path, digest: str, size: int) -> bool:
    try:
        return sha256_hex(read_input(path, "blob", limit=size)) == digest
    except TritonhookError:
        return False


def _blob_files(blobs_dir: Path) -> dict[str, set[Path]]:
    """The files under blobs/: final blobs (named by their sha256) and temporary ones (dot-names)."""
    found: dict[str, set[Path]] = {"blobs": set(), "temporary": set()}
    if not blobs_dir.is_dir():
        return found
    for entry in _listing(blobs_dir):
        children = _listing(Path(entry.path)) if _FANOUT.fullmatch(entry.name) and entry.is_dir() else [entry]
        for child in children:
            if not child.is_file(follow_symlinks=False):
                continue  # a directory (an NFS .snapshot, say) is never a blob nor a temporary file
            if child.name.startswith("."):
                found["temporary"].add(Path(child.path))
            elif _DIGEST.fullmatch(child.name):
                found["blobs"].add(Path(child.path))
    return found


_STORE_FILES = frozenset({"index.sqlite", "index.sqlite-wal", "index.sqlite-shm", "index.sqlite-journal", "blobs"})
"""What a store's folder holds before its index is set up: what a first opener that stopped (a full disk) leaves."""


def _listing(folder: Path) -> list[os.DirEntry]:
    """The entries of a folder of the blob tree; one this user may not read is a `TritonhookError` naming it:
    a check of every blob cannot be made without it."""
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError as exc:
        raise TritonhookError(f"{folder}: cannot list the store's blobs ({exc.strerror or exc})") from None


_DIGEST = re.compile(r"[0-9a-f]{64}")
_FANOUT = re.compile(r"[0-9a-f]{2}")
