"""memwatch: where did the device memory go, and which kernel took it.

    with tritonhook.memwatch(device=0, interval_ms=2) as mw:
        run_model()
    mw.report()                 # rich tables: attribution, kernels; mw.to_json(), mw.plot("mem.png")

Why this exists (shared/NOTES.md §1.2): a CUDA context's memory grows in ways PyTorch cannot see. The largest is
the driver's local-memory (stack) reservation: when a kernel needs more stack than `CU_LIMIT_STACK_SIZE`, the
driver raises the limit at launch and reserves limit x SMs x max threads per SM for the rest of the context's
life (RTX 5090 TMA kernels from Triton 3.4-3.6 cost ~3.7 GiB that way). So memwatch records, side by side:

* a timeline from a sampler process (`_nvml_sampler.py`, so the watched program keeps its GIL): NVML v2 device
  `used` / `reserved` and this process's `usedGpuMemory`;
* snapshots before and after the region and around every Triton kernel launch and module load (Triton's runtime
  hook chains, joined with `.add`): NVML, the context's stack / printf FIFO / heap limits (cuda-bindings), the
  torch caching allocator, and the global scratch Triton asks `triton.set_allocator`'s allocator for;

and `attribute()`, a pure function of the snapshots, splits the growth into parts, each with its formula.
Nothing here creates a CUDA context or raises into the user's program: a failing reading is a warning.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import json
import os
import re
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Callable, Iterable

from . import _nvml_sampler, report
from ._nvml_sampler import NvmlDevice
from .errors import TritonhookError
from .preflight import DEFAULT_STACK_LIMIT

JSON_VERSION = 1
MAX_SNAPSHOTS = 20_000
"""Hook snapshots kept at most; later ones are counted, not stored (before/after are always kept)."""
_TRACKED = ("used", "context", "stack", "printf_fifo", "malloc_heap", "torch_reserved", "scratch_live")
"""Fields whose change makes a launch/load snapshot worth keeping; unchanged pairs are only counted."""


# ----- optional dependencies ------------------------------------------------------------------------------------
def _import_nvml():
    try:
        import pynvml
    except ImportError:
        raise TritonhookError("memwatch needs NVML bindings: pip install nvidia-ml-py "
                              "(or tritonhook[gpu])") from None
    return pynvml


@functools.cache  # _cu calls it on every driver call, several per launch snapshot: import once
def _import_driver():
    try:
        from cuda.bindings import driver
    except ImportError:
        raise TritonhookError("memwatch needs NVIDIA's cuda-bindings for the driver limits: pip install "
                              "cuda-bindings (or tritonhook[gpu])") from None
    return driver


# ----- the records ----------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """The watched device: what the stack formula needs (SMs, max threads per SM) and how NVML knows it."""

    ordinal: int
    name: str
    pci_bus_id: str
    total: int
    sms: int
    max_threads_per_sm: int
    driver_version: str


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """Every reading at one instant. None means "could not be read" (no context yet, no torch, ...)."""

    t: float
    event: str  # before, after, launch_enter, launch_exit, load_start, load_end
    kernel: str | None
    used: int | None
    reserved: int | None
    context: bool
    stack: int | None
    printf_fifo: int | None
    malloc_heap: int | None
    torch_reserved: int | None
    torch_allocated: int | None
    scratch_live: int
    scratch_requested: int


@dataclasses.dataclass(frozen=True)
class Sample:
    """One timeline point from the sampler process."""

    t: float
    used: int | None
    reserved: int | None
    process_used: int | None


@dataclasses.dataclass(frozen=True)
class Part:
    """One line of the attribution: bytes, the formula that produced them, and a detail (e.g. the kernel)."""

    name: str
    bytes: int
    formula: str
    detail: str = ""


@dataclasses.dataclass(frozen=True)
class StackGrowth:
    """The context stack limit grew between two consecutive snapshots."""

    old: int
    new: int
    t: float
    kernel: str | None
    where: str


# ----- device access (NVML + driver) ----------------------------------------------------------------------------
def _cu(result: tuple, what: str):
    """Unpack a cuda-bindings `(CUresult, value...)` tuple, raising a TritonhookError naming the call."""
    driver = _import_driver()
    error, *values = result
    if error != driver.CUresult.CUDA_SUCCESS:
        raise TritonhookError(f"{what}: CUDA driver error {getattr(error, 'name', error)}")
    return values[0] if len(values) == 1 else tuple(values)


class _Gpu:
    """NVML and driver handles of one CUDA device.

    The device is a CUDA ordinal (it honours CUDA_VISIBLE_DEVICES); NVML ignores that variable, so its handle is
    found by PCI bus id. Opening it calls cuInit but creates no context.
    """

    def __init__(self, ordinal: int):
        self.nvml, self.cu = _import_nvml(), _import_driver()
        try:
            cu_init = self.cu.cuInit(0)
        except Exception as exc:  # noqa: BLE001 - cuda-bindings raises its own types when libcuda is absent
            raise TritonhookError(f"CUDA device {ordinal}: cannot load the CUDA driver ({exc})") from None
        _cu(cu_init, "cuInit")
        self.device = _cu(self.cu.cuDeviceGet(ordinal), f"cuDeviceGet({ordinal})")
        bus_id = _cu(self.cu.cuDeviceGetPCIBusId(32, self.device), f"cuDeviceGetPCIBusId({ordinal})")
        bus_id = bus_id.split(b"\0")[0].decode()
        try:
            self.nvml.nvmlInit()
        except self.nvml.NVMLError as exc:
            raise TritonhookError(f"CUDA device {ordinal}: cannot initialise NVML ({exc})") from None
        try:
            self.nvml_device = NvmlDevice(self.nvml, bus_id)
        except LookupError as exc:
            raise TritonhookError(f"CUDA device {ordinal}: {exc}") from None
        self.info = DeviceInfo(
            ordinal=ordinal, name=_cu(self.cu.cuDeviceGetName(256, self.device), "cuDeviceGetName")
            .split(b"\0")[0].decode(), pci_bus_id=bus_id, total=self.memory()[2],
            sms=self._attribute("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
            max_threads_per_sm=self._attribute("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR"),
            driver_version=_text(self.nvml.nvmlSystemGetDriverVersion()))

    def _attribute(self, name: str) -> int:
        return _cu(self.cu.cuDeviceGetAttribute(getattr(self.cu.CUdevice_attribute, name), self.device), name)

    def memory(self) -> tuple[int, int | None, int]:
        return self.nvml_device.memory()

    def limits(self) -> tuple[int, int, int] | None:
        """(stack, printf FIFO, malloc heap) of this process's context on the device, None if it has none."""
        with self._context() as present:
            return self._read_limits() if present else None

    def set_stack_limit(self, limit: int) -> int:
        """Set `CU_LIMIT_STACK_SIZE` of this process's context on the device; returns the previous limit."""
        stack = self.cu.CUlimit.CU_LIMIT_STACK_SIZE
        with self._context() as present:
            if not present:
                raise TritonhookError(f"CUDA device {self.info.ordinal}: this process has no CUDA context there "
                                      f"yet, so no stack is reserved")
            previous = _cu(self.cu.cuCtxGetLimit(stack), "cuCtxGetLimit(CU_LIMIT_STACK_SIZE)")
            _cu(self.cu.cuCtxSetLimit(stack, limit), f"cuCtxSetLimit(CU_LIMIT_STACK_SIZE, {limit})")
            return previous

    @contextlib.contextmanager
    def _context(self):
        """Yields True with this process's context on the device current: the calling thread's context when it
        belongs to this device, else the primary context if it is active (retained and pushed just for the
        block). Yields False when there is none: memwatch never creates a context."""
        cu = self.cu
        current = _cu(cu.cuCtxGetCurrent(), "cuCtxGetCurrent")
        if int(current) and int(_cu(cu.cuCtxGetDevice(), "cuCtxGetDevice")) == int(self.device):
            yield True
            return
        _flags, active = _cu(cu.cuDevicePrimaryCtxGetState(self.device), "cuDevicePrimaryCtxGetState")
        if not active:
            yield False
            return
        primary = _cu(cu.cuDevicePrimaryCtxRetain(self.device), "cuDevicePrimaryCtxRetain")
        try:
            _cu(cu.cuCtxPushCurrent(primary), "cuCtxPushCurrent")
            try:
                yield True
            finally:
                _cu(cu.cuCtxPopCurrent(), "cuCtxPopCurrent")
        finally:
            _cu(cu.cuDevicePrimaryCtxRelease(self.device), "cuDevicePrimaryCtxRelease")

    def _read_limits(self) -> tuple[int, int, int]:
        limit = self.cu.CUlimit
        return tuple(_cu(self.cu.cuCtxGetLimit(which), f"cuCtxGetLimit({which.name})")
                     for which in (limit.CU_LIMIT_STACK_SIZE, limit.CU_LIMIT_PRINTF_FIFO_SIZE,
                                   limit.CU_LIMIT_MALLOC_HEAP_SIZE))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.nvml.nvmlShutdown()


def reset_stack_limit(device: int = 0, limit: int | None = None) -> tuple[int, int]:
    """Give the driver's stack reservation back: set this process's `CU_LIMIT_STACK_SIZE` on `device` to `limit`
    (default: the driver's initial 1,024 B). Returns `(previous, now)` limits in bytes per thread.

    The driver raises the limit at the launch of a kernel that needs more stack and keeps limit x SMs x max
    threads per SM reserved for the context's life (NOTES §1.2); lowering it frees that memory at once (NVML
    `used` drops by the stack line of memwatch's attribution). When it is safe: any time between launches. The
    call waits for the device's pending work, and the next launch of a kernel that needs the stack grows it
    again (paying the reservation and its synchronisation once more), so reset after a phase that used such
    kernels (warm-up, autotuning, a TMA pre-processing step), not inside a loop that keeps launching them. If
    other allocations fill the freed memory meanwhile, that later launch can fail with out of memory.
    """
    wanted = DEFAULT_STACK_LIMIT if limit is None else limit
    if wanted <= 0:
        raise TritonhookError(f"reset_stack_limit: limit must be a positive number of bytes, not {wanted}")
    gpu = _Gpu(device)
    try:
        previous = gpu.set_stack_limit(wanted)
        return previous, gpu.limits()[0]
    finally:
        gpu.close()


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _torch_memory(ordinal: int) -> tuple[int | None, int | None]:
    """(reserved, allocated) of torch's caching allocator; (None, None) unless torch already initialised CUDA."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return None, None
    stats = torch.cuda.memory_stats(ordinal)
    return stats.get("reserved_bytes.all.current", 0), stats.get("allocated_bytes.all.current", 0)


# ----- the sampler process --------------------------------------------------------------------------------------
class _SamplerProcess:
    """The NVML timeline, sampled by a child process (`_nvml_sampler.py`: why a process, and the protocol).
    Any failure ends sampling, never the program: the error is kept in `error` for the report."""

    def __init__(self, gpu: _Gpu, interval: float, t0: float):
        self.samples: list[Sample] = []
        self.error: str | None = None
        self.processes_ok = True
        command = [sys.executable, _nvml_sampler.__file__, gpu.info.pci_bus_id, repr(interval), str(os.getpid()),
                   repr(t0)]
        self._child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
        if self._child.stdout.readline().strip() != "ready":
            self.error = f"sampler did not start: {self._child.communicate()[1].strip()[-300:] or 'no output'}"

    def stop(self) -> None:
        if self._child.returncode is not None or self.error:
            return
        try:
            out, err = self._child.communicate(input="", timeout=30)
            data = json.loads(out)
        except (subprocess.TimeoutExpired, ValueError) as exc:
            self._child.kill()
            self.error = f"sampler lost: {type(exc).__name__}: {exc}"
            return
        self.samples = [Sample(*row) for row in data["samples"]]
        self.processes_ok, self.error = data["processes_ok"], data["error"]


class _RecordingAllocator:
    """Stands in for the user's `triton.set_allocator` allocator and tells the recorder about every request."""

    def __init__(self, inner, recorder: "_ScratchRecorder"):
        self.inner, self.recorder = inner, recorder

    def __call__(self, size: int, alignment: int, stream):
        buffer = self.inner(size, alignment, stream)
        self.recorder.requested(size, buffer)
        return buffer


class _ScratchRecorder:
    """Global-scratch requests (grid x num_ctas x metadata.global_scratch_size, asked on every launch).

    Buffers that are torch tensors are already in torch's allocator figures; the others are tracked with weak
    references, so `live` is the scratch outside torch still held (objects that cannot be weakly referenced
    count as held). Only the calling thread's allocator is wrapped: `triton.set_allocator` is a ContextVar.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.live = 0
        self.total = 0
        self.pending: list[tuple[int, bool]] = []
        self._var = self._token = self._original = None

    def install(self) -> None:
        from . import _triton

        self._var = _triton.allocator_var()
        self._original = self._var.get()
        self._token = self._var.set(_RecordingAllocator(self._original, self))

    def rewrap_if_replaced(self) -> None:
        """The user called triton.set_allocator inside the region: wrap the new allocator too."""
        current = self._var.get() if self._var is not None else None
        if current is not None and not (isinstance(current, _RecordingAllocator) and current.recorder is self):
            self._var.set(_RecordingAllocator(current, self))

    def uninstall(self) -> None:
        """Put the allocator back: the original (reset, so an unset ContextVar is unset again) or the one the
        user set meanwhile. A wrapper somebody else put over ours is left alone."""
        if self._var is None:
            return
        current, var = self._var.get(), self._var
        self._var = None
        if not (isinstance(current, _RecordingAllocator) and current.recorder is self):
            return
        if current.inner is self._original:
            with contextlib.suppress(ValueError, RuntimeError):
                var.reset(self._token)
                return
        var.set(current.inner)

    def requested(self, size: int, buffer) -> None:
        in_torch = type(buffer).__module__.split(".")[0] == "torch"
        with self.lock:
            self.total += size
            self.pending.append((size, in_torch))
            if not in_torch:
                self.live += size
        if not in_torch:
            with contextlib.suppress(TypeError):
                weakref.finalize(buffer, self._released, size)

    def _released(self, size: int) -> None:
        with self.lock:
            self.live -= size

    def take_pending(self) -> list[tuple[int, bool]]:
        """Requests since the last launch: Triton allocates scratch just before it calls the launch hook."""
        with self.lock:
            pending, self.pending = self.pending, []
        return pending


# ----- the watch ------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class KernelStats:
    """Per kernel name: launches seen and the scratch they requested."""

    launches: int = 0
    loads: int = 0
    scratch_requests: int = 0
    scratch_bytes_max: int = 0
    scratch_bytes_total: int = 0
    scratch_in_torch: bool | None = None


class MemWatch(contextlib.ContextDecorator):
    """`with memwatch(...) as mw:` or `@memwatch(...)`; each entry starts a fresh recording.

    After the region: `mw.result` (a `MemwatchResult`), and the shortcuts `report()`, `to_json()`, `plot()`.
    """

    def __init__(self, device: int = 0, interval_ms: float = 2.0, *, triton_hooks: bool = True):
        if interval_ms <= 0:
            raise TritonhookError(f"memwatch interval_ms={interval_ms}: must be positive")
        self.device, self.interval_ms, self.triton_hooks = device, interval_ms, triton_hooks
        self.result: MemwatchResult | None = None
        self._running = False

    # ----- start / stop ---------------------------------------------------------------------------------------
    def __enter__(self) -> "MemWatch":
        if self._running:
            raise TritonhookError("memwatch: this watch is already running (nested use of one MemWatch)")
        self._gpu = _Gpu(self.device)
        self._t0 = time.perf_counter()
        self._snapshots: list[Snapshot] = []
        self._open_pairs: dict[tuple[str, int], Snapshot] = {}
        self._dropped = 0
        self._warnings: list[str] = []
        self._kernels: dict[str, KernelStats] = {}
        self._scratch = _ScratchRecorder()
        self._hooks, self._hooks_added = {}, None
        self._last_torch: tuple[int, tuple[int | None, int | None]] | None = None
        try:
            self._snapshots.append(self._snapshot("before", None))
        except TritonhookError:
            self._gpu.close()
            raise
        self._install_triton_hooks()
        self._sampler = _SamplerProcess(self._gpu, self.interval_ms / 1000, self._t0)
        atexit.register(self._stop_at_exit)
        self._running = True
        return self

    def __exit__(self, *exc_info) -> bool:
        self._stop()
        return False

    def _stop(self) -> None:
        """Hooks out and sampler stopped first, whatever happens; then the last reading and the result."""
        if not self._running:
            return
        self._running = False
        atexit.unregister(self._stop_at_exit)
        try:
            self._uninstall_triton_hooks()
        finally:
            self._sampler.stop()
        try:
            self._snapshots.append(self._snapshot("after", None))
            self.result = self._build_result()
        finally:
            self._gpu.close()

    def _stop_at_exit(self) -> None:
        """The program exits inside the region (sys.exit in a decorated main): still stop and keep the result."""
        with contextlib.suppress(Exception):
            self._stop()

    # ----- Triton hooks ---------------------------------------------------------------------------------------
    def _install_triton_hooks(self) -> None:
        """Join Triton's launch / load hook chains, if Triton is importable (memwatch works without it)."""
        if not self.triton_hooks:
            return
        try:
            from . import _triton

            _triton.check_supported()
            self._hooks = {"launch_enter_hook": self._on_launch_enter, "launch_exit_hook": self._on_launch_exit,
                           "kernel_load_start_hook": self._on_load_start, "kernel_load_end_hook": self._on_load_end}
            self._hooks_added = _triton.add_runtime_hooks(self._hooks)
            self._scratch.install()
        except TritonhookError as exc:
            self._hooks = {}
            self._warnings.append(f"no per-kernel snapshots: {exc}")

    def _uninstall_triton_hooks(self) -> None:
        if self._hooks_added is not None:
            from . import _triton

            _triton.remove_runtime_hooks(self._hooks_added, self._hooks)
            self._hooks_added = None
        self._scratch.uninstall()

    def _on_launch_enter(self, launch_metadata) -> None:
        self._guarded("launch hook", self._launch_enter, launch_metadata)

    def _on_launch_exit(self, launch_metadata) -> None:
        self._guarded("launch hook", self._launch_exit, launch_metadata)

    def _on_load_start(self, module, function, name, metadata_group, hash) -> None:  # noqa: A002 - Triton's names
        self._guarded("load hook", self._load_start, str(name))

    def _on_load_end(self, module, function, name, metadata_group, hash) -> None:  # noqa: A002
        self._guarded("load hook", self._pair_end, "load", "load_end", str(name))

    def _guarded(self, what: str, action: Callable, *args) -> None:
        """Hooks run inside the user's launch: a failure becomes one warning, never an exception there."""
        try:
            action(*args)
        except Exception as exc:  # noqa: BLE001
            message = f"{what} failed ({type(exc).__name__}: {exc})"
            if message not in self._warnings:
                self._warnings.append(message)

    def _launch_enter(self, launch_metadata) -> None:
        from . import _triton

        kernel = _triton.launch_kernel_name(launch_metadata)
        stats = self._kernels.setdefault(kernel, KernelStats())
        stats.launches += 1
        requests = self._scratch.take_pending()
        if requests:
            size = sum(r[0] for r in requests)
            stats.scratch_requests += 1
            stats.scratch_bytes_max = max(stats.scratch_bytes_max, size)
            stats.scratch_bytes_total += size
            stats.scratch_in_torch = all(r[1] for r in requests)
        self._pair_start("launch", "launch_enter", kernel)

    def _load_start(self, kernel: str) -> None:
        self._kernels.setdefault(kernel, KernelStats()).loads += 1
        self._pair_start("load", "load_start", kernel)

    def _launch_exit(self, launch_metadata) -> None:
        from . import _triton

        self._pair_end("launch", "launch_exit", _triton.launch_kernel_name(launch_metadata))
        self._scratch.rewrap_if_replaced()

    def _pair_start(self, kind: str, event: str, kernel: str) -> None:
        self._open_pairs[(kind, threading.get_ident())] = self._snapshot(event, kernel)

    def _pair_end(self, kind: str, event: str, kernel: str) -> None:
        """Keep the start/end pair only when something moved, so a long loop of launches stays small."""
        start = self._open_pairs.pop((kind, threading.get_ident()), None)
        end = self._snapshot(event, kernel)
        if start is not None and (_changed(self._snapshots[-1], start) or _changed(start, end)):
            self._keep(start)
            self._keep(end)

    def _keep(self, snapshot: Snapshot) -> None:
        if len(self._snapshots) < MAX_SNAPSHOTS:
            self._snapshots.append(snapshot)
        else:
            self._dropped += 1

    # ----- readings -------------------------------------------------------------------------------------------
    def _snapshot(self, event: str, kernel: str | None) -> Snapshot:
        try:
            used, reserved, _total = self._gpu.memory()
        except self._gpu.nvml.NVMLError as exc:
            raise TritonhookError(f"device {self.device}: NVML memory query failed ({exc})") from None
        limits = self._gpu.limits()
        torch_reserved, torch_allocated = self._torch_reading(used, fresh=event in ("before", "after"))
        stack, fifo, heap = limits if limits is not None else (None, None, None)
        return Snapshot(t=time.perf_counter() - self._t0, event=event, kernel=kernel, used=used, reserved=reserved,
                        context=limits is not None, stack=stack, printf_fifo=fifo, malloc_heap=heap,
                        torch_reserved=torch_reserved, torch_allocated=torch_allocated,
                        scratch_live=self._scratch.live, scratch_requested=self._scratch.total)

    def _torch_reading(self, used: int, *, fresh: bool) -> tuple[int | None, int | None]:
        """torch's (reserved, allocated), re-read only when NVML `used` moved since the last reading (or `fresh`).

        Reading torch's allocator statistics costs ~68 us (H200), ten times NVML's query, and a launch takes two
        snapshots. torch's reserved memory only changes through cudaMalloc/cudaFree, which move NVML `used`, so
        an unchanged `used` means an unchanged `reserved`; `allocated` (cache reuse) is exact in the before/after
        snapshots only."""
        if fresh or self._last_torch is None or self._last_torch[0] != used:
            self._last_torch = used, _torch_memory(self.device)
        return self._last_torch[1]

    def _build_result(self) -> "MemwatchResult":
        warnings = list(self._warnings)
        if self._sampler.error:
            warnings.append(self._sampler.error)
        if self._dropped:
            warnings.append(f"{self._dropped} launch/load snapshots not stored (limit {MAX_SNAPSHOTS})")
        samples = list(self._sampler.samples)
        had_context = any(s.context for s in self._snapshots)
        if had_context and self._sampler.processes_ok and not any(s.process_used is not None for s in samples):
            warnings.append(f"this process (pid {os.getpid()}) never appeared in NVML's process list (a container "
                            f"without the host PID namespace?): per-process figures are missing and the device "
                            f"figures include other processes")
        return MemwatchResult(device=self._gpu.info, interval_ms=self.interval_ms, snapshots=list(self._snapshots),
                              samples=samples, kernels=dict(self._kernels), warnings=warnings)

    # ----- shortcuts ------------------------------------------------------------------------------------------
    def _done(self) -> "MemwatchResult":
        if self.result is None:
            raise TritonhookError("memwatch: no result yet; report() / to_json() / plot() work after the region")
        return self.result

    def report(self) -> None:
        self._done().report()

    def to_json(self) -> dict:
        return self._done().to_json()

    def plot(self, path: str | os.PathLike) -> Path:
        return self._done().plot(path)


def memwatch(device: int = 0, interval_ms: float = 2.0, *, triton_hooks: bool = True) -> MemWatch:
    """Watch device memory in a region: `with tritonhook.memwatch(device=0) as mw: ...` or as a decorator."""
    return MemWatch(device, interval_ms, triton_hooks=triton_hooks)


class _CallableModule(type(sys)):
    """`tritonhook.memwatch` is both this module and the function the issue's API calls: once the submodule is
    imported, Python binds the package attribute `memwatch` to the module, so the module itself is callable."""

    def __call__(self, *args, **kwargs) -> MemWatch:
        return memwatch(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule


def _changed(a: Snapshot, b: Snapshot) -> bool:
    return any(getattr(a, field) != getattr(b, field) for field in _TRACKED)


# ----- attribution (pure) ---------------------------------------------------------------------------------------
def stack_growths(snapshots: Iterable[Snapshot]) -> list[StackGrowth]:
    """Every rise of the context stack limit, with the launch it happened in when a launch's hooks bracket it."""
    growths, previous = [], None
    for snapshot in snapshots:
        if snapshot.stack is None:
            continue
        if previous is not None and snapshot.stack > previous.stack:
            growths.append(StackGrowth(previous.stack, snapshot.stack, snapshot.t, *_growth_place(previous, snapshot)))
        previous = snapshot
    return growths


def _growth_place(before: Snapshot, after: Snapshot) -> tuple[str | None, str]:
    if before.event == "launch_enter" and after.event == "launch_exit" and before.kernel == after.kernel:
        return after.kernel, f"launch of {after.kernel}"
    return None, f"outside a Triton launch (between {_label(before)} and {_label(after)})"


def _label(snapshot: Snapshot) -> str:
    return snapshot.event + (f" {snapshot.kernel}" if snapshot.kernel else "")


def _value(snapshot: Snapshot | None, field: str) -> int:
    value = getattr(snapshot, field) if snapshot is not None else None
    return value or 0


def attribute(snapshots: list[Snapshot], device: DeviceInfo) -> list[Part]:
    """Split NVML `used`(after) - `used`(before) into parts; the residual makes them add up exactly.

    The context's own limits are compared from the first snapshot that saw the context: when the context was
    created inside the region, its default stack reservation belongs to the "context baseline" line.
    """
    before, after = snapshots[0], snapshots[-1]
    first = next((s for s in snapshots if s.context), None)
    parts = [_baseline_part(before, first),
             Part("torch allocator", _value(after, "torch_reserved") - _value(before, "torch_reserved"),
                  "torch reserved(after) - reserved(before)"),
             Part("Triton scratch outside torch", after.scratch_live - before.scratch_live,
                  "global-scratch bytes from a non-torch triton.set_allocator allocator still held after")]
    parts.append(_stack_part(snapshots, first, after, device))
    parts.append(Part("printf FIFO + malloc heap",
                      (_value(after, "printf_fifo") - _value(first, "printf_fifo")
                       + _value(after, "malloc_heap") - _value(first, "malloc_heap")) if first else 0,
                      "delta of CU_LIMIT_PRINTF_FIFO_SIZE + CU_LIMIT_MALLOC_HEAP_SIZE (upper bound: the driver "
                      "allocates them lazily)"))
    growth = _value(after, "used") - _value(before, "used")
    parts.append(Part("residual", growth - sum(p.bytes for p in parts),
                      "growth - the lines above (module images, other processes, NVML granularity)"))
    return parts


def _baseline_part(before: Snapshot, first: Snapshot | None) -> Part:
    formula = "used(first snapshot with a context) - used(before) - torch reserved - scratch then"
    if before.context or first is None:
        return Part("context baseline", 0, formula, "context existed before" if before.context else "no context")
    size = (_value(first, "used") - _value(before, "used") - _value(first, "torch_reserved")
            - (first.scratch_live - before.scratch_live))
    return Part("context baseline", size, formula, f"context first seen at {_label(first)}")


def _stack_part(snapshots: list[Snapshot], first: Snapshot | None, after: Snapshot, device: DeviceInfo) -> Part:
    formula = (f"(stack limit(after) - stack limit(first)) x {device.sms} SMs x {device.max_threads_per_sm} "
               f"threads/SM")
    if first is None or after.stack is None:
        return Part("stack (local memory) reservation", 0, formula, "no context")
    size = (after.stack - first.stack) * device.sms * device.max_threads_per_sm
    growths = stack_growths(snapshots)
    detail = "; ".join(f"{g.old} -> {g.new} B/thread at {g.where}" for g in growths) or \
        f"limit unchanged ({after.stack} B/thread)"
    return Part("stack (local memory) reservation", size, formula, detail)


# ----- the result -----------------------------------------------------------------------------------------------
@dataclasses.dataclass
class MemwatchResult:
    """Everything one watched region recorded; `report()`, `to_json()` / `from_json()`, `plot()`."""

    device: DeviceInfo
    interval_ms: float
    snapshots: list[Snapshot]
    samples: list[Sample]
    kernels: dict[str, KernelStats]
    warnings: list[str]

    @property
    def before(self) -> Snapshot:
        return self.snapshots[0]

    @property
    def after(self) -> Snapshot:
        return self.snapshots[-1]

    def attribution(self) -> list[Part]:
        return attribute(self.snapshots, self.device)

    def summary(self) -> dict[str, int | None]:
        """The headline figures; `peak` is the highest NVML used seen (timeline or snapshot) minus before."""
        used = [s.used for s in (*self.samples, *self.snapshots) if s.used is not None]
        process = [s.process_used for s in self.samples if s.process_used is not None]
        base = _value(self.before, "used")
        return {"used_before": self.before.used, "used_after": self.after.used,
                "growth": _value(self.after, "used") - base, "peak_growth": max(used) - base if used else None,
                "process_used_last": process[-1] if process else None,
                "process_used_peak": max(process) if process else None,
                "torch_reserved": self.after.torch_reserved, "torch_allocated": self.after.torch_allocated,
                "stack_limit_before": self.before.stack, "stack_limit_after": self.after.stack}

    def to_json(self) -> dict:
        return {"version": JSON_VERSION, "device": dataclasses.asdict(self.device), "interval_ms": self.interval_ms,
                "summary": self.summary(),
                "attribution": [dataclasses.asdict(p) for p in self.attribution()],
                "stack_growths": [dataclasses.asdict(g) for g in stack_growths(self.snapshots)],
                "kernels": {k: dataclasses.asdict(v) for k, v in self.kernels.items()},
                "warnings": self.warnings,
                "snapshots": [dataclasses.asdict(s) for s in self.snapshots],
                "samples": [[s.t, s.used, s.reserved, s.process_used] for s in self.samples]}

    @classmethod
    def from_json(cls, data: dict, *, source: str = "memwatch JSON") -> "MemwatchResult":
        if not isinstance(data, dict) or data.get("version") != JSON_VERSION:
            raise TritonhookError(f"{source}: not a memwatch result (version {JSON_VERSION})")
        try:
            return cls(device=DeviceInfo(**data["device"]), interval_ms=data["interval_ms"],
                       snapshots=[Snapshot(**s) for s in data["snapshots"]],
                       samples=[Sample(*s) for s in data["samples"]],
                       kernels={k: KernelStats(**v) for k, v in data["kernels"].items()},
                       warnings=list(data["warnings"]))
        except (KeyError, TypeError) as exc:
            raise TritonhookError(f"{source}: malformed memwatch result ({exc})") from None

    # ----- presentation ---------------------------------------------------------------------------------------
    def report(self) -> None:
        device = self.device
        summary = self.summary()
        rows = [(key.replace("_", " "), _fmt_bytes(value) if "limit" not in key else _fmt_int(value))
                for key, value in summary.items()]
        report.print_table(("figure", "value"), rows, title=f"memwatch: device {device.ordinal} {device.name} "
                           f"({device.sms} SMs x {device.max_threads_per_sm} threads/SM)")
        report.print_table(("part", "bytes", "formula", "detail"),
                           [(p.name, _fmt_bytes(p.bytes), p.formula, p.detail) for p in self.attribution()],
                           title="where the growth went (NVML used, after - before)", right_align=("bytes",))
        if self.kernels:
            report.print_table(("kernel", "loads", "launches", "scratch/launch max", "scratch total", "in torch"),
                               [(name, k.loads, k.launches, _fmt_bytes(k.scratch_bytes_max),
                                 _fmt_bytes(k.scratch_bytes_total), "-" if k.scratch_in_torch is None
                                 else str(k.scratch_in_torch).lower()) for name, k in self.kernels.items()],
                               title="Triton kernels", right_align=("loads", "launches", "scratch/launch max",
                                                                    "scratch total"))
        for warning in self.warnings:
            report.console(stderr=True).print(f"[yellow]memwatch warning:[/] {warning}")

    def plot(self, path: str | os.PathLike) -> Path:
        """A PNG (or any matplotlib format) of the timeline, with the stack-limit rises marked."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise TritonhookError(f"{path}: plotting needs matplotlib (pip install matplotlib)") from None
        figure, axes = plt.subplots(figsize=(10, 4))
        gib = 2 ** 30
        for label, field in (("NVML used", "used"), ("NVML reserved", "reserved"), ("this process", "process_used")):
            points = [(s.t, getattr(s, field)) for s in self.samples if getattr(s, field) is not None]
            if points:
                axes.plot([p[0] for p in points], [p[1] / gib for p in points], label=label)
        torch_points = [(s.t, s.torch_reserved) for s in self.snapshots if s.torch_reserved is not None]
        if torch_points:
            axes.step([p[0] for p in torch_points], [p[1] / gib for p in torch_points], where="post",
                      label="torch reserved")
        for growth in stack_growths(self.snapshots):
            axes.axvline(growth.t, color="red", linestyle="--", linewidth=0.8)
            axes.annotate(f"stack {growth.old}->{growth.new} ({growth.kernel or 'outside Triton'})",
                          (growth.t, axes.get_ylim()[1]), rotation=90, va="top", fontsize=7, color="red")
        axes.set_xlabel("seconds")
        axes.set_ylabel("GiB")
        axes.set_title(f"memwatch: {self.device.name}")
        axes.legend(loc="lower right", fontsize=8)
        out = Path(path)
        try:
            figure.savefig(out, dpi=120, bbox_inches="tight")
        except OSError as exc:
            raise TritonhookError(f"{out}: cannot write the plot ({exc.strerror or exc})") from None
        finally:
            plt.close(figure)
        return out


def _fmt_bytes(value: int | None) -> str:
    if value is None:
        return "-"
    sign = "-" if value < 0 else ""
    exact = f" ({value:,} B)" if abs(value) >= 1024 else ""
    return f"{sign}{report.human_bytes(abs(value))}{exact}"


def _fmt_int(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


# ----- comparing runs (each in a fresh process) -----------------------------------------------------------------
def compare_rows(results: dict[str, MemwatchResult]) -> list[tuple[str, ...]]:
    """One row per figure, one column per run; the first run is the baseline for the "vs" row."""
    names = list(results)
    summaries = {name: result.summary() for name, result in results.items()}  # each one a pass over the timeline
    baseline = summaries[names[0]]["used_after"] or 0
    rows = []
    for figure in ("used_after", "growth", "torch_reserved", "torch_allocated", "peak_growth"):
        rows.append((figure.replace("_", " "), *(_fmt_bytes(summaries[n][figure]) for n in names)))
    rows.append((f"used after vs {names[0]}",
                 *(_fmt_bytes((summaries[n]["used_after"] or 0) - baseline) for n in names)))
    parts = {name: result.attribution() for name, result in results.items()}
    for index, part in enumerate(parts[names[0]]):
        rows.append((part.name, *(_fmt_bytes(parts[n][index].bytes) for n in names)))
    rows.append(("stack limit after", *(_fmt_int(results[n].after.stack) for n in names)))
    return rows


def print_comparison(results: dict[str, MemwatchResult]) -> None:
    report.print_table(("figure", *results), compare_rows(results), title="memwatch comparison (one process each)",
                       right_align=tuple(results))
    for name, result in results.items():
        for growth in stack_growths(result.snapshots):
            print(f"{name}: stack {growth.old} -> {growth.new} B/thread at {growth.where}")


# ----- running a Python command under memwatch ------------------------------------------------------------------
_INTERPRETER_FLAGS = {"-u", "-O", "-OO", "-B", "-E", "-s", "-S", "-I", "-q"}


NOT_STARTED = "memwatch_not_started"
"""Key of the file the in-process runner writes instead of a result when memwatch could not start."""


def wrap_python_command(command: list[str], out: Path, interval_ms: float) -> list[str]:
    """`python [flags] script.py args` -> `python [flags] -m tritonhook.memwatch --out F ... -- script.py args`.

    memwatch must run inside the process (context limits, torch, Triton hooks are per process), so the command
    has to be a Python interpreter running a script or a module.
    """
    interpreter = Path(command[0]).name
    if not re.fullmatch(r"python[\d.]*", interpreter) and command[0] != sys.executable:
        raise TritonhookError(f"{command[0]}: memwatch runs Python commands only (python script.py, python -m "
                              f"module, python -c code), since it measures from inside the process")
    index = 1
    while index < len(command) and command[index] in _INTERPRETER_FLAGS:
        index += 1
    target = command[index:]
    if not target or (target[0].startswith("-") and target[0] not in ("-m", "-c")):
        raise TritonhookError(f"{' '.join(command)}: give a script or -m module after the interpreter and its "
                              f"flags ({', '.join(sorted(_INTERPRETER_FLAGS))})")
    return [*command[:index], "-m", "tritonhook.memwatch", "--out", str(out), "--interval-ms", str(interval_ms),
            "--", *target]


def _run_target(target: list[str]) -> None:
    import runpy

    if target[0] in ("-m", "-c") and len(target) < 2:
        raise TritonhookError(f"{target[0]}: give a {'module name' if target[0] == '-m' else 'program'}")
    if target[0] == "-m":
        sys.argv = [target[1], *target[2:]]
        runpy.run_module(target[1], run_name="__main__", alter_sys=True)
    elif target[0] == "-c":
        sys.argv = ["-c", *target[2:]]
        exec(compile(target[1], "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102 - python -c
    else:
        sys.argv = list(target)
        sys.path.insert(0, str(Path(target[0]).resolve().parent))
        runpy.run_path(target[0], run_name="__main__")


def main(argv: list[str] | None = None) -> int:
    """`python -m tritonhook.memwatch --out F [--interval-ms N] -- script.py args`: used by `tritonhook memwatch`."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tritonhook.memwatch")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--interval-ms", type=float, default=2.0)
    parser.add_argument("target", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    target = args.target[1:] if args.target[:1] == ["--"] else args.target
    watch = memwatch(interval_ms=args.interval_ms)
    try:
        watch.__enter__()
    except TritonhookError as exc:  # the command never ran: the parent says why memwatch could not start
        args.out.write_text(json.dumps({NOT_STARTED: str(exc)}))
        return 2
    code = 0
    try:
        try:
            _run_target(target)
        finally:
            watch.__exit__(None, None, None)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except TritonhookError as exc:
        print(f"tritonhook memwatch: error: {exc}", file=sys.stderr)
        return 2
    finally:
        if watch.result is not None:
            args.out.write_text(json.dumps(watch.result.to_json()))
    return code


def run_command(command: list[str], interval_ms: float) -> tuple[int, MemwatchResult]:
    """Run a Python command in a fresh process under memwatch; (its exit status, what memwatch recorded)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tritonhook-memwatch-") as tmp:
        out = Path(tmp) / "result.json"
        try:
            completed = subprocess.run(wrap_python_command(command, out, interval_ms))
        except FileNotFoundError:
            raise TritonhookError(f"{command[0]}: command not found") from None
        if not out.exists():
            raise TritonhookError(f"{' '.join(command)}: exited with status {completed.returncode} before "
                                  f"memwatch wrote its result (see its output above)")
        not_started = json.loads(out.read_text()).get(NOT_STARTED)
        if not_started:
            raise TritonhookError(f"memwatch could not start, so {' '.join(command)} was not run: {not_started}")
        return completed.returncode, load_result(out)


def parse_compare(specs: list[str]) -> dict[str, list[str]]:
    """['tma=python x.py --kernel tma', ...] -> {'tma': ['python', 'x.py', '--kernel', 'tma'], ...}."""
    import shlex

    runs = {}
    for spec in specs:
        name, sep, command = spec.partition("=")
        if not sep or not name or not command.strip():
            raise TritonhookError(f"--compare {spec!r}: write NAME=\"COMMAND\", e.g. tma=\"python x.py\"")
        if name in runs:
            raise TritonhookError(f"--compare: the name {name!r} is given twice")
        runs[name] = shlex.split(command)
    return runs


def load_result(path: Path) -> MemwatchResult:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise TritonhookError(f"{path}: cannot read a memwatch result ({exc})") from None
    return MemwatchResult.from_json(data, source=str(path))


if __name__ == "__main__":
    sys.exit(main())
