"""`tritonhook upgrade`: per captured kernel, what a Triton or ptxas upgrade changes in its cubin, split between
Triton's PTX and ptxas (docs/upgrade.md).

* `releases`: a cached virtualenv per Triton release (`release_python`).
* `rebuild`:  the worker that compiles captured kernels again under another release, and its parent's side.
* `cells`:    the four builds of each kernel and their deltas against today's cubin (`upgrade`).
* `result`:   `UpgradeResult`, saved in the store as result kind `upgrade`.
* `bisect`:   the first release whose build of a kernel differs, and whether PTX or ptxas moved it (`BisectResult`,
             result kind `bisect`).
* `timing`, `bisect_timing`: the GPU halves, `upgrade --time` (the four cells replayed) and `bisect --time` (the
             first release that moved a recorded kernel's time or outputs).
"""

from __future__ import annotations

from .bisect import BisectResult  # declares result kind `bisect` wherever upgrade's is
from .cells import upgrade
from .releases import release_python
from .result import CELLS, RESULT_KIND, Cell, KernelUpgrade, UpgradeResult

__all__ = ["CELLS", "RESULT_KIND", "BisectResult", "Cell", "KernelUpgrade", "UpgradeResult", "release_python",
           "upgrade"]
