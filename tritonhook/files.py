"""The files tritonhook reads and writes where a user or a kernel name says: one helper per job, so every command
fails alike.

Why: every command that writes a user-given path (`-o`, `--out`, `--junit`, `decisions export FILE`) must turn a
directory, a missing folder or a read-only place into one line, not a traceback, and alike in all of them.
`write_file` writes and turns any OSError into a `TritonhookError` naming the path and the system's reason (a full
disk said as such); `check_writable` asks the same before a long run, so minutes of measurement are not lost to a
typo in an output path. `file_name` makes a file name of a kernel name: Triton compiles a kernel of a 245-character
name (it caps its own cache names at 150), and the file system refuses names over 255 bytes. `read_input` is the one
way a file the user names is read (PTX, cubins, control files, decisions, recordings, baselines, memwatch JSON):
only a regular file, and never more than its cap, since `/dev/zero` or a FIFO has a size of 0 and no end.
`create_new` is the one way a file or folder that must be this process's alone is made (a store's index, the
demo's store, the file `check_writable` tries): "is it there? then make it" lets two processes both make it.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import stat
from pathlib import Path

from .errors import TritonhookError

NAME_LIMIT = 150
"""The longest file name `file_name` makes from a name, before the caller's suffix: Triton's own cap for its cache
files, which leaves room for a suffix and a temporary file's tail under the usual 255-byte limit."""
FULL_BELOW_BYTES = 1 << 20
"""Free space under which a store left unfinished (no error is there any more to say why) is said to be on a
nearly full disk, as a likely cause: a failed write itself names a full disk only when its error says so."""
INPUT_LIMIT_BYTES = 1 << 30
"""The most `read_input` reads of a file by default: far beyond any cubin, fatbin, PTX or recording seen, and well
inside a machine's memory."""


def read_input(path: str | os.PathLike, what: str, *, limit: int = INPUT_LIMIT_BYTES, label: str | None = None
               ) -> bytes:
    """The bytes of the regular file at `path`; anything else is a `TritonhookError` naming `label` (default: the
    path) and the WHAT: missing, unreadable, a folder, a device, a FIFO or a socket (refused without reading: it may
    never end), or over `limit` bytes (at most `limit` + 1 are read to tell)."""
    label = str(path) if label is None else label
    try:  # O_NONBLOCK: opening a FIFO with no writer would wait for one; it does nothing to a regular file
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        raise TritonhookError(f"{label}: cannot read the {what} ({exc.strerror or exc})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise TritonhookError(f"{label}: {_kind_of(mode)}, where the {what} must be a regular file")
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise TritonhookError(f"{label}: cannot read the {what} ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise TritonhookError(f"{label}: over {limit} bytes, the most a {what} may be")
    return data


def _kind_of(mode: int) -> str:
    """What a file that is not regular is, in words."""
    for test, kind in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "a special file"


def create_new(path: str | os.PathLike, *, folder: bool = False) -> bool:
    """Make the empty file (with `folder`: the folder) `path`, and its parent folders, unless something is there:
    True when this call made it. One system call decides (O_EXCL, mkdir), so of processes racing to make it one
    alone gets True. Other failures are the OSError (each caller says what it was making)."""
    path = Path(path)
    _make_parents(path)
    try:
        if folder:
            os.mkdir(path)
        else:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except FileExistsError:
        return False
    return True


def holding_others(folder: str | os.PathLike, own: frozenset[str]) -> str | None:
    """"a folder holding other files (a, b, c, ...)" when `folder` holds names outside `own`, else None: a folder
    given for a store or a demo must be new, empty or theirs, so that a mistyped path (a home folder, `/`) is not
    filled up beside the user's own files."""
    others = sorted(set(os.listdir(folder)) - own)
    if not others:
        return None
    return f"a folder holding other files ({', '.join(others[:3])}{', ...' if len(others) > 3 else ''})"


def write_file(path: str | os.PathLike, data: str | bytes, what: str) -> Path:
    """Write `data` (text as UTF-8) to `path`, making its folders; any OSError is a `TritonhookError`:
    "PATH: cannot write the WHAT (REASON)"."""
    path = Path(path)
    try:
        _make_parents(path)
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    except OSError as exc:
        raise cannot_write(path, what, exc) from None
    return path


def _make_parents(path: Path) -> None:
    """Make the missing folders above `path`; one that is a file is an OSError whose reason names it ("A is not a
    folder": mkdir's own "File exists" names neither it nor what is wrong)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        blocking = next(p for p in path.parents if p.exists() and not p.is_dir())
        raise NotADirectoryError(errno.ENOTDIR, f"{blocking} is not a folder") from None


def check_writable(path: str | os.PathLike | None, what: str) -> None:
    """Raise as `write_file` would if `path` (None: nothing to check) cannot be written, before a run whose result
    goes there; a file this makes to find out is removed again."""
    if path is None:
        return
    path = Path(path)
    try:
        real = path.resolve()  # where `path` is a link that points at nothing, the file it would make
        if create_new(real):
            real.unlink()
        else:
            with open(path, "ab"):
                pass
    except OSError as exc:
        raise cannot_write(path, what, exc) from None


def cannot_write(path: Path, what: str, exc: OSError) -> TritonhookError:
    """The one line for a failed write of `path`; a full disk says how much space is left."""
    return TritonhookError(f"{path}: cannot write the {what} ({disk_full_reason(path, exc) or exc.strerror or exc})")


def disk_full_reason(path: Path, exc: BaseException) -> str | None:
    """"disk full: N bytes free on the file system of PATH" where `exc` says the disk is full (ENOSPC, EDQUOT, or
    SQLite's SQLITE_FULL) of a file system, else None: a write that failed for another reason (a permission,
    /proc) on a nearly full disk failed for that reason, and a device's "no space" (/dev/full) is no disk's; saying
    "disk full" would send the user looking in the wrong place."""
    if _is_device(path):
        return None
    if isinstance(exc, OSError) and exc.errno == errno.EDQUOT:
        return f"disk quota exceeded on the file system of {path}"
    if not (isinstance(exc, OSError) and exc.errno == errno.ENOSPC
            or (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF == _SQLITE_FULL):
        return None
    free = free_bytes(path)
    return f"disk full: {'some' if free is None else free} bytes free on the file system of {path}"


def _is_device(path: Path) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # a file not made yet: its folder's file system is what refused it
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode)


_SQLITE_FULL = 13
"""`sqlite3.SQLITE_FULL` (the primary code of an SQLite error's `sqlite_errorcode`), without importing sqlite3 into
every command that writes a file."""


def free_bytes(path: Path) -> int | None:
    """Bytes a writer may use on the file system holding `path` (or its nearest existing parent); None where none
    can be asked."""
    for where in (path, *path.parents):
        try:
            stats = os.statvfs(where)
        except OSError:
            continue
        return stats.f_bavail * stats.f_frsize
    return None


def json_text(value, **options) -> str:
    """`value` as strict JSON (`json.dumps` with `options`), the one way a file meant for other programs is written
    (decisions, baselines, traces, memwatch results, `--json` output): a NaN or an infinity, which Python writes as
    the bare words NaN and Infinity that strict parsers (browsers, jq, Go, Rust) refuse, is written null, as
    JavaScript's JSON.stringify writes it."""
    return json.dumps(_finite(value), allow_nan=False, **options)


def _finite(value):
    """`value` with every float that is not finite replaced by None, in dicts, lists and tuples at any depth."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def file_name(name: str, suffix: str = "") -> str:
    """`name` + `suffix` as one file name: path separators replaced, and a name longer than `NAME_LIMIT` cut there
    with a short hash of the whole name, so two long names that share their start stay two files."""
    name = name.replace(os.sep, "_").replace("\0", "_")
    if len(name.encode()) > NAME_LIMIT:
        digest = hashlib.sha256(name.encode()).hexdigest()[:12]
        name = f"{name.encode()[:NAME_LIMIT - 13].decode(errors='ignore')}-{digest}"
    return name + suffix
