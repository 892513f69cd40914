"""What users see when something is wrong: the one exception type, and warnings at their own line.

Every failure caused by bad input (a file that is not a cubin, a store from a newer schema, an unwritable
directory, an unsupported Triton) is raised as a `TritonhookError` whose message names the file or object and
what is wrong with it, so the CLI can print one line instead of a traceback.

A warning tritonhook issues while Triton compiles or launches (a capture that failed, a decision not applied, a
predicted stack reservation) is issued deep inside Triton; `warn` names the user's line that compiled or launched
the kernel, not a line of Triton's or ours.
"""

from __future__ import annotations

import os
import sys
import warnings

_INSIDE = ("tritonhook", "triton")
"""The packages between a user's call and a warning issued for it: a warning names the first frame outside them."""


class TritonhookError(Exception):
    """A user-facing error: the message says which file/object is wrong and why."""


class Stopped(Exception):
    """A signal tritonhook passed on to a user's command (`launcher.Workload`) ended it: the tritonhook command
    stops there too, and exits with `status`, the command's own (what the command chose when it handled the
    signal, 128 + N when signal N killed it). Not a `TritonhookError`: nothing was wrong, and a caller that
    turns errors into a failed item must not go on to the next one."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status
        self.partial = None  # what the command made before the signal, where a caller can still show it


def warn(message: str) -> None:
    """A RuntimeWarning located at the first caller outside tritonhook and Triton (`_user_stacklevel`)."""
    warnings.warn(message, RuntimeWarning, stacklevel=_user_stacklevel())


def _user_stacklevel() -> int:
    """The `stacklevel` that makes a warning issued by our caller name the first frame outside tritonhook and
    Triton (a listener runs deep inside Triton's compile). Frames of importlib's bootstrap are passed over without
    counting, as `warnings.warn` passes over them. Computed here: `skip_file_prefixes` needs Python 3.12."""
    inside = tuple(os.path.dirname(module.__file__) + os.sep for module in map(sys.modules.get, _INSIDE)
                   if getattr(module, "__file__", None))
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None:
        frame = frame.f_back
        filename = frame.f_code.co_filename
        if "importlib" in filename and "_bootstrap" in filename:
            continue
        level += 1
        if not filename.startswith(inside):
            break
    return level
