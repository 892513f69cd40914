"""Connection and migrations: opening a store's SQLite index (WAL mode; read-only, or writable and created where
allowed), its write transactions, and its schema, brought up to `SCHEMA_VERSION` one numbered step at a time
(`_UPGRADES`)."""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import secrets
import sqlite3
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

from .. import config
from ..errors import TritonhookError
from ..files import FULL_BELOW_BYTES, create_new, disk_full_reason, free_bytes, holding_others
from .records import ROW_ID_MAX, _dumps
from .results import ResultKind


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


class NewerStoreError(TritonhookError):
    """The store's schema is newer than this tritonhook reads: not damage (a newer tritonhook reads it whole), so
    `doctor` advises upgrading rather than moving it aside."""


class IndexConnection:
    """The store's folder and its index: opening it, one connection per process, write transactions, the
    schema brought up to date."""

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
    def of(cls, store: "IndexConnection | str | os.PathLike | None", *, create: bool = True,
           readonly: bool = False) -> "IndexConnection":
        """`store` itself when it is a Store, else the store at that path (None: $TRITONHOOK_STORE or
        ./tritonhook-store) opened with these flags: the one place where an argument that may be either a store or
        its path becomes a Store, for every function that takes both."""
        return store if isinstance(store, cls) else cls(store, create=create, readonly=readonly)

    # ----- opening -------------------------------------------------------------------------------------------
    def run_folder(self, feature: str) -> Path:
        """Where one run of `feature` (upgrade, bisect, tune, confirm) keeps its files in this store, made here:
        `FEATURE/<time>-<pid>`, so a listing sorts runs by start, with `-2`, `-3`, ... for a run that starts in the
        same second and process as another (a bisect upgrades to several releases in a second when their builds
        are cached): a run that took another's folder would overwrite its cells."""
        stem = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        for n in itertools.count(1):
            folder = self.path / feature / (stem if n == 1 else f"{stem}-{n}")
            try:
                folder.mkdir(parents=True)
                return folder
            except FileExistsError:
                continue
            except OSError as exc:
                raise TritonhookError(f"{folder}: cannot make this run's folder "
                                      f"({disk_full_reason(folder.parent, exc) or exc.strerror})") from None

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
            type(self)(self.path, create=False).close()
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
        type(self)(self.path).close()  # a writable open upgrades it

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


_STORE_FILES = frozenset({"index.sqlite", "index.sqlite-wal", "index.sqlite-shm", "index.sqlite-journal", "blobs"})
"""What a store's folder holds before its index is set up: what a first opener that stopped (a full disk) leaves."""
