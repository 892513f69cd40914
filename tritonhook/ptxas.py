"""Old home of ptxas finding, running and the ptxas matrix; kept as re-exports for one release.

New code imports `tritonhook.tools` (finding and running ptxas), `tritonhook.matrix` (the ptxas matrix),
`tritonhook.ptx` (PTX text) and `tritonhook._triton.triton_ptxas` (the ptxas Triton picks).
"""

from . import config
from ._triton import triton_ptxas
from .matrix import MatrixRatio, MatrixRow, PtxasMatrix, SkippedPtxas, ptxas_matrix, too_old_reason
from .ptx import sm_number, target as ptx_target
from .tools import (AssembleResult, PtxasBinary, PtxasInfo, assemble, find_ptxas, one_per_version, parse_ptxas_verbose,
                    ptxas_version)

PTXAS_ENV = config.PTXAS.name
"""Old name of `config.PTXAS`."""

__all__ = ["AssembleResult", "MatrixRatio", "MatrixRow", "PTXAS_ENV", "PtxasBinary", "PtxasInfo", "PtxasMatrix",
           "SkippedPtxas", "assemble", "find_ptxas", "one_per_version", "parse_ptxas_verbose", "ptx_target",
           "ptxas_matrix", "ptxas_version", "sm_number", "too_old_reason", "triton_ptxas"]
