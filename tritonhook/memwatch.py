"""Old path of `tritonhook.mem` (kept for one release), and still the callable `tritonhook.memwatch(...)`.

`python -m tritonhook.memwatch` is the child side of `tritonhook memwatch` (`mem.runner.child_main`).
"""

import sys

from .mem import *  # noqa: F401,F403 - the old module's public names
from .mem import __all__, memwatch
from .mem.device import Gpu as _Gpu  # noqa: F401 - old private names some callers reach for
from .mem.runner import child_main as main
from .mem.scratch import ScratchRecorder as _ScratchRecorder  # noqa: F401


class _CallableModule(type(sys)):
    """`tritonhook.memwatch` is both this module and the function the issue's API calls: once the submodule is
    imported, Python binds the package attribute `memwatch` to the module, so the module itself is callable."""

    def __call__(self, *args, **kwargs):
        return memwatch(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

if __name__ == "__main__":
    sys.exit(main())
