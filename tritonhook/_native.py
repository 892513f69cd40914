"""tritonhook's C helpers: built from the package's `.c` sources at first use, cached, and loaded.

Why built at first use rather than at install: an editable or pure-Python install stays what it is, and any machine
that launches Triton kernels already has what this needs, since Triton builds its own launchers the same way: a C
compiler (`$CC`, else cc, gcc or clang) and Python's headers. The built module sits in `$TRITONHOOK_CACHE`,
named by a hash of its source, the interpreter's ABI tag and the compiler, so an edit or another Python builds
afresh; it is written to a temporary name and renamed, so processes building at once do not read half a file.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

from . import config
from .errors import TritonhookError

SOURCES = Path(__file__).parent


def compiler() -> str:
    """The C compiler: `$CC`, else the first of cc, gcc, clang on PATH."""
    chosen = config.paths.CC.get() or next((found for name in ("cc", "gcc", "clang") if (found := shutil.which(name))),
                                           None)
    if not chosen:
        raise TritonhookError("no C compiler: set CC or install one (gcc), as Triton needs for its launchers")
    return chosen


@functools.cache
def load(name: str) -> ModuleType:
    """The C module `name` (source `tritonhook/<name>.c`), built if its cached build is missing."""
    source = SOURCES / f"{name}.c"
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    cc = compiler()
    digest = hashlib.sha256(source.read_bytes() + suffix.encode() + cc.encode()).hexdigest()[:16]
    built = Path(os.path.expanduser(config.paths.CACHE.get())) / f"{name}-{digest}{suffix}"
    if not built.exists():
        _build(source, built, cc)
    spec = importlib.util.spec_from_file_location(f"tritonhook.{name}", built)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(source: Path, target: Path, cc: str) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TritonhookError(f"{target.parent}: cannot create the C helper cache ({exc.strerror or exc}); "
                              f"set TRITONHOOK_CACHE to a writable folder") from None
    include = sysconfig.get_paths()["include"]
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        partial = Path(scratch) / target.name
        command = [cc, "-O2", "-shared", "-fPIC", "-Wall", f"-I{include}", str(source), "-o", str(partial)]
        try:
            done = subprocess.run(command, capture_output=True, text=True)
        except OSError as exc:
            raise TritonhookError(f"{source}: cannot run the C compiler {cc} ({exc.strerror or exc}); set CC to "
                                  f"one (gcc), as Triton needs for its launchers") from None
        if done.returncode != 0:
            raise TritonhookError(f"{source}: building it with {cc} failed (exit {done.returncode}):\n"
                                  f"{done.stderr.strip()[-2000:]}")
        os.replace(partial, target)
