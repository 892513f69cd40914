"""A cubin, read the way a compiler engineer reads it (docs/cubin.md#cubin-anatomy).

`Cubin.from_bytes` / `Cubin.from_path` give the target, the tool that wrote it, every section with its size and
hash, and per kernel the resources ptxas assigned (registers, stack, spills, shared memory, parameters, ...), all
read from the ELF and its `.nv.info` EIATTR records (`elf.py`). `Cubin.summary(entry)` is the one short summary of
a kernel that A/B reports, kernel benchmarks and `ptxas-matrix` quote.
"""

from __future__ import annotations

import dataclasses
import os

from ..errors import TritonhookError
from ..files import read_input
from . import elf
from .parts import Eiattr, Kernel, Note, Section, Tool

SUMMARY_FIELDS = ("registers", "spill_stores", "spill_loads", "capmerc_size", "text_size", "frame_size")
"""The kernel fields `Cubin.summary` reports (with the hash of the kernel's .text section)."""


@dataclasses.dataclass
class Cubin:
    label: str
    arch: str
    sm: int
    abi_version: int
    e_flags: int
    tool: Tool
    notes: list[Note]
    sections: list[Section]
    kernels: dict[str, Kernel]
    external_symbols: list[str]
    global_eiattrs: list[Eiattr]
    compat: list[Eiattr]
    size: int
    sha256: str

    @classmethod
    def from_bytes(cls, data: bytes, *, label: str = "<bytes>") -> "Cubin":
        return cls(**elf.parse_fields(bytes(data), label=label))

    @classmethod
    def from_path(cls, path: str | os.PathLike) -> "Cubin":
        return parse(read_input(path, "cubin"), label=str(path))

    @property
    def syscalls(self) -> list[str]:
        """Driver routines the code calls (`__cuda_syscall_*`): each may make the driver grow the stack limit."""
        return [name for name in self.external_symbols if name.startswith("__cuda_syscall")]

    def section_size(self, name: str) -> int:
        return sum(section.size for section in self.sections if section.name == name)

    def sizes_with_prefix(self, prefix: str) -> int:
        return sum(section.size for section in self.sections if section.name.startswith(prefix))

    @property
    def capmerc_size(self) -> int:
        return self.sizes_with_prefix(".nv.capmerc.")

    @property
    def merc_size(self) -> int:
        return self.sizes_with_prefix(".nv.merc.")

    def summary(self, entry: str | None = None) -> dict:
        """Registers, spills, code sizes and the .text hash of kernel `entry` (the only kernel when None): the one
        summary every report quotes, so that two reports of one kernel never disagree on what they show."""
        if entry is None:
            if len(self.kernels) != 1:
                raise TritonhookError(f"{self.label}: {len(self.kernels)} kernels ({', '.join(self.kernels)}); "
                                      f"name the one to summarise")
            entry = next(iter(self.kernels))
        if entry not in self.kernels:
            raise TritonhookError(f"{self.label}: no kernel {entry!r} (kernels: {', '.join(self.kernels) or 'none'})")
        kernel = self.kernels[entry]
        summary = {field: getattr(kernel, field) for field in SUMMARY_FIELDS}
        summary["text_sha256"] = next((s.sha256 for s in self.sections if s.name == f".text.{entry}"), None)
        return summary

    def to_json(self) -> dict:
        return {
            "label": self.label, "arch": self.arch, "sm": self.sm, "abi_version": self.abi_version,
            "e_flags": self.e_flags, "size": self.size, "sha256": self.sha256, "tool": dataclasses.asdict(self.tool),
            "notes": [note.to_json() for note in self.notes],
            "sections": [dataclasses.asdict(section) for section in self.sections],
            "kernels": {name: kernel.to_json() for name, kernel in self.kernels.items()},
            "external_symbols": self.external_symbols, "syscalls": self.syscalls,
            "capmerc_size": self.capmerc_size, "merc_size": self.merc_size,
            "global_eiattrs": [record.to_json() for record in self.global_eiattrs],
            "compat": [record.to_json() for record in self.compat],
        }


def parse(data: bytes, *, label: str) -> Cubin:
    """Parse a cubin (`Cubin.from_bytes`). Bad input of any shape becomes a `TritonhookError` naming `label`."""
    return Cubin.from_bytes(data, label=label)

