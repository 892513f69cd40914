"""Capture records: what a producer hands the store (`NewCapture`), what it reads back (`Capture`), and writing
them (`CaptureWriter.add`, `add_many`); the row ids every query takes (`row_id`) and the JSON the rows keep."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Iterable

from ..errors import TritonhookError


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


def _capture_from_row(row: tuple, artifacts: dict[str, Artifact]) -> Capture:
    values = dict(zip(("id",) + _CAPTURE_COLUMNS, row))
    for key in ("options", "metadata", "times"):
        values[key] = json.loads(values[key])
    return Capture(**values, artifacts=artifacts)


class CaptureWriter:
    """The store's capture writes: the blobs first, then the index rows of each capture in one
    transaction, so a capture is either fully listed or absent."""

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
