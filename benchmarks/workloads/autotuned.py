"""What a library's autotuners tuned in this process, for a workload's summary line."""

import sys

from triton.runtime.autotuner import Autotuner


def autotuned(module_prefix: str) -> dict[str, int]:
    """{kernel: number of keys it autotuned for} over the loaded modules whose names start with `module_prefix`."""
    mods = [m for n, m in list(sys.modules.items()) if n.startswith(module_prefix)]
    return {n: len(k.cache) for m in mods for n, k in vars(m).items() if isinstance(k, Autotuner) and k.cache}
