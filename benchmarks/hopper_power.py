"""The Hopper attention kernels under sustained load: each arm run back to back for a phase of its own, the SM
clock, board power and NVML's clock-event reasons sampled through it, so that a gap between two kernels splits into
clock (the board's power cap sets it, per kernel) and work per clock.

    # on the GPU machine, FA4 importable as for `hopper_attention.py --fa4`, benchmarks/ on PYTHONPATH
    python benchmarks/hopper_power.py --fa4 --ours ws --out power.json

`hopper_attention.py` interleaves arms call by call, so the clock there is the mix's; a training loop runs one
kernel for a long time, which is this script's condition. Per shape (`--shapes D:causal:S`, B*S = 16k tokens and
H*D = 2048 as in hopper_attention.py) every arm runs `--rounds` phases (the arms' order within a round from
`measure.timing.round_order`, so every arm follows every other alike), each phase `--warm` seconds untimed then
`--phase` seconds timed by CUDA events over back-to-back calls (ten queued per host wait). A thread reads NVML every
10 ms: SM clock, power (NVML's averaged board power) and the clock-event reasons (0x4: the software power cap).
Per arm: median TFLOPS over its phases, the median clock and power of the samples inside them, and TFLOPS per GHz.
Not `measure.timing.bench_interleaved`, the project's timer: it interleaves the arms call by call, which is the
condition this script is there to leave.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import threading
import time

from hopper_attention import VARIANT_KWARGS

SHAPES = "128:0:16384,128:1:16384,64:0:16384,64:1:16384"
EVENT_REASONS = {0x1: "idle", 0x2: "app clocks", 0x4: "power cap", 0x8: "HW slowdown", 0x20: "SW thermal",
                 0x40: "HW thermal", 0x80: "power brake", 0x100: "display clocks"}
"""NVML's clock-event reason bits (nvmlClocksEventReason*), by the name this script prints."""
SAMPLE_S = 0.01


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=SHAPES, help=f"D:causal:S, comma-separated (default {SHAPES})")
    ap.add_argument("--ours", default="ws", help="our variants (hopper_attention.py's --variants), comma-separated")
    ap.add_argument("--fa4", action="store_true", help="also run FlashAttention-4's Hopper forward")
    ap.add_argument("--rounds", type=int, default=4, help="phases per arm and shape (default 4)")
    ap.add_argument("--phase", type=float, default=1.0, help="timed seconds a phase (default 1.0)")
    ap.add_argument("--warm", type=float, default=0.3, help="untimed seconds before each phase (default 0.3)")
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--out", default=None, help="write the phases and the summary as JSON here")
    return ap.parse_args(argv)


def reason_names(bits: int) -> list[str]:
    return [name for bit, name in EVENT_REASONS.items() if bits & bit] or ([] if bits == 0 else [hex(bits)])


class NvmlClockSampler:
    """SM clock (MHz), power (W) and clock-event reasons of the device, every SAMPLE_S seconds in a thread, stamped
    with `time.perf_counter()`, between `start()` and `stop()`."""

    def __init__(self):
        from tritonhook.mem.device import Gpu

        gpu = Gpu(0)
        self.nvml, self.handle = gpu.nvml, gpu.nvml_device.handle
        self.samples: list[tuple[float, float, float, int]] = []
        self.error: Exception | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        nvml = self.nvml
        try:
            while not self._stop.wait(SAMPLE_S):
                self.samples.append((time.perf_counter(),
                                     nvml.nvmlDeviceGetClockInfo(self.handle, nvml.NVML_CLOCK_SM),
                                     nvml.nvmlDeviceGetPowerUsage(self.handle) / 1e3,
                                     nvml.nvmlDeviceGetCurrentClocksEventReasons(self.handle)))
        except Exception as exc:  # noqa: BLE001 - handed to stop(), which raises it in the main thread
            self.error = exc

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        if self.error is not None:
            raise SystemExit(f"hopper_power.py: NVML sampling failed: {type(self.error).__name__}: {self.error}")

    def within(self, start: float, stop: float) -> list[tuple[float, float, float, int]]:
        return [s for s in self.samples if start <= s[0] <= stop]


def shape_arms(D: int, causal: bool, S: int, args) -> tuple[dict, float]:
    """{arm: call()} for one shape, and its FLOPs."""
    import torch

    from gluon_kernels import hopper_attention
    from tritonhook.flops import attention_flops

    B, H = max(1, args.tokens // S), args.hidden // D
    g = torch.Generator(device="cuda").manual_seed(S + D)
    q, k, v = (torch.randn((B, H, S, D), device="cuda", generator=g).to(torch.bfloat16) for _ in range(3))
    arms = {}
    for variant in args.ours.split(","):
        kwargs = dict(VARIANT_KWARGS[variant], causal=causal)
        arms["ours" if variant == "ws" else variant] = lambda kwargs=kwargs: hopper_attention(q, k, v, **kwargs)
    if args.fa4:
        from fa4_arms import bshd, fa4_calls

        context, call = fa4_calls(causal)["fa4"]
        fa4_inputs = bshd(q, k, v)

        def fa4():
            with context():
                return call(*fa4_inputs)

        arms["fa4"] = fa4
    return arms, attention_flops(B, H, S, D, causal)


def _calls_for(call, seconds: float) -> int:
    """Call back to back (ten queued per host wait) for `seconds`; returns how many calls."""
    import torch

    began, calls = time.perf_counter(), 0
    while time.perf_counter() - began < seconds:
        for _ in range(10):
            call()
        calls += 10
        torch.cuda.synchronize()
    return calls


def run_phase(call, warm_s: float, phase_s: float) -> tuple[float, float, float]:
    """(start, stop, ms a call) of one phase: `warm_s` of calls untimed, then `phase_s` of calls timed."""
    import torch

    _calls_for(call, warm_s)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    began = time.perf_counter()
    start.record()
    calls = _calls_for(call, phase_s)
    end.record()
    end.synchronize()
    return began, time.perf_counter(), start.elapsed_time(end) / calls


def summarize(phases: list[dict]) -> dict:
    arms = {}
    for arm in dict.fromkeys(p["arm"] for p in phases):
        mine = [p for p in phases if p["arm"] == arm]
        tflops = statistics.median(p["tflops"] for p in mine)
        mhz = statistics.median(p["mhz"] for p in mine if p["mhz"])
        arms[arm] = dict(tflops=tflops, tflops_min=min(p["tflops"] for p in mine),
                         tflops_max=max(p["tflops"] for p in mine), mhz=mhz,
                         watts=statistics.median(p["watts"] for p in mine if p["watts"]),
                         tflops_per_ghz=tflops / mhz * 1e3,
                         reasons=sorted({r for p in mine for r in p["reasons"]}))
    return arms


def time_shape(D: int, causal: bool, S: int, args, sampler: NvmlClockSampler) -> dict:
    import torch

    from tritonhook.measure.timing import round_order

    arms, flops = shape_arms(D, causal, S, args)
    for call in arms.values():  # compile outside the phases
        call()
    torch.cuda.synchronize()
    names, phases = list(arms), []
    for round_index in range(args.rounds):
        for arm in (names[i] for i in round_order(round_index, len(names))):
            start, stop, ms = run_phase(arms[arm], args.warm, args.phase)
            inside = sampler.within(start, stop)
            phases.append(dict(arm=arm, ms=ms, tflops=flops / ms / 1e9, samples=len(inside),
                               mhz=statistics.median(s[1] for s in inside) if inside else None,
                               watts=statistics.median(s[2] for s in inside) if inside else None,
                               reasons=sorted({n for s in inside for n in reason_names(s[3])})))
    return dict(D=D, causal=causal, S=S, flops=flops, phases=phases, arms=summarize(phases))


def format_table(rows: list[dict]) -> str:
    lines = [f"{'D':>3} {'causal':>6} {'S':>6} {'arm':>24} {'TFLOPS':>16} {'MHz':>5} {'W':>5} {'TFLOPS/GHz':>10} "
             f"{'/fa4 speed':>10} {'/fa4 a clock':>12}  clock events"]
    for row in rows:
        fa4 = row["arms"].get("fa4")
        for arm, a in row["arms"].items():
            speed = f"{a['tflops'] / fa4['tflops']:.3f}" if fa4 else "-"
            per_clock = f"{a['tflops_per_ghz'] / fa4['tflops_per_ghz']:.3f}" if fa4 else "-"
            spread = f"{a['tflops']:.0f} [{a['tflops_min']:.0f}-{a['tflops_max']:.0f}]"
            lines.append(f"{row['D']:>3} {int(row['causal']):>6} {row['S']:>6} {arm:>24} {spread:>16} "
                         f"{a['mhz']:5.0f} {a['watts']:5.0f} {a['tflops_per_ghz']:10.1f} {speed:>10} "
                         f"{per_clock:>12}  {', '.join(a['reasons'])}")
    return "\n".join(lines)


def main(argv=None) -> None:
    args = parse_args(argv)
    import torch

    sampler = NvmlClockSampler()
    sampler.start()
    rows = []
    with contextlib.ExitStack() as stack:
        stack.callback(sampler.stop)
        for spec in args.shapes.split(","):
            D, causal, S = (int(x) for x in spec.split(":"))
            rows.append(time_shape(D, bool(causal), S, args, sampler))
            print(f"done D={D} causal={causal} S={S}", flush=True)
    limit = sampler.nvml.nvmlDeviceGetEnforcedPowerLimit(sampler.handle) / 1e3
    meta = dict(device=torch.cuda.get_device_name(), torch=torch.__version__, power_limit_w=limit,
                rounds=args.rounds, phase_s=args.phase, warm_s=args.warm, sample_s=SAMPLE_S)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(meta=meta, rows=rows), f, indent=1)
    print(f"\n{meta['device']} | torch {meta['torch']} | power limit {limit:.0f} W | {args.rounds} phases of "
          f"{args.phase} s an arm | medians over phases [min-max TFLOPS]")
    print(format_table(rows))


if __name__ == "__main__":
    main()
