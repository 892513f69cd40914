"""Device access for memwatch: NVML and driver handles of one CUDA device, and `reset_stack_limit`.

Nothing here creates a CUDA context: readings of a device whose context does not exist yet say so (None).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys

from .._nvml_sampler import NvmlDevice
from ..errors import TritonhookError
from ..preflight import DEFAULT_STACK_LIMIT


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

    def stack_reserve(self, limit: int) -> int:
        """Bytes the driver keeps for a stack limit of `limit` B/thread: limit x SMs x max threads per SM."""
        return limit * self.sms * self.max_threads_per_sm



def _cu(result: tuple, what: str):
    """Unpack a cuda-bindings `(CUresult, value...)` tuple, raising a TritonhookError naming the call."""
    driver = _import_driver()
    error, *values = result
    if error != driver.CUresult.CUDA_SUCCESS:
        raise TritonhookError(f"{what}: CUDA driver error {getattr(error, 'name', error)}")
    return values[0] if len(values) == 1 else tuple(values)


class Gpu:
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

    The driver raises the limit at the launch of a kernel that needs more stack and keeps limit x SMs x max threads
    per SM reserved for the context's life (docs/tma_stack.md#the-stack-reservation); lowering it frees that memory at
    once (NVML `used` drops by the stack line of memwatch's attribution). When it is safe: any time between launches.
    The call waits for the device's pending work, and the next launch of a kernel that needs the stack grows it again
    (paying the reservation and its synchronisation once more), so reset after a phase that used such kernels
    (warm-up, autotuning, a TMA pre-processing step), not inside a loop that keeps launching them. If other
    allocations fill the freed memory meanwhile, that later launch can fail with out of memory.
    """
    wanted = DEFAULT_STACK_LIMIT if limit is None else limit
    if wanted <= 0:
        raise TritonhookError(f"reset_stack_limit: limit must be a positive number of bytes, not {wanted}")
    gpu = Gpu(device)
    try:
        previous = gpu.set_stack_limit(wanted)
        return previous, gpu.limits()[0]
    finally:
        gpu.close()


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def torch_memory(ordinal: int) -> tuple[int | None, int | None]:
    """(reserved, allocated) of torch's caching allocator; (None, None) unless torch already initialised CUDA."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return None, None
    stats = torch.cuda.memory_stats(ordinal)
    return stats.get("reserved_bytes.all.current", 0), stats.get("allocated_bytes.all.current", 0)

