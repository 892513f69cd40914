"""The parts of a cubin, as plain records: sections, `.nv.info` EIATTR records, parameters, notes, kernels.

Why apart from the parser (`elf.py`): readers of a result (diff, preflight, ab, render) need the types, not
pyelftools; the records import nothing but the standard library (the model is pyelftools' own split of
`elffile.py` and `sections.py`).
"""

from __future__ import annotations

import dataclasses
import struct

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
