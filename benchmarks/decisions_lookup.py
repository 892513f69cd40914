"""What looking up decisions costs a compile (issue 40: <= 1% of compile time), on a CPU.

    python benchmarks/decisions_lookup.py [--decisions 1000] [--repeat 2000] [--out decisions_lookup.json]

For each sample kernel (sm_90a, no GPU): its cold compile time (fresh Triton cache), then the time of the PTX
stage's lookup (`decisions.apply.Applier.ptx_stage`) against `--decisions` decisions, none of them for it (the
common case: one sha256 and one dict lookup) and one of them for it with a plain choice (the lookup goes on to the
target, Triton's ptxas version and the key). Prints a table; writes the figures as JSON to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from tritonhook import format
from tritonhook.decisions.apply import Applier, Resolved
from tritonhook.ptx import code_sha256
from tritonhook.decisions.model import Choice, Decision, Evidence, Key
from tritonhook.samples import compile_sample

SAMPLES = ("add", "matmul_fp16", "matmul_fp32_ieee", "tma_copy")
GPU = "NVIDIA H200"


def _decision(sha: str, ptxas_version: str) -> Resolved:
    evidence = Evidence("k", 0.97, 0.96, 0.98, "bitwise", "-", "-", "benchmark", None)
    return Resolved(Decision(Key(sha, "sm_90a", ptxas_version, GPU), Choice(), evidence, id=0), None, None)


def _per_call_us(fn, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--out", default="decisions_lookup.json")
    args = parser.parse_args()
    others = [_decision(f"{i:064x}", "12.8") for i in range(args.decisions)]
    rows = []
    for name in SAMPLES:
        with tempfile.TemporaryDirectory() as cache:
            os.environ["TRITON_CACHE_DIR"] = cache
            start = time.perf_counter()
            kernel = compile_sample(name, 90)
            compile_ms = (time.perf_counter() - start) * 1e3
        ptx = kernel.asm["ptx"]
        miss = Applier(others, GPU)
        hit_decision = _decision(code_sha256(ptx), "")
        hit = Applier([*others, hit_decision], GPU)
        hit.lookup(ptx)  # Triton's ptxas version, cached after the first ask
        miss_us = _per_call_us(lambda: miss.ptx_stage(ptx, {}), args.repeat)
        hit_us = _per_call_us(lambda: hit.ptx_stage(ptx, {}), args.repeat)
        rows.append({"kernel": name, "ptx_bytes": len(ptx), "compile_ms": compile_ms, "miss_us": miss_us,
                     "hash_hit_us": hit_us, "miss_share": miss_us / 1e3 / compile_ms,
                     "hash_hit_share": hit_us / 1e3 / compile_ms})
    format.console().print(format.table(
        ("kernel", "PTX bytes", "cold compile ms", "lookup, no decision µs", "lookup, hash matches µs",
         "share of compile"),
        [(r["kernel"], str(r["ptx_bytes"]), f"{r['compile_ms']:.1f}", f"{r['miss_us']:.1f}",
          f"{r['hash_hit_us']:.1f}", f"{max(r['miss_share'], r['hash_hit_share']):.4%}") for r in rows],
        title=f"decisions lookup against {args.decisions} decisions (sm_90a, CPU)",
        right_align=("PTX bytes", "cold compile ms", "lookup, no decision µs", "lookup, hash matches µs",
                     "share of compile")))
    with open(args.out, "w") as handle:
        json.dump({"decisions": args.decisions, "repeat": args.repeat, "rows": rows}, handle, indent=1)


if __name__ == "__main__":
    main()
