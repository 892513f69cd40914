"""What the `cutlass_` name changes in the Hopper attention's builds, without a GPU: each build's PTX assembled
plain and renamed (tritonhook's PTX-stage rename) by the same ptxas, Triton's, for sm_90a, and the two cubins
compared (`tritonhook.cubin.CubinDelta`: registers, and the SASS opcode mix where it differs). Where the SASS is
identical the two names run the same machine code, and a timed A/B has nothing to find.

    PYTHONPATH=$PWD python benchmarks/hopper_name_cubins.py [--out F]   # the knobs this script names, bf16, S=16k
"""

from __future__ import annotations

import argparse
import json

from gluon_kernels.tuning import THREE_OVERLAPPED, THREE_OVERLAPPED_TUNED

KERNEL = "_attn_fwd_ws"
BUILDS = (("three overlapped consumers, D=64", 64, False, THREE_OVERLAPPED),
          ("three overlapped consumers, D=64, causal", 64, True, dict(consumers=3, overlap=True)),
          ("consumers=3, D=64", 64, False, dict(consumers=3)),
          ("consumers=3, D=64, causal", 64, True, dict(consumers=3)),
          ("three overlapped consumers, thread_rowsum, D=64", 64, False, dict(THREE_OVERLAPPED, thread_rowsum=True)),
          ("three overlapped consumers, peel_diagonal, D=64, causal", 64, True,
           dict(THREE_OVERLAPPED, peel_diagonal=True)),
          ("three overlapped consumers, peel_diagonal, thread_rowsum, D=64, causal", 64, True,
           dict(THREE_OVERLAPPED, peel_diagonal=True, thread_rowsum=True)),
          ("thread_rowsum, D=128", 128, False, dict(thread_rowsum=True)),
          ("thread_rowsum, D=128, causal", 128, True, dict(thread_rowsum=True)),
          ("head sections of 2, one program a tile, D=128, causal", 128, True, dict(head_group=2, persistent=False)),
          ("head sections of 4, one program a tile, D=128, causal", 128, True,
           dict(head_group=4, pingpong=False, thread_rowsum=False, persistent=False)),
          ("tiles claimed from a counter in sections of 8, D=128, causal (the tuned build from 8k)", 128, True, {}),
          ("tiles claimed from a counter in sections of 4, three overlapped consumers, D=64, causal (the tuned "
           "build from 8k)", 64, True, dict(THREE_OVERLAPPED, **THREE_OVERLAPPED_TUNED[(True, 64)])))
"""(label, head dim, causal, knobs) of each build compared."""


def name_delta(head_dim: int, causal: bool, knobs: dict):
    """The `CubinDelta` of one bf16 build at S=16k, plain against `cutlass_`."""
    from gluon_kernels.hopper import compile_hopper_attention
    from tritonhook._triton import triton_ptxas
    from tritonhook.cubin.delta import CubinDelta
    from tritonhook.binaries import assemble
    from tritonhook.rename import rename_ptx

    ptx = compile_hopper_attention("bf16", head_dim, causal, seq_len=16384, **knobs).asm["ptx"]
    ptxas = triton_ptxas("sm_90a")
    plain, renamed = (assemble(text, ptxas, "sm_90a").cubin for text in (ptx, rename_ptx(ptx, "cutlass_")))
    return CubinDelta.between(plain, renamed, KERNEL, "cutlass_" + KERNEL)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None, help="write the rows as JSON here")
    args = ap.parse_args(argv)
    rows = []
    for label, head_dim, causal, knobs in BUILDS:
        delta = name_delta(head_dim, causal, knobs)
        rows.append({"build": label, "cell": delta.cell(), "sass": delta.sass_change()})
        print(f"{label:72} {delta.cell()}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
