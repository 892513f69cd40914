"""What a library's autotuners tuned in this process, for a workload's summary line."""

import sys

from triton.runtime.autotuner import Autotuner


def _autotuner(kernel) -> Autotuner | None:
    """The Autotuner a module-level kernel is or wraps (`triton.heuristics` over `triton.autotune`: its `.fn`)."""
    while kernel is not None and not isinstance(kernel, Autotuner):
        kernel = getattr(kernel, "fn", None) if hasattr(kernel, "run") else None
    return kernel


def autotuned(module_prefix: str) -> dict[str, int]:
    """{kernel: number of keys it autotuned for} over the loaded modules whose names start with `module_prefix`."""
    mods = [m for n, m in list(sys.modules.items()) if n.startswith(module_prefix)]
    tuners = {n: t for m in mods for n, k in vars(m).items() if (t := _autotuner(k)) is not None}  # a name another
    return {n: len(t.cache) for n, t in tuners.items() if t.cache}  # module binds to something else keeps its tuner
