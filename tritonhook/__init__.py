"""tritonhook: see what the Triton compiler (and ptxas) did to your kernels.

    import tritonhook
    tritonhook.enable()          # capture every Triton compile into ./tritonhook-store
    ...
    tritonhook.disable()         # Triton's hooks are put back as they were

or `tritonhook run -- python script.py` with no source edit.
"""

from ._imports import after_import
from ._version import __version__
from .errors import TritonhookError


def _preflight_checker():
    """Every capture session warns when a kernel it captures would make the driver reserve gigabytes of stack
    (`preflight.capture_checker`). Wired here, above both, so that the capture core imports no feature; preflight
    itself is imported at the first `enable()`, not at `import tritonhook`."""
    from .preflight import capture_checker

    return capture_checker()


def _decision_applier(source: str, store):
    """`enable(apply=...)`'s transforms (`decisions.apply.applier`), wired here for the same reason as preflight's
    checker; the decisions package is imported only when a session applies decisions."""
    from .decisions.apply import applier

    return applier(source, store)


def _wire(ptx_capture) -> None:
    ptx_capture.LISTENER_FACTORIES.append(_preflight_checker)
    ptx_capture.APPLIERS.append(_decision_applier)


after_import(f"{__name__}.ptx_capture", _wire)
"""The capture core is wired the moment it is imported, by whichever path (`tritonhook.enable`, `import
tritonhook.ptx_capture`, a child's start-up hook), and not before: `import tritonhook` loads neither it nor the store,
so `tritonhook --version` and the reading commands start without SQLite's and the capture core's imports."""

_LAZY = {"ab": (".ab", None), "STRIP": (".rename", "STRIP"), "memwatch": (".memwatch", None),
         "enable": (".ptx_capture", "enable"), "disable": (".ptx_capture", "disable"),
         "session": (".ptx_capture", "session"), "Session": (".ptx_capture", "Session"),
         "active_session": (".ptx_capture", "active_session"), "Capture": (".store", "Capture"),
         "Store": (".store", "Store")}
"""The public names (`__all__`), imported on first use: `import tritonhook` (and so every `tritonhook` command)
stays cheap. Any other module is imported by its own name (`from tritonhook import config`)."""

__all__ = ["STRIP", "Capture", "Session", "Store", "TritonhookError", "ab", "active_session", "disable", "enable",
           "memwatch", "session", "__version__"]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'tritonhook' has no attribute {name!r}")
    import importlib

    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name, __name__)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_LAZY})
