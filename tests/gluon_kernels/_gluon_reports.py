"""What the CPU tests read from a compiled Gluon kernel with tritonhook (the kernel packages never import it): the
facts of the cubin Triton built, registers and spill bytes among them. No GPU needed.

The spills are read from the cubin, not from a second ``ptxas -v`` of the PTX: the cubin is the build Triton's own
ptxas made with Triton's own flags (``CompiledKernel.n_spills`` needs a GPU: it is read at load), its figures are the
ones ``ptxas -v`` prints (tests/test_cubin.py holds the cubin reader to that), and assembling an attention kernel
again costs seconds."""

from __future__ import annotations

from tritonhook.cubin import Cubin


def cubin_report(kernel) -> dict:
    """Registers, spill bytes, code sizes of a compiled kernel read from its cubin (tritonhook.cubin)."""
    cubin = Cubin.from_bytes(kernel.asm["cubin"], label=kernel.metadata.name)
    (k, ) = cubin.kernels.values()
    return dict(name=k.name, registers=k.registers, spill_stores=k.spill_stores, spill_loads=k.spill_loads,
                frame_size=k.frame_size, text_size=k.text_size, capmerc_size=k.capmerc_size, cubin_size=cubin.size,
                shared=kernel.metadata.shared, uses_setmaxnreg=k.uses_setmaxnreg, uses_tcgen05=k.uses_tcgen05)
