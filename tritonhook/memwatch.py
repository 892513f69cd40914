"""memwatch: where did the device memory go, and which kernel took it.

    from tritonhook import memwatch
    with memwatch.watch(device=0, interval_ms=2) as mw:
        run_model()
    mw.report()                 # rich tables: attribution, kernels; mw.to_json(), mw.plot("mem.png")

    from tritonhook.memwatch import MemwatchResult, load_result, reset_stack_limit

This module is memwatch's public API, `__all__` its one list: `watch`, and the names users and the CLI take from its
implementation, the package `tritonhook.mem` beneath (sampler, snapshots, attribution, results, the child runner),
each imported from the module that defines it. `import tritonhook` does not import it (the package loads it on first use, as it does its other
features), so that `import tritonhook` and the commands that watch no memory pay nothing for NVML, the sampler or
the attribution.
"""

from __future__ import annotations

from .mem.attribution import Part, Snapshot, StackGrowth, attribute, stack_growths
from .mem.device import DeviceInfo, reset_stack_limit
from .mem.result import (JSON_VERSION, JSON_WHAT, PLOT_WHAT, KernelStats, MemwatchComparison, MemwatchResult,
                         compare_rows, load_result, write_json)
from .mem.runner import NOT_STARTED, parse_compare, run_command, wrap_python_command
from .mem.sampler import Sample
from .mem.watch import MemWatch

__all__ = ["JSON_VERSION", "JSON_WHAT", "NOT_STARTED", "PLOT_WHAT", "DeviceInfo", "KernelStats", "MemWatch",
           "MemwatchComparison", "MemwatchResult", "Part", "Sample", "Snapshot", "StackGrowth", "attribute",
           "compare_rows", "load_result", "parse_compare", "reset_stack_limit", "run_command", "stack_growths", "watch",
           "write_json", "wrap_python_command"]


def watch(device: int = 0, interval_ms: float = 2.0, *, triton_hooks: bool = True, store=None,
          label: str = "") -> MemWatch:
    """Watch device memory in a region: `with memwatch.watch(device=0) as mw: ...`, or `@memwatch.watch(...)` on a
    function. `triton_hooks=False` samples NVML alone, with no snapshot per Triton launch. `store` (a Store or its
    path): save each region's result there, under `label`, for `tritonhook report`."""
    return MemWatch(device, interval_ms, triton_hooks=triton_hooks, store=store, label=label)
