"""Is a small kernel's ~0.5 µs gap between workload and replay in the kernel object? (issue 15's fidelity;
docs/notes.md §10-§14.) Records experiments/sweep_workloads/inductor_transformer.py's training step, then times
each small signature (recorded median under `--under-us`) call by call, on the replay's buffers, with two arms:
the CompiledKernel the workload itself launched (the module Inductor loaded) and the one the replay loads from
the capture (`_triton.load_kernel`), both through `_triton.launch`, cold (rotated inputs) and warm. Equal arms put
the gap in the harness or the workload's context; a faster workload arm puts it in the module.

    PYTHONPATH=$PWD python experiments/fidelity_module.py [--under-us 8]
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import torch

from tritonhook import _triton
from tritonhook.ab.timing import bench_interleaved
from tritonhook.sweep import select_signatures, worker

from fidelity_common import parser, record_transformer, replay_job


def main() -> None:
    ap = parser(__doc__, rounds=None)
    ap.add_argument("--under-us", type=float, default=8.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fidelity-module-") as work:
        work = Path(work)
        store, recorder = record_transformer(work, args.steps)
        recording = recorder.recording
        chosen = [s for s in select_signatures(recording, top=40) if s.triton_hash in recorder.loaded
                  and s.time_per_launch_ms and s.time_per_launch_ms * 1e3 < args.under_us][:14]
        chosen, job = replay_job(work, store, recording, chosen, 1)
        print(f"{'kernel':50} {'recorded':>8} {'wl cold':>8} {'rp cold':>8} {'wl warm':>8} {'rp warm':>8}", flush=True)
        for signature, entry in zip(chosen, job["signatures"]):
            own = recorder.loaded[signature.triton_hash].args[0]
            variant = entry["variants"][0]
            spec = _triton.LaunchSpec(entry["triton_hash"], entry["kernel"], entry["arg_names"], entry["signature"],
                                      entry["constexprs"])
            loaded = _triton.load_kernel(work / "k" / str(signature.id), spec, (work / variant["metadata"]).read_bytes(),
                                         (work / variant["cubin"]).read_bytes(), variant["entry"])
            buffers = worker._buffers(torch, entry["args"], store, torch.device("cuda"))
            grid = tuple(entry["grid"])

            def arm(kernel):
                def call(*rotated):
                    _triton.launch(kernel, grid, worker._arguments(torch, entry["args"],
                                                                   dict(zip(sorted(buffers), rotated))))
                return contextlib.nullcontext, call

            cells = []
            for rotate in (True, False):
                results = bench_interleaved([arm(own), arm(loaded)], inputs=[buffers[i] for i in sorted(buffers)],
                                            warmup_ms=25, rep_ms=200, min_reps=50, rotate=rotate)
                cells += [r.median_ms * 1e3 for r in results]
            print(f"{signature.kernel[:50]:50} {signature.time_per_launch_ms * 1e3:8.2f} "
                  + " ".join(f"{c:8.2f}" for c in cells), flush=True)


inductor_launches_through_triton = _triton.inductor_launches_through_triton

if __name__ == "__main__":
    main()
