"""The test suites' memo of Triton's `triton_key()`, shared by every Python process of a scripts/test-matrix.sh run.

Why: `triton.runtime.cache.triton_key()` (part of every compile's cache key, hit or miss) hashes Triton's own files,
libtriton.so among them (415-505 MB in 3.6-3.9): 2-4 s on a CI core, paid again by each fresh process, and the suites
start hundreds (every `tritonhook run`/`ab`/`capture` child, every workload, every rebuild worker). Triton's own
test harness hands its worker processes the parent's key the same way (`triton/_internal_testing.py`).

How: scripts/test-matrix.sh puts this module and a .pth file importing it in the shared virtualenv's site-packages
(which every release's virtualenv reaches) and sets $TRITONHOOK_TEST_TRITON_KEY_MEMO to a folder. Once
`triton.runtime.cache` is imported, its `triton_key` is wrapped: the key Triton computed is kept in that folder
under a fingerprint of the files it reads (path, size and modification time of each file under triton/compiler,
triton/backends, triton/language, the module itself and libtriton), so a changed or other Triton computes its own.
The value is Triton's, byte for byte; without the variable nothing is wrapped. Nothing is imported until Triton is.
"""

from __future__ import annotations

import os
import sys

MEMO_VARIABLE = "TRITONHOOK_TEST_TRITON_KEY_MEMO"
MODULE = "triton.runtime.cache"


def _fingerprint(triton_root: str, cache_module: str) -> str:
    """The files `triton_key` reads, each as path, size and modification time: a file changed in place (a serial
    test's wrapped ptxas, a reinstall) gives another fingerprint."""
    import hashlib

    parts = []
    paths = [cache_module, os.path.join(triton_root, "_C")]
    for folder in ("compiler", "backends", "language"):
        for parent, _, files in os.walk(os.path.join(triton_root, folder)):
            paths += [os.path.join(parent, name) for name in files]
    for path in sorted(paths):
        if os.path.isdir(path):  # _C: libtriton in whichever extension suffix this Python uses
            path = os.path.join(path, next(name for name in sorted(os.listdir(path)) if name.startswith("libtriton.")))
        stat = os.stat(path)
        parts.append(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _memoized(module, folder: str):
    """`module.triton_key`, read from `folder` when a process of this run computed it for these files already."""
    computed = module.triton_key
    known = []

    def triton_key() -> str:
        if not known:
            path = os.path.join(folder, _fingerprint(os.path.dirname(os.path.dirname(module.__file__)),
                                                     module.__file__))
            try:
                with open(path, encoding="utf-8") as file:
                    known.append(file.read())
            except FileNotFoundError:
                known.append(computed())
                os.makedirs(folder, exist_ok=True)
                partial = f"{path}.{os.getpid()}"  # processes racing to write it write the same text
                with open(partial, "w", encoding="utf-8") as file:
                    file.write(known[0])
                os.replace(partial, path)
        return known[0]

    return triton_key


class _LoaderThen:
    """`triton.runtime.cache`'s own loader, wrapping `triton_key` once the module's code ran (before any module
    that imports it by name can)."""

    def __init__(self, loader, folder: str):
        self._loader, self._folder = loader, folder

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, _WaitForTritonCache)]
        module.triton_key = _memoized(module, self._folder)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _WaitForTritonCache:
    """In `sys.meta_path` until `triton.runtime.cache` is imported, not merely looked for (the protocol of
    `importlib.abc.MetaPathFinder`, without importing importlib.abc into every process)."""

    def __init__(self, folder: str):
        self._folder = folder

    def find_spec(self, fullname, path=None, target=None):
        if fullname != MODULE:
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _LoaderThen(spec.loader, self._folder)
        return spec


def install() -> None:
    folder = os.environ.get(MEMO_VARIABLE)
    if folder and MODULE not in sys.modules and not any(isinstance(f, _WaitForTritonCache) for f in sys.meta_path):
        sys.meta_path.insert(0, _WaitForTritonCache(folder))


install()
