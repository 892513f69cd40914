"""memwatch's timeline sampler, run as a process of its own: `python _nvml_sampler.py BUS_ID INTERVAL_S PID T0`.

Why a process and not a thread: a Python thread must take the GIL for every sample, and at one sample per 2 ms
that costs a launch-bound program a few percent of its time (benchmarks/memwatch_overhead.py measures it), most of
it in waking up and handing the GIL back and forth, not in NVML. NVML reads device-wide figures and any process's
usage by PID, so another process sees exactly what a thread would, and the watched program keeps its GIL.

Protocol: the child prints `ready` once NVML answers, samples until its stdin closes, takes one last sample (the
region's end state) and prints one JSON document: samples `[t, used, reserved, process_used]` with `t` in
seconds since `T0` on the shared monotonic clock (`time.perf_counter` is CLOCK_MONOTONIC on Linux), the interval
actually used, whether NVML lists processes, and the error that stopped sampling, if any.

This file imports nothing from tritonhook (it starts by path, quickly); `mem.device.Gpu` uses `NvmlDevice` too.
"""

from __future__ import annotations

import json
import re
import select
import sys
import time

MAX_SAMPLES = 200_000
"""The timeline is halved (every other sample dropped, interval doubled) when it reaches this many samples."""
PROCESS_SAMPLE_EVERY = 10
"""This process's own figure is read on every 10th sample only: NVML's process list costs several times the device
query."""


def bus_key(bus_id) -> tuple[int, ...]:
    """(domain, bus, device, function) from '0000:3B:00.0' or '00000000:3b:00.0' (NVML and CUDA differ)."""
    text = bus_id.decode() if isinstance(bus_id, bytes) else str(bus_id)
    match = re.search(r"([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)\.([0-9a-fA-F]+)", text)
    if not match:
        raise ValueError(f"PCI bus id {text!r}: not in domain:bus:device.function form")
    return tuple(int(part, 16) for part in match.groups())


class NvmlDevice:
    """The NVML handle of the device at a PCI bus id (NVML ignores CUDA_VISIBLE_DEVICES, so CUDA ordinals are
    mapped through the bus id). Raises LookupError when NVML lists no device there."""

    def __init__(self, nvml, bus_id: str):
        self.nvml = nvml
        self.memory_v2 = True
        wanted = bus_key(bus_id)
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            if bus_key(nvml.nvmlDeviceGetPciInfo(handle).busId) == wanted:
                self.handle = handle
                return
        raise LookupError(f"NVML lists no device at PCI bus id {bus_id}")

    def memory(self) -> tuple[int, int | None, int]:
        """(used, reserved, total). NVML v2 splits `reserved` out of `used`; v1 (old drivers) does not."""
        if self.memory_v2:
            try:
                info = self.nvml.nvmlDeviceGetMemoryInfo(self.handle, version=self.nvml.nvmlMemory_v2)
                return info.used, info.reserved, info.total
            except self.nvml.NVMLError:
                self.memory_v2 = False
        info = self.nvml.nvmlDeviceGetMemoryInfo(self.handle)
        return info.used, None, info.total

    def process_used(self, pid: int) -> int | None:
        """This PID's usedGpuMemory, None when NVML does not list it (no context yet, or a PID namespace)."""
        for process in self.nvml.nvmlDeviceGetComputeRunningProcesses(self.handle):
            if process.pid == pid:
                return process.usedGpuMemory
        return None


class _Timeline:
    def __init__(self, device: NvmlDevice, interval: float, pid: int, t0: float):
        self.device, self.interval, self.pid, self.t0 = device, interval, pid, t0
        self.samples: list[list] = []
        self.processes_ok = True
        self.countdown = 1

    def sample(self, *, last: bool = False) -> None:
        used, reserved, _total = self.device.memory()
        self.samples.append([time.perf_counter() - self.t0, used, reserved, self._process_used(last)])
        if len(self.samples) >= MAX_SAMPLES:
            del self.samples[1::2]
            self.interval *= 2

    def _process_used(self, last: bool) -> int | None:
        self.countdown -= 1
        if not self.processes_ok or (self.countdown > 0 and not last):
            return None
        self.countdown = PROCESS_SAMPLE_EVERY
        try:
            return self.device.process_used(self.pid)
        except self.device.nvml.NVMLError:  # not supported on this system: device figures only
            self.processes_ok = False
            return None


def main(argv: list[str]) -> int:
    bus_id, interval, pid, t0 = argv[0], float(argv[1]), int(argv[2]), float(argv[3])
    import pynvml

    pynvml.nvmlInit()
    timeline = _Timeline(NvmlDevice(pynvml, bus_id), interval, pid, t0)
    print("ready", flush=True)
    error = None
    try:
        while True:
            timeline.sample()
            if select.select([sys.stdin], [], [], timeline.interval)[0]:
                timeline.sample(last=True)
                break
    except Exception as exc:  # noqa: BLE001 - reported to the parent, never raised into it
        error = f"sampler stopped: {type(exc).__name__}: {exc}"
    json.dump({"samples": timeline.samples, "interval": timeline.interval, "processes_ok": timeline.processes_ok,
               "error": error}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
