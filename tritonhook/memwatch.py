"""memwatch's public API: where did the device memory go, and which kernel took it.

    with tritonhook.memwatch(device=0, interval_ms=2) as mw:
        run_model()
    mw.report()                 # rich tables: attribution, kernels; mw.to_json(), mw.plot("mem.png")

    from tritonhook.memwatch import MemwatchResult, load_result, reset_stack_limit

The implementation lives beneath, in `tritonhook.mem` (sampler, snapshots, attribution, results, the child
runner). This module stays light on purpose: `import tritonhook` binds the package attribute `memwatch` to the
function below (after importing this module, so the attribute is the function, not the module), and every name of
`tritonhook.mem` is loaded here on first use, so that `import tritonhook` and every `tritonhook` command pay nothing
for NVML, the sampler or the attribution until memwatch is used.
"""

from __future__ import annotations

import importlib


def memwatch(device: int = 0, interval_ms: float = 2.0, *, triton_hooks: bool = True, store=None, label: str = ""):
    """Watch device memory in a region: `with tritonhook.memwatch(device=0) as mw: ...` or as a decorator (a
    `tritonhook.mem.MemWatch`). `triton_hooks=False` samples NVML alone, with no snapshot per Triton launch.
    `store` (a Store or its path): save each region's result there, under `label`, for `tritonhook report`."""
    from .mem.watch import MemWatch

    return MemWatch(device, interval_ms, triton_hooks=triton_hooks, store=store, label=label)


def _implementation():
    return importlib.import_module(".mem", __package__)


def __getattr__(name: str):
    if name.startswith("__") or name not in _implementation().__all__:
        raise AttributeError(f"module 'tritonhook.memwatch' has no attribute {name!r}")
    value = getattr(_implementation(), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_implementation().__all__})
