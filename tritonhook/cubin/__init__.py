"""Cubins as plain data: the model (`Cubin`, its parts), the ELF/EIATTR parser, fatbins, and SASS via nvdisasm.

Import order inside the package, one way only: parts -> fatbin -> elf -> model; sass (nvdisasm, through `binaries`);
delta (model and sass: what changed between two cubins, for a timed row). `__all__` is the package's API: what
its modules define, not the tools they run (nvdisasm is `tritonhook.binaries`'s).
"""

from .elf import EM_CUDA
from .fatbin import FATBIN_MAGIC, FatbinEntry, describe_fatbin, fatbin_cubins, fatbin_entries, is_fatbin
from .model import SUMMARY_FIELDS, Cubin, parse
from .parts import EIATTR_NAMES, Eiattr, Kernel, Note, Param, Section, Tool
from .sass import (Instruction, cubin_histogram, disassemble, inner_loops, normalized_sass, opcode_changes,
                   opcode_histogram, parse_sass_json, sass_text)
from .delta import MIX_TOP, CubinDelta, CubinDeltas

__all__ = ["EIATTR_NAMES", "EM_CUDA", "FATBIN_MAGIC", "MIX_TOP", "SUMMARY_FIELDS", "Cubin", "CubinDelta", "CubinDeltas",
           "Eiattr", "FatbinEntry", "Instruction", "Kernel", "Note", "Param", "Section", "Tool", "cubin_histogram",
           "describe_fatbin", "disassemble", "fatbin_cubins", "fatbin_entries", "inner_loops", "is_fatbin",
           "normalized_sass", "opcode_changes", "opcode_histogram", "parse", "parse_sass_json", "sass_text"]
