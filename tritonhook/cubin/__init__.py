"""Cubins as plain data: the model (`Cubin`, its parts), the ELF/EIATTR parser, fatbins, and SASS via nvdisasm.

Import order inside the package, one way only: parts -> fatbin -> elf -> model; sass (nvdisasm, through `tools`).
`tritonhook.cubin.X` keeps working for everything the single module `cubin.py` exported.
"""

from .elf import EM_CUDA
from .fatbin import FATBIN_MAGIC, FatbinEntry, describe_fatbin, fatbin_cubins, fatbin_entries, is_fatbin
from .model import SUMMARY_FIELDS, Cubin, parse, read_input
from .parts import EIATTR_NAMES, Eiattr, Kernel, Note, Param, Section, Tool
from ..tools import find_nvdisasm
from .sass import (Instruction, disassemble, normalized_sass, opcode_histogram, parse_sass_json, run_nvdisasm,
                   sass_text)

__all__ = ["EIATTR_NAMES", "EM_CUDA", "FATBIN_MAGIC", "SUMMARY_FIELDS", "Cubin", "Eiattr", "FatbinEntry",
           "Instruction", "Kernel", "Note", "Param", "Section", "Tool", "describe_fatbin", "disassemble",
           "fatbin_cubins", "fatbin_entries", "find_nvdisasm", "is_fatbin", "normalized_sass", "opcode_histogram",
           "parse", "parse_sass_json", "read_input", "run_nvdisasm", "sass_text"]
