"""Does a 1-CTA kernel run faster when every SM has just been busy? Inside a training step the transformer's
3-4 µs copies ran ~0.5 µs faster than any replay of them (docs/notes.md section 10), while the same method agrees
within 3% on a light workload of our own (experiments/sweep_workloads/small_adds.py). One candidate: SMs idle for
a while take time to start a CTA, and a replay leaves all but two idle (its stream hold is a 1-thread spin).

Times our add kernel (512 to 1M elements) call by call, each call after the timer's usual stream hold, in three
arms: the add after the hold alone ("hold"); the add after the hold and a fill kernel over every SM queued just
before the start event ("hold+fill"); and the fill alone, for reference ("fill"). Prints the medians (µs) per
size and arm.

    PYTHONPATH=$PWD python experiments/small_kernel_wake.py [--calls 2000]
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
    args = parser.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    wake = torch.empty(sms * 4096, device="cuda")   # a fill of this many floats spans every SM several times
    print(f"{torch.cuda.get_device_name()}: {sms} SMs; medians of {args.calls} calls, µs")
    print(f"{'elements':>9} {'hold':>8} {'hold+fill':>10} {'fill':>8}")
    for n in SIZES:
        x, y, out = (torch.randn(n, device="cuda") for _ in range(3))
        grid = (triton.cdiv(n, 1024),)
        launch = lambda: add_kernel[grid](x, y, out, n, BLOCK=1024)  # noqa: E731
        launch()
        torch.cuda.synchronize()
        times = {"hold": [], "hold+fill": [], "fill": []}
        for call in range(args.calls):
            for arm in (times if call % 2 else reversed(list(times))):
                begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                hold_stream(torch, 60.0)
                if arm == "hold+fill":
                    wake.zero_()
                begin.record()
                wake.zero_() if arm == "fill" else launch()
                end.record()
                times[arm].append((begin, end))
        torch.cuda.synchronize()
        medians = {arm: statistics.median(b.elapsed_time(e) for b, e in pairs) * 1e3 for arm, pairs in times.items()}
        print(f"{n:>9} {medians['hold']:8.2f} {medians['hold+fill']:10.2f} {medians['fill']:8.2f}")


if __name__ == "__main__":
    main()
