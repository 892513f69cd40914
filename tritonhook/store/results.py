"""Result kinds: the saved results of every command (a recording, a sweep, a memwatch run, ...), each of a kind its
producer declares (`ResultKind`, `register_result_kind`), saved and read back typed (`SavedResults`)."""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Callable, Iterable

from .. import format
from ..errors import TritonhookError
from .blobs import BlobHold
from .records import _dumps, row_id


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


class SavedResults:
    """The store's `results` table: saving a result under its declared kind, removing it, and
    reading results back typed by their kind's loader."""

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
