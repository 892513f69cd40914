"""Enable capture the moment a process finishes importing `triton`.

After Triton's own `__init__` has run (so `triton.knobs` exists), `tritonhook.enable` runs with the settings from
the environment (`_imports.after_import`). If Triton is already imported, capture is enabled at once.
"""

from __future__ import annotations

import warnings

from ._imports import after_import, waiting_for


def _enable(_triton_module=None) -> None:
    from .errors import TritonhookError
    from .ptx_capture import enable_from_env
    from .sweep.record import start_from_env as record_from_env

    try:
        enable_from_env()
        record_from_env()
    except TritonhookError as exc:
        warnings.warn(f"tritonhook: capture not enabled: {exc}", RuntimeWarning, stacklevel=2)


def install() -> None:
    if not waiting_for("triton"):
        after_import("triton", _enable)
