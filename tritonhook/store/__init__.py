"""The capture store: an SQLite index (WAL mode) plus a content-addressed blob directory.

Layout of a store directory::

    index.sqlite          captures, their artifacts, schema version
    blobs/ab/abcdef...    one file per distinct artifact, named by its sha256

Why this shape: many processes (torchrun ranks, pytest-xdist workers, Inductor compile workers) write at once.
Blobs are written to a temporary file and renamed into place, so a reader never sees half a blob under its
final name; the index rows of one capture are inserted in a single transaction, so a capture is either fully
listed or absent. Identical artifacts (the same PTX compiled twice, a cache hit) share one blob.

One job a module: `records` (captures, writing them, row ids), `results` (result kinds, saved results), `blobs` (blob
files and holds), `connection` (opening the index, transactions, schema and its upgrades), `queries` (capture queries
and paging), `repair` (verify and repair). `Store` is the one class over them; the names below are the package's API.
"""

from .blobs import BlobHold, Blobs
from .connection import SCHEMA_VERSION, IndexConnection, NewerStoreError
from .queries import CaptureQueries
from .records import TRITON_FRONTENDS, Artifact, Capture, CaptureRecord, CaptureWriter, NewCapture, specialization_label
from .repair import StoreRepair, VerifyReport
from .results import ResultKind, SavedResults, UnknownResult, register_result_kind, result_kind_text


class Store(CaptureWriter, CaptureQueries, SavedResults, Blobs, StoreRepair, IndexConnection):
    """A capture store on disk. Safe to share between processes and threads.

    `Store(path)` opens (creating when `create=True`) the store; `readonly=True` opens an existing store without
    writing anything, for users who may read a shared store but not write it; `captures(...)` queries it;
    `read(capture, stage)` returns an artifact's bytes after checking its hash.
    """


__all__ = ["SCHEMA_VERSION", "TRITON_FRONTENDS", "Artifact", "BlobHold", "Capture", "CaptureRecord", "NewCapture",
           "NewerStoreError", "ResultKind", "Store", "UnknownResult", "VerifyReport", "register_result_kind",
           "result_kind_text", "specialization_label"]
