"""Enable capture the moment a process finishes importing `triton`.

A `sys.meta_path` finder that wraps the loader of the top-level `triton` package: after Triton's own
`__init__` has run (so `triton.knobs` exists), it calls `tritonhook.enable` with the settings from the
environment. If Triton is already imported, capture is enabled at once.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import warnings


def _enable() -> None:
    from .errors import TritonhookError
    from .session import enable_from_env
    from .sweep.record import start_from_env as record_from_env

    try:
        enable_from_env()
        record_from_env()
    except TritonhookError as exc:
        warnings.warn(f"tritonhook: capture not enabled: {exc}", RuntimeWarning, stacklevel=2)


class _LoaderThenEnable(importlib.abc.Loader):
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _remove_finder()
        _enable()

    def __getattr__(self, name):  # get_resource_reader, is_package, ...
        return getattr(self._loader, name)


class _TritonImportFinder(importlib.abc.MetaPathFinder):
    """Stays in place until Triton is really imported: `importlib.util.find_spec("triton")` (torch's `has_triton`
    probes so before importing it) calls this too, and a finder that left after the first call missed the import
    that followed, so a torch.compile'd script was never captured (seen on the H200)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "triton":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)  # PathFinder does not consult meta_path
        if spec is not None and spec.loader is not None:
            spec.loader = _LoaderThenEnable(spec.loader)
        return spec


def _remove_finder() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _TritonImportFinder)]


def install() -> None:
    if "triton" in sys.modules:
        _enable()
    elif not any(isinstance(f, _TritonImportFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _TritonImportFinder())
