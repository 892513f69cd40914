"""What a kernel finds in L2 inside the workload, measured: a one-warp latency probe queued just before each of a
signature's first timed launches (docs/sweep_fidelity.md#the-l2-probe).

Why measure: a replayed kernel's time depends on which of its inputs sit in L2, and inside a workload that differs
per kernel (what its producer just wrote is there, weights read long ago are not). Neither replay rule, all cold or
all warm, matches every kernel, and a model of the recorded traffic cannot predict it: cuBLAS and other non-Triton
kernels move bytes a recording never sees (docs/sweep_fidelity.md#an-l2-model-of-the-recorded-traffic-reverted).
The probe asks the L2 itself.

How: lane i of one warp times one `ld.global.cg` (cached in L2 only) at byte `span * i / LINES` of each tensor
argument, between two `%clock64` reads, the loaded word stored (to a second half of the output, where ptxas cannot
drop it) before the second read so that the read waits for it. An L2 hit and a DRAM miss differ about twofold
in cycles, with the warp's loads in flight together. The probe's own loads bring
LINES lines of each tensor into L2: a few KiB, next to the kernel's megabytes. The threshold between hit and miss
is calibrated once per recording, after the workload (`Calibration`): a buffer probed right after it was written,
then after a write of twice the L2.

The probe is PTX loaded through the CUDA driver (ctypes, libcuda), not a Triton kernel: launched from inside
Triton's launch hooks, a Triton kernel would be traced and captured as part of the workload.

How dirty the L2 is, measured: the lines a kernel evicts cost it a write back to DRAM where they are dirty, and a
workload that streams weights leaves its L2 clean where a training step leaves it dirty
(docs/sweep_fidelity.md#how-dirty-the-l2-is). Just before the residency probe, the dirt probe reads
`DIRT_READ_BYTES` that no kernel touched lately (`DirtPool`), each block timing itself in SM cycles (`_read_ptx`:
PTX through the driver, like the residency probe; CUDA events around it read 15-25 µs over the calibration in the
GPU test's workload, and negative in Qwen3's): the lines it evicts are the ones the kernel would evict first, and
the read takes longer where they are dirty. Calibrated after the workload against an L2 left clean (read after a flood) and dirty (a flood
written): `DirtCalibration`. The replay reads as much before each call (`DirtPool` again), so the lines the probe
cleaned out are clean there too.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import statistics
from typing import Sequence

from ..errors import TritonhookError
from ..measure.stats import median
from ..measure.timing import l2_bytes

LINES = 32
"""Lines sampled per tensor argument (one per lane of the probe's warp)."""
MAX_TENSORS = 16
"""Tensor arguments one probe measures (the first that many of a launch); the rest are not measured."""
ENTRY = "tritonhook_l2_probe"
READ_ENTRY = "tritonhook_l2_read"
DIRT_READ_BYTES = 8 << 20
"""What the dirt probe reads. On an H100 (medians of 30, p10-p90): 8 MiB read in 11.8 µs [11.4, 12.4] after a clean
L2 and 13.1 [12.7, 13.5] after a dirty one, apart at every sample; 2 MiB in 10.4 [10.0, 12.3] and 10.9 [10.5, 11.7],
which two samples (a three-step workload's timed launches) cannot tell apart. What it evicts the kernel after it
does not; the replay reads as much (`worker._L2Setup`)."""
READ_BLOCKS_PER_SM = 8
"""The dirt probe's blocks per SM (of 256 threads: 2,048 threads, an SM's most, so every block starts at once)."""
DIRTY_AT = 0.2
"""A signature whose dirt probes read the L2 less than a fifth of the way from the calibration's clean L2 to its dirty
one is replayed on a clean L2, every other on a dirty one. Not at 0: a workload streaming what it reads, whose L2 is
as clean as the calibration's, read +0.03 to +0.13 in 11 of 12 recordings (H200, benchmarks/dirt_rule.py), and a
threshold at the clean figure replays it dirty by the probe's noise; none of them, nor of 12 writing ones (0.96 to
1.08), is on the wrong side of 0.2. Inductor training steps read 0 to 1 and no threshold places all their kernels
(docs/sweep_fidelity.md#how-dirty-the-l2-is)."""
DIRT_SEPARATION = 1.05
"""A calibration whose dirty median is less than this many times its clean one cannot tell the two apart on this
GPU: the dirt probe's figures are then dropped (the replay dirties the L2)."""
HIT_SEPARATION = 1.4
"""A calibration whose cold median is less than this many times its hot median cannot tell hits from misses on this
GPU: the probe's figures are then dropped."""


def _ptx() -> str:
    """The probe kernel: params (u32 *out, u32 count, {u64 base, u64 bytes}[MAX_TENSORS]); unrolled per tensor.
    out: (2, count, LINES), cycles then the loaded words."""
    lines = [
        ".version 7.0", ".target sm_70", ".address_size 64",
        f".visible .entry {ENTRY}(.param .u64 p_out, .param .u32 p_count, "
        f".param .align 8 .b8 p_spans[{16 * MAX_TENSORS}])",
        "{", ".reg .pred %p;", ".reg .b32 %lane, %v, %dt, %count;",
        ".reg .b64 %out, %base, %bytes, %off, %addr, %t0, %t1, %lane64, %slot, %words;",
        "mov.u32 %lane, %tid.x;", "cvt.u64.u32 %lane64, %lane;", "ld.param.u64 %out, [p_out];",
        "ld.param.u32 %count, [p_count];", "mul.wide.u32 %slot, %lane, 4;", "add.u64 %slot, %out, %slot;",
        f"mul.wide.u32 %words, %count, {4 * LINES};", "add.u64 %words, %slot, %words;",
    ]
    for k in range(MAX_TENSORS):
        lines += [
            f"setp.le.u32 %p, %count, {k};", "@%p bra DONE;",
            f"ld.param.u64 %base, [p_spans+{16 * k}];", f"ld.param.u64 %bytes, [p_spans+{16 * k + 8}];",
            "mul.lo.u64 %off, %bytes, %lane64;", f"shr.u64 %off, %off, {LINES.bit_length() - 1};",
            "and.b64 %off, %off, -128;", "add.u64 %addr, %base, %off;", "and.b64 %addr, %addr, -4;",
            "mov.u64 %t0, %clock64;", "ld.global.cg.u32 %v, [%addr];", f"st.global.u32 [%words+{4 * LINES * k}], %v;",
            "mov.u64 %t1, %clock64;", "sub.u64 %t1, %t1, %t0;", "cvt.u32.u64 %dt, %t1;",
            f"st.global.u32 [%slot+{4 * LINES * k}], %dt;", "bar.warp.sync -1;",
        ]
    lines += ["DONE:", "ret;", "}"]
    return "\n".join(lines) + "\n"


def _read_ptx() -> str:
    """The dirt probe's read: params (u64 base, u64 vectors, u64 cycles, u32 keep); every thread of the grid reads
    16-byte vectors `ld.global.cg` (into L2, not L1) a grid stride apart and XORs them. Each block's thread 0 stores
    the SM clock cycles from a barrier before its loads to one after them at `cycles[block]`: a time that needs no
    event, stream or host (all blocks are resident at once and share the DRAM, so each block's time is the read's).
    The XOR is stored only where `keep` is not 0 (never: it keeps ptxas from dropping the loads)."""
    return "\n".join([
        ".version 7.0", ".target sm_70", ".address_size 64",
        f".visible .entry {READ_ENTRY}(.param .u64 p_base, .param .u64 p_vectors, .param .u64 p_cycles, "
        ".param .u32 p_keep)",
        "{", ".reg .pred %p;",
        ".reg .b32 %a0, %a1, %a2, %a3, %acc, %keep, %threads, %block, %blocks, %thread, %dt;",
        ".reg .b64 %base, %vectors, %cycles, %i, %stride, %addr, %t, %c0, %c1;",
        "ld.param.u64 %base, [p_base];", "ld.param.u64 %vectors, [p_vectors];", "ld.param.u64 %cycles, [p_cycles];",
        "ld.param.u32 %keep, [p_keep];", "mov.u32 %thread, %tid.x;", "mov.u32 %threads, %ntid.x;",
        "mov.u32 %block, %ctaid.x;", "mov.u32 %blocks, %nctaid.x;", "mul.wide.u32 %i, %block, %threads;",
        "cvt.u64.u32 %t, %thread;", "add.u64 %i, %i, %t;", "mul.wide.u32 %stride, %blocks, %threads;",
        "mov.u32 %acc, 0;",
        "bar.sync 0;", "mov.u64 %c0, %clock64;",
        "LOOP:", "setp.ge.u64 %p, %i, %vectors;", "@%p bra END;", "shl.b64 %addr, %i, 4;",
        "add.u64 %addr, %addr, %base;", "ld.global.cg.v4.u32 {%a0, %a1, %a2, %a3}, [%addr];",
        "xor.b32 %acc, %acc, %a0;", "xor.b32 %acc, %acc, %a1;", "xor.b32 %acc, %acc, %a2;",
        "xor.b32 %acc, %acc, %a3;", "add.u64 %i, %i, %stride;", "bra LOOP;",
        "END:", "bar.sync 0;", "mov.u64 %c1, %clock64;", "setp.ne.u32 %p, %thread, 0;", "@%p bra KEEP;",
        "sub.u64 %c1, %c1, %c0;", "cvt.u32.u64 %dt, %c1;", "mul.wide.u32 %t, %block, 4;", "add.u64 %t, %cycles, %t;",
        "st.global.u32 [%t], %dt;",
        "KEEP:", "setp.eq.u32 %p, %keep, 0;", "@%p bra DONE;", "st.global.u32 [%cycles], %acc;", "DONE:", "ret;", "}",
    ]) + "\n"


class _Driver:
    """The driver calls the probes need, through ctypes (any machine that runs CUDA has libcuda)."""

    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise TritonhookError(f"L2 probe: cannot load the CUDA driver (libcuda.so.1: {exc})") from None
        self.function, self.read_function = self._load(_ptx(), ENTRY), self._load(_read_ptx(), READ_ENTRY)
        count = ctypes.c_int()
        device = ctypes.c_int()
        self._check(self.lib.cuCtxGetDevice(ctypes.byref(device)), "cuCtxGetDevice")
        self._check(self.lib.cuDeviceGetAttribute(ctypes.byref(count), 16, device), "cuDeviceGetAttribute")  # SMs
        self.sms = count.value

    def _load(self, ptx: str, entry: str) -> ctypes.c_void_p:
        module, function = ctypes.c_void_p(), ctypes.c_void_p()
        self._check(self.lib.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(ptx.encode())),
                    "cuModuleLoadData")
        self._check(self.lib.cuModuleGetFunction(ctypes.byref(function), module, entry.encode()),
                    "cuModuleGetFunction")
        return function

    @property
    def read_blocks(self) -> int:
        return READ_BLOCKS_PER_SM * self.sms

    def read(self, stream: int, base: int, nbytes: int, cycles: int) -> None:
        """Queue the dirt probe's read of `nbytes` (a multiple of 16) at `base`, each block's cycles to `cycles`
        (u32 x `read_blocks`): `READ_BLOCKS_PER_SM` blocks of 256 threads per SM, all resident at once."""
        values = [ctypes.c_uint64(base), ctypes.c_uint64(nbytes // 16), ctypes.c_uint64(cycles), ctypes.c_uint32(0)]
        params = (ctypes.c_void_p * 4)(*[ctypes.addressof(value) for value in values])
        self._check(self.lib.cuLaunchKernel(self.read_function, self.read_blocks, 1, 1, 256, 1, 1, 0,
                                            ctypes.c_void_p(stream), params, None), "cuLaunchKernel")

    @staticmethod
    def _check(code: int, what: str) -> None:
        if code != 0:
            raise TritonhookError(f"L2 probe: {what} failed with CUDA driver error {code}")

    def launch(self, stream: int, out_ptr: int, spans: Sequence[tuple[int, int]]) -> None:
        out, count = ctypes.c_uint64(out_ptr), ctypes.c_uint32(len(spans))
        flat = (ctypes.c_uint64 * (2 * MAX_TENSORS))(*[value for span in spans for value in span])
        params = (ctypes.c_void_p * 3)(ctypes.addressof(out), ctypes.addressof(count), ctypes.addressof(flat))
        self._check(self.lib.cuLaunchKernel(self.function, 1, 1, 1, LINES, 1, 1, 0, ctypes.c_void_p(stream),
                                            params, None), "cuLaunchKernel")


@functools.cache
def _driver(device: int) -> _Driver:
    """The probe loaded into the context current for `device` (torch's primary context of that GPU)."""
    return _Driver()


def probe(torch, spans: Sequence[tuple[int, int]]):
    """Queue a probe of `spans` ((address, bytes) per tensor, at most MAX_TENSORS, bytes > 0) on the current stream;
    returns the int32 device tensor (len(spans), LINES) it fills with cycles per sampled line. No synchronization:
    read it after the stream has passed it."""
    if len(spans) > MAX_TENSORS:
        raise ValueError(f"L2 probe: {len(spans)} tensors, at most {MAX_TENSORS}")
    out = torch.empty((2, len(spans), LINES), dtype=torch.int32, device="cuda")
    if spans:
        _driver(torch.cuda.current_device()).launch(torch.cuda.current_stream().cuda_stream, out.data_ptr(), spans)
    return out[0]


@dataclasses.dataclass(frozen=True)
class Calibration:
    """Median probe cycles for lines just written (hot) and for lines pushed out by twice the L2 (cold)."""

    hot: float
    cold: float

    @property
    def usable(self) -> bool:
        return self.cold >= HIT_SEPARATION * self.hot

    @property
    def threshold(self) -> float:
        """Between the two, geometrically: fewer cycles than this is an L2 hit."""
        return (self.hot * self.cold) ** 0.5


def _flood_bytes(torch) -> int:
    """Twice the L2 (of 64 MiB where CUDA reports none): enough traffic to push anything out of it."""
    return 2 * (l2_bytes(torch) or 64 << 20)


def _flood(torch):
    """A buffer of `_flood_bytes`, for the calibrations' clean and dirty L2."""
    return torch.empty(_flood_bytes(torch), dtype=torch.uint8, device="cuda")


def calibrate(torch) -> Calibration:
    """Probe a 1 MiB buffer right after writing it, then after writing a buffer of twice the L2 (synchronizes)."""
    target = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
    flood = _flood(torch)
    span = [(target.data_ptr(), target.numel())]
    target.fill_(1)
    hot = probe(torch, span)
    flood.fill_(1)
    cold = probe(torch, span)
    torch.cuda.synchronize()
    return Calibration(float(hot.float().median()), float(cold.float().median()))


def resident(cycles: Sequence[Sequence[int]], calibration: Calibration) -> list[list[bool]]:
    """Per tensor, per sampled line: was it in L2 (fewer cycles than the calibration's threshold)?"""
    return [[value < calibration.threshold for value in row] for row in cycles]


def line_fractions(probes: Sequence[Sequence[bool]]) -> list[float]:
    """Over several probes of one tensor (each: per sampled line, in L2 or not), the fraction that found each line
    in L2."""
    return [round(statistics.fmean(lines[i] for lines in probes), 3) for i in range(LINES)]


def warm_ranges(fractions: Sequence[float], nbytes: int, at_least: float = 0.5) -> list[tuple[int, int]]:
    """Byte ranges of a buffer to read into L2 before a replayed call: chunk i of LINES (the lines sample i stood
    for) where at least `at_least` of the probes found its line in L2; adjacent chunks merged."""
    ranges: list[tuple[int, int]] = []
    for i, fraction in enumerate(fractions):
        if fraction < at_least:
            continue
        begin, end = nbytes * i // LINES, nbytes * (i + 1) // LINES
        if ranges and ranges[-1][1] == begin:
            ranges[-1] = (ranges[-1][0], end)
        elif end > begin:
            ranges.append((begin, end))
    return ranges


class DirtPool:
    """Slices of `DIRT_READ_BYTES` handed out in turn from a buffer of twice the L2 and one slice, allocated at the
    first: a slice comes back only after twice the L2 of other slices was read, so it is out of L2 when it is read
    again (the workload's own traffic pushes it further out)."""

    def __init__(self, torch):
        self.torch, self.buffer, self.at = torch, None, 0

    def take(self):
        if self.buffer is None:
            size = _flood_bytes(self.torch) + DIRT_READ_BYTES
            self.buffer = self.torch.empty(size, dtype=self.torch.uint8, device="cuda")
        if self.at + DIRT_READ_BYTES > self.buffer.numel():
            self.at = 0
        self.at += DIRT_READ_BYTES
        return self.buffer[self.at - DIRT_READ_BYTES:self.at]


def read_into_l2(torch, raw) -> None:
    """Read the uint8 tensor `raw` on the GPU (its lines into L2, clean), writing nothing of its size."""
    (raw.view(torch.int64) if raw.numel() % 8 == 0 and raw.data_ptr() % 8 == 0 else raw).max()


HALF_DIRT_CHUNK = 1024
"""Bytes of each read and each written piece of the half-dirty L2 (`dirty_half_of_l2`): eight lines."""


def dirty_half_of_l2(torch, flood) -> None:
    """Leave half the L2's lines dirty: `flood` (a uint8 buffer the L2's size) in pieces of `HALF_DIRT_CHUNK`, each
    odd piece copied onto the even one before it, in one kernel. The written and the read lines alternate in address
    and in time, so whatever order the L2 evicts in, half of what a kernel evicts next is owed to DRAM (written
    before a read of the other half, the dirty lines would be the oldest and go first)."""
    whole = flood.numel() // (2 * HALF_DIRT_CHUNK) * 2 * HALF_DIRT_CHUNK
    pairs = flood[:whole].view(torch.int64).view(-1, 2, HALF_DIRT_CHUNK // 8)
    pairs[:, 0].copy_(pairs[:, 1])


def probe_dirt(torch, pool: DirtPool, cycles=None):
    """Queue the dirt probe on the current stream: the next slice of `pool` read (`_read_ptx`); returns the int32
    device tensor of each block's cycles (read it after the stream has passed it; `read_cycles`): `cycles` where
    given (the replay's, which reads them never, passes one for all its calls), else a new one."""
    driver = _driver(torch.cuda.current_device())
    if cycles is None:
        cycles = torch.empty(driver.read_blocks, dtype=torch.int32, device="cuda")
    piece = pool.take()
    driver.read(torch.cuda.current_stream().cuda_stream, piece.data_ptr(), piece.numel(), cycles.data_ptr())
    return cycles


def read_cycles(cycles) -> float:
    """A dirt probe's read time in SM cycles: the median over its blocks."""
    return median(cycles.tolist())


@dataclasses.dataclass(frozen=True)
class DirtCalibration:
    """The dirt probe's median read time (SM cycles) on an L2 full of clean lines and on one full of dirty lines."""

    clean: float
    dirty: float

    @property
    def usable(self) -> bool:
        return self.dirty >= DIRT_SEPARATION * self.clean

    def dirt(self, reads: Sequence[float]) -> float:
        """Where the median of `reads` (cycles) lies from clean (0) to dirty (1), unclamped."""
        return round((median(reads) - self.clean) / (self.dirty - self.clean), 3)


def calibrate_dirt(torch, pool: DirtPool, rounds: int = 8) -> DirtCalibration:
    """Probe after a flood of twice the L2 written then read (the L2 holds clean lines) and after one written (dirty
    lines), `rounds` times each, alternating (synchronizes)."""
    flood = _flood(torch)
    clean, dirty = [], []
    for _ in range(rounds):
        flood.zero_()
        read_into_l2(torch, flood)
        clean.append(probe_dirt(torch, pool))
        flood.zero_()
        dirty.append(probe_dirt(torch, pool))
    torch.cuda.synchronize()
    return DirtCalibration(median([read_cycles(c) for c in clean]), median([read_cycles(c) for c in dirty]))


def replayed_dirt(rule: str, dirt: float | None) -> str:
    """The L2 dirt a signature is replayed with under a replay's dirt rule (`config.sweep.L2_DIRT`): "measured"
    gives "clean" where its dirt probes read below `DIRTY_AT` (`DirtCalibration.dirt`), else "dirty" (not probed
    included: as a training step leaves the L2); every other rule gives itself."""
    if rule != "measured":
        return rule
    return "dirty" if dirt is None or dirt >= DIRTY_AT else "clean"
