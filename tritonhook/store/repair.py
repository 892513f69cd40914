"""Verify and repair: every blob a row refers to checked against its name, and the files no row needs (orphan blobs,
temporary files) found and, with `repair=True`, removed without racing a writer at work (`StoreRepair.verify`,
`VerifyReport`)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sqlite3
import time
from pathlib import Path
from typing import Iterable

from .. import config, format, processes
from ..errors import TritonhookError
from .connection import _meta_number


class StoreRepair:
    """The store's check of its blobs and its repair, and the count of repairs that writers
    re-check their blobs against."""

    def _repairs(self, conn: sqlite3.Connection | None = None) -> int:
        """How many repairs have removed files from this store: a writer that sees it change between its blobs
        and its rows re-checks those blobs (`_restore_removed_blobs`) inside its write transaction."""
        if conn is None:
            with self._lock:
                return self._repairs(self._connection())
        return _meta_number(conn, "repairs", self.index_path) or 0

    def verify(self, *, repair: bool = False, min_age: float = config.capture.REPAIR_MIN_AGE_S) -> VerifyReport:
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

    def remove_unreferenced(self, paths: Iterable[str], *,
                            min_age: float = config.capture.REPAIR_MIN_AGE_S) -> list[str]:
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
        its recorded start time; one on another host (or where /proc could not say) for `config.capture.HOLD_MAX_AGE_S`.
        `drop_dead` (inside a write transaction) deletes the dead holders' rows."""
        here, now = processes.host(), time.time()
        live, dead = set(), set()
        for digest, holder, host, pid, start, created in conn.execute("SELECT sha256, holder, host, pid, start, "
                                                                      "created FROM held_blobs"):
            if host == here and start is not None:
                alive = not processes.is_dead({"pid": pid, "start": start})
            else:
                alive = now - created < config.capture.HOLD_MAX_AGE_S
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


def _referenced(conn: sqlite3.Connection, digest: str) -> bool:
    """Whether a capture's artifact or a saved result refers to the blob `digest` (through their indexes)."""
    return conn.execute("SELECT 1 FROM artifacts WHERE sha256 = ?1 UNION ALL SELECT 1 FROM result_blobs "
                        "WHERE sha256 = ?1 LIMIT 1", (digest,)).fetchone() is not None


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
