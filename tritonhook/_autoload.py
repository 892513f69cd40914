"""Enable capture the moment a process finishes importing `triton`.

After Triton's own `__init__` has run (so `triton.knobs` exists), `tritonhook.enable` runs with the settings from
the environment (`_imports.after_import`). If Triton is already imported, capture is enabled at once.

Under `tritonhook run` / `capture` (`config.capture.NOTE_IMPORTS` set) the process also notes what its summary needs and
cannot see otherwise: that this Python has no Triton to import, and that it imported cuTile, whose compiles only
`capture --wheel-ptxas` records.
"""

from __future__ import annotations

from ._imports import after_import, note, waiting_for


def _enable(_triton_module=None) -> None:
    from .errors import TritonhookError, warn
    from .ptx_capture import enable_from_env
    from .sweep.recorder import start_from_env as record_from_env

    try:
        enable_from_env()
        record_from_env()
    except TritonhookError as exc:
        warn(f"tritonhook: capture not enabled: {exc}")


def install() -> None:
    if not waiting_for("triton"):
        after_import("triton", _enable)
    _note_imports()


def _note_imports() -> None:
    """Leave the notes the module docstring names, when the command's runner asked for them."""
    import importlib.util

    from . import config

    if not (folder := config.capture.NOTE_IMPORTS.get()):
        return
    if importlib.util.find_spec("triton") is None:
        note(folder, config.capture.NOTED_TRITON_MISSING)
    after_import("cuda.tile", lambda _module: note(folder, config.capture.NOTED_CUTILE))
