"""Does a kernel take longer when the L2 it starts with holds dirty lines? (issue 15's fidelity; docs/notes.md §18.)

Inside a workload a kernel starts with an L2 full of what earlier kernels wrote: every line it evicts must first be
written back to DRAM. A sweep replay prepares the L2 by reading (`--l2 measured` reads the probed ranges), so the
lines its kernel evicts are mostly clean. If write-backs cost DRAM bandwidth the kernel needs, the replay reads low.

Per kernel, per condition, interleaved call by call: a stream hold, then a flood of twice the L2 that leaves it
clean (read) or dirty (written), optionally the kernel's inputs read back into L2 (as `--l2 measured` does for
inputs the probe found there), then the kernel between two CUDA events; the stream is drained after every call.
Prints the median µs per condition and the dirty/clean ratios.

    python experiments/fidelity_dirty_l2.py [--calls 200]
"""

from __future__ import annotations

import argparse
import statistics

import torch
import torch.nn.functional as F

from tritonhook.ab.timing import hold_stream, l2_bytes


def kernels() -> dict:
    """Name -> (callable, its input tensors): memory-bound shapes like the transformer's 3-25 µs kernels."""
    weight = torch.randn(4096, 1024, device="cuda")
    act = torch.randn(8192, 1024, device="cuda", dtype=torch.bfloat16)
    ln_w, ln_b = torch.ones(1024, device="cuda", dtype=torch.bfloat16), torch.zeros(1024, device="cuda",
                                                                                  dtype=torch.bfloat16)
    return {
        "copy fp32->bf16 16 MiB": (lambda: weight.to(torch.bfloat16), [weight]),
        "gelu bf16 16 MiB": (lambda: F.gelu(act), [act]),
        "layer_norm bf16 16 MiB": (lambda: F.layer_norm(act, (1024,), ln_w, ln_b), [act]),
        "sum dim0 bf16 16 MiB": (lambda: act.sum(0), [act]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    flood = torch.empty(2 * l2_bytes(torch), dtype=torch.uint8, device="cuda")
    conditions = {
        "clean": lambda inputs: flood.max(),
        "dirty": lambda inputs: flood.fill_(1),
        "clean+inputs": lambda inputs: (flood.max(), [x.view(torch.uint8).max() for x in inputs]),
        "dirty+inputs": lambda inputs: (flood.fill_(1), [x.view(torch.uint8).max() for x in inputs]),
    }
    print(f"{torch.cuda.get_device_name()}, L2 {l2_bytes(torch) / 2**20:.0f} MiB, {args.calls} calls per condition")
    print(f"{'kernel':26s}" + "".join(f"{c:>14s}" for c in conditions) + "  dirty/clean  (+inputs)")
    for name, (call, inputs) in kernels().items():
        times = {c: [] for c in conditions}
        for i in range(args.calls + 10):
            for condition, prepare in conditions.items():
                begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                hold_stream(torch, 200.0)
                prepare(inputs)
                begin.record()
                call()
                end.record()
                end.synchronize()
                if i >= 10:
                    times[condition].append(begin.elapsed_time(end) * 1e3)
        medians = {c: statistics.median(t) for c, t in times.items()}
        ratios = medians["dirty"] / medians["clean"], medians["dirty+inputs"] / medians["clean+inputs"]
        print(f"{name:26s}" + "".join(f"{medians[c]:14.2f}" for c in conditions)
              + f"  {ratios[0]:11.3f}  {ratios[1]:.3f}")


if __name__ == "__main__":
    main()
