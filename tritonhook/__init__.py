"""tritonhook: see what the Triton compiler (and ptxas) did to your kernels.

    import tritonhook
    tritonhook.enable()          # capture every Triton compile into ./tritonhook-store
    ...
    tritonhook.disable()         # Triton's hooks are put back as they were

or `tritonhook run -- python script.py` with no source edit.
"""

from . import ab
from .errors import TritonhookError
from .ptx_capture import Session, active_session, disable, enable, session
from .rename import STRIP
from .store import Capture, Store

__version__ = "0.1.0"

__all__ = ["STRIP", "Capture", "Session", "Store", "TritonhookError", "ab", "active_session", "disable", "enable", "session",
           "__version__"]
