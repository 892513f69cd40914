"""tritonhook: see what the Triton compiler (and ptxas) did to your kernels.

    import tritonhook
    tritonhook.enable()          # capture every Triton compile into ./tritonhook-store
    ...
    tritonhook.disable()         # Triton's hooks are put back as they were

or `tritonhook run -- python script.py` with no source edit.
"""

from . import ab
from .errors import TritonhookError
from .session import Session, active_session, disable, enable, session
from .rename import STRIP
from .store import Capture, Store

from ._version import __version__

__all__ = ["STRIP", "Capture", "Session", "Store", "TritonhookError", "ab", "active_session", "disable", "enable",
           "memwatch", "session", "__version__"]


def __getattr__(name: str):
    """`tritonhook.memwatch` (a callable module) is imported on first use: `import tritonhook` stays cheap and works
    without NVML or cuda-bindings."""
    if name == "memwatch":
        import importlib

        return importlib.import_module(".memwatch", __name__)
    raise AttributeError(f"module 'tritonhook' has no attribute {name!r}")
