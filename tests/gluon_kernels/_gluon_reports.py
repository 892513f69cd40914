"""What the CPU tests read from a compiled Gluon kernel with tritonhook (the kernel packages never import it):
``ptxas -v`` registers and spills of the PTX, and the facts of the cubin. No GPU needed."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from gluon_kernels._compat import TRITON_VERSION
from tritonhook import binaries as tools
from tritonhook._triton import triton_ptxas
from tritonhook.cubin import Cubin

TRITON_PTXAS_FLAGS = list(tools.TRITON_39_PTXAS_FLAGS) if TRITON_VERSION >= (3, 9) else []
"""Register-allocation flags Triton itself passes to ptxas (besides -v, -lineinfo, --gpu-name), so that a
standalone ``ptxas -v`` report describes the cubin Triton builds: 3.9's ``--regAllocOptLevel=2``."""


def ptxas_report(kernel) -> dict:
    """Registers, spill bytes and stack frame of a compiled kernel, from ``ptxas -v`` on its PTX with the same
    ptxas, arch and register-allocation flags Triton used (``TRITON_PTXAS_FLAGS``).
    ``CompiledKernel.n_spills`` needs a GPU (it is read at load)."""
    arch = kernel.metadata.target.arch
    sm = f"sm_{arch}a" if arch >= 90 else f"sm_{arch}"
    ptx = kernel.asm["ptx"]
    log = _ptxas_log(hashlib.sha256(ptx.encode()).hexdigest(), ptx, triton_ptxas(sm), sm, kernel.metadata.name)
    info = next(iter(tools.parse_ptxas_verbose(log).values()), tools.PtxasInfo())
    return {"registers": info.registers or 0, "spill_stores": info.spill_stores, "spill_loads": info.spill_loads,
            "stack_frame": info.stack_frame, "log": log}


_PTXAS_LOGS: dict[tuple[str, str, str, str], str] = {}


def _ptxas_log(ptx_sha256: str, ptx: str, ptxas: str, sm: str, name: str) -> str:
    """ptxas -v's log of one PTX, assembled once per test run: a family's default build is the baseline of every
    tuning config's check (tests/gluon_kernels/test_hopper_tune_cpu.py) and an attention kernel takes ptxas seconds.
    Kept in this process and in a folder beside the Triton cache the kernel tests share (`kernel_builds`), so that the
    other pytest-xdist worker reads the log rather than assembling the same PTX again. Keyed by the hash of the PTX,
    the ptxas (path, size and modification time: a ptxas wrapped or replaced in place is another one), the arch and
    Triton's flags, so the cache holds no PTX."""
    key = (ptx_sha256, ptxas, sm, name)
    if key not in _PTXAS_LOGS:
        _PTXAS_LOGS[key] = _shared_ptxas_log(key, lambda: tools.assemble(ptx, ptxas, sm, TRITON_PTXAS_FLAGS,
                                                                           label=name).stderr)
    return _PTXAS_LOGS[key]


def _shared_ptxas_log(key: tuple[str, str, str, str], assemble) -> str:
    cache = os.environ.get("TRITON_CACHE_DIR")
    if not cache:
        return assemble()
    ptx_sha256, ptxas, sm, name = key
    stat = os.stat(ptxas)
    digest = hashlib.sha256("\0".join([ptx_sha256, ptxas, str(stat.st_size), str(stat.st_mtime_ns), sm, name,
                                        *TRITON_PTXAS_FLAGS]).encode()).hexdigest()
    path = Path(cache).parent / "ptxas-v-logs" / f"{digest}.log"
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        log = assemble()
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}")  # both workers may race to write the same text
        partial.write_text(log, encoding="utf-8")
        os.replace(partial, path)
        return log


def cubin_report(kernel) -> dict:
    """Registers, spill bytes, code sizes of a compiled kernel read from its cubin (tritonhook.cubin)."""
    cubin = Cubin.from_bytes(kernel.asm["cubin"], label=kernel.metadata.name)
    (k, ) = cubin.kernels.values()
    return dict(name=k.name, registers=k.registers, spill_stores=k.spill_stores, spill_loads=k.spill_loads,
                frame_size=k.frame_size, text_size=k.text_size, capmerc_size=k.capmerc_size, cubin_size=cubin.size,
                shared=kernel.metadata.shared, uses_setmaxnreg=k.uses_setmaxnreg, uses_tcgen05=k.uses_tcgen05)
