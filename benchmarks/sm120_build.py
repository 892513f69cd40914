"""Compile the sm120_attn kernels with no GPU (fake tensors), keep PTX + cubin, capture them into a tritonhook store,
and print what the cubins say (registers, setmaxnreg, REG_RECONFIG, ptxas warnings).

    PYTHONPATH=$PWD python benchmarks/sm120_build.py [--arch sm_120a ...] [--store DIR] [--out DIR]

Every kernel is compiled for each arch it supports (FP8 only for sm_120a / sm_121a: ptxas rejects `kind::f8f6f4`
elsewhere). With no driver the DSL would assume sm_100a, so the arch is always given (docs/capture_beyond_triton.md#cute-dsl-as-it-behaves).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from sm120_attn import VARIANTS
from sm120_attn.build import Built, compile_variant, supported_arches
from tritonhook.cubin import Cubin
from tritonhook.cute.capture import capture_compiled


def kernel_facts(built: Built) -> dict:
    """Registers, setmaxnreg use, REG_RECONFIG, syscalls: read from the cubin with tritonhook's model."""
    cubin = Cubin.from_bytes(built.cubin, label=built.label)
    facts = {}
    for name, kern in cubin.kernels.items():
        attrs = [a.name for a in kern.eiattrs]
        facts[name] = {
            "registers": kern.registers,
            "spill_stores": kern.spill_stores, "spill_loads": kern.spill_loads, "frame_size": kern.frame_size,
            "max_registers": kern.max_registers, "shared_static": kern.shared_static,
            "externs": list(kern.externs),
            "uses_setmaxnreg": kern.uses_setmaxnreg,
            "eiattrs": attrs,
            "reg_reconfig": any("REG_RECONFIG" in str(a) for a in attrs),
        }
    setmaxnreg = sorted(set(re.findall(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+(\d+)", built.ptx)))
    return {"kernels": facts, "ptx_setmaxnreg": setmaxnreg,
            "ptx_maxnreg_or_minnctapersm": re.findall(r"\.(maxnreg|minnctapersm|reqntid|maxntid)\s+([\d, ]+)",
                                                      built.ptx),
            "ptxas_warnings": [l for l in built.ptxas_log.splitlines() if "warning" in l.lower()]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", action="append", help="default: every supported arch")
    parser.add_argument("--variant", action="append", choices=VARIANTS)
    parser.add_argument("--head-dim", action="append", type=int)
    parser.add_argument("--causal", choices=("both", "yes", "no"), default="both")
    parser.add_argument("--store", help="tritonhook store to capture into (default: none)")
    parser.add_argument("--out", type=Path, help="write <label>.ptx / .cubin / .ptxas.log here")
    args = parser.parse_args(argv)
    causals = {"both": (False, True), "yes": (True,), "no": (False,)}[args.causal]
    summary = []
    for variant in args.variant or VARIANTS:
        for arch in args.arch or supported_arches(variant):
            if arch not in supported_arches(variant):
                continue
            for d in args.head_dim or (64, 128):
                for causal in causals:
                    built = compile_variant(variant, arch, d, causal)
                    facts = kernel_facts(built)
                    cid = None
                    if args.store:
                        cid = capture_compiled(built.compiled, store=args.store)
                    if args.out:
                        args.out.mkdir(parents=True, exist_ok=True)
                        (args.out / f"{built.label}.ptx").write_text(built.ptx)
                        (args.out / f"{built.label}.cubin").write_bytes(built.cubin)
                        (args.out / f"{built.label}.ptxas.log").write_text(built.ptxas_log)
                    regs = {n: f["registers"] for n, f in facts["kernels"].items()}
                    summary.append({"label": built.label, "seconds": round(built.seconds, 1), "capture": cid,
                                    "registers": regs, "setmaxnreg": facts["ptx_setmaxnreg"],
                                    "reg_reconfig": [f["reg_reconfig"] for f in facts["kernels"].values()],
                                    "ptxas_warnings": facts["ptxas_warnings"]})
                    print(json.dumps(summary[-1]), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
