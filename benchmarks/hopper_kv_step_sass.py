"""The Hopper attention's K/V step in SASS, ours beside FlashAttention-4's, with no GPU: per build, the loop that
runs once per 128-key block (the innermost loop with the most exponentials), its instructions by opcode, and how
many of its exponentials ptxas placed before the wait for the previous block's P V GEMM (`WARPGROUP.DEPBAR.LE
gsb0,0x0`): the softmax work that overlaps that GEMM inside the warpgroup. bf16, S = 8k (our tuned builds),
non-causal and causal at D=64, compiled for sm_90a.

    PYTHONPATH=$PWD python benchmarks/hopper_kv_step_sass.py [--fa4] [--out F]

--fa4: FlashAttention-4 (flash_attn.cute, 4.0.0b36) and CuTe DSL importable; its Hopper forward is compiled from
fake tensors (torch's FakeTensorMode, FA4's own no-GPU path) with FLASH_ATTENTION_NUM_SMS=132 (the H200's SMs) and
CUTE_DSL_ARCH=sm_90a, its cubin dumped to a scratch folder. The CuTe DSL's own ptxas builds it (the cu12 or cu13
libraries installed), ours Triton's.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from hopper_attention import VARIANT_KWARGS

BUILDS = (("ws-2wg", 64, False), ("ws", 64, False), ("ws-3wg-ol-thread", 64, False), ("ws", 64, True),
          ("ws-3wg-ol-peel", 64, True), ("ws-3wg-ol-peel-thread", 64, True), ("ws", 128, False),
          ("ws-thread", 128, False))
"""(our variant, head dim, causal) of each build (hopper_attention.py's variant names; at D=64 and 8k, ws is the
three-consumer build and ws-2wg the two-consumer one; -thread keeps FA4's per-thread row sums, -peel both causal
diagonal blocks first, the second peeled off the loop)."""
SEQ_LEN = 8192
FA4_SMS = "132"
COUNTED = ("MUFU", "FMNMX", "FADD", "FMUL", "FFMA", "F2FP", "FSEL", "ISETP", "HGMMA", "SHFL", "BAR", "SYNCS")
"""The opcodes a row shows (all of them are in its `mix`)."""
PV_WAIT = ("WARPGROUP.DEPBAR.LE", "gsb0,0x0")


def kv_step(instructions):
    """The K/V step of one kernel: of its innermost loops, the one with the most exponentials (fewest `FSEL` among
    equals, so FA4's unmasked loop rather than its masked one; ours carries its mask arm inside the loop, skipped at
    run time for full blocks)."""
    from tritonhook.cubin import inner_loops, opcode_histogram

    loops = [(opcode_histogram(loop), loop) for loop in inner_loops(instructions)]
    if not loops:
        raise SystemExit("no loop in this kernel")
    return max(loops, key=lambda pair: (pair[0]["MUFU"], -pair[0]["FSEL"]))[1]


def step_row(build: str, cubin: bytes) -> dict:
    """One build's K/V step: its size and opcode mix, and the exponentials issued before its P V wait."""
    from tritonhook.cubin import disassemble, opcode_histogram

    kernels = disassemble(cubin, label=build)
    instructions = max(kernels.values(), key=len)
    loop = kv_step(instructions)
    mix = opcode_histogram(loop)
    waits = [n for n, i in enumerate(loop) if (i.opcode, i.operands) == PV_WAIT]
    exps_before = sum(1 for i in loop[:waits[0]] if i.base_opcode == "MUFU") if waits else None
    return {"build": build, "instructions": len(loop), "exps_before_pv_wait": exps_before,
            "counted": {op: mix[op] for op in COUNTED}, "mix": dict(mix.most_common())}


def ours_cubin(variant: str, head_dim: int, causal: bool) -> bytes:
    from gluon_kernels.hopper import compile_hopper_attention

    knobs = {k: v for k, v in VARIANT_KWARGS[variant].items() if k != "variant"}
    return compile_hopper_attention("bf16", head_dim, causal, VARIANT_KWARGS[variant]["variant"], seq_len=SEQ_LEN,
                                    **knobs).asm["cubin"]


def fa4_cubin(head_dim: int, causal: bool, dump: Path) -> bytes:
    """FA4's Hopper forward for (4, S, 16, head_dim) bf16, compiled from fake tensors. CuTe DSL reads its dump
    folder once, at import: every build of a run goes to `dump`, and each is the file it adds there."""
    from fa4_arms import dump_env

    os.environ.setdefault("FLASH_ATTENTION_NUM_SMS", FA4_SMS)
    os.environ.update(dump_env(str(dump)), CUTE_DSL_ARCH="sm_90a")
    import torch
    from flash_attn.cute import interface
    from torch._subclasses.fake_tensor import FakeTensorMode

    before = {path: path.stat().st_mtime_ns for path in dump.glob("*.cubin")}
    with FakeTensorMode():
        q, k, v = (torch.empty(4, SEQ_LEN, 16, head_dim, dtype=torch.bfloat16, device="cuda") for _ in range(3))
        interface._flash_attn_fwd(q, k, v, causal=causal, _arch=90)
    # a build with another causal flag may reuse an earlier build's file name: new or rewritten files count
    added = [p for p in dump.glob("*.cubin")
             if "FlashAttentionForwardSm90" in p.name and before.get(p) != p.stat().st_mtime_ns]
    if len(added) != 1:
        raise SystemExit(f"FA4 D={head_dim} causal={causal}: expected one new forward cubin in {dump}, "
                         f"found {len(added)}")
    return added[0].read_bytes()


def versions(fa4: bool) -> dict:
    """What built the rows: Triton and its ptxas (ours), FA4 and the CuTe DSL (theirs)."""
    from importlib.metadata import version

    import triton

    from tritonhook._triton import triton_ptxas
    from tritonhook.binaries import ptxas_version

    found = {"triton": triton.__version__, "ptxas (ours)": ptxas_version(triton_ptxas("sm_90a"))}
    if fa4:
        found.update({"flash-attn-4": version("flash-attn-4"), "nvidia-cutlass-dsl": version("nvidia-cutlass-dsl")})
    return found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fa4", action="store_true", help="FlashAttention-4's builds beside ours")
    ap.add_argument("--out", default=None, help="write the rows as JSON here")
    args = ap.parse_args(argv)
    def label(who: str, head_dim: int, causal: bool) -> str:
        return f"{who} D={head_dim}{' causal' if causal else ''}"

    builds = [(label(f"ours {variant}", d, c), lambda v=variant, d=d, c=c: ours_cubin(v, d, c))
              for variant, d, c in BUILDS]
    with tempfile.TemporaryDirectory() as dump:
        if args.fa4:
            builds += [(label("fa4", d, c), lambda d=d, c=c: fa4_cubin(d, c, Path(dump)))
                       for d, c in sorted({(d, c) for _, d, c in BUILDS})]
        rows = [step_row(label, build()) for label, build in builds]
    print(f"{'build':40} {'instr':>5} {'exps before P V wait':>20} " + " ".join(f"{op:>6}" for op in COUNTED))
    for row in rows:
        wait = "-" if row["exps_before_pv_wait"] is None else row["exps_before_pv_wait"]
        print(f"{row['build']:40} {row['instructions']:5} {wait:>20} "
              + " ".join(f"{row['counted'][op]:6}" for op in COUNTED))
    if args.out:
        Path(args.out).write_text(json.dumps({"seq_len": SEQ_LEN, "dtype": "bf16",
                                              "built_by": versions(args.fa4), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
