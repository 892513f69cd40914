"""The ptxas wrapper: `tritonhook ptxas install | uninstall | status`, and the program the wrapper runs.

This module replaces a ptxas binary with a recorder; `tritonhook.binaries` finds and runs ptxas binaries. The wrapper program
imports only the store, `binaries` and `ptx` (standard library below them), so a recorded ptxas call stays cheap.

On disk, for a ptxas binary at P::

    P                     the wrapper: a sh + Python script whose first lines carry MARKER and its settings
    P.tritonhook-real     the real binary, a hard link to P's original inode (so its bytes and mode never change)
    P.tritonhook-new      the wrapper while it is being written (only during an install)

Install: write NEW, hard-link P to REAL, rename NEW over P. Uninstall: rename REAL over P. Renames and links are
atomic, so at every instant P or REAL (or both) is the real binary: a killed install or uninstall loses nothing,
`status` names the half state from what is on disk, and `uninstall` (or a new `install`) finishes the job.

The wrapper is read by /bin/sh and by Python (see `wrapper_script`): sh execs the Python that installed it, or the
real ptxas when that Python is gone, so a removed virtualenv never breaks ptxas; arguments pass as "$@", never
re-split. It runs the real binary first and records afterwards; a recording failure is reported on
stderr after ptxas's own output and never changes ptxas's exit status, output file or stdout.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from .. import config, processes, ptx as _ptx
from .._imports import note_lost_captures
from ..errors import TritonhookError
from ..store import NewCapture, Store
from ..binaries import find_ptxas, ptxas_version

if TYPE_CHECKING:
    from ..launcher import Ptxas

MARKER = "# tritonhook-ptxas-wrapper"
REAL_SUFFIX = ".tritonhook-real"
NEW_SUFFIX = ".tritonhook-new"

NOT_INSTALLED = "not-installed"
INSTALLED = "installed"
INTERRUPTED_INSTALL = "interrupted-install"      # P is the real binary; REAL and/or NEW are left over
INSTALLING = "install-in-progress"               # the same on disk, while the process installing it lives
REAL_ONLY = "real-binary-moved"                  # P is missing, REAL holds the binary
STALE_REAL = "stale-real-binary"                 # P is a real binary, REAL is a different one (P was replaced)
WRAPPER_WITHOUT_REAL = "wrapper-without-real"    # P is our wrapper but REAL is gone: not recoverable here
ORPHANED = "left-by-dead-capture"                # P is a wrapper installed for a capture run that is dead
MISSING = "missing"
NOT_PTXAS = "not-a-ptxas"                        # P is a directory, or a file that is no executable ELF

# ptxas options whose value is the next argument (long and short spellings, ptxas 12.8 to 13.x).
_VALUE_OPTIONS = frozenset("""
    -o --output-file -arch --gpu-name -m --machine -O --opt-level -e --entry -maxrregcount --maxrregcount
    -func-maxrregcount --device-function-maxrregcount -minnctapersm --minnctapersm -maxntid --maxntid
    -optf --options-file -ias --input-as-string -Ofc --Ofast-compile -fmad --fmad -pic
    --position-independent-code -allow-expensive-optimizations --allow-expensive-optimizations
    -device-stack-protector --device-stack-protector -regUsageLevel --register-usage-level -sanitize --sanitize
    -split-compile --split-compile --regAllocOptLevel -dlcm --def-load-cache -dscm --def-store-cache
    -flcm --force-load-cache -fscm --force-store-cache
""".split())


# ----- the on-disk state ---------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class WrapperStatus:
    """What is at one ptxas location; `detail` says it in words and what `uninstall` would do."""

    path: str
    state: str
    real: str
    leftovers: list[str]
    settings: dict
    detail: str

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def real_path(path: str | os.PathLike) -> str:
    return f"{path}{REAL_SUFFIX}"


def new_path(path: str | os.PathLike) -> str:
    return f"{path}{NEW_SUFFIX}"


def read_settings(path: str | os.PathLike) -> dict | None:
    """The settings line of a tritonhook wrapper, or None when `path` is not one (or cannot be read)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return None
    if MARKER.encode() not in head:
        return None
    for line in head.decode("utf-8", errors="replace").splitlines():
        if line.startswith("SETTINGS = "):
            return ast.literal_eval(line.split("=", 1)[1].strip())
    return {}


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def status(ptxas: str | os.PathLike) -> WrapperStatus:
    """Classify what is on disk at `ptxas` (any state an interrupted install or uninstall can leave)."""
    path = _resolve(ptxas)
    real, new = real_path(path), new_path(path)
    leftovers = [p for p in (real, new) if os.path.lexists(p)]
    settings = read_settings(path)
    exists, has_real = os.path.lexists(path), os.path.exists(real)
    if settings is not None:
        if not has_real:
            state, detail = (WRAPPER_WITHOUT_REAL, f"wrapper in place but {real} is gone; reinstall the toolkit "
                                                   f"that provided ptxas")
        elif (owner := _dead_owner(settings)) is not None:
            state, detail = (ORPHANED, f"wrapper left by a dead capture run (pid {owner}): ptxas runs but nothing is "
                                       f"recorded; the next `tritonhook capture` restores the real binary, or run: "
                                       f"tritonhook ptxas uninstall --ptxas {path}")
        else:
            state, detail = INSTALLED, f"wrapper in place; ptxas runs as {real}{_recording_note(settings)}"
        return WrapperStatus(path, state, real, [p for p in leftovers if p != real], settings, detail)
    if not exists:
        state, detail = ((REAL_ONLY, f"ptxas is missing, the real binary is at {real}; uninstall moves it back")
                         if has_real else (MISSING, "no ptxas here"))
    elif has_real and not _same_file(path, real):
        state, detail = STALE_REAL, f"{real} is an older binary than ptxas (replaced meanwhile); uninstall removes it"
    elif leftovers:
        installer = (read_settings(new) or {}).get("owner")
        if installer and not processes.is_dead(installer):
            state, detail = INSTALLING, f"being wrapped by a capture run (pid {installer['pid']}); ptxas is intact"
        else:
            state, detail = INTERRUPTED_INSTALL, "an install was interrupted; ptxas is intact; uninstall cleans up"
    elif (not_ptxas := _not_ptxas(path)) is not None:
        state, detail = NOT_PTXAS, not_ptxas
    else:
        state, detail = NOT_INSTALLED, "plain ptxas, no wrapper"
    return WrapperStatus(path, state, real, leftovers, {}, detail)


def _not_ptxas(path: str) -> str | None:
    """Why what is at `path` cannot be a ptxas (a directory, a file nobody may run), or None. A script may be one (a
    site's ptxas that execs the real binary), so only those two are said; `install` says more of what it wraps."""
    if os.path.isdir(path):
        return "a directory, not a ptxas binary"
    if not os.access(path, os.X_OK):
        return "not an executable file: no ptxas"
    return None


def _recording_note(settings: dict) -> str:
    """Why an installed wrapper no longer records: the Python that installed it is gone (ptxas still runs)."""
    python = settings.get("python")
    if python and not os.access(python, os.X_OK):
        return (f"; NOT RECORDING: its Python {python} is gone (ptxas runs plain); uninstall, then install "
                f"again from a Python that stays")
    return ""


def _dead_owner(settings: dict) -> int | None:
    """The pid of the process a wrapper was installed for (`install(owner=...)`) when that process is dead; None
    when it lives or the wrapper has no owner. The pid alone could be a later process's: its start time must
    match too."""
    owner = settings.get("owner")
    if owner and processes.is_dead(owner):
        return owner["pid"]
    return None


def _resolve(ptxas: str | os.PathLike) -> str:
    """The file to wrap: symlinks are followed, so a link such as /usr/local/bin/ptxas keeps pointing at it."""
    return os.path.realpath(os.path.abspath(ptxas))


# ----- install / uninstall --------------------------------------------------------------------------------------
StepHook = Callable[[str], None]


def install(ptxas: str | os.PathLike, *, store: str | os.PathLike | None = None,
            on_step: StepHook | None = None, token: str | None = None, owner: int | None = None) -> WrapperStatus:
    """Put the wrapper in place of the ptxas binary at `ptxas`; a second install is a no-op.

    `store` is where calls are recorded when `$TRITONHOOK_STORE` is unset at call time (default: that variable now,
    else ./tritonhook-store, made absolute). `on_step(name)` is called after each step, so a test can stop there.
    `token`: record only the calls of processes whose $TRITONHOOK_CAPTURE_TOKEN equals it (others run ptxas
    unrecorded): what a wrapper installed for one command's duration needs, since the binary is shared.
    `owner`: the pid of the process that will uninstall it (with its start time, where /proc has it): once that
    process is dead without having done so, `status` says ORPHANED and `restore_orphans` puts the binary back.
    """
    step = on_step or (lambda name: None)
    current = status(ptxas)
    if current.state == INSTALLED:
        return current
    if current.state == WRAPPER_WITHOUT_REAL:  # status read P's settings: P is a wrapper (the INSTALLED case left)
        raise TritonhookError(f"{current.path}: is a tritonhook wrapper (of {current.settings.get('real')}); "
                              f"refusing to wrap a wrapper")
    if current.state not in (NOT_INSTALLED, INTERRUPTED_INSTALL, NOT_PTXAS):  # NOT_PTXAS: _check_wrappable says why
        raise TritonhookError(f"{current.path}: cannot install ({current.detail})")
    path = current.path
    version = _check_wrappable(path)
    _remove_leftovers(current)
    step("cleaned")
    settings = {"ptxas": path, "real": real_path(path), "version": version, "store": _default_store(store),
                "token": token, "owner": processes.identity(owner) if owner is not None else None}
    _write_new(path, wrapper_script(settings))
    step("wrapper-written")
    try:
        os.link(path, real_path(path))
    except OSError as exc:
        raise TritonhookError(f"{path}: cannot keep the real binary as {real_path(path)} "
                              f"({exc.strerror or exc}); the wrapper needs a hard link in the same directory") from None
    step("real-linked")
    os.replace(new_path(path), path)
    _fsync_dir(path)
    step("wrapper-in-place")
    return status(path)


def uninstall(ptxas: str | os.PathLike, *, on_step: StepHook | None = None) -> WrapperStatus:
    """Put the real binary back (from any state `status` reports but WRAPPER_WITHOUT_REAL and MISSING)."""
    step = on_step or (lambda name: None)
    current = status(ptxas)
    if current.state in (WRAPPER_WITHOUT_REAL, MISSING, NOT_PTXAS, INSTALLING):
        raise TritonhookError(f"{current.path}: cannot uninstall ({current.detail})")
    if current.state in (INSTALLED, ORPHANED, REAL_ONLY):
        if read_settings(current.real) is not None:
            raise TritonhookError(f"{current.real}: is a tritonhook wrapper, not the real ptxas; not restoring it")
        os.replace(current.real, current.path)
        _fsync_dir(current.path)
        step("real-restored")
    _remove_leftovers(status(current.path))
    step("cleaned")
    return status(current.path)


def _check_wrappable(path: str) -> str:
    """The ptxas version of `path`; raises unless it is a real ptxas binary we may wrap."""
    if path.endswith((REAL_SUFFIX, NEW_SUFFIX)):
        raise TritonhookError(f"{path}: is tritonhook's own bookkeeping file; wrap the ptxas next to it")
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise TritonhookError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if magic != b"\x7fELF":
        raise TritonhookError(f"{path}: not a ptxas executable (a script or another wrapper?); refusing to wrap "
                              f"a wrapper: pass the binary it runs with --ptxas")
    if not os.access(os.path.dirname(path), os.W_OK):
        raise TritonhookError(f"{os.path.dirname(path)}: not writable; the wrapper is installed next to ptxas")
    version = ptxas_version(path)
    if not version:
        raise TritonhookError(f"{path}: does not answer --version like ptxas; not wrapping it")
    return version


def _remove_leftovers(current: WrapperStatus) -> None:
    """Delete NEW, and REAL when P still is (or has replaced) the real binary; never the only copy."""
    for leftover in current.leftovers:
        if leftover == current.real and current.state not in (INTERRUPTED_INSTALL, STALE_REAL):
            continue
        os.unlink(leftover)
    if current.leftovers:
        _fsync_dir(current.path)


def _write_new(path: str, text: str) -> None:
    """Write the wrapper under its temporary name, durable and with ptxas's permission bits."""
    target = new_path(path)
    mode = os.stat(path).st_mode & 0o7777
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(target, mode)


def _fsync_dir(path: str) -> None:
    fd = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _default_store(store: str | os.PathLike | None) -> str:
    return str(config.store_path(store).resolve())


def wrapper_script(settings: dict) -> str:
    """The wrapper program for `settings` (ptxas, real, version, store).

    It is a file both /bin/sh and Python read: sh runs first and execs this Python on the same file with the
    same arguments ("$@": a list, never re-split), or, when that interpreter is gone (its virtualenv removed),
    execs the real ptxas, so ptxas keeps working and only the recording stops. Python sees the sh part as a
    string. If tritonhook cannot be imported any more, the Python part still execs ptxas. The tritonhook it imports
    is the one that wrote it, first on the path: another one installed in that Python records otherwise.
    """
    package_parent = str(Path(__file__).resolve().parents[2])  # the folder holding the tritonhook package
    settings = {**settings, "python": sys.executable}
    shell = "\n".join([
        f"python={shlex.quote(sys.executable)}",
        'if [ -x "$python" ]; then exec "$python" -Es "$0" "$@"; fi',
        f'exec {shlex.quote(settings["real"])} "$@"',
    ])
    if "'''" in shell:
        raise TritonhookError(f"{sys.executable} or {settings['real']}: a path with three quotes in a row cannot "
                              f"go into the wrapper")
    return "\n".join([
        "#!/bin/sh",
        f"{MARKER}: records each call, then runs the real ptxas. Remove with: tritonhook ptxas uninstall "
        f"--ptxas {settings['ptxas']}",
        "\"true\" r'''\\'",  # sh: runs `true`; Python: opens a raw string holding the sh lines below
        shell,
        "'''",
        f"SETTINGS = {settings!r}",
        "import os, sys",
        "try:",
        f"    sys.path.insert(0, {package_parent!r})",  # the tritonhook that wrote it, not another installed
        "    from tritonhook.ptxas.wrapper import wrapper_main",
        "except Exception:",
        "    os.execv(SETTINGS['real'], [sys.argv[0], *sys.argv[1:]])",
        "sys.exit(wrapper_main(SETTINGS, sys.argv))",
        "",
    ])


# ----- the wrapper program ----------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Invocation:
    """What a ptxas command line asks for: its PTX inputs, the output file and the target."""

    inputs: list[str]
    output: str
    gpu_name: str | None


def parse_invocation(args: Sequence[str]) -> Invocation:
    inputs, output, gpu_name = [], "elf.o", None  # ptxas writes elf.o when no -o is given
    values = iter(args)
    for arg in values:
        name, has_value, inline = arg.partition("=")
        if arg.startswith("-"):
            value = inline if has_value else (next(values, None) if name in _VALUE_OPTIONS else None)
            if name in ("-o", "--output-file") and value is not None:
                output = value
            elif name in ("-arch", "--gpu-name") and value is not None:
                gpu_name = value
        else:
            inputs.append(arg)
    return Invocation([p for p in inputs if os.path.isfile(p)], output, gpu_name)


def wrapper_main(settings: dict, argv: list[str]) -> int:
    """Run the real ptxas with `argv[1:]`, pass its stderr and exit status through, record the call."""
    args = argv[1:]
    call = parse_invocation(args)
    foreign = settings.get("token") not in (None, config.ptxas.CAPTURE_TOKEN.get())  # not the capture's process
    if not call.inputs or foreign:  # --version, --help, ...: nothing to record
        os.execv(settings["real"], [argv[0], *args])
    start, started = time.time(), time.perf_counter()
    completed = subprocess.run([argv[0], *args], executable=settings["real"], stderr=subprocess.PIPE)
    seconds = time.perf_counter() - started
    sys.stderr.buffer.write(completed.stderr)
    sys.stderr.flush()
    try:
        record_call(settings, args, call, completed.returncode, completed.stderr, seconds, start)
    except Exception as exc:  # noqa: BLE001 - recording must never change what ptxas did
        sys.stderr.write(f"tritonhook ptxas wrapper: call not recorded ({type(exc).__name__}: {exc})\n")
        note_lost_captures(1)
    return _exit_status(completed.returncode)


def _exit_status(returncode: int) -> int:
    """ptxas's own status; a ptxas killed by a signal kills the wrapper with the same signal."""
    if returncode < 0:
        signal.signal(-returncode, signal.SIG_DFL)
        os.kill(os.getpid(), -returncode)
    return returncode


def record_call(settings: dict, args: list[str], call: Invocation, returncode: int, stderr: bytes,
                seconds: float, start: float) -> int:
    """One store capture for one ptxas run; returns its id. Its frontend is "cutile" when the process that ran
    ptxas is cuTile's `tileiras`, else "ptxas" (see `caller_frontend`)."""
    ptx = Path(call.inputs[0]).read_bytes()
    entries = _ptx.entries(ptx)
    artifacts = {"ptx": ptx}
    if returncode == 0 and _written_since(call.output, start):
        artifacts["cubin"] = Path(call.output).read_bytes()
    entry = entries[0] if entries else Path(call.inputs[0]).stem
    frontend, frontend_version = caller_frontend(os.getppid())
    store = Store(config.capture.STORE.get() or settings["store"])
    try:
        return store.add(NewCapture(
            event="compile" if returncode == 0 else "error", frontend=frontend, kernel=entry, entry=entry,
            original_entry=entry, src_file=os.path.abspath(call.inputs[0]), src_line=None,
            arch=call.gpu_name or _arch(ptx), frontend_version=frontend_version,
            ptxas_path=settings["ptxas"], ptxas_version=settings["version"], triton_hash=None,
            options={"argv": args},
            metadata={"name": entry, "entries": entries, "argv": args, "cwd": os.getcwd(), "exit_code": returncode,
                      "stderr": stderr.decode("utf-8", errors="replace"), "inputs": call.inputs,
                      "output": os.path.abspath(call.output), "real": settings["real"], "parent_pid": os.getppid()},
            times={"ptxas": seconds}, artifacts=artifacts))
    finally:
        store.close()


TILEIRAS = "tileiras"
"""cuTile's compiler (nvidia-cuda-tileiras); it runs the ptxas beside it, so a wrapper there sees its calls
(docs/triton_hooks.md#neighbouring-tools)."""


def caller_frontend(parent_pid: int) -> tuple[str, str]:
    """(frontend, version) of the process that ran ptxas, for the capture record: ("cutile", the cuda-tile version
    installed beside it) when its executable is cuTile's `tileiras`, ("cutile", "") when no cuda-tile package sits
    beside that tileiras; ("ptxas", "") for any other caller and wherever /proc cannot say (not Linux, the parent
    already gone, another user's process): then the frontend is unknown, and so is its version."""
    try:
        executable = Path(os.readlink(f"/proc/{parent_pid}/exe"))
    except OSError:
        return "ptxas", ""
    if executable.name != TILEIRAS:
        return "ptxas", ""
    return "cutile", _version_beside(executable, "cuda-tile")


def _version_beside(executable: Path, distribution: str) -> str:
    """The version of `distribution` installed in a directory above `executable` (a wheel's binary lives in
    site-packages/nvidia/cu13/bin/, the package's metadata in site-packages/), "" when there is none."""
    from importlib import metadata

    found = next(iter(metadata.distributions(name=distribution, path=[str(p) for p in executable.parents])), None)
    return found.version if found is not None else ""


def _arch(ptx: bytes) -> str:
    try:
        return _ptx.target(ptx)
    except TritonhookError:
        return "unknown"


def _written_since(path: str, start: float) -> bool:
    try:
        return os.stat(path).st_mtime >= start - 1
    except OSError:
        return False


# ----- where to install by default -------------------------------------------------------------------------------
PIP_ORIGIN = "pip "
"""`find_ptxas` origin of the ptxas in a pip wheel (`nvidia-cuda-nvcc`: nvidia/cu13/bin/ptxas, ...)."""
_DEFAULT_ORIGINS = ("triton ", "$CUDA_HOME", "$CUDA_PATH", "CUDA toolkit", "PATH", PIP_ORIGIN)


def default_targets(origins: tuple[str, ...] = _DEFAULT_ORIGINS) -> list[str]:
    """The real ptxas binaries users expect tools to run: Triton's bundled ones, $CUDA_HOME, /usr/local/cuda*,
    PATH, pip wheels (symlinks followed; scripts that exec another ptxas are skipped, the binary they run is listed).
    `origins` narrows them to some of those places."""
    found = [_resolve(b.path) for b in find_ptxas() if b.origin.startswith(origins)]
    return [path for path in dict.fromkeys(found) if _is_elf(path) or read_settings(path) is not None]


def status_targets() -> list[str]:
    """default_targets plus any half-installed ptxas in their directories (found by our bookkeeping files)."""
    targets = default_targets()
    for directory in dict.fromkeys(os.path.dirname(p) for p in targets):
        for entry in sorted(os.listdir(directory)):
            for suffix in (REAL_SUFFIX, NEW_SUFFIX):
                if entry.endswith(suffix):
                    targets.append(os.path.join(directory, entry.removesuffix(suffix)))
    return list(dict.fromkeys(targets))


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == b"\x7fELF"
    except OSError:
        return False


# ----- tritonhook capture: wrappers on the side, and wheel ptxas wrapped for the command's duration ---------------
def side_wrappers(workdir: str | os.PathLike, store: str | os.PathLike, environ: dict | None = None) -> Ptxas:
    """The ptxas of a command whose ptxas calls should be recorded into `store` without an install: wrappers
    (written in `workdir`) around the ptxas Triton would have run for each of its two variables (the user's
    override, else the bundled one), and a folder put first on PATH with a wrapper around PATH's ptxas. A ptxas
    that already is an installed wrapper is left alone (it records already)."""
    from ..launcher import Ptxas

    bundled = {b.origin: b.path for b in find_ptxas() if b.origin in dict(config.ptxas.TRITON_OVERRIDES)}
    wrapped = {}
    for origin, var in config.ptxas.TRITON_OVERRIDES:
        real = var.get(environ) or bundled.get(origin)
        if real and read_settings(real) is None:
            wrapped[var] = _side_wrapper(Path(workdir, "triton", origin.split()[1]), real, store)
    on_path = shutil.which("ptxas", path=config.paths.PATH.encode(config.paths.PATH.get(environ)) or None)
    path_first = None
    if on_path and read_settings(on_path) is None:
        _side_wrapper(Path(workdir, "path", "ptxas"), on_path, store)
        path_first = str(Path(workdir, "path"))
    return Ptxas(wrapped.get(config.ptxas.TRITON_PTXAS_PATH), wrapped.get(config.ptxas.TRITON_PTXAS_BLACKWELL_PATH),
                 path_first=path_first)


@contextlib.contextmanager
def wheel_ptxas_wrapped(store: str | os.PathLike, token: str, targets: list[str] | None = None
                        ) -> Iterator[list[str]]:
    """Wrap the pip-wheel ptxas binaries in place until the block ends; yields the paths wrapped. Only processes
    whose $TRITONHOOK_CAPTURE_TOKEN is `token` are recorded: other users of that ptxas meanwhile are not.

    Some tools run the ptxas beside them by its absolute path and honour no variable: cuTile's `tileiras`
    (nvidia-cuda-tileiras) runs nvidia/cu13/bin/ptxas from its own directory and looks nowhere else, and cuTile
    drops CUDA_HOME when it uses the wheel. No side wrapper can reach those calls, so the binary itself is
    wrapped for the duration (the crash-safe install above, owned by this process) and put back afterwards. What
    a dead run left (a wrapper, a half install) is put right first; one that a live run holds, or that cannot be
    wrapped (read-only site-packages), is named on stderr, with whose it is, and skipped: never silently.
    `targets`: the binaries to wrap (default: every pip-wheel ptxas)."""
    wrapped = []
    try:
        for path in default_targets(origins=(PIP_ORIGIN,)) if targets is None else targets:
            with _directory_locked(path):  # one capture run at a time decides about this binary
                _restore_if_left_by_the_dead(path)
                current = status(path)
                if current.state != NOT_INSTALLED:
                    print(f"tritonhook: {path}: {_why_not_wrapped(current)}; this run's calls of it are not "
                          f"recorded", file=sys.stderr)
                    continue
                try:
                    install(path, store=store, token=token, owner=os.getpid())
                    wrapped.append(path)
                except TritonhookError as exc:
                    print(f"tritonhook: {exc}; calls of that ptxas are not recorded", file=sys.stderr)
        yield wrapped
    finally:
        for path in wrapped:
            with _directory_locked(path):
                uninstall(path)


def _why_not_wrapped(current: WrapperStatus) -> str:
    """Why a capture run cannot wrap a binary, for the line it prints: a live run's wrapper names that run."""
    owner = (current.settings or {}).get("owner")
    if current.state == INSTALLED and owner:
        return f"wrapped by another capture run (pid {owner['pid']}) until it ends"
    return current.detail


@contextlib.contextmanager
def _directory_locked(path: str) -> Iterator[None]:
    """An exclusive lock on the directory holding `path` (flock on the directory itself: no file of ours beside
    ptxas), so that two capture runs never install, restore or clean the same binary at once."""
    import fcntl

    fd = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


def restore_orphans(targets: list[str] | None = None) -> list[str]:
    """Put right every pip-wheel ptxas that a killed `tritonhook capture --wheel-ptxas` left behind (its owner is
    dead): a wrapper put back to the real binary, a half install cleaned up; said on stderr; returns the paths
    restored. Left so, the wrapper records for a store and token nobody uses, a half install reads as another
    run's, and the next capture would skip the binary and record nothing. `targets`: the binaries to look at
    (default: every pip-wheel ptxas)."""
    restored = []
    for path in default_targets(origins=(PIP_ORIGIN,)) if targets is None else targets:
        with _directory_locked(path):
            if _restore_if_left_by_the_dead(path):
                restored.append(path)
    return restored


def _restore_if_left_by_the_dead(path: str) -> bool:
    """Restore `path` when a dead capture run left it wrapped or half installed (see `restore_orphans`)."""
    left = status(path)
    if left.state not in (ORPHANED, INTERRUPTED_INSTALL):
        return False
    owner = left.settings.get("owner") or (read_settings(new_path(path)) or {}).get("owner")
    by = f"by a capture run that died (pid {owner['pid']})" if owner else "by an install that was interrupted"
    what = "wrapped" if left.state == ORPHANED else "half wrapped (killed during its install)"
    try:
        uninstall(path)
    except (OSError, TritonhookError) as exc:
        print(f"tritonhook: {path}: left {what} {by} and cannot be restored from here "
              f"({getattr(exc, 'strerror', None) or exc}); ptxas runs unrecorded until "
              f"`tritonhook ptxas uninstall --ptxas {path}` does it", file=sys.stderr)
        return False
    print(f"tritonhook: {path}: restored the real ptxas, left {what} {by}", file=sys.stderr)
    return True


def tileiras_ptxas() -> list[str]:
    """The pip-wheel ptxas binaries that cuTile's `tileiras` runs (one beside it): calls that only
    `wheel_ptxas_wrapped` (`tritonhook capture --wheel-ptxas`) can record."""
    return [path for path in default_targets(origins=(PIP_ORIGIN,))
            if os.path.exists(os.path.join(os.path.dirname(path), TILEIRAS))]


def _side_wrapper(path: Path, real: str, store: str | os.PathLike) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = {"ptxas": real, "real": real, "version": ptxas_version(real), "store": _default_store(store)}
    path.write_text(wrapper_script(settings))
    path.chmod(0o755)
    return str(path)
