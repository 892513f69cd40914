"""A warning tritonhook issues while Triton compiles, caught with where it points: the line that called
`triton.compile` (errors.warn names the first frame outside tritonhook and Triton), for the tests that check it."""

from __future__ import annotations

import sys
import warnings


def compile_warning(source, capability: int, containing: str) -> tuple[warnings.WarningMessage, tuple[str, int]]:
    """(the one warning whose text has `containing`, the (file, line) of this helper's `triton.compile` call) for a
    compile of `source` for sm_`capability`."""
    import triton
    from triton.backends.compiler import GPUTarget

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled_at = (__file__, sys._getframe().f_lineno + 1)
        triton.compile(source, target=GPUTarget("cuda", capability, 32))
    (warning,) = [w for w in caught if containing in str(w.message)]
    return warning, compiled_at
