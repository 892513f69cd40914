"""The NVML timeline, sampled by a child process (`_nvml_sampler.py`: why a process, and the protocol)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

from .. import _nvml_sampler
from .device import Gpu


@dataclasses.dataclass(frozen=True)
class Sample:
    """One timeline point from the sampler process."""

    t: float
    used: int | None
    reserved: int | None
    process_used: int | None



class SamplerProcess:
    """The NVML timeline, sampled by a child process (`_nvml_sampler.py`: why a process, and the protocol).
    Any failure ends sampling, never the program: the error is kept in `error` for the report."""

    def __init__(self, gpu: Gpu, interval: float, t0: float):
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

