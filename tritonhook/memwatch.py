"""memwatch: where did the device memory go, and which kernel took it.

    from tritonhook import memwatch
    with memwatch.watch(device=0, interval_ms=2) as mw:
        run_model()
    mw.report()                 # rich tables: attribution, kernels; mw.to_json(), mw.plot("mem.png")

    from tritonhook.memwatch import MemwatchResult, load_result, reset_stack_limit

This module is memwatch's public API: `watch` and every public name of its implementation, the package
`tritonhook.mem` beneath (sampler, snapshots, attribution, results, the child runner), whose `__all__` is the one
list of them. `import tritonhook` does not import it (the package loads it on first use, as it does its other
features), so that `import tritonhook` and the commands that watch no memory pay nothing for NVML, the sampler or
the attribution.
"""

from __future__ import annotations

from . import mem
from .mem import *  # noqa: F403 - the implementation's public names, listed once in `mem.__all__`
from .mem.watch import MemWatch

__all__ = [*mem.__all__, "watch"]


def watch(device: int = 0, interval_ms: float = 2.0, *, triton_hooks: bool = True, store=None,
          label: str = "") -> MemWatch:
    """Watch device memory in a region: `with memwatch.watch(device=0) as mw: ...`, or `@memwatch.watch(...)` on a
    function. `triton_hooks=False` samples NVML alone, with no snapshot per Triton launch. `store` (a Store or its
    path): save each region's result there, under `label`, for `tritonhook report`."""
    return MemWatch(device, interval_ms, triton_hooks=triton_hooks, store=store, label=label)
