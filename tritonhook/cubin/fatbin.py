"""CUDA fatbins: the container `cuobjdump` reads, holding PTX and cubins for several targets.

Read here only far enough to say what a fatbin holds and to pull out its uncompressed cubins, so that a user who
passes one where a cubin is expected gets told what it is (docs/cubin.md).
"""

from __future__ import annotations

import dataclasses
import struct

FATBIN_MAGIC = 0xBA55ED50
ELF_MAGIC = b"\x7fELF"


def is_fatbin(data: bytes) -> bool:
    return len(data) >= 4 and struct.unpack_from("<I", data)[0] == FATBIN_MAGIC


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
            and e.data.startswith(ELF_MAGIC)]
