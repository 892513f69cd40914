"""The NVIDIA tools tritonhook runs: finding ptxas and nvdisasm, their versions, running them.

One finder per tool, so that "which ptxas is this" has one answer wherever it is asked. Places searched, in order:
Triton's bundled binaries (found without importing Triton, which takes seconds), Triton's own override variables,
$TRITONHOOK_PTXAS, $CUDA_HOME / $CUDA_PATH, /usr/local/cuda*, PATH, pip wheels. Which ptxas Triton itself picks for a
target is a Triton-internal question: `_triton.triton_ptxas`.

The ptxas "cutlass" path changes from one ptxas release to the next, so a PTX file is often assembled by several
of them (`ptxas_matrix.ptxas_matrix`); `assemble` runs one with `-v` and times it, with the codegen options of
`CODEGEN_OPTIONS` and a control file (`--apply-controls`, CUDA 13.3+), and says why a build failed
(`AssembleError.cause`: error, crashed, hung, unsupported; docs/variants.md#failed-builds). What a tool made of an
input is kept by input, arguments and binary (`kept_file`): a build or a listing is made once per machine.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import glob
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from . import config
from .errors import TritonhookError
from .files import read_input

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

    @property
    def release(self) -> tuple[int, ...]:
        """The version as numbers, for ordering ("13.10" after "13.9")."""
        return tuple(int(part) for part in self.version.split(".") if part.isdigit())


@dataclasses.dataclass(frozen=True)
class AssembleResult:
    """A build: the cubin, what `ptxas -v` printed, and how long ptxas took to make it (when it made it: a build
    read from those kept took that long once)."""

    cubin: bytes
    stderr: str
    seconds: float

    def packed(self) -> bytes:
        """The build as kept (`kept_file`): a JSON line of what ptxas printed and its time, then the cubin."""
        header = json.dumps({"stderr": self.stderr, "seconds": self.seconds}).encode()
        return zlib.compress(header + b"\n" + self.cubin)

    @classmethod
    def unpacked(cls, data: bytes) -> AssembleResult:
        header, cubin = zlib.decompress(data).split(b"\n", 1)
        fields = json.loads(header)
        return cls(cubin, fields["stderr"], fields["seconds"])


@dataclasses.dataclass(frozen=True)
class ControlFile:
    """A ptxas control file (`--apply-controls`, an encrypted ACF that NVIDIA CompileIQ writes), read once: a
    build uses these bytes, so the sha256 a result quotes is the file that made the cubin."""

    path: str
    sha256: str
    data: bytes = dataclasses.field(repr=False, compare=False)


class AssembleError(TritonhookError):
    """ptxas did not build a cubin. `cause`: "error" (ptxas refused: its exit status and first error line),
    "crashed" (killed by a signal), "hung" (ran past `config.ptxas.PTXAS_TIMEOUT_S`, killed), "unsupported" (a control
    file for a ptxas without --apply-controls; not run)."""

    def __init__(self, cause: str, message: str):
        super().__init__(message)
        self.cause = cause


CAUSES = ("error", "crashed", "hung", "unsupported")
"""Every `AssembleError.cause`, in the order a summary counts them."""


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
    for _, var in config.ptxas.TRITON_OVERRIDES:
        if var.is_set():
            yield var.get(), f"${var.name}"
    for entry in config.ptxas.PTXAS.get():
        yield (os.path.join(entry, "ptxas") if os.path.isdir(entry) else entry), f"${config.ptxas.PTXAS.name}"
    for var in (config.ptxas.CUDA_HOME, config.ptxas.CUDA_PATH):
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


@functools.lru_cache(maxsize=None)
def _help_of(path: str, _mtime: float) -> str:
    try:
        return subprocess.run([path, "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def supports_controls(path: str) -> bool:
    """Whether this ptxas reads control files: its `--help` lists --apply-controls (asked, not inferred from the
    version: a vendor build or a wrapper may differ from the release notes)."""
    try:
        return "--apply-controls" in _help_of(path, os.stat(path).st_mtime)
    except OSError:
        return False


CONTROL_FILE_LIMIT = 4 << 20
"""The largest control file read (CompileIQ's ACFs are a few KiB)."""


def read_control_file(path: str | os.PathLike, *, spec: str | None = None) -> ControlFile:
    """The control file at `path`, read now; `spec` names it in the error (default `acf:PATH`)."""
    data = read_input(path, "control file", limit=CONTROL_FILE_LIMIT, label=spec or f"acf:{path}")
    if not data:
        raise TritonhookError(f"{spec or f'acf:{path}'}: the control file is empty")
    return ControlFile(str(path), hashlib.sha256(data).hexdigest(), data)


def controls_refusal(controls: ControlFile | str, ptxas: str) -> str | None:
    """The one line saying `ptxas` cannot read `controls` (a control file, or what names control files to come:
    `tune --acf-space FILE`); None when it can."""
    if supports_controls(ptxas):
        return None
    what = f"acf:{controls.path}" if isinstance(controls, ControlFile) else controls
    return (f"{what} needs a ptxas with --apply-controls (CUDA >= 13.3); "
            f"ptxas {ptxas_version(ptxas) or '(version unknown)'} at {ptxas} cannot read it")


_BOOL = ("true", "false")
_COUNT = re.compile(r"\d+")
CODEGEN_OPTIONS: dict[str, tuple[str, ...] | re.Pattern | None] = {
    "--opt-level": ("0", "1", "2", "3"),
    "--maxrregcount": re.compile(r"\d+|archmax|archmin"),
    "--device-function-maxrregcount": re.compile(r"\d+|archmax|archmin"),
    "--minnctapersm": _COUNT,
    "--register-usage-level": tuple(str(level) for level in range(11)),
    "--regAllocOptLevel": _COUNT,  # not in --help; Triton 3.9 passes --regAllocOptLevel=2
    "--Ofast-compile": ("0", "min", "mid", "max"),
    "--fmad": _BOOL,
    "--allow-expensive-optimizations": _BOOL,
    "--position-independent-code": _BOOL,
    "--enable-func-clone-sc": _BOOL,
    "--def-load-cache": ("ca", "cg", "cs", "lu", "cv"),
    "--force-load-cache": ("ca", "cg", "cs", "lu", "cv"),
    "--def-store-cache": ("wb", "cg", "cs", "wt"),
    "--force-store-cache": ("wb", "cg", "cs", "wt"),
    "--extensible-whole-program": None,
    "--disable-optimizer-constants": None,
    "--dont-merge-basicblocks": None,
    "--optimize-float-atomics": None,
    "--override-directive-values": None,
    "--return-at-end": None,
    "--generate-line-info": None,
}
"""The ptxas options a variant may add (`opt:`, `--ptxas-arg`, a decision file's): codegen choices only,
long name -> its values (None: a switch). Nothing that names a file or an output (-o, --options-file,
--apply-controls, which `acf:` passes with the file's checked bytes), the target (--gpu-name, which the capture
fixes), nor debug or sanitizer builds is here: a variant differs from its baseline in how ptxas compiles, nothing
else."""
_SHORT = {"-O": "--opt-level", "-maxrregcount": "--maxrregcount", "-func-maxrregcount": "--device-function-maxrregcount",
          "-minnctapersm": "--minnctapersm", "-regUsageLevel": "--register-usage-level", "-Ofc": "--Ofast-compile",
          "-fmad": "--fmad", "-allow-expensive-optimizations": "--allow-expensive-optimizations",
          "-pic": "--position-independent-code", "-enable-func-clone-sc": "--enable-func-clone-sc",
          "-dlcm": "--def-load-cache", "-flcm": "--force-load-cache", "-dscm": "--def-store-cache",
          "-fscm": "--force-store-cache", "-ewp": "--extensible-whole-program",
          "-disable-optimizer-consts": "--disable-optimizer-constants", "-no-bb-merge": "--dont-merge-basicblocks",
          "-opt-fp-atomics": "--optimize-float-atomics", "-override-directive-values": "--override-directive-values",
          "-ret-end": "--return-at-end", "-lineinfo": "--generate-line-info", "-regAllocOptLevel": "--regAllocOptLevel"}
_REFUSED = {"--output-file": "names the output", "--options-file": "names a file", "--apply-controls":
            "names a file: give it as acf:FILE", "--gpu-name": "picks the target, which the PTX or capture fixes",
            "--input-as-string": "is an input", "--entry": "picks what is compiled"}
_REFUSED_SHORT = {"-o": "--output-file", "-optf": "--options-file", "-apply-controls": "--apply-controls",
                  "-arch": "--gpu-name", "-ias": "--input-as-string", "-e": "--entry"}


def ptxas_option(text: str, *, where: str = "opt:") -> str:
    """`text` as one checked ptxas codegen option in its canonical spelling (`-O2`, `--maxrregcount=128`), or a
    one-line TritonhookError naming it. `where` is how the user wrote the option (`opt:`, `--ptxas-arg `)."""
    name, equals, value = text.strip().partition("=")
    if (match := re.fullmatch(r"-O(\d+)", text.strip())) or name == "--opt-level" or name == "-O":
        name, value, equals = "--opt-level", match.group(1) if match else value, "="
    if not name.startswith("-") or " " in text.strip():
        raise TritonhookError(f"{where}{text}: give one ptxas option, values after '=' "
                              f"(e.g. opt:--maxrregcount=128)")
    name = _SHORT.get(name, name)
    if name in _REFUSED or name in _REFUSED_SHORT:
        name = _REFUSED_SHORT.get(name, name)
        raise TritonhookError(f"{where}{text}: {name} {_REFUSED[name]}; a variant may only change codegen options")
    if name not in CODEGEN_OPTIONS:
        raise TritonhookError(f"{where}{text}: not a ptxas codegen option tritonhook passes (allowed: -O0..-O3, "
                              f"{', '.join(n for n in CODEGEN_OPTIONS if n != '--opt-level')})")
    allowed = CODEGEN_OPTIONS[name]
    if allowed is None:
        if equals:
            raise TritonhookError(f"{where}{text}: {name} takes no value")
        return name
    if not (value in allowed if isinstance(allowed, tuple) else allowed.fullmatch(value)):
        wanted = "|".join(allowed) if isinstance(allowed, tuple) else allowed.pattern.replace("\\d+", "N")
        raise TritonhookError(f"{where}{text}: {name} takes {wanted}" + ("" if equals else ", written NAME=VALUE"))
    return f"-O{value}" if name == "--opt-level" else f"{name}={value}"


# ----- running ptxas ---------------------------------------------------------------------------------------------
PTXAS_SLOTS = threading.BoundedSemaphore(os.cpu_count() or 1)
"""At most one ptxas a core at once in this process, however many threads assemble: a sweep builds its captures
in parallel and each capture's variants too, and more ptxas processes than cores only queue for them."""


def assemble(ptx: str | bytes, ptxas: str, gpu_name: str, extra_args: Sequence[str] = (), *,
             label: str = "PTX", controls: ControlFile | None = None, timeout: float | None = None,
             reuse: bool = True) -> AssembleResult:
    """Assemble with `ptxas -v` (and `--apply-controls` with `controls`' bytes), killed after `timeout` seconds
    (default `config.ptxas.PTXAS_TIMEOUT_S`). Raises `AssembleError` with its cause and ptxas's own message. A build
    this ptxas made before of the same PTX for the same target, arguments and control file is read from those kept
    (`kept_file`) instead: ptxas's output is a function of these, and a sweep, `tune`'s chunks and `upgrade`'s
    cells build the same captures run after run. `reuse=False` runs ptxas and keeps nothing (a caller that times it,
    or that builds inside a compile whose caches the user turned off); a failure is never kept."""
    version = ptxas_version(ptxas) or ptxas
    if controls is not None and (refusal := controls_refusal(controls, ptxas)):
        raise AssembleError("unsupported", f"{label}: {refusal}")
    text = (ptx.decode("utf-8", errors="replace") if isinstance(ptx, bytes) else ptx).rstrip("\0")
    kept = _kept_build(ptxas, [version, gpu_name, *extra_args, controls.sha256 if controls else ""], text) \
        if reuse else None
    if kept is not None:
        with contextlib.suppress(OSError, ValueError, KeyError, zlib.error):  # none kept, or not whole: built again
            return AssembleResult.unpacked(kept.read_bytes())
    built = _run_ptxas(text, ptxas, version, gpu_name, extra_args, label, controls,
                       config.ptxas.PTXAS_TIMEOUT_S.get() if timeout is None else timeout)
    if kept is not None:
        _keep(kept, built.packed())
    return built


def _kept_build(ptxas: str, args: Sequence[str], text: str) -> Path | None:
    """Where ptxas's build of `text` with `args` (its version among them: a wrapper script may front another ptxas
    tomorrow) is kept; None where there is no such ptxas (running it says so)."""
    try:
        return kept_file("ptxas", ptxas, args, text.encode())
    except OSError:
        return None


def _run_ptxas(text: str, ptxas: str, version: str, gpu_name: str, extra_args: Sequence[str], label: str,
               controls: ControlFile | None, timeout: float) -> AssembleResult:
    """One run of `ptxas -v` on `text` (`assemble`)."""
    with tempfile.TemporaryDirectory(prefix="tritonhook-ptxas-") as tmp:
        source, output = os.path.join(tmp, "input.ptx"), os.path.join(tmp, "output.cubin")
        with open(source, "w") as handle:
            handle.write(text)
        command = [ptxas, "-v", f"--gpu-name={gpu_name}", *extra_args]
        if controls is not None:
            with open(os.path.join(tmp, "controls.acf"), "wb") as handle:
                handle.write(controls.data)
            command.append(f"--apply-controls={handle.name}")
        with PTXAS_SLOTS:
            start = time.perf_counter()
            returncode, stderr = _run_killable(command + [source, "-o", output], timeout, ptxas, label)
            seconds = time.perf_counter() - start
        if returncode is None:
            raise AssembleError("hung", f"{label}: ptxas {version} ran past {timeout:g} s for {gpu_name} and was "
                                        f"killed (${config.ptxas.PTXAS_TIMEOUT_S.name} sets the limit)")
        if returncode < 0:
            raise AssembleError("crashed", f"{label}: ptxas {version} crashed ({_signal_name(-returncode)}) for "
                                           f"{gpu_name}" + (f": {stderr.splitlines()[-1]}" if stderr.strip() else ""))
        if returncode != 0 or not os.path.exists(output):
            errors = [line.replace(source, label) for line in stderr.splitlines()
                      if "error" in line or "fatal" in line] or stderr.splitlines()[-1:]
            raise AssembleError("error", f"{label}: ptxas {version} rejected it for {gpu_name} (exit status "
                                         f"{returncode}): {' | '.join(errors[:3]) or 'no message'}")
        with open(output, "rb") as handle:
            return AssembleResult(handle.read(), stderr, seconds)


def _run_killable(command: list[str], timeout: float, ptxas: str, label: str) -> tuple[int | None, str]:
    """(exit status, stderr); status None when it ran past `timeout`. ptxas runs in a session of its own, so a
    hung one is killed with whatever it started (a wrapper script's child would otherwise hold the pipes open)."""
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
    except OSError as exc:
        raise AssembleError("error", f"{label}: {ptxas}: cannot run it ({exc.strerror or exc})") from None
    try:
        _, stderr = process.communicate(timeout=timeout)
        return process.returncode, stderr
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):  # it may have ended in between
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return None, ""


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


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
    candidates += [os.path.join(var.get(), "bin", "nvdisasm")
                   for var in (config.ptxas.CUDA_HOME, config.ptxas.CUDA_PATH) if var.is_set()]
    candidates.append(shutil.which("nvdisasm"))
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise TritonhookError("no nvdisasm found (looked in Triton's backends/nvidia/bin, $CUDA_HOME/bin and PATH); "
                          "pass --nvdisasm PATH")


def run_nvdisasm(data: bytes, args: Iterable[str], *, nvdisasm: str | None = None, label: str = "") -> str:
    """nvdisasm's listing of the cubin `data` with `args`, from the listings kept by cubin (`kept_file`) when this
    nvdisasm made it before: a run costs ~0.3 s of CPU however small the cubin, and a report, a sweep's cubin deltas
    and `tune`'s chunks list the same cubins run after run."""
    tool = find_nvdisasm(nvdisasm)
    args = list(args)
    kept = kept_file("nvdisasm", tool, args, data)
    with contextlib.suppress(OSError, ValueError, zlib.error):  # none kept, or not whole: listed again
        return zlib.decompress(kept.read_bytes()).decode()
    with tempfile.TemporaryDirectory(prefix="tritonhook-sass-") as tmp:
        path = os.path.join(tmp, "input.cubin")
        with open(path, "wb") as handle:
            handle.write(data)
        completed = subprocess.run([tool, *args, path], capture_output=True, text=True)
    if completed.returncode != 0:
        message = " ".join(completed.stderr.split()) or f"exit status {completed.returncode}"
        raise TritonhookError(f"{label or 'cubin'}: {tool} failed ({message}); try another --nvdisasm")
    _keep(kept, zlib.compress(completed.stdout.encode()))
    return completed.stdout


def kept_file(kind: str, tool: str, args: Sequence[str], data: bytes) -> Path:
    """Where what `tool` made of `data` with `args` is kept (`config.paths.CACHE`/`kind`: ptxas's builds, nvdisasm's
    listings): named by the input, the arguments and the binary (its real path, size and modification time), so
    another binary or input makes it anew."""
    real = os.path.realpath(tool)
    found = os.stat(real)
    identity = "\0".join([real, str(found.st_size), str(found.st_mtime_ns), *args, ""]).encode()
    digest = hashlib.sha256(identity + data).hexdigest()
    return Path(os.path.expanduser(config.paths.CACHE.get())) / kind / f"{digest}.z"


def _keep(path: Path, content: bytes) -> None:
    """Writes `content` to `path` under a temporary name, then renames it (processes making it at once never read
    half a file); a cache that cannot be written only costs the next run its build or listing again."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=path.name, delete=False) as partial:
            partial.write(content)
    except OSError:
        return
    try:
        os.replace(partial.name, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(partial.name)
