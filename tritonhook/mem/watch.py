"""MemWatch: the context manager that records a region (snapshots around Triton launches, the sampler)."""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Callable

from .. import config, processes
from ..errors import TritonhookError
from .attribution import Snapshot
from .device import Gpu, torch_memory
from .result import KernelStats, MemwatchResult
from .sampler import SamplerProcess
from .scratch import ScratchRecorder

TAIL_FRACTION, TAIL_MIN_INTERVALS, TAIL_MAX_S = 0.05, 10, 1.0
"""After the region the sampler runs on for TAIL_FRACTION of the region's length (at least TAIL_MIN_INTERVALS
sampling intervals, at most TAIL_MAX_S): a rise at the region's end (the stack reservation of its last launch)
then shows on the timeline as the level it rose to, not as its last point."""
_TRACKED = ("used", "context", "stack", "printf_fifo", "malloc_heap", "torch_reserved", "scratch_live")
"""Fields whose change makes a launch/load snapshot worth keeping; unchanged pairs are only counted."""


class MemWatch(contextlib.ContextDecorator):
    """`with memwatch.watch(...) as mw:` or `@memwatch.watch(...)`; each entry starts a fresh recording.

    After the region: `mw.result` (a `MemwatchResult`), and the shortcuts `report()`, `to_json()`, `plot()`;
    given a `store` (a Store or its path), each region's result is saved there under `label` as it ends.
    Leaving the region takes `tail_seconds` longer: the timeline goes on a little past it.
    """

    def __init__(self, device: int = 0, interval_ms: float = 2.0, *, triton_hooks: bool = True, store=None,
                 label: str = "", keep: Callable[[MemwatchResult], None] | None = None):
        if interval_ms <= 0:
            raise TritonhookError(f"memwatch interval_ms={interval_ms}: must be positive")
        self.device, self.interval_ms, self.triton_hooks = device, interval_ms, triton_hooks
        self.store, self.label = store, label
        self.keep = keep  # called with the result as the watch stops: at the region's end, at exit or at a signal
        self.result: MemwatchResult | None = None
        self._running = False

    # ----- start / stop ---------------------------------------------------------------------------------------
    def __enter__(self) -> "MemWatch":
        if self._running:
            raise TritonhookError("memwatch: this watch is already running (nested use of one MemWatch)")
        self._new_recording()
        self._gpu = Gpu(self.device)
        try:
            self._snapshots.append(self._snapshot("before", None))
        except TritonhookError:
            self._gpu.close()
            raise
        self._install_triton_hooks()
        self._sampler = SamplerProcess(self._gpu, self.interval_ms / 1000, self._t0)
        atexit.register(self._stop_at_exit)
        self._restore_signals = processes.save_before_terminated(self._stop_at_exit)  # `timeout` keeps the timeline
        self._running = True
        return self

    def _new_recording(self) -> None:
        """The state one region records into (nothing here touches the GPU)."""
        self._t0 = time.perf_counter()
        self._snapshots: list[Snapshot] = []
        self._open_pairs: dict[tuple[str, int], Snapshot] = {}
        self._dropped = 0
        self._warnings: list[str] = []
        self._kernels: dict[str, KernelStats] = {}
        self._scratch = ScratchRecorder()
        self._triton_attached = contextlib.ExitStack()
        self._last_torch: tuple[int, tuple[int | None, int | None]] | None = None

    def __exit__(self, *exc_info) -> bool:
        self._stop()
        return False

    def _stop(self) -> None:
        """Hooks out, the last reading, the sampler's tail and the sampler stopped, whatever happens; then the
        result."""
        if not self._running:
            return
        self._running = False
        atexit.unregister(self._stop_at_exit)
        self._restore_signals()
        try:
            try:
                self._uninstall_triton_hooks()
                self._snapshots.append(self._snapshot("after", None))
                time.sleep(tail_seconds(self._snapshots[-1].t, self.interval_ms))
            finally:
                self._sampler.stop()
            self.result = self._build_result()
        finally:
            self._gpu.close()
        if self.store is not None:
            self.result.save(self.store)
        if self.keep is not None:
            self.keep(self.result)

    def _stop_at_exit(self) -> None:
        """The program exits inside the region (sys.exit in a decorated main): still stop and keep the result."""
        with contextlib.suppress(Exception):
            self._stop()

    # ----- Triton hooks ---------------------------------------------------------------------------------------
    def _install_triton_hooks(self) -> None:
        """Attach to Triton, if it is importable (memwatch works without it): launches through the `LaunchTracer`
        (the one way in that recording uses too), with Inductor's static launcher off so that a torch.compile'd
        program's kernels are among them; module loads through Triton's load hook chains; the scratch allocator."""
        if not self.triton_hooks:
            return
        try:
            from .. import _triton

            _triton.check_supported()
            attached = self._triton_attached
            attached.enter_context(_triton.inductor_launches_through_triton())
            tracer = _triton.LaunchTracer(self._on_launch, self._on_launch_exit, on_entered=self._on_launch_enter)
            tracer.install()
            attached.callback(tracer.uninstall)
            loads = {"kernel_load_start_hook": self._on_load_start, "kernel_load_end_hook": self._on_load_end}
            attached.callback(_triton.remove_runtime_hooks, _triton.add_runtime_hooks(loads), loads)
            self._scratch.install()
            attached.callback(self._scratch.uninstall)
        except TritonhookError as exc:
            self._triton_attached.close()
            self._warnings.append(f"no per-kernel snapshots: {exc}")

    def _uninstall_triton_hooks(self) -> None:
        """Everything `_install_triton_hooks` attached, taken off in the reverse order."""
        self._triton_attached.close()

    def _on_launch(self, spec, grid, args, weight, signature) -> str:
        """The tracer's launch callback: the kernel's name is the token its enter and exit callbacks receive."""
        return spec.name

    def _on_launch_enter(self, kernel: str) -> None:
        self._guarded("launch hook", self._launch_enter, kernel)

    def _on_launch_exit(self, kernel: str) -> None:
        self._guarded("launch hook", self._launch_exit, kernel)

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

    def _launch_enter(self, kernel: str) -> None:
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

    def _launch_exit(self, kernel: str) -> None:
        self._pair_end("launch", "launch_exit", kernel)
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
        if len(self._snapshots) < config.memwatch.MAX_SNAPSHOTS:
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

        Reading torch's allocator statistics costs many times NVML's query, and a launch takes two snapshots. torch's
        reserved memory only changes through cudaMalloc/cudaFree, which move NVML `used`, so an unchanged `used` means
        an unchanged `reserved`; `allocated` (cache reuse) is exact in the before/after snapshots only."""
        if fresh or self._last_torch is None or self._last_torch[0] != used:
            self._last_torch = used, torch_memory(self.device)
        return self._last_torch[1]

    def _build_result(self) -> "MemwatchResult":
        warnings = list(self._warnings)
        if self._sampler.error:
            warnings.append(self._sampler.error)
        if self._dropped:
            warnings.append(f"{self._dropped} launch/load snapshots not stored (limit {config.memwatch.MAX_SNAPSHOTS})")
        samples = list(self._sampler.samples)
        had_context = any(s.context for s in self._snapshots)
        if had_context and self._sampler.processes_ok and not any(s.process_used is not None for s in samples):
            warnings.append(f"this process (pid {os.getpid()}) never appeared in NVML's process list (a container "
                            f"without the host PID namespace?): per-process figures are missing and the device "
                            f"figures include other processes")
        return MemwatchResult(device=self._gpu.info, interval_ms=self.interval_ms, snapshots=list(self._snapshots),
                              samples=samples, kernels=dict(self._kernels), warnings=warnings, label=self.label)

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


def tail_seconds(region_s: float, interval_ms: float) -> float:
    """How long the sampler runs on after a region of `region_s` seconds (TAIL_FRACTION)."""
    return min(TAIL_MAX_S, max(TAIL_MIN_INTERVALS * interval_ms / 1000, TAIL_FRACTION * region_s))


def _changed(a: Snapshot, b: Snapshot) -> bool:
    return any(getattr(a, field) != getattr(b, field) for field in _TRACKED)


