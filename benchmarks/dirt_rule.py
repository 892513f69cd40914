"""How often the dirt rule (`l2probe.DIRTY_AT`) decides wrong on workloads whose L2 is known: an add behind a read of
four times the L2 each step (a streaming workload: its L2 holds clean lines, to be replayed clean) and the same add
behind a write of it (a training step's dirt: to be replayed dirty), each recorded `RECORDINGS` times with the
recorder's dirt probe, as `tests/test_sweep_gpu.py::test_the_dirt_probe_reads_a_streaming_workload_clean_and_a_
writing_one_dirty` records them once (with `record_once`). Per workload: each recording's `l2_dirt` and calibration, and for each
candidate threshold how many recordings it would replay on the wrong L2. Prints a table, writes JSON.

    python benchmarks/dirt_rule.py [RECORDINGS [OUT.json]]   # default 12, benchmarks/results/dirt_rule_h200.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import torch

from tritonhook import sweep
from tritonhook.samples import add_kernel
from tritonhook.sweep import l2probe

THRESHOLDS = (-0.1, 0.0, 0.05, 0.1, 0.2, 0.3, 0.5)
STEPS = 10


def record_once(workdir: Path, writes: bool) -> dict:
    """One recording of the add behind a read (or a write) of four times the L2: its dirt and calibration."""
    n = 1 << 20
    x, y, out = (torch.randn(n, device="cuda") for _ in range(3))
    flood = torch.zeros(4 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
    with sweep.record(workdir) as recorder:
        for _ in range(STEPS):
            if writes:
                flood.fill_(1)
            else:
                l2probe.read_into_l2(torch, flood)
            add_kernel[(n // 1024,)](x, y, out, n, BLOCK=1024)
    (signature,) = recorder.recording.signatures
    return {"l2_dirt": signature.l2_dirt, "calibration": recorder.recording.dirt_calibration}


def main() -> None:
    recordings = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    out = Path(sys.argv[2] if len(sys.argv) > 2 else "benchmarks/results/dirt_rule_h200.json")
    found = {"read": [], "write": []}
    with tempfile.TemporaryDirectory() as scratch:
        for index in range(recordings):
            for workload in found:  # interleaved, so a drift of the GPU touches both alike
                found[workload].append(record_once(Path(scratch) / f"{workload}{index}", workload == "write"))
    wrong = {str(threshold): {"read replayed dirty": sum(r["l2_dirt"] >= threshold for r in found["read"]),
                              "write replayed clean": sum(r["l2_dirt"] < threshold for r in found["write"])}
             for threshold in THRESHOLDS}
    result = {"what": "the dirt probe's figure for a streaming and a writing workload over repeated recordings, and "
                      "how many each threshold replays on the wrong L2 (benchmarks/dirt_rule.py)",
              "device": torch.cuda.get_device_name(), "torch": torch.__version__, "recordings": recordings,
              "dirty_at": l2probe.DIRTY_AT, "found": found, "wrong": wrong}
    out.write_text(json.dumps(result, indent=1))
    for workload, runs in found.items():
        print(f"{workload:>5}: " + " ".join(f"{r['l2_dirt']:+.3f}" for r in runs))
    print(f"{'threshold':>10} {'read replayed dirty':>20} {'write replayed clean':>21}   (of {recordings} each)")
    for threshold, counts in wrong.items():
        print(f"{threshold:>10} {counts['read replayed dirty']:>20} {counts['write replayed clean']:>21}")


if __name__ == "__main__":
    main()
