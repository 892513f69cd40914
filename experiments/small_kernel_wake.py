"""Does a 1-CTA kernel run faster when every SM has just been busy? Inside a training step the transformer's
3-4 µs copies ran ~0.5 µs faster than any replay of them (docs/notes.md section 10), while the same method agrees
within 3% on a light workload of our own (experiments/sweep_workloads/small_adds.py). One candidate: SMs idle for
a while take time to start a CTA, and a replay leaves all but two idle (its stream hold is a 1-thread spin).

Times our add kernel (512 to 1M elements) call by call, each call after the timer's usual stream hold, in these
arms: the add after the hold alone ("hold"); the add after the hold and a fill kernel over every SM queued just
before the start event ("hold+fill"); the add after the hold and `--gemms` bf16 GEMMs of 4096^2 (~0.2 ms each on
an H200, every SM at full power, as inside a training step) queued just before the start event ("hold+gemm"); the
fill and the GEMMs alone, for reference ("fill", "gemm"). Prints the medians (µs) per size and arm.

Then, for the 512-element add, how long the SMs may stay idle before the add's floor rises: hold, fill, a 1-thread
spin of X µs (every SM but one idle for X µs), start event, add (`--idle-us`).

    PYTHONPATH=$PWD python experiments/small_kernel_wake.py [--calls 2000] [--gemms 2]
"""

import argparse
import statistics

import torch
import triton

from tritonhook.ab.timing import hold_stream
from tritonhook.samples import add_kernel

SIZES = (512, 4096, 65536, 1 << 20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--gemms", type=int, default=2)
    parser.add_argument("--idle-us", default="0,2,5,10,20,40,80")
    args = parser.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    wake = torch.empty(sms * 4096, device="cuda")   # a fill of this many floats spans every SM several times
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)

    def gemms():
        for _ in range(args.gemms):
            a @ a
    print(f"{torch.cuda.get_device_name()}: {sms} SMs; medians of {args.calls} calls, µs")
    print(f"{'elements':>9} {'hold':>8} {'hold+fill':>10} {'hold+gemm':>10} {'fill':>8} {'gemm':>9}")
    for n in SIZES:
        x, y, out = (torch.randn(n, device="cuda") for _ in range(3))
        grid = (triton.cdiv(n, 1024),)
        launch = lambda: add_kernel[grid](x, y, out, n, BLOCK=1024)  # noqa: E731
        launch()
        torch.cuda.synchronize()
        times = {"hold": [], "hold+fill": [], "hold+gemm": [], "fill": [], "gemm": []}
        for call in range(args.calls):
            for arm in (times if call % 2 else reversed(list(times))):
                begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                hold_stream(torch, 60.0)
                if arm == "hold+fill":
                    wake.zero_()
                if arm == "hold+gemm":
                    gemms()
                begin.record()
                {"fill": wake.zero_, "gemm": gemms}.get(arm, launch)()
                end.record()
                times[arm].append((begin, end))
        torch.cuda.synchronize()
        medians = {arm: median_us(pairs) for arm, pairs in times.items()}
        print(f"{n:>9} {medians['hold']:8.2f} {medians['hold+fill']:10.2f} {medians['hold+gemm']:10.2f} "
              f"{medians['fill']:8.2f} {medians['gemm']:9.2f}")
    idle_floor(args, wake)


def idle_floor(args, wake) -> None:
    """The 512-element add after every SM ran the fill and then idled X µs (all but the spin's one)."""
    x, y, out = (torch.randn(512, device="cuda") for _ in range(3))
    idles = [float(v) for v in args.idle_us.split(",")]
    times = {idle: [] for idle in idles}
    for call in range(args.calls):
        for idle in (idles if call % 2 else idles[::-1]):
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            hold_stream(torch, 60.0)
            wake.zero_()
            if idle:
                hold_stream(torch, idle)
            begin.record()
            add_kernel[(1,)](x, y, out, 512, BLOCK=1024)
            end.record()
            times[idle].append((begin, end))
    torch.cuda.synchronize()
    print("512-element add after the fill and X µs of idle SMs: " + ", ".join(
        f"{idle:g} µs: {median_us(pairs):.2f}" for idle, pairs in times.items()))


def median_us(pairs) -> float:
    """The median time between each (start, end) event pair, in µs (after a synchronize)."""
    return statistics.median(begin.elapsed_time(end) for begin, end in pairs) * 1e3


if __name__ == "__main__":
    main()
