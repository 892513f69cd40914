"""CuTe DSL (nvidia-cutlass-dsl) kernels into the capture store, as captures shaped like Triton's.

ptxas and libNVVM are linked into the DSL, so no ptxas wrapper ever sees its kernels
(docs/capture_beyond_triton.md#cute-dsl-as-it-behaves). What the DSL offers instead, both used here:

* a compiled function's `__ptx__` / `__cubin__` (set only when it was compiled with `--keep-ptx --keep-cubin` in
  `options=`, or `CUTE_DSL_KEEP=ptx,cubin`): `capture_compiled(compiled)`;
* its keep options' dump directory (`<function>.<arch>.ptx` / `.cubin`; it must exist beforehand, else nothing
  is written): `collect_dump_dir(dir)`, which `tritonhook capture` runs after the command.

Each capture has frontend "cute", `kernel` = the DSL function name, `entry` = the first PTX `.entry` (every entry
in `metadata["entries"]`), `arch` from the PTX `.target`, artifacts "ptx" (trailing NUL of dumped PTX removed) and
"cubin", `ptxas_version` from the cubin's tool note. So `tritonhook diff` and `preflight` take these ids too.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..cubin import Cubin
from ..errors import TritonhookError
from ..launcher import CuteKeep
from ..rename import ptx_entries
from ..ptx_capture import active_session
from ..ptx import target as ptx_target
from ..store import NewCapture, Store

FRONTEND = "cute"
KEEP_OPTIONS = "--keep-ptx --keep-cubin"
"""Add to `cute.compile(..., options=...)` so the compiled function keeps what `capture_compiled` reads (the DSL
also writes the files into its dump directory: add `--dump-dir DIR`, else they land in the current directory)."""

_DUMPED = re.compile(r"^(?P<function>.+)\.(?P<arch>sm_\w+)\.(?P<ext>ptx|cubin)$")


def dsl_version() -> str | None:
    """The installed nvidia-cutlass-dsl version, read without importing the DSL (which takes seconds)."""
    from importlib import metadata

    try:
        return metadata.version("nvidia-cutlass-dsl")
    except metadata.PackageNotFoundError:
        return None


def keep_settings(dump_dir: str | os.PathLike) -> CuteKeep:
    """What makes CuTe DSL processes dump PTX and cubins into `dump_dir` (created here): 4.5+ reads `CUTE_DSL_KEEP`,
    4.4 its two switches (`launcher.CuteKeep`)."""
    Path(dump_dir).mkdir(parents=True, exist_ok=True)
    return CuteKeep(str(Path(dump_dir).resolve()), legacy=bool(re.match(r"4\.[0-4]\.", dsl_version() or "")))


def capture_compiled(compiled, store: Store | str | os.PathLike | None = None) -> int:
    """Record a CuTe DSL compiled function (the result of `cute.compile`); returns the capture id."""
    name = str(getattr(compiled, "function_name", None) or type(compiled).__name__)
    ptx, cubin = getattr(compiled, "__ptx__", None), getattr(compiled, "__cubin__", None)
    if ptx is None and cubin is None:
        raise TritonhookError(f"CuTe DSL function {name}: it kept no PTX or cubin; compile it with "
                              f"options='{KEEP_OPTIONS}' (or CUTE_DSL_KEEP=ptx,cubin)")
    return _add(_open(store), name, _as_bytes(ptx), _as_bytes(cubin), origin="compiled function",
                dsl=dsl_version())


def collect_dump_dir(dump_dir: str | os.PathLike, store: Store | str | os.PathLike | None = None, *,
                     since: float | None = None) -> list[int]:
    """Record every `<function>.<arch>.ptx/.cubin` pair in a CuTe DSL dump directory (modified at or after
    `since`, a time.time() value, when given); returns the capture ids in file-name order."""
    directory = Path(dump_dir)
    if not directory.is_dir():
        raise TritonhookError(f"{directory}: not a directory (CuTe DSL writes nothing unless its dump dir exists)")
    found: dict[tuple[str, str], dict[str, bytes]] = {}
    for path in sorted(directory.iterdir()):
        match = _DUMPED.match(path.name)
        if match and path.is_file() and (since is None or path.stat().st_mtime >= since):
            found.setdefault((match["function"], match["arch"]), {})[match["ext"]] = path.read_bytes()
    opened, dsl = _open(store), dsl_version()
    return [_add(opened, function, files.get("ptx"), files.get("cubin"), origin=f"dump dir {directory}", dsl=dsl)
            for (function, _arch), files in found.items()]


def _as_bytes(value) -> bytes | None:
    if value is None:
        return None
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def _open(store: Store | str | os.PathLike | None) -> Store:
    """The given store, else the active session's, else $TRITONHOOK_STORE / ./tritonhook-store."""
    if store is None:
        session = active_session()
        if session is not None:
            return session.store
    return Store.of(store)


def _add(store: Store, function: str, ptx: bytes | None, cubin: bytes | None, *, origin: str,
         dsl: str | None) -> int:

    text = ptx.rstrip(b"\0").decode("utf-8", errors="replace") if ptx is not None else ""
    parsed = Cubin.from_bytes(cubin, label=f"CuTe DSL {function} cubin") if cubin is not None else None
    entries = ptx_entries(text) if text else list(parsed.kernels) if parsed else []
    entry = entries[0] if entries else function
    try:
        arch = ptx_target(text)
    except TritonhookError:  # no PTX (or no .target in it): the cubin's
        arch = parsed.arch if parsed else "unknown"
    artifacts = {stage: data for stage, data in (("ptx", text.encode("utf-8") if ptx is not None else None),
                                                 ("cubin", cubin)) if data is not None}
    return store.add(NewCapture(
        event="compile", frontend=FRONTEND, kernel=function, entry=entry, original_entry=entry, src_file=None,
        src_line=None, arch=arch, frontend_version=dsl or "", ptxas_path=None,
        ptxas_version=(parsed.tool.version or None) if parsed else None, triton_hash=None,
        options={"gpu_arch": arch},
        metadata={"name": entry, "entries": entries, "function_name": function, "origin": origin,
                  "cutlass_dsl_version": dsl},
        times={}, artifacts=artifacts))
