"""What the CPU tests read from a compiled Gluon kernel with tritonhook (the kernel packages never import it): the
facts of the cubin Triton built, registers and spill bytes among them; and the release a test of the kernels' design
runs under (`UNDER_THE_TUNERS_RELEASE`). No GPU needed.

The spills are read from the cubin, not from a second ``ptxas -v`` of the PTX: the cubin is the build Triton's own
ptxas made with Triton's own flags (``CompiledKernel.n_spills`` needs a GPU: it is read at load), its figures are the
ones ``ptxas -v`` prints (tests/test_cubin.py holds the cubin reader to that), and assembling an attention kernel
again costs seconds."""

from __future__ import annotations

import pytest

from gluon_kernels._compat import TRITON_VERSION
from gluon_kernels.tuning import TUNED_WITH_TRITON
from tritonhook.cubin import Cubin

UNDER_THE_TUNERS_RELEASE = pytest.mark.skipif(TRITON_VERSION[:2] != TUNED_WITH_TRITON,
                                              reason="the kernel is designed and its tables tuned with Triton "
                                                     + ".".join(map(str, TUNED_WITH_TRITON)))
"""For the tests of what a knob does, which build configurations no table ships to compare them with the shipped
ones, and for the tuning grid: run under the release the knobs were designed and timed with (`TUNED_WITH_TRITON`).
Under every release the kernels target, each configuration a table ships is compiled and checked (its spill bound,
tests/gluon_kernels/test_hopper_cpu.py; its PTX, tests/test_golden_ptx.py)."""


def cubin_report(kernel) -> dict:
    """Registers, spill bytes, code sizes of a compiled kernel read from its cubin (tritonhook.cubin)."""
    cubin = Cubin.from_bytes(kernel.asm["cubin"], label=kernel.metadata.name)
    (k, ) = cubin.kernels.values()
    return dict(name=k.name, registers=k.registers, spill_stores=k.spill_stores, spill_loads=k.spill_loads,
                frame_size=k.frame_size, text_size=k.text_size, capmerc_size=k.capmerc_size, cubin_size=cubin.size,
                shared=kernel.metadata.shared, uses_setmaxnreg=k.uses_setmaxnreg, uses_tcgen05=k.uses_tcgen05)
