"""Finding, running and comparing ptxas binaries.

The ptxas "cutlass" path (shared/NOTES.md §1.1) changes from one ptxas release to the next, so the same PTX has
to be assembled by several of them: `find_ptxas` lists those on this machine (Triton's bundled ones, the CUDA
toolkit, PATH, pip wheels such as `nvidia-cuda-nvcc-cu12`, and any named in $TRITONHOOK_PTXAS), `assemble` runs
one and times it, and `ptxas_matrix` assembles a PTX file plain and renamed with each of them.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import os
import re
import shutil
import site
import subprocess
import sys
import tempfile
import time
from typing import Iterable, Sequence

from . import config, format
from .cubin import Cubin, _triton_bin
from .errors import TritonhookError

PTXAS_ENV = config.PTXAS.name
"""Old name of `config.PTXAS`, kept for one release."""

_PIP_LAYOUTS = ("nvidia/cuda_nvcc/bin/ptxas", "nvidia/cu13/bin/ptxas", "nvidia/cu12/bin/ptxas")
_TARGET = re.compile(r"^\s*\.target\s+(sm_\w+)", re.MULTILINE)
_VERSION = re.compile(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)")


@dataclasses.dataclass(frozen=True)
class PtxasBinary:
    path: str
    version: str
    origin: str


@dataclasses.dataclass(frozen=True)
class AssembleResult:
    cubin: bytes
    stderr: str
    seconds: float


@dataclasses.dataclass(frozen=True)
class PtxasInfo:
    """What `ptxas -v` reports for one function."""

    registers: int | None = None
    stack_frame: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    shared: int = 0
    barriers: int = 0
    cumulative_stack: int = 0  # the frame plus what its calls need; printed only when not 0


# ----- finding ptxas ---------------------------------------------------------------------------------------------
def find_ptxas() -> list[PtxasBinary]:
    """Every distinct ptxas binary found, with its version (`--version`) and where it was found."""
    found, seen = [], set()
    for path, origin in _candidates():
        real = os.path.realpath(path)
        if real in seen or not os.access(path, os.X_OK) or os.path.isdir(path):
            continue
        seen.add(real)
        version = ptxas_version(path)
        if version:
            found.append(PtxasBinary(path, version, origin))
    return found


def one_per_version(binaries: Iterable[PtxasBinary]) -> list[PtxasBinary]:
    """The first binary of each version: the same release found twice (Triton's and pip's 12.8.93) is one row."""
    return list({binary.version: binary for binary in reversed(list(binaries))}.values())[::-1]


def _candidates() -> Iterable[tuple[str, str]]:
    for tool in ("ptxas", "ptxas-blackwell"):
        if path := _triton_bin(tool):
            yield path, f"triton {tool}"
    for _, var in config.TRITON_OVERRIDES:
        if var.is_set():
            yield var.get(), f"${var.name}"
    for entry in config.PTXAS.get():
        yield (os.path.join(entry, "ptxas") if os.path.isdir(entry) else entry), f"${config.PTXAS.name}"
    for var in (config.CUDA_HOME, config.CUDA_PATH):
        if var.is_set():
            yield os.path.join(var.get(), "bin", "ptxas"), f"${var.name}"
    for path in sorted(glob.glob("/usr/local/cuda*/bin/ptxas")):
        yield path, "CUDA toolkit"
    if path := shutil.which("ptxas"):
        yield path, "PATH"
    for root in dict.fromkeys([*sys.path, *site.getsitepackages()]):
        for layout in _PIP_LAYOUTS:
            path = os.path.join(root or ".", layout)
            if os.path.exists(path):
                yield path, f"pip ({layout.split('/')[1]})"


@functools.lru_cache(maxsize=None)
def _version_of(path: str, _mtime: float) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    match = _VERSION.search(out)
    return match.group(2) if match else ""


def ptxas_version(path: str) -> str:
    """"12.8.93" for a ptxas that answers `--version`; "" for anything else."""
    try:
        return _version_of(path, os.stat(path).st_mtime)
    except OSError:
        return ""


def triton_ptxas(gpu_name: str) -> str:
    """The ptxas Triton itself would use for `gpu_name` (honours TRITON_PTXAS_PATH and friends)."""
    from triton.backends.nvidia.compiler import get_ptxas

    return get_ptxas(sm_number(gpu_name)).path


def sm_number(gpu_name: str) -> int:
    match = re.fullmatch(r"sm_(\d+)[af]?", gpu_name)
    if not match:
        raise TritonhookError(f"{gpu_name!r}: not a GPU name like sm_90a or sm_100a")
    return int(match.group(1))


def ptx_target(ptx: str, *, label: str = "PTX") -> str:
    match = _TARGET.search(ptx)
    if not match:
        raise TritonhookError(f"{label}: no `.target sm_XX` line; is it PTX?")
    return match.group(1)


# ----- running ptxas ---------------------------------------------------------------------------------------------
def assemble(ptx: str | bytes, ptxas: str, gpu_name: str, extra_args: Sequence[str] = (), *,
             label: str = "PTX") -> AssembleResult:
    """Assemble with `ptxas -v`; raises TritonhookError carrying ptxas's own message when it refuses."""
    text = ptx.decode("utf-8", errors="replace") if isinstance(ptx, bytes) else ptx
    with tempfile.TemporaryDirectory(prefix="tritonhook-ptxas-") as tmp:
        source, output = os.path.join(tmp, "input.ptx"), os.path.join(tmp, "output.cubin")
        with open(source, "w") as handle:
            handle.write(text.rstrip("\0"))
        command = [ptxas, "-v", f"--gpu-name={gpu_name}", *extra_args, source, "-o", output]
        start = time.perf_counter()
        try:
            completed = subprocess.run(command, capture_output=True, text=True)
        except OSError as exc:
            raise TritonhookError(f"{ptxas}: cannot run it ({exc.strerror or exc})") from None
        seconds = time.perf_counter() - start
        if completed.returncode != 0 or not os.path.exists(output):
            errors = [line.replace(source, label) for line in completed.stderr.splitlines()
                      if "error" in line or "fatal" in line] or completed.stderr.splitlines()[-1:]
            raise TritonhookError(f"{label}: ptxas {ptxas_version(ptxas) or ptxas} rejected it for {gpu_name}: "
                                  f"{' | '.join(errors[:3]) or f'exit status {completed.returncode}'}")
        with open(output, "rb") as handle:
            return AssembleResult(handle.read(), completed.stderr, seconds)


_FUNCTION = re.compile(r"(?:Compiling entry function|Function properties for) '?([\w$]+)'?")


def parse_ptxas_verbose(stderr: str) -> dict[str, PtxasInfo]:
    """function name -> what `ptxas -v` printed about it (the independent reference the tests compare to)."""
    fields: dict[str, dict] = {}
    current = None
    for line in stderr.splitlines():
        if match := _FUNCTION.search(line):
            current = fields.setdefault(match.group(1), {})
            continue
        if current is None:
            continue
        for key, pattern in (("stack_frame", r"(\d+) bytes stack frame"), ("spill_stores", r"(\d+) bytes spill stores"),
                             ("spill_loads", r"(\d+) bytes spill loads"), ("registers", r"Used (\d+) registers"),
                             ("barriers", r"used (\d+) barriers"), ("shared", r"(\d+) bytes smem"),
                             ("cumulative_stack", r"(\d+) bytes cumulative stack size")):
            if match := re.search(pattern, line):
                current[key] = int(match.group(1))
    return {name: PtxasInfo(**values) for name, values in fields.items()}


# ----- the matrix ------------------------------------------------------------------------------------------------
_TOO_OLD = (re.compile(r"Unsupported \.version [\d.]+; current version is '[\d.]+'"),
            re.compile(r"Value '\w+' is not defined for option 'gpu-name'"))


def too_old_reason(message: str) -> str | None:
    """ptxas's own words when it refuses the PTX for being newer than itself (its `.version` or its target);
    None for any other refusal."""
    for pattern in _TOO_OLD:
        if match := pattern.search(message):
            return match.group(0)
    return None


@dataclasses.dataclass(frozen=True)
class MatrixRow:
    ptxas: str
    version: str
    variant: str  # "plain" or "renamed"
    kernel: str
    cubin_size: int
    text_size: int
    capmerc_size: int
    registers: int | None
    spill_stores: int
    spill_loads: int
    seconds: float


@dataclasses.dataclass(frozen=True)
class MatrixRatio:
    """renamed / plain for one kernel and one ptxas; None where the plain build has none of it."""

    ptxas: str
    version: str
    kernel: str
    renamed: str
    cubin: float
    text: float | None
    capmerc: float | None
    seconds: float | None


@dataclasses.dataclass(frozen=True)
class SkippedPtxas:
    path: str
    version: str
    reason: str


@dataclasses.dataclass(frozen=True)
class PtxasMatrix:
    rows: list[MatrixRow]
    ratios: list[MatrixRatio]
    skipped: list[SkippedPtxas]

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    def __rich_console__(self, console, options):
        """One row per build with the renamed/plain ratios on the renamed rows; a ptxas whose version another
        one shares is marked [n] and its path printed below; skipped ptxas are listed with ptxas's reason."""
        names = self._ptxas_names()
        ratios = {(r.ptxas, r.renamed): r for r in self.ratios}
        yield format.table(
            ("ptxas", "build", "kernel", "cubin", ".text", ".nv.capmerc", "regs", "spill st/ld", "time",
             "cubin ×", ".text ×", "capmerc ×"),
            [(names[r.ptxas], r.variant, r.kernel, f"{r.cubin_size:,}", f"{r.text_size:,}", f"{r.capmerc_size:,}",
              r.registers, f"{r.spill_stores}/{r.spill_loads}", f"{r.seconds * 1000:.0f} ms",
              *_ratio_cells(ratios.get((r.ptxas, r.kernel)) if r.variant == "renamed" else None))
             for r in self.rows],
            right_align=("cubin", ".text", ".nv.capmerc", "regs", "spill st/ld", "time", "cubin ×", ".text ×",
                         "capmerc ×"))
        for path, name in names.items():
            if name.endswith("]"):
                yield format.line(f"{name.rsplit(' ', 1)[1]} {path}")
        for skipped in self.skipped:
            yield format.line(f"skipped ptxas {skipped.version} ({skipped.path}): too old for this PTX: "
                              f"{skipped.reason}")

    def render(self) -> None:
        """Old name of `format.show(matrix)`."""
        format.show(self)

    def _ptxas_names(self) -> dict[str, str]:
        """path -> its version, with a [n] mark when two paths share that version."""
        versions = {row.ptxas: row.version for row in self.rows}
        shared = [path for path, version in versions.items() if list(versions.values()).count(version) > 1]
        return {path: f"{version} [{shared.index(path) + 1}]" if path in shared else version
                for path, version in versions.items()}


def _ratio_cells(ratio: MatrixRatio | None) -> tuple[str, str, str]:
    if ratio is None:
        return "", "", ""
    return tuple(format.times(value) for value in (ratio.cubin, ratio.text, ratio.capmerc))


def ptxas_matrix(ptx: str, ptxas_paths: Sequence[str], *, gpu_name: str | None = None, prefix: str = "cutlass_",
                 label: str = "PTX", extra_args: Sequence[str] = ()) -> PtxasMatrix:
    """Assemble `ptx` as is and with its entries renamed `prefix + name`, with each ptxas, and measure both.

    `extra_args` go to every ptxas call: pass the flags your frontend uses (Triton 3.9 adds
    `--regAllocOptLevel=2`, which changes spills), or the figures describe another build than the one you run.
    A ptxas older than the PTX (its `.version` or target) is skipped with ptxas's reason; any other refusal, or
    no ptxas able to assemble it, is an error."""
    from .rename import prefixer, ptx_entries, rename_ptx

    if not ptx_entries(ptx):
        raise TritonhookError(f"{label}: no .entry in this PTX, so no kernel to assemble and compare")
    gpu = gpu_name or ptx_target(ptx, label=label)
    variants = (("plain", ptx), ("renamed", rename_ptx(ptx, prefix)))
    rows, ratios, skipped = [], [], []
    for path in ptxas_paths:
        version = ptxas_version(path) or "?"
        try:
            built = {variant: assemble(source, path, gpu, extra_args, label=f"{label} ({variant})")
                     for variant, source in variants}
        except TritonhookError as exc:
            if (reason := too_old_reason(str(exc))) is None:
                raise
            skipped.append(SkippedPtxas(path, version, reason))
            continue
        cubins = {variant: Cubin.from_bytes(result.cubin, label=f"{label} ({variant}, ptxas {version})")
                  for variant, result in built.items()}
        for variant, cubin in cubins.items():
            rows += [MatrixRow(path, version, variant, kernel.name, cubin.size, kernel.text_size, kernel.capmerc_size,
                               kernel.registers, kernel.spill_stores, kernel.spill_loads, built[variant].seconds)
                     for kernel in cubin.kernels.values()]
        renamed_name = prefixer(prefix)
        for name, plain in cubins["plain"].kernels.items():
            renamed = cubins["renamed"].kernels[renamed_name(name)]
            ratios.append(MatrixRatio(path, version, name, renamed.name, cubins["renamed"].size / cubins["plain"].size,
                                      _over(renamed.text_size, plain.text_size),
                                      _over(renamed.capmerc_size, plain.capmerc_size),
                                      _over(built["renamed"].seconds, built["plain"].seconds)))
    if not rows:
        raise TritonhookError(f"{label}: every ptxas is too old for it: "
                              + "; ".join(f"{s.version} ({s.reason})" for s in skipped))
    return PtxasMatrix(rows, ratios, skipped)


def _over(value: float, base: float) -> float | None:
    return value / base if base else None
