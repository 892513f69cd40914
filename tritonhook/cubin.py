"""A cubin, read the way a compiler engineer reads it (shared/NOTES.md §3).

`Cubin.from_bytes` / `Cubin.from_path` give the target, the tool that wrote it, every section with its size and
hash, and per kernel the resources ptxas assigned (registers, stack, spills, shared memory, parameters, ...), all
read from the ELF and its `.nv.info` EIATTR records. Nothing is executed for that: the parse is a pure function
of the bytes, fast enough to diff two large cubins in well under 100 ms.

SASS comes from nvdisasm (Triton's bundled one unless told otherwise): `disassemble` gives the instruction list
per kernel, `opcode_histogram` and `normalized_sass` turn it into something to count and to diff.

Anything that is not a well-formed cubin (a host ELF, a fatbin, PTX text, a truncated or corrupted file) raises
`TritonhookError` naming the input and the reason; no other exception leaves `from_bytes`.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import io
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

from . import config
from .errors import TritonhookError

EM_CUDA = 190
FATBIN_MAGIC = 0xBA55ED50
_ELF_MAGIC = b"\x7fELF"
_STO_CUDA_ENTRY = 0x10

# EIATTR ids as nvdisasm names them (checked against nvdisasm's labelled `.nv.info` dumps in tests/test_cubin.py).
EIATTR_NAMES = {
    0x01: "PAD", 0x02: "IMAGE_SLOT", 0x03: "JUMPTABLE_RELOCS", 0x04: "CTAIDZ_USED", 0x05: "MAX_THREADS",
    0x06: "IMAGE_OFFSET", 0x07: "IMAGE_SIZE", 0x08: "TEXTURE_NORMALIZED", 0x09: "SAMPLER_INIT",
    0x0a: "PARAM_CBANK", 0x0b: "SMEM_PARAM_OFFSETS", 0x0c: "CBANK_PARAM_OFFSETS", 0x0d: "SYNC_STACK",
    0x0e: "TEXID_SAMPID_MAP", 0x0f: "EXTERNS", 0x10: "REQNTID", 0x11: "FRAME_SIZE", 0x12: "MIN_STACK_SIZE",
    0x13: "SAMPLER_FORCE_UNNORMALIZED", 0x14: "BINDLESS_IMAGE_OFFSETS", 0x15: "BINDLESS_TEXTURE_BANK",
    0x16: "BINDLESS_SURFACE_BANK", 0x17: "KPARAM_INFO", 0x18: "SMEM_PARAM_SIZE", 0x19: "CBANK_PARAM_SIZE",
    0x1a: "QUERY_NUMATTRIB", 0x1b: "MAXREG_COUNT", 0x1c: "EXIT_INSTR_OFFSETS", 0x1d: "S2RCTAID_INSTR_OFFSETS",
    0x1e: "CRS_STACK_SIZE", 0x1f: "NEED_CNP_WRAPPER", 0x20: "NEED_CNP_PATCH", 0x21: "EXPLICIT_CACHING",
    0x22: "ISTYPEP_USED", 0x23: "MAX_STACK_SIZE", 0x24: "SUQ_USED", 0x25: "LD_CACHEMOD_INSTR_OFFSETS",
    0x26: "LOAD_CACHE_REQUEST", 0x27: "ATOM_SYS_INSTR_OFFSETS", 0x28: "COOP_GROUP_INSTR_OFFSETS",
    0x29: "COOP_GROUP_MASK_REGIDS", 0x2a: "SW1850030_WAR", 0x2b: "WMMA_USED", 0x2c: "HAS_PRE_V10_OBJECT",
    0x2d: "ATOMF16_EMUL_INSTR_OFFSETS", 0x2e: "ATOM16_EMUL_INSTR_REG_MAP", 0x2f: "REGCOUNT",
    0x30: "SW2393858_WAR", 0x31: "INT_WARP_WIDE_INSTR_OFFSETS", 0x32: "SHARED_SCRATCH", 0x33: "STATISTICS",
    0x34: "INDIRECT_BRANCH_TARGETS", 0x35: "SW2861232_WAR", 0x36: "SW_WAR", 0x37: "CUDA_API_VERSION",
    0x38: "NUM_MBARRIERS", 0x39: "MBARRIER_INSTR_OFFSETS", 0x3a: "COROUTINE_RESUME_OFFSETS",
    0x3b: "SAM_REGION_STACK_SIZE", 0x3c: "PER_REG_TARGET_PERF_STATS", 0x3d: "CTA_PER_CLUSTER",
    0x3e: "EXPLICIT_CLUSTER", 0x3f: "MAX_CLUSTER_RANK", 0x40: "INSTR_REG_MAP", 0x41: "RESERVED_SMEM_USED",
    0x42: "RESERVED_SMEM_0_SIZE", 0x43: "UCODE_SECTION_DATA", 0x44: "UNUSED_LOAD_BYTE_OFFSET",
    0x45: "KPARAM_INFO_V2", 0x46: "SYSCALL_OFFSETS", 0x47: "SW_WAR_MEMBAR_SYS_INSTR_OFFSETS",
    0x48: "GRAPHICS_GLOBAL_CBANK", 0x49: "SHADER_TYPE", 0x4a: "VRC_CTA_INIT_COUNT", 0x4b: "TOOLS_PATCH_FUNC",
    0x4c: "NUM_BARRIERS", 0x4d: "TEXMODE_INDEPENDENT", 0x4e: "PERF_STATISTICS", 0x4f: "AT_ENTRY_FRAGMENTS",
    0x50: "SPARSE_MMA_MASK", 0x51: "TCGEN05_1CTA_USED", 0x52: "TCGEN05_2CTA_USED", 0x53: "GEN_ERRBAR_AT_EXIT",
    0x54: "REG_RECONFIG", 0x55: "ANNOTATIONS", 0x5f: "MERCURY_ISA_VERSION",
}
_FMT_NONE, _FMT_BYTE, _FMT_HALF, _FMT_SIZED = 1, 2, 3, 4
_SECTION_TYPES = {0x70000000: "SHT_CUDA_INFO", 0x70000001: "SHT_CUDA_CALLGRAPH", 0x70000086: "SHT_CUDA_COMPAT_INFO"}
# `.nv.compat` attribute 9 is 1 for an arch-specific ("a") target (13.x puts the variant here, not in e_flags).
_COMPAT_ARCH_SPECIFIC = 0x09
# Spill annotations mark STL/LDL instructions; their 128-bit encoding holds the opcode in bits 0-11 and the
# access size in bits 73-75 (stable from sm_70 to sm_120, measured against nvdisasm and `ptxas -v`).
_OPCODE_STL, _OPCODE_LDL = 0x387, 0x983
_ACCESS_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 8, 6: 16}
_ANNOTATION_SPILL = 1
_SYSTEM_SHARED = 1024


# ----- the model -------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Section:
    name: str
    type: str
    flags: int
    size: int
    sha256: str | None  # None for NOBITS sections (shared memory), which have a size but no bytes


@dataclasses.dataclass(frozen=True)
class Eiattr:
    """One `.nv.info` record; `value` for the scalar formats, `payload` for sized ones (unknown ids kept raw)."""

    id: int
    format: int
    value: int | None = None
    payload: bytes = b""
    symbol: str | None = None  # the function a global `.nv.info` record is about

    @property
    def name(self) -> str:
        known = EIATTR_NAMES.get(self.id)
        return f"EIATTR_{known}" if known else f"EIATTR_UNKNOWN_0x{self.id:02x}"

    def words(self) -> list[int]:
        return list(struct.unpack_from(f"<{len(self.payload) // 4}I", self.payload))

    def to_json(self) -> dict:
        return {"id": self.id, "name": self.name, "format": self.format, "value": self.value,
                "payload": self.payload.hex(), "symbol": self.symbol}


@dataclasses.dataclass(frozen=True)
class Param:
    ordinal: int
    offset: int
    size: int


@dataclasses.dataclass(frozen=True)
class Tool:
    """What `.note.nv.tkinfo` says wrote the cubin."""

    name: str = ""
    version: str = ""
    build: str = ""
    options: str = ""


@dataclasses.dataclass(frozen=True)
class Note:
    section: str
    owner: str
    type: int
    desc: bytes

    def to_json(self) -> dict:
        return {"section": self.section, "owner": self.owner, "type": self.type, "desc": self.desc.hex()}


@dataclasses.dataclass
class Kernel:
    name: str
    registers: int | None = None
    frame_size: int = 0
    min_stack_size: int = 0
    max_stack_size: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    shared_static: int = 0
    shared_reserved: int = 0
    max_threads: tuple[int, ...] | None = None
    reqntid: tuple[int, ...] | None = None
    max_registers: int | None = None
    params: list[Param] = dataclasses.field(default_factory=list)
    param_size: int | None = None
    barriers: int = 0
    uses_setmaxnreg: bool = False
    uses_tcgen05: bool = False
    exit_offsets: list[int] = dataclasses.field(default_factory=list)
    externs: list[str] = dataclasses.field(default_factory=list)
    text_size: int = 0
    capmerc_size: int = 0
    eiattrs: list[Eiattr] = dataclasses.field(default_factory=list)

    @property
    def instructions(self) -> int:
        """SASS instruction count: every instruction is 16 bytes from sm_70 on."""
        return self.text_size // 16

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["eiattrs"] = [record.to_json() for record in self.eiattrs]
        data["instructions"] = self.instructions
        return data


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
        return parse(bytes(data), label=label)

    @classmethod
    def from_path(cls, path: str | os.PathLike) -> "Cubin":
        return parse(read_input(path), label=str(path))

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


def read_input(path: str | os.PathLike) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise TritonhookError(f"{path}: cannot read it ({exc.strerror or exc})") from None


# ----- parsing ---------------------------------------------------------------------------------------------------
def _require_pyelftools() -> None:
    """pyelftools is a dependency; say so plainly if it is missing instead of calling the cubin malformed."""
    try:
        import elftools  # noqa: F401
    except ImportError:
        raise TritonhookError("reading cubins needs pyelftools (pip install pyelftools)") from None


def parse(data: bytes, *, label: str) -> Cubin:
    """Parse a cubin. Bad input of any shape becomes a `TritonhookError` naming `label` and the reason."""
    _require_pyelftools()
    _check_is_cuda_elf(data, label)
    try:
        return _parse_elf(data, label)
    except TritonhookError:
        raise
    except Exception as exc:  # noqa: BLE001 - the boundary where untrusted bytes meet pyelftools and struct
        raise TritonhookError(f"{label}: malformed cubin ({type(exc).__name__}: {exc})") from None


def is_fatbin(data: bytes) -> bool:
    return len(data) >= 4 and struct.unpack_from("<I", data)[0] == FATBIN_MAGIC


def _check_is_cuda_elf(data: bytes, label: str) -> None:
    """Say what the input is when it is not a cubin: a fatbin, PTX, a host ELF, a truncated file, noise."""
    if is_fatbin(data):
        raise TritonhookError(f"{label}: a CUDA fatbin, not a cubin ({describe_fatbin(data)}); "
                              f"extract its cubins with tritonhook.cubin.fatbin_cubins or `cuobjdump -xelf all`")
    if not data.startswith(_ELF_MAGIC):
        head = data[:64].lstrip()
        if head.startswith((b"//", b".version", b".target")):
            raise TritonhookError(f"{label}: PTX text, not a cubin (assemble it first, or pass it to "
                                  f"`tritonhook diff`, which runs ptxas)")
        what = "empty" if not data else f"starts with {data[:4].hex(' ')}"
        raise TritonhookError(f"{label}: not an ELF file ({what}); expected a cubin")
    if len(data) < 64:
        raise TritonhookError(f"{label}: truncated ELF header ({len(data)} bytes, need 64)")
    if data[4] != 2 or data[5] != 1:
        raise TritonhookError(f"{label}: a {'32-bit' if data[4] == 1 else 'non-64-bit'} or big-endian ELF; "
                              f"cubins are 64-bit little-endian")
    machine = struct.unpack_from("<H", data, 18)[0]
    if machine != EM_CUDA:
        raise TritonhookError(f"{label}: an ELF for {_machine_name(machine)} (e_machine {machine}), not a CUDA "
                              f"cubin (e_machine {EM_CUDA}); is it a host binary?")


def _machine_name(machine: int) -> str:
    from elftools.elf.descriptions import describe_e_machine
    from elftools.elf.enums import ENUM_E_MACHINE

    name = next((key for key, value in ENUM_E_MACHINE.items() if value == machine), None)
    return describe_e_machine(name) if name else "an unknown machine"


def _parse_elf(data: bytes, label: str) -> Cubin:
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(data))
    header = elf.header
    if header["e_shentsize"] != 64 or header["e_shoff"] + 64 * header["e_shnum"] > len(data):
        raise TritonhookError(f"{label}: truncated or corrupt section header table "
                              f"({header['e_shnum']} entries at offset {header['e_shoff']}, file {len(data)} B)")
    raw_sections = list(_raw_sections(elf, data, label))
    by_name = {name: (shdr, body) for name, shdr, body in raw_sections}
    symbols = _symbols(raw_sections)
    compat = list(_eiattrs(_body(by_name, ".nv.compat")))
    notes = [note for name, _, body in raw_sections if name.startswith(".note.") for note in _notes(name, body)]
    tool = _tool(notes)
    abi = header["e_ident"]["EI_ABIVERSION"]
    sm, arch = _arch(header["e_flags"], abi, compat, tool)
    global_info = list(_global_eiattrs(_body(by_name, ".nv.info"), symbols))
    kernels = {sym.name: _kernel(sym.name, sm, by_name, global_info)
               for sym in symbols if sym.is_entry}
    return Cubin(
        label=label, arch=arch, sm=sm, abi_version=abi, e_flags=header["e_flags"], tool=tool, notes=notes,
        sections=[_section(name, shdr, body) for name, shdr, body in raw_sections],
        kernels=kernels, external_symbols=sorted({s.name for s in symbols if s.undefined and s.name}),
        global_eiattrs=global_info, compat=compat, size=len(data),
        sha256=hashlib.sha256(data).hexdigest())


def _raw_sections(elf, data: bytes, label: str) -> Iterator[tuple[str, dict, bytes]]:
    """(name, header, bytes) per section, after checking that each one lies inside the file."""
    for index in range(1, elf.num_sections()):
        section = elf.get_section(index)
        shdr = section.header
        body = b""
        if shdr["sh_type"] != "SHT_NOBITS":
            end = shdr["sh_offset"] + shdr["sh_size"]
            if end > len(data):
                raise TritonhookError(f"{label}: truncated: section {section.name or index} ends at byte {end}, "
                                      f"past the end of the file ({len(data)} B)")
            body = data[shdr["sh_offset"]:end]
        yield section.name, shdr, body


def _body(by_name: dict, name: str) -> bytes:
    return by_name[name][1] if name in by_name else b""


def _sh_size(by_name: dict, name: str) -> int:
    return by_name[name][0]["sh_size"] if name in by_name else 0


def _section(name: str, shdr, body: bytes) -> Section:
    kind = shdr["sh_type"]
    if isinstance(kind, int):
        kind = _SECTION_TYPES.get(kind, f"0x{kind:08x}")
    nobits = kind == "SHT_NOBITS"
    return Section(name, kind, shdr["sh_flags"], shdr["sh_size"],
                   None if nobits else hashlib.sha256(body).hexdigest())


@dataclasses.dataclass(frozen=True)
class _Symbol:
    name: str
    kind: int
    bind: int
    other: int
    shndx: int

    @property
    def undefined(self) -> bool:
        return self.shndx == 0 and self.bind != 0

    @property
    def is_entry(self) -> bool:
        return self.kind == 2 and self.other & _STO_CUDA_ENTRY and self.shndx != 0


def _symbols(raw_sections: list[tuple[str, dict, bytes]]) -> list[_Symbol]:
    """`.symtab` decoded with struct (index order kept: `.nv.info` records refer to symbols by index)."""
    symtab = next(((shdr, body) for _, shdr, body in raw_sections if shdr["sh_type"] == "SHT_SYMTAB"), None)
    if symtab is None:
        return []
    shdr, body = symtab
    strtab = raw_sections[shdr["sh_link"] - 1][2] if 0 < shdr["sh_link"] <= len(raw_sections) else b""
    symbols = []
    for name_off, info, other, shndx, _value, _size in struct.iter_unpack("<IBBHQQ", body[:len(body) // 24 * 24]):
        symbols.append(_Symbol(_cstring(strtab, name_off), info & 0xf, info >> 4, other, shndx))
    return symbols


def _cstring(table: bytes, offset: int) -> str:
    if offset >= len(table):
        return ""
    end = table.find(b"\0", offset)
    return table[offset:end if end >= 0 else len(table)].decode("utf-8", errors="replace")


def _eiattrs(body: bytes) -> Iterator[Eiattr]:
    """Decode `.nv.info`-style records: 4-byte aligned `u8 format, u8 id, u16 x` (NOTES §3)."""
    pos = 0
    while pos + 4 <= len(body):
        fmt, attr, x = struct.unpack_from("<BBH", body, pos)
        pos += 4
        if fmt == _FMT_SIZED:
            if pos + x > len(body):
                raise ValueError(f"EIATTR 0x{attr:02x} payload of {x} B runs past its section")
            yield Eiattr(attr, fmt, payload=body[pos:pos + x])
            pos += (x + 3) & ~3
        elif fmt in (_FMT_NONE, _FMT_BYTE, _FMT_HALF):
            yield Eiattr(attr, fmt, value=None if fmt == _FMT_NONE else (x & 0xff if fmt == _FMT_BYTE else x))
        else:
            raise ValueError(f"unknown EIATTR format {fmt} at offset {pos - 4}")


def _global_eiattrs(body: bytes, symbols: list[_Symbol]) -> Iterator[Eiattr]:
    """Global `.nv.info` records start their payload with the index of the function they describe."""
    for record in _eiattrs(body):
        if record.format == _FMT_SIZED and len(record.payload) >= 4:
            index = struct.unpack_from("<I", record.payload)[0]
            name = symbols[index].name if index < len(symbols) else None
            record = dataclasses.replace(record, symbol=name)
        yield record


def _kernel(name: str, sm: int, by_name: dict, global_info: list[Eiattr]) -> Kernel:
    """One kernel's resources. From sm_90 on, ptxas puts a 1 KiB system window at the start of the kernel's
    `.nv.shared.<fn>` section (measured with ptxas 12.8 to 13.0); `ptxas -v` counts only what follows it."""
    shared = _sh_size(by_name, f".nv.shared.{name}")
    window = min(_SYSTEM_SHARED, shared) if sm >= 90 else 0
    own = list(_eiattrs(_body(by_name, f".nv.info.{name}")))
    text_shdr, text = by_name.get(f".text.{name}", (None, b""))
    kernel = Kernel(name=name, text_size=_sh_size(by_name, f".text.{name}"),
                    capmerc_size=_sh_size(by_name, f".nv.capmerc.text.{name}"),
                    shared_static=max(shared - window, 0),
                    shared_reserved=window + sum(shdr["sh_size"] for section, (shdr, _) in by_name.items()
                                                 if section.startswith(".nv.shared.reserved.")),
                    eiattrs=[r for r in global_info if r.symbol == name] + own)
    # Up to ABI 7 the `.text` header carries the register count (sh_info bits 24-31) and the barrier count
    # (sh_flags bits 20-26); newer cubins have EIATTR records for both, which override these below.
    if text:
        kernel.registers = (text_shdr["sh_info"] >> 24) or None
        kernel.barriers = (text_shdr["sh_flags"] >> 20) & 0x7f
    for record in kernel.eiattrs:
        _apply(kernel, record, text)
    return kernel


def _second_word(record: Eiattr) -> int:
    """Global records hold (symbol index, value)."""
    return record.words()[1]


def _apply(kernel: Kernel, record: Eiattr, text: bytes) -> None:
    """Fold one EIATTR record into the kernel's fields."""
    name = EIATTR_NAMES.get(record.id)
    if name == "REGCOUNT":
        kernel.registers = _second_word(record)
    elif name == "FRAME_SIZE":
        kernel.frame_size = _second_word(record)
    elif name == "MIN_STACK_SIZE":
        kernel.min_stack_size = _second_word(record)
    elif name == "MAX_STACK_SIZE":
        kernel.max_stack_size = _second_word(record)
    elif name == "MAX_THREADS":
        kernel.max_threads = tuple(record.words())
    elif name == "REQNTID":
        kernel.reqntid = tuple(record.words())
    elif name == "MAXREG_COUNT":
        kernel.max_registers = record.value
    elif name == "KPARAM_INFO":
        _index, ordinal, offset, flags = struct.unpack_from("<IHHI", record.payload)
        kernel.params.append(Param(ordinal, offset, (flags >> 18) & 0x3fff))
        kernel.params.sort(key=lambda param: param.ordinal)
    elif name == "CBANK_PARAM_SIZE":
        kernel.param_size = record.value
    elif name == "NUM_BARRIERS":
        kernel.barriers = record.value
    elif name == "REG_RECONFIG":
        kernel.uses_setmaxnreg = True
    elif name in ("TCGEN05_1CTA_USED", "TCGEN05_2CTA_USED"):
        kernel.uses_tcgen05 = True
    elif name == "EXIT_INSTR_OFFSETS":
        kernel.exit_offsets = record.words()
    elif name == "ANNOTATIONS":
        kernel.spill_stores, kernel.spill_loads = _spill_bytes(record.words(), text)


def _spill_bytes(words: list[int], text: bytes) -> tuple[int, int]:
    """Bytes moved by the spill instructions the ANNOTATIONS record points at: (kind, offset) pairs, kind 1."""
    stores = loads = 0
    for kind, offset in zip(words[0::2], words[1::2]):
        if kind != _ANNOTATION_SPILL or offset + 16 > len(text):
            continue
        low, high = struct.unpack_from("<QQ", text, offset)
        size = _ACCESS_BYTES.get((high >> 9) & 7, 0)
        if low & 0xfff == _OPCODE_STL:
            stores += size
        elif low & 0xfff == _OPCODE_LDL:
            loads += size
    return stores, loads


def _notes(section: str, body: bytes) -> Iterator[Note]:
    pos = 0
    while pos + 12 <= len(body):
        namesz, descsz, kind = struct.unpack_from("<III", body, pos)
        name_at = pos + 12
        desc_at = name_at + ((namesz + 3) & ~3)
        end = desc_at + ((descsz + 3) & ~3)
        if desc_at + descsz > len(body):
            raise ValueError(f"note in {section} runs past its section")
        yield Note(section, body[name_at:name_at + namesz].rstrip(b"\0").decode("utf-8", "replace"), kind,
                   body[desc_at:desc_at + descsz])
        pos = end


def _tool(notes: list[Note]) -> Tool:
    """`.note.nv.tkinfo`: 6 words (the 3rd to 6th are offsets into the strings after them), then the strings."""
    for note in notes:
        if note.section != ".note.nv.tkinfo" or len(note.desc) < 24:
            continue
        offsets = struct.unpack_from("<4I", note.desc, 8)
        tool, version, build, options = (_cstring(note.desc[24:], offset) for offset in offsets)
        match = re.search(r"V(\d+\.\d+\.\d+)", version)
        return Tool(tool, match.group(1) if match else version, build, " ".join(options.split()))
    return Tool()


def _arch(e_flags: int, abi: int, compat: list[Eiattr], tool: Tool) -> tuple[int, str]:
    """sm_XX with its variant: e_flags holds the SM (low byte up to ABI 7, bits 8-15 from ABI 8) and, up to
    CUDA 12, the "a" bit; 13.x moved "a" to `.nv.compat`; "f" is only in the ptxas options of the tkinfo note."""
    if abi < 8:
        sm, specific = e_flags & 0xff, bool(e_flags & 0x800)
    else:
        sm, specific = (e_flags >> 8) & 0xff, bool(e_flags & 0x8)
    specific |= any(r.id == _COMPAT_ARCH_SPECIFIC and r.value == 1 for r in compat)
    family = re.search(rf"-arch\s+sm_{sm}f\b", tool.options) is not None
    return sm, f"sm_{sm}{'a' if specific else 'f' if family else ''}"


# ----- fatbins ---------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class FatbinEntry:
    kind: str  # "ptx" or "elf"
    arch: str
    compressed: bool
    data: bytes


def fatbin_entries(data: bytes) -> list[FatbinEntry]:
    """The images of a fatbin: header (magic, version, header size, payload size), then entries each with a
    header giving kind, header size, payload size, flags and SM."""
    try:
        _magic, _version, header_size, total = struct.unpack_from("<IHHQ", data)
        pos, end, entries = header_size, min(len(data), header_size + total), []
        while pos + 64 <= end:
            kind, _, entry_header, size = struct.unpack_from("<HHIQ", data, pos)
            flags = struct.unpack_from("<Q", data, pos + 0x28)[0]
            sm = struct.unpack_from("<I", data, pos + 0x1c)[0]
            payload = data[pos + entry_header:pos + entry_header + size]
            entries.append(FatbinEntry({1: "ptx", 2: "elf"}.get(kind, f"kind {kind}"), f"sm_{sm}",
                                       bool(flags & 0x2000), payload))
            if entry_header == 0 or size == 0:
                break
            pos += entry_header + size
        return entries
    except struct.error:
        return []


def describe_fatbin(data: bytes) -> str:
    entries = fatbin_entries(data)
    if not entries:
        return "no readable entries"
    return ", ".join(f"{e.kind} {e.arch}{' compressed' if e.compressed else ''}" for e in entries)


def fatbin_cubins(data: bytes) -> list[bytes]:
    """The uncompressed cubins of a fatbin (compressed ones need `cuobjdump -xelf all`)."""
    return [e.data for e in fatbin_entries(data) if e.kind == "elf" and not e.compressed
            and e.data.startswith(_ELF_MAGIC)]


# ----- SASS through nvdisasm -------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Instruction:
    offset: int
    predicate: str
    opcode: str
    operands: str
    control_flow: bool = False

    @property
    def base_opcode(self) -> str:
        return self.opcode.split(".", 1)[0]

    def text(self) -> str:
        return " ".join(part for part in (self.predicate, self.opcode, self.operands) if part)


def find_nvdisasm(explicit: str | None = None) -> str:
    """`explicit`, else the nvdisasm Triton bundles, else $CUDA_HOME/bin, else PATH."""
    if explicit:
        found = shutil.which(explicit)
        if not found:
            raise TritonhookError(f"--nvdisasm {explicit}: not found or not executable")
        return found
    candidates = [_triton_bin("nvdisasm")]
    candidates += [os.path.join(var.get(), "bin", "nvdisasm") for var in (config.CUDA_HOME, config.CUDA_PATH)
                   if var.is_set()]
    candidates.append(shutil.which("nvdisasm"))
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise TritonhookError("no nvdisasm found (looked in Triton's backends/nvidia/bin, $CUDA_HOME/bin and PATH); "
                          "pass --nvdisasm PATH")


def _triton_bin(tool: str) -> str | None:
    """A binary Triton bundles, found without importing Triton (which takes seconds)."""
    import importlib.util

    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "backends" / "nvidia" / "bin" / tool
    return str(path) if path.exists() else None


def run_nvdisasm(data: bytes, args: Iterable[str], *, nvdisasm: str | None = None, label: str = "") -> str:
    tool = find_nvdisasm(nvdisasm)
    with tempfile.TemporaryDirectory(prefix="tritonhook-sass-") as tmp:
        path = os.path.join(tmp, "input.cubin")
        with open(path, "wb") as handle:
            handle.write(data)
        completed = subprocess.run([tool, *args, path], capture_output=True, text=True)
    if completed.returncode != 0:
        message = " ".join(completed.stderr.split()) or f"exit status {completed.returncode}"
        raise TritonhookError(f"{label or 'cubin'}: {tool} failed ({message}); try another --nvdisasm")
    return completed.stdout


def sass_text(data: bytes, *, nvdisasm: str | None = None, label: str = "") -> str:
    """nvdisasm's own listing of the code sections, as a person reads it."""
    return run_nvdisasm(data, ["-c"], nvdisasm=nvdisasm, label=label)


def disassemble(data: bytes, *, nvdisasm: str | None = None, label: str = "") -> dict[str, list[Instruction]]:
    """kernel (function) name -> its instructions, from nvdisasm's JSON output."""
    return parse_sass_json(run_nvdisasm(data, ["-json", "-c"], nvdisasm=nvdisasm, label=label), label=label)


def parse_sass_json(text: str, *, label: str = "") -> dict[str, list[Instruction]]:
    try:
        functions = json.loads(text)[1]
        return {function["function-name"]: [_instruction(function["start"] + 16 * index, raw)
                                             for index, raw in enumerate(function["sass-instructions"])]
                for function in functions}
    except (ValueError, LookupError, TypeError) as exc:
        raise TritonhookError(f"{label or 'cubin'}: unexpected nvdisasm JSON ({exc})") from None


def _instruction(offset: int, raw: dict) -> Instruction:
    flow = raw.get("other-attributes", {}).get("control-flow") == "True"
    return Instruction(offset, raw.get("predicate", ""), raw["opcode"], raw.get("operands", ""), flow)


def opcode_histogram(instructions: Iterable[Instruction], *, full: bool = False) -> collections.Counter:
    """Counts of base opcodes (`IMAD`), or of full mnemonics with modifiers (`IMAD.MOV.U32`) when `full`."""
    return collections.Counter(i.opcode if full else i.base_opcode for i in instructions)


_HEX = re.compile(r"\b0x[0-9a-f]+\b")


def normalized_sass(instructions: list[Instruction]) -> list[str]:
    """One line per instruction with code addresses replaced by label numbers, so that two kernels that differ
    only where their code sits diff as equal."""
    targets = sorted({int(token, 16) for i in instructions if i.control_flow for token in _HEX.findall(i.operands)})
    labels = {target: f"L{number}" for number, target in enumerate(targets)}
    lines = []
    for instruction in instructions:
        text = instruction.text()
        if instruction.control_flow:
            text = _HEX.sub(lambda m: labels[int(m.group(0), 16)], text)
        lines.append(text)
    return lines
