"""Run a CuTe DSL kernel from a cubin that an external ptxas built, optionally under a name without `cutlass`.

Why: every CuTe DSL kernel name contains `cutlass` (`kernel_cutlass_...`), so the DSL's linked-in ptxas always
takes its "cutlass" path at -O3 (docs/ptxas_cutlass.md#the-cutlass-name-path, docs/capture_beyond_triton.md#cute-dsl-as-it-behaves). To measure what the name does, the same PTX is
assembled by an external ptxas twice, once as is ("ext") and once with `cutlass` stripped from the entry names
("strip", `tritonhook.rename.strip_ptx`), and the compiled function is made to launch that cubin.

How the cubin gets in: the DSL's compiled function is a host module (LLVM dialect) run by an MLIR execution
engine. Its `cuda_init` loads one embedded GPU binary global (a fatbin holding the DSL's cubin) with
`cudaLibraryLoadData`, and `cuda_load` / `cuda_load_to_device` look the kernel up by name
(`cudaLibraryGetKernel(..., "kernel_cutlass_...")`) and set its attributes. `swap_module_text` rewrites that host
module as text: the binary global gets the external cubin, and each lookup string gets the new name, padded with
NUL bytes to the old length so that no array type changes (the C string ends at the first NUL). `install_cubin`
parses the new text and builds a new execution engine the way the DSL's own file-cache path re-JITs a compiled
module, then swaps it into the compiled function before its first call. Unlike patching `_load_cuda_library`
(FlashAttention-4's approach, which keeps the name), the loaded cubin really holds the stripped entry.

`swap_module_text`, `strip_names`, the MLIR string codec and `assemble_cached` need no GPU (tests/test_cute_name_swap.py);
`install_cubin` needs the execution engine, which the DSL only builds where a GPU is present.

Lab support for the name experiment (benchmarks/sm120_name_ab.py) and its tests, not part of the installed package.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tritonhook import config
from tritonhook.errors import TritonhookError
from tritonhook.rename import ptx_entries, strip_ptx
from tritonhook.binaries import assemble, find_ptxas, ptxas_version

DSL_PTXAS_FLAGS = ("-O3",)
"""What the DSL gives its linked-in ptxas by default: opt level 3 (`--opt-level` default), no line info, no extra
`--ptxas-options`; `--gpu-name` comes from `--gpu-arch`. tritonhook's `assemble` adds `-v` (log only)."""

ARMS = ("plain", "ext", "strip")
"""plain: the DSL's own cubin (linked ptxas, cutlass name); ext: the external ptxas on the unchanged PTX (cutlass
name); strip: the external ptxas on the PTX with `cutlass` removed from the entry names."""



# ----- names -------------------------------------------------------------------------------------------------------
def strip_names(ptx: str) -> tuple[str, dict[str, str]]:
    """(PTX with `cutlass` stripped from every entry name, {old entry: new entry})."""

    before = ptx_entries(ptx)
    stripped = strip_ptx(ptx)
    after = ptx_entries(stripped)
    mapping = {old: new for old, new in zip(before, after) if old != new}
    if any("cutlass" in name for name in after):
        raise ValueError(f"stripped entries still contain 'cutlass': {after}")
    return stripped, mapping


# ----- MLIR string literals ----------------------------------------------------------------------------------------
_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"', re.DOTALL)


def mlir_decode(body: str) -> bytes:
    """The bytes of an MLIR string literal's body (between the quotes): `\\XX` hex, `\\\\`, `\\"`, `\\n`, `\\t`."""
    out = bytearray()
    for match in _PIECE.finditer(body):
        plain, escape = match.group(1), match.group(2)
        if plain is not None:
            out += plain.encode("utf-8")
        elif len(escape) == 2:
            out.append(int(escape, 16))
        else:
            out.append({"n": 10, "t": 9}.get(escape, ord(escape)))
    return bytes(out)


_PIECE = re.compile(r'([^\\]+)|\\([0-9A-Fa-f]{2}|.)', re.DOTALL)


def mlir_encode(data: bytes) -> str:
    """An MLIR string literal body for `data`: printable ASCII as is, the rest (and `"`, `\\`) as `\\XX`."""
    return "".join(chr(b) if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) else f"\\{b:02X}" for b in data)


# ----- the host module ---------------------------------------------------------------------------------------------
@dataclass
class SwapReport:
    binary_symbol: str
    old_binary_bytes: int
    new_binary_bytes: int
    lookups_renamed: dict[str, int] = field(default_factory=dict)  # old name -> string constants rewritten


_FATBIN_MAGIC = b"\x50\xed\x55\xba"
_GLOBAL = re.compile(r'^(\s*llvm\.mlir\.global\b[^\n]*?\bconstant\s+@("(?:[^"\\]|\\.)*"|[\w$.]+)\()"', re.MULTILINE)


def swap_module_text(text: str, cubin: bytes, names: dict[str, str], *, old_entry: str) -> tuple[str, SwapReport]:
    """The host module `text` with its embedded GPU binary replaced by `cubin` and each kernel lookup string
    `"<old>\\00"` replaced by `"<new>\\00..."` (NUL-padded to the same length). `old_entry` identifies the binary
    global (the one whose bytes hold an ELF image naming that entry). Raises ValueError when the module does not
    look as expected (no or several binaries, a name with no lookup string, a new name longer than the old)."""
    naming, binaries = [], []
    for match in _GLOBAL.finditer(text):
        start = match.end() - 1  # the opening quote of the initializer
        literal = _LITERAL.match(text, start)
        if literal is None:
            continue
        data = mlir_decode(literal.group(1))
        item = (match.group(2), literal.start(), literal.end(), len(data))
        if data[:4] in (_FATBIN_MAGIC, b"\x7fELF"):
            binaries.append(item)
            if b"\x7fELF" in data and old_entry.encode() in data:
                naming.append(item)
    found = naming or binaries  # a compressed fatbin does not show the name: then the one binary there is
    if len(found) != 1:
        raise ValueError(f"expected one embedded GPU binary naming {old_entry!r}, found {len(found)} "
                         f"({len(binaries)} fatbin/ELF globals)")
    symbol, lit_start, lit_end, old_size = found[0]
    text = text[:lit_start] + '"' + mlir_encode(cubin) + '"' + text[lit_end:]
    report = SwapReport(symbol, old_size, len(cubin))
    for old, new in names.items():
        if len(new) > len(old):
            raise ValueError(f"new name {new!r} is longer than {old!r}: the lookup string cannot keep its length")
        needle = f'"{old}\\00"'
        padded = '"' + new + "\\00" * (len(old) - len(new) + 1) + '"'
        count = text.count(needle)
        if count == 0:
            raise ValueError(f"no kernel lookup string for {old!r} in the host module")
        text = text.replace(needle, padded)
        report.lookups_renamed[old] = count
    return text, report


# ----- assembling --------------------------------------------------------------------------------------------------
@dataclass
class Assembled:
    cubin: bytes
    log: str
    ptxas: str
    version: str
    flags: tuple
    ptx_isa_rewritten: str | None = None  # "9.1 -> 9.0" when the PTX's .version was lowered for this ptxas
    cached: bool = False


_VERSION_LINE = re.compile(r"^(\s*\.version\s+)(\d+\.\d+)", re.MULTILINE)


def default_ptxas() -> str:
    """$SM120_NAME_PTXAS, else the newest ptxas tritonhook finds (the CUDA toolkit's among them)."""
    if config.cute.SM120_NAME_PTXAS.is_set():
        return config.cute.SM120_NAME_PTXAS.get()
    found = sorted(find_ptxas(), key=lambda b: tuple(int(x) for x in b.version.split(".")))
    if not found:
        raise TritonhookError(f"no ptxas found; set ${config.cute.SM120_NAME_PTXAS.name}")
    return found[-1].path


def assemble_cached(ptx: str, arch: str, *, ptxas: str | None = None, flags=DSL_PTXAS_FLAGS,
                    cache_dir: str | os.PathLike | None = None) -> Assembled:
    """Assemble `ptx` for `arch` with an external ptxas (`tools.assemble`), cached on disk by
    (ptxas, version, flags, arch, PTX). If this ptxas refuses the PTX's ISA version (a DSL newer than the
    toolkit), the `.version` line is lowered to the one ptxas names and that is recorded."""
    ptxas = ptxas or default_ptxas()
    version = ptxas_version(ptxas)
    flags = tuple(flags)
    key = hashlib.sha256("\0".join([os.path.realpath(ptxas), version, *flags, arch, ptx]).encode()).hexdigest()[:32]
    cache = Path(cache_dir or config.cute.SM120_NAME_CACHE.get() or Path(tempfile.gettempdir()) / "sm120_name_cache")
    hit = cache / f"{key}.cubin"
    if hit.exists():
        meta = (cache / f"{key}.log").read_text()
        isa, _, log = meta.partition("\n")
        return Assembled(hit.read_bytes(), log, ptxas, version, flags, isa or None, cached=True)
    rewritten = None
    try:
        result = assemble(ptx, ptxas, arch, flags, label=arch)
    except TritonhookError as exc:
        supported = re.search(r"current version is '(\d+\.\d+)'", str(exc))
        current = _VERSION_LINE.search(ptx)
        if not (supported and current):
            raise
        rewritten = f"{current.group(2)} -> {supported.group(1)}"
        result = assemble(_VERSION_LINE.sub(rf"\g<1>{supported.group(1)}", ptx, count=1), ptxas, arch, flags,
                          label=arch)
    cache.mkdir(parents=True, exist_ok=True)
    (cache / f"{key}.log").write_text(f"{rewritten or ''}\n{result.stderr}")
    hit.write_bytes(result.cubin)
    return Assembled(result.cubin, result.stderr, ptxas, version, flags, rewritten)


def arm_ptx(ptx: str, arm: str) -> tuple[str, dict[str, str]]:
    """The PTX an external arm assembles and the entry renames it implies."""
    if arm == "ext":
        return ptx, {}
    if arm == "strip":
        return strip_names(ptx)
    raise ValueError(f"arm {arm!r}: the external arms are 'ext' and 'strip'")


# ----- the compiled function (GPU machine) -------------------------------------------------------------------------
def module_text(compiled) -> str:
    return str(compiled.ir_module)


def install_cubin(compiled, cubin: bytes, names: dict[str, str], *, old_entry: str, text: str | None = None):
    """Make `compiled` (a CuTe DSL compiled function, not yet called) launch `cubin`, looking its kernel up under
    `names[old_entry]` when renamed. `text`: the original host module text (default: the function's own), so that
    one compiled function can be switched between arms. Returns the SwapReport."""
    import ctypes

    from cutlass._mlir import ir
    from cutlass.cutlass_dsl import CuTeDSL

    new_text, report = swap_module_text(text if text is not None else module_text(compiled), cubin, names,
                                        old_entry=old_entry)
    with compiled.ir_module.context:
        module = ir.Module.parse(new_text)
    dsl = CuTeDSL._get_dsl()
    engine = dsl.compiler_provider.jit(module, shared_libs=dsl.get_shared_libs())
    capi = engine.lookup(compiled.function_name)
    if capi is None:
        raise RuntimeError(f"{compiled.function_name}: not found in the rebuilt execution engine")
    capi.restype = ctypes.c_int32
    with compiled._executor_lock:
        old = compiled.jit_module
        if old is not None:
            old.unload()
        compiled.ir_module = module
        compiled.engine = engine
        compiled.capi_func = capi
        compiled.jit_module = None
        compiled._default_executor = None
    return report


def loaded_kernel_names(compiled) -> list[str]:
    """Names of the kernels in the CUDA library the compiled function loaded (driver enumeration), or [] if
    the driver or bindings cannot say."""
    try:
        from cuda.bindings import driver

        libraries = compiled.jit_module.cuda_library if compiled.jit_module is not None else []
        names = []
        for library in libraries:
            lib = driver.CUlibrary(int(library))
            err, count = driver.cuLibraryGetKernelCount(lib)
            if int(err):
                return []
            err, kernels = driver.cuLibraryEnumerateKernels(count, lib)
            if int(err):
                return []
            for kernel in kernels:
                err, name = driver.cuKernelGetName(kernel)
                if int(err):
                    return []
                names.append(name.decode() if isinstance(name, bytes) else str(name))
        return names
    except Exception:  # noqa: BLE001 - informative only
        return []
