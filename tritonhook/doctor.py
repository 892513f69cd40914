"""`tritonhook doctor`: what this machine offers tritonhook, one verdict per line, each with what to do about it.

Why one command: a capture that records nothing, a ptxas left wrapped by a killed run, a Triton release we do not
support or another tool sitting in Triton's hook slots each look, from the outside, like "tritonhook does not work".
`diagnose` asks every part of the library that already knows the answer (the Triton adapter, the ptxas finder, the
wrapper's status, the store's verify) and writes none of it twice. It changes nothing: the store is opened
read-only and never repaired, no wrapper is touched, no CUDA context is created (NVML only).

Verdicts: `fail` (something tritonhook needs is broken: `tritonhook doctor` exits 1), `warn` (works, but
something is off), `ok`, `info` (a fact: no GPU is a normal CPU-only setup, not a failure).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from importlib import metadata
from pathlib import Path

from . import _triton, config, format
from .ptxas import wrapper
from ._version import __version__
from .cute.capture import dsl_version
from .errors import TritonhookError
from .store import SCHEMA_VERSION, NewerStoreError, Store
from .binaries import find_ptxas, ptxas_version

OK, WARN, FAIL, INFO = "ok", "warn", "fail", "info"
_STYLES = {OK: "green", WARN: "yellow", FAIL: "bold red", INFO: "cyan"}
TARGETS = (90, 100, 120)
"""The compute capabilities whose ptxas is reported: Hopper, datacenter Blackwell, consumer Blackwell (Triton
picks a different bundled ptxas from sm_100 on)."""
_TOOLS = {"tritonparse": "TritonParse", "triton.profiler": "Proton", "tritonhook": "tritonhook",
          "torch": "PyTorch"}
"""Owner module prefix -> the tool's name, for the hook-slot lines; any other owner is named by its module."""
_WRAPPER_VERDICTS = {wrapper.NOT_INSTALLED: OK, wrapper.INSTALLED: INFO, wrapper.INTERRUPTED_INSTALL: WARN,
                     wrapper.STALE_REAL: WARN, wrapper.ORPHANED: WARN, wrapper.REAL_ONLY: FAIL,
                     wrapper.WRAPPER_WITHOUT_REAL: FAIL, wrapper.MISSING: FAIL, wrapper.INSTALLING: INFO,
                     wrapper.NOT_PTXAS: FAIL}
"""A ptxas's wrapper state -> verdict: a wrapper in place records (a fact); half states still run ptxas (warn);
no ptxas at the path Triton runs breaks every compile (fail)."""


@dataclasses.dataclass(frozen=True)
class Check:
    """One line of the report: `topic` (triton, ptxas sm_90, gpu, store...), what was found, what to do, and
    for `--json` readers the figures behind the words (`data`: versions, paths, states)."""

    verdict: str
    topic: str
    found: str
    advice: str = ""
    data: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class DoctorReport:
    checks: list[Check]

    @property
    def ok(self) -> bool:
        """No `fail` line (`tritonhook doctor`'s exit status 0)."""
        return all(check.verdict != FAIL for check in self.checks)

    def count(self, verdict: str) -> int:
        return sum(check.verdict == verdict for check in self.checks)

    def to_json(self) -> dict:
        return {"ok": self.ok, "checks": [dataclasses.asdict(check) for check in self.checks]}

    def __rich_console__(self, console, options):
        width = max((len(check.topic) for check in self.checks), default=0)
        for check in self.checks:
            text = format.line(f"{check.verdict:<4}  {check.topic:<{width}}  {check.found}")
            text.stylize(_STYLES[check.verdict], 0, len(check.verdict))
            yield text
            if check.advice:
                yield format.line(f"{'':<4}  {'':<{width}}  -> {check.advice}")
        yield format.line(", ".join(f"{self.count(v)} {v}" for v in (OK, WARN, FAIL, INFO)))


def diagnose(store: str | os.PathLike | None = None) -> DoctorReport:
    """Every check, in the order the report prints them. `store`: the store to verify (read-only); None checks
    the default store ($TRITONHOOK_STORE or ./tritonhook-store) when one exists there."""
    checks = [Check(INFO, "tritonhook", f"tritonhook {__version__} on Python {sys.version.split()[0]} "
                                        f"({sys.executable})")]
    triton_ok = _triton_check(checks)
    checks += _ptxas_checks(triton_ok)
    if triton_ok:
        checks += _hook_checks()
    checks += _gpu_checks()
    checks += _dsl_checks()
    checks += _store_checks(store)
    return DoctorReport(checks)


# ----- Triton and its ptxas ------------------------------------------------------------------------------------
def _triton_check(checks: list[Check]) -> bool:
    try:
        _triton.check_supported()
    except TritonhookError as exc:  # its message says what to install
        checks.append(Check(FAIL, "triton", str(exc)))
        return False
    import triton

    version, path = _triton.triton_version(), str(Path(triton.__file__).parent)
    checks.append(Check(OK, "triton", f"Triton {version} ({path}): supported ({_triton.REQUIREMENT})",
                        data={"version": version, "path": path}))
    return True


def _ptxas_checks(triton_ok: bool) -> list[Check]:
    """The ptxas Triton runs for each target, then every other ptxas on the machine; each with its wrapper state."""
    checks, triton_paths = [], set()
    for capability in TARGETS if triton_ok else ():
        path, _ = _triton.ptxas_for(capability)
        topic = f"ptxas sm_{capability}"
        if path is None:
            variable = config.ptxas.TRITON_OVERRIDES[1 if capability >= 100 else 0][1].name
            checks.append(Check(FAIL, topic, f"Triton finds no ptxas for sm_{capability}",
                                advice=f"reinstall the triton wheel (it bundles ptxas) or set ${variable}"))
            continue
        triton_paths.add(os.path.realpath(path))
        checks.append(_ptxas_check(topic, path, "Triton runs"))
    others = [b for b in find_ptxas() if os.path.realpath(b.path) not in triton_paths]
    checks += [_ptxas_check("ptxas", b.path, b.origin, version=b.version, plain=INFO) for b in others]
    if not triton_paths and not others:
        checks.append(Check(WARN, "ptxas", "no ptxas found (Triton, $CUDA_HOME, /usr/local/cuda*, PATH, pip wheels)",
                            advice="pip install nvidia-cuda-nvcc-cu12==12.8.93, or list paths in "
                                   f"${config.ptxas.PTXAS.name}"))
    return checks


def _ptxas_check(topic: str, path: str, origin: str, *, version: str | None = None, plain: str = OK) -> Check:
    """One ptxas: version, where from, and whether a tritonhook wrapper sits there (its state's own words)."""
    state = wrapper.status(path)
    version = version or ptxas_version(path)
    found = f"{version or '?'} {origin} {path}"
    data = {"path": path, "version": version, "origin": origin, "wrapper": state.state}
    if state.state == wrapper.NOT_INSTALLED:
        return Check(plain, topic, f"{found}, not wrapped", data=data)
    advice = (f"tritonhook ptxas uninstall --ptxas {path} puts the real ptxas back"
              if state.state != wrapper.WRAPPER_WITHOUT_REAL else "")
    return Check(_WRAPPER_VERDICTS[state.state], topic, f"{found}: {state.state}: {state.detail}", advice, data)


# ----- other tools in Triton's hook slots ----------------------------------------------------------------------
def _hook_checks() -> list[Check]:
    """Who holds each of Triton's hook slots in this process. tritonhook chains with what it finds (TritonParse
    and Proton are tested), so another owner is a fact to know when two tools disagree, not a failure."""
    slots = _triton.hook_slots()
    held = {slot: hooks for slot, hooks in slots.items() if hooks}
    if not held:
        return [Check(OK, "hooks", f"Triton's {len(slots)} hook slots are empty in this process")]
    return [Check(INFO, f"hook {slot}", ", ".join(f"{tool} ({name})" for tool, name in map(_owner, hooks)),
                  data={"slot": slot, "owners": [dict(zip(("tool", "callable"), _owner(hook))) for hook in hooks]})
            for slot, hooks in held.items()]


def _owner(hook) -> tuple[str, str]:
    """("TritonParse", "tritonparse.structured_logging.maybe_trace_triton"): the tool a hook belongs to (a known
    tool's name, else its module) and the callable itself."""
    target = hook.func if isinstance(hook, functools.partial) else hook
    target = getattr(target, "__func__", target)  # a bound method: its function
    module = getattr(target, "__module__", None) or type(target).__module__
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    tool = next((tool for prefix, tool in _TOOLS.items() if module == prefix or module.startswith(f"{prefix}.")),
                module)
    return tool, f"{module}.{name}"


# ----- GPU, driver, NVML ---------------------------------------------------------------------------------------
_CPU_ONLY = "CPU-only features work (capture of AOT compiles, rename, diff, ptxas-matrix, preflight, report, demo)"


def _gpu_checks() -> list[Check]:
    """GPUs through NVML (no CUDA context). No GPU is the normal CPU-only setup: an info line."""
    try:
        import pynvml
    except ImportError:
        driver = _proc_driver_version()
        if driver is None:
            return [Check(INFO, "gpu", f"no GPU (no NVIDIA driver loaded): {_CPU_ONLY}")]
        return [Check(WARN, "gpu", f"NVIDIA driver {driver} loaded, but no NVML bindings (nvidia-ml-py): GPUs not "
                                   f"listed", advice="pip install 'tritonhook[gpu]' (memwatch and the GPU checks "
                                                     "need NVML)")]
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return [Check(INFO, "gpu", f"no GPU (NVML: {exc}): {_CPU_ONLY}")]
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        cuda = pynvml.nvmlSystemGetCudaDriverVersion_v2()
        cuda = f"{cuda // 1000}.{cuda % 1000 // 10}"
        checks = [Check(OK, "driver", f"NVIDIA driver {driver} (CUDA {cuda}), NVML answers",
                        data={"driver": driver, "cuda": cuda})]
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
            name, total = _text(pynvml.nvmlDeviceGetName(handle)), pynvml.nvmlDeviceGetMemoryInfo(handle).total
            checks.append(Check(OK, f"gpu {index}", f"{name} (sm_{major}{minor}, {format.human_bytes(total)})",
                                data={"name": name, "arch": f"sm_{major}{minor}", "memory": total}))
    except pynvml.NVMLError as exc:
        return [Check(WARN, "gpu", f"NVML started but failed to list the GPUs: {exc}",
                      advice="nvidia-smi should show the same error; check the driver")]
    finally:
        pynvml.nvmlShutdown()
    if len(checks) == 1:
        checks.append(Check(INFO, "gpu", f"no GPU (NVML lists none): {_CPU_ONLY}"))
    elif _version("cuda-bindings") is None:
        checks.append(Check(WARN, "cuda-bindings", "not installed: memwatch cannot read the driver's limits",
                            advice="pip install 'tritonhook[gpu]'"))
    return checks


def _proc_driver_version() -> str | None:
    """The loaded NVIDIA kernel driver's version from /proc (what tells "no GPU" from "no NVML bindings")."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return None
    words = text.split("Kernel Module", 1)[-1].split()
    return words[0] if words else "?"


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# ----- CuTe DSL and cuTile -------------------------------------------------------------------------------------
def _dsl_checks() -> list[Check]:
    """Versions from the package metadata: importing the DSLs takes seconds and may need a GPU."""
    cute = dsl_version()
    checks = [Check(INFO, "cute", f"CuTe DSL {cute} (nvidia-cutlass-dsl): `tritonhook capture` records its kernels",
                    data={"version": cute}) if cute else Check(INFO, "cute", "CuTe DSL not installed", advice="pip install 'tritonhook[cute]' to "
                                                                               "capture CuTe DSL kernels")]
    cutile = _version("cuda-tile")
    if cutile is None:
        checks.append(Check(INFO, "cutile", "cuTile (cuda-tile) not installed"))
    elif tileiras := wrapper.tileiras_ptxas():
        checks.append(Check(INFO, "cutile", f"cuTile {cutile} (cuda-tile); its tileiras runs {tileiras[0]}: "
                                            f"`tritonhook capture --wheel-ptxas` records those calls",
                            data={"version": cutile, "ptxas": tileiras[0]}))
    else:
        checks.append(Check(WARN, "cutile", f"cuTile {cutile} (cuda-tile) without its compiler tileiras",
                            advice="pip install 'cuda-tile[tileiras]'", data={"version": cutile}))
    return checks


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


# ----- the store ---------------------------------------------------------------------------------------------------
def _store_checks(store: str | os.PathLike | None) -> list[Check]:
    """`Store.verify` without repair, on the store given, else on the default one when it exists."""
    path = config.store_path(store)
    if store is None and not path.exists():
        return [Check(INFO, "store", f"no store at {path} (the default: ${config.capture.STORE.name} or ./"
                                     f"{config.capture.DEFAULT_STORE}); nothing to check")]
    try:
        report = Store(path, readonly=True).verify()
    except NewerStoreError as exc:
        return [Check(FAIL, "store", str(exc), advice=f"the store is whole, only newer than tritonhook {__version__} "
                                                      f"reads (schema {SCHEMA_VERSION}): read it with the newer "
                                                      f"tritonhook that wrote it (pip install -U tritonhook)")]
    except TritonhookError as exc:
        return [Check(FAIL, "store", str(exc), advice="give --store the directory of a tritonhook store (a damaged "
                                                      "index cannot be repaired: move it aside, capture again)")]
    damaged = [("corrupt blob", report.corrupt), ("unreadable blob", report.unreadable),
               ("row without its blob", [f"capture {m['capture_id']} {m['stage']}" for m in report.missing])]
    checks = [Check(FAIL, "store", f"{path}: {len(items)} {name}(s), first {items[0]}",
                    advice=f"tritonhook store verify --store {path} lists them; capture those kernels again",
                    data={"store": str(path), "problem": name, "items": items})
              for name, items in damaged if items]
    leftovers = len(report.orphans) + len(report.temporary)
    if leftovers:
        checks.append(Check(WARN, "store", f"{path}: {leftovers} file(s) no capture needs (left by killed writers)",
                            advice=f"tritonhook store verify --repair --store {path}"))
    if not checks:
        checks.append(Check(OK, "store", f"{path}: {report.blobs_checked} blobs checked, all good",
                            data={"store": str(path), "blobs_checked": report.blobs_checked}))
    return checks
