"""The ELF side of a cubin: sections, symbols, `.nv.info` EIATTR records, notes, the target; parsed with pyelftools.

`parse_fields` is a pure function of the bytes (nothing is executed), fast enough to diff two large cubins in well
under 100 ms; anything that is not a well-formed cubin (a host ELF, a fatbin, PTX text, a truncated or corrupted
file) raises `TritonhookError` naming the input and the reason, and no other exception leaves it. The EIATTR
formats and meanings: docs/cubin.md#cubin-anatomy.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import re
import struct
from typing import Iterator

from ..errors import TritonhookError
from .fatbin import ELF_MAGIC as _ELF_MAGIC, describe_fatbin, is_fatbin
from .parts import EIATTR_NAMES, Eiattr, Kernel, Note, Param, Section, Tool

EM_CUDA = 190
_STO_CUDA_ENTRY = 0x10
_FMT_NONE, _FMT_BYTE, _FMT_HALF, _FMT_SIZED = 1, 2, 3, 4
_SECTION_TYPES = {0x70000000: "SHT_CUDA_INFO", 0x70000001: "SHT_CUDA_CALLGRAPH", 0x70000086: "SHT_CUDA_COMPAT_INFO"}
# `.nv.compat` attribute 9 is 1 for an arch-specific ("a") target (13.x puts the variant here, not in e_flags).
_COMPAT_ARCH_SPECIFIC = 0x09
# Spill annotations mark STL/LDL instructions; their 128-bit encoding holds the opcode in bits 0-11 and the
# access size in bits 73-75 (the same from sm_70 to sm_120, as nvdisasm and `ptxas -v` agree).
_OPCODE_STL, _OPCODE_LDL = 0x387, 0x983
_ACCESS_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 8, 6: 16}
_ANNOTATION_SPILL = 1
_SYSTEM_SHARED = 1024



def parse_fields(data: bytes, *, label: str) -> dict:
    """The fields of a `Cubin` read from `data`. Bad input of any shape becomes a `TritonhookError` naming `label`
    and the reason."""
    _require_pyelftools()
    _check_is_cuda_elf(data, label)
    try:
        return _parse_elf(data, label)
    except TritonhookError:
        raise
    except Exception as exc:  # noqa: BLE001 - the boundary where untrusted bytes meet pyelftools and struct
        raise TritonhookError(f"{label}: malformed cubin ({type(exc).__name__}: {exc})") from None


def _require_pyelftools() -> None:
    """pyelftools is a dependency; say so plainly if it is missing instead of calling the cubin malformed."""
    try:
        import elftools  # noqa: F401
    except ImportError:
        raise TritonhookError("reading cubins needs pyelftools (pip install pyelftools)") from None


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


def _parse_elf(data: bytes, label: str) -> dict:
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
    return dict(
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
    """Decode `.nv.info`-style records: 4-byte aligned `u8 format, u8 id, u16 x`."""
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
    `.nv.shared.<fn>` section (ptxas 12.8 to 13.0); `ptxas -v` counts only what follows it."""
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
