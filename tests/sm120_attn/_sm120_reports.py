"""The external ptxas log of a CuTe DSL kernel's PTX, read with tritonhook (the kernel packages never import it)."""
from __future__ import annotations

import re

from tritonhook.binaries import assemble, find_ptxas


def external_ptxas_log(ptx: str, arch: str) -> tuple[str, str] | None:
    """Re-assemble the DSL's PTX with an external ptxas (-v) and return (ptxas version, log), or None if no
    ptxas new enough for the PTX's ISA version is found. The DSL links its own ptxas in and keeps its log to
    itself (empty even with --ptxas-options=-v), so warnings such as C7508 are only visible this way."""
    from tritonhook.binaries import assemble, find_ptxas

    isa = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", ptx, re.MULTILINE)
    need = (12, 9) if isa and (int(isa.group(1)), int(isa.group(2))) >= (8, 8) else (12, 8)

    def key(binary):
        return tuple(int(x) for x in binary.version.split(".")[:2])

    candidates = sorted((b for b in find_ptxas() if key(b) >= need), key=key)
    for binary in candidates:
        try:
            return binary.version, assemble(ptx, binary.path, arch, label=arch).stderr
        except Exception:  # noqa: BLE001 - this one cannot take it; try the next
            continue
    return None
