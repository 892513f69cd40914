"""Queries and paging: captures by kernel, arch, event and id (`CaptureQueries.captures`), and one page of a listing
by keyset (`page`), through the index's indexes rather than scans."""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Iterable

from ..errors import TritonhookError
from .records import _CAPTURE_COLUMNS, Artifact, Capture, _capture_from_row, row_id


class CaptureQueries:
    """The store's capture reads: filtered queries, counts, and the keyset pages of
    `tritonhook ls`."""

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


def _compile_regex(pattern: str) -> re.Pattern:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise TritonhookError(f"--kernel {pattern!r}: not a valid regular expression ({exc})") from None
