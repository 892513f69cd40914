"""Per-kernel decisions: what a sweep, replay or tune found, kept so that it can be shipped and applied.

A decision is key -> choice + evidence (`model`): the key is what a compile must match exactly (the sha256 of the code
of the kernel's PTX as Triton generated it, the target, the ptxas version Triton runs, the GPU's name); the choice is a
variant of the grammar (`measure.variants`: a name, a ptxas by version, codegen options, a control file); the evidence
is the measured ratio to plain with its interval, the outputs check, when and from which result. `keep` makes them from
results, keeps them in the store and moves them through a portable JSON file that is validated as data, never run
(docs/decisions.md).
"""

from .keep import DecisionList, export, from_result, get, import_file, listing, remove, save, shown
from .model import RESULT_KIND, AutotuneKey, Choice, Decision, Evidence, Key, read_file

__all__ = ["RESULT_KIND", "AutotuneKey", "Choice", "Decision", "DecisionList", "Evidence", "Key", "export", "from_result", "get",
           "import_file", "listing", "read_file", "remove", "save", "shown"]
