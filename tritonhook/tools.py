"""The NVIDIA tools tritonhook runs: finding ptxas and nvdisasm, their versions, running them.

One finder per tool, because three ptxas pickers (one with a machine path hard-coded) gave three answers to "which
ptxas is this". Places searched, in order: Triton's bundled binaries (found without importing Triton, which takes
seconds), Triton's own override variables, $TRITONHOOK_PTXAS, $CUDA_HOME / $CUDA_PATH, /usr/local/cuda*, PATH,
pip wheels. Which ptxas Triton itself picks for a target is a Triton-internal question: `_triton.triton_ptxas`.

The ptxas "cutlass" path (docs/ptxas_cutlass.md#the-cutlass-name-path) changes from one ptxas release to the next, so a PTX file is often
assembled by several of them (`matrix.ptxas_matrix`); `assemble` runs one with `-v` and times it.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import importlib.util
import os
import re
import shutil
import site
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from . import config
from .errors import TritonhookError

TRITON_PTXAS_FLAGS = ("-lineinfo",)
"""What Triton passes to ptxas besides `-v`, `--gpu-name` and the output (every supported release); Triton 3.9
adds `TRITON_39_PTXAS_FLAGS`. Pass both to `assemble` so that a standalone build describes the cubin Triton builds."""
TRITON_39_PTXAS_FLAGS = ("--regAllocOptLevel=2",)
"""Triton 3.9's addition (its workaround for a ptxas 13.x bug; it changes spills)."""


def triton_ptxas_args(options: Mapping, triton_version: tuple[int, int]) -> list[str]:
    """The ptxas flags (besides `-v`, `--gpu-name` and the files) Triton passed for a compile with `options` (a
    capture's options), under Triton's default knobs (line info on, ptxas optimizations on): an assembly of the
    captured PTX with these flags and the same ptxas reproduces the captured cubin byte for byte."""
    args = list(TRITON_PTXAS_FLAGS)
    if not options.get("enable_fp_fusion", True):
        args.append("--fmad=false")
    if triton_version >= (3, 9):
        args += TRITON_39_PTXAS_FLAGS
    return args + (options.get("ptx_options") or "").split()


_PIP_LAYOUTS = ("nvidia/cuda_nvcc/bin/ptxas", "nvidia/cu13/bin/ptxas", "nvidia/cu12/bin/ptxas")
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
        if path := triton_bundled(tool):
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


def triton_bundled(tool: str) -> str | None:
    """A binary Triton bundles (ptxas, ptxas-blackwell, nvdisasm, cuobjdump), found without importing Triton."""
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "backends" / "nvidia" / "bin" / tool
    return str(path) if path.exists() else None


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


# ----- nvdisasm ----------------------------------------------------------------------------------------------------
def find_nvdisasm(explicit: str | None = None) -> str:
    """`explicit`, else the nvdisasm Triton bundles, else $CUDA_HOME/bin, else PATH."""
    if explicit:
        found = shutil.which(explicit)
        if not found:
            raise TritonhookError(f"--nvdisasm {explicit}: not found or not executable")
        return found
    candidates = [triton_bundled("nvdisasm")]
    candidates += [os.path.join(var.get(), "bin", "nvdisasm") for var in (config.CUDA_HOME, config.CUDA_PATH)
                   if var.is_set()]
    candidates.append(shutil.which("nvdisasm"))
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise TritonhookError("no nvdisasm found (looked in Triton's backends/nvidia/bin, $CUDA_HOME/bin and PATH); "
                          "pass --nvdisasm PATH")


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
