"""Which part of a replay round decides a small kernel's launch lead? (issue 15's fidelity; docs/notes.md §14.)
The 512-element add (launched through the JIT, and as a CompiledKernel as a replay launches) timed by the A/B timer's `_timed_calls` (a stream hold, the start event, the kernel, the end
event, per round), under torch.profiler, in five conditions; per condition the median event time and CUPTI's
hold end -> kernel start, µs, by position in the batch:

    paced-300     300 rounds as the replay queues them
    spin-15       a 50 ms spin, then 15 rounds (the host queues them all during the spin)
    spin-300      a 50 ms spin, then 300 rounds
    sync-15       15 rounds on an idle GPU
    spin-300x     a 50 ms spin, then 300 rounds, each round's hold 400 µs

    PYTHONPATH=$PWD python experiments/fidelity_lead.py
"""

from __future__ import annotations

import contextlib
import statistics

import torch
from torch.profiler import ProfilerActivity, profile

from tritonhook.ab import timing
from tritonhook.samples import add_kernel

from fidelity_common import after_holds

CONDITIONS = {"paced-300": (False, 300, 0.0), "spin-15": (True, 15, 0.0), "spin-300": (True, 300, 0.0),
              "sync-15": (False, 15, 0.0), "spin-300x": (True, 300, 400.0)}


def main() -> None:
    x, y, out = (torch.randn(512, device="cuda") for _ in range(3))
    compiled = add_kernel[(1,)](x, y, out, 512, BLOCK=1024)
    launchers = {"jit": lambda a, b, c: add_kernel[(1,)](a, b, c, 512, BLOCK=1024),
                 "compiled": lambda a, b, c: compiled[(1, 1, 1)](a, b, c, 512, None)}
    print(f"{'condition':20} {'events':>7} {'lead':>6} {'lead 1-5':>8} {'6-15':>6} {'16+':>6}")
    for (name, (spin, rounds, extra)), launcher in [(c, l) for l in launchers for c in CONDITIONS.items()]:
        arms = [(contextlib.nullcontext, launchers[launcher])]
        timing._timed_calls(torch, arms, [(x, y, out)], 50)  # compile, calibrate the hold
        saved = timing.HOLD_EXTRA_US
        timing.HOLD_EXTRA_US += extra
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            if spin:
                torch.cuda._sleep(100_000_000)
            (times,) = timing._timed_calls(torch, arms, [(x, y, out)], rounds)
        timing.HOLD_EXTRA_US = saved
        found = [lead for lead, _ in after_holds(prof, "add_kernel")]
        parts = [found[:5], found[5:15], found[15:]]
        print(f"{launcher + ' ' + name:20} {statistics.median(times) * 1e3:7.2f} {statistics.median(found):6.2f} "
              + " ".join(f"{statistics.median(p):6.2f}" if p else "     -" for p in parts), flush=True)


if __name__ == "__main__":
    main()
