"""Does the `cutlass_` name pay for the Hopper Gluon attention? A benchmark script for `tritonhook ab`.

    tritonhook ab --variants plain,cutlass_ --rounds 5 -- python benchmarks/hopper_name_ab.py
    python benchmarks/hopper_name_ab.py --in-process     # ab.compare: variants alternated call by call
    python benchmarks/hopper_name_ab.py --in-process --head-dim 64 --no-fp8   # D=64's three-consumer builds

With `--in-process` each configuration is A/B-tested in this process by `tritonhook.ab.compare` (tighter
intervals: both names see the same clocks), and the SASS of the two builds is compared byte for byte.

`tritonhook ab` runs this script once per variant per round, in fresh processes, interleaved; the rename
happens in Triton's PTX stage, so the same source gives both kernels. Each configuration is timed with
`tritonhook.ab.bench` (CUDA events, warm-up, median) and reported with its FLOP count; the inputs are seeded so
that every process computes the same outputs, which `tritonhook ab` compares across variants. Needs an sm_90 GPU
and torch; run from the repository root with it installed (pip install -e .) or PYTHONPATH=$PWD. Results: docs/rename_ab.md.
"""

from __future__ import annotations

import argparse

import torch

from gluon_kernels import hopper_attention, transpose_v_for_fp8
from tritonhook import ab, format
from tritonhook.flops import attention_flops

CONFIGS = [  # (dtype, causal): B=2, H=16, S=8192 (D=128: the shape where the kernel is closest to cuDNN)
    (torch.bfloat16, False),
    (torch.bfloat16, True),
    (torch.float8_e4m3fn, False),
    (torch.float8_e4m3fn, True),
]


def same_sass(report: ab.ABReport, store: str) -> bool:
    """Whether every plain build has a cutlass_ twin with byte-identical SASS (the .text section)."""
    from tritonhook import Store
    from tritonhook.cubin import Cubin

    opened = Store(store, create=False)

    def text_hashes(label: str) -> set[str]:
        hashes = set()
        for kernel in report.kernels[label]:
            cubin = Cubin.from_bytes(opened.read(opened.get(kernel["capture_id"]), "cubin"))
            hashes |= {s.sha256 for s in cubin.sections if s.name == f".text.{kernel['entry']}"}
        return hashes

    return text_hashes("plain") == text_hashes("cutlass_")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seq", type=int, default=8192)
    parser.add_argument("--head-dim", type=int, choices=(64, 128), default=128)
    parser.add_argument("--no-fp8", action="store_true", help="the 16-bit configurations only")
    parser.add_argument("--in-process", action="store_true", help="A/B with ab.compare in this process")
    parser.add_argument("--rounds", type=int, default=10, help="rounds for --in-process")
    parser.add_argument("--store", default="ab-hopper-store", help="store for --in-process")
    args = parser.parse_args()
    batch, heads, dim = 2, 16, args.head_dim
    for dtype, causal in CONFIGS:
        if args.no_fp8 and dtype == torch.float8_e4m3fn:
            continue
        torch.manual_seed(0)
        q, k, v = (torch.randn(batch, heads, args.seq, dim, device="cuda").to(dtype) for _ in range(3))
        v_t = transpose_v_for_fp8(v) if dtype == torch.float8_e4m3fn else None
        name = f"{str(dtype).removeprefix('torch.')} {'causal' if causal else 'non-causal'} D={dim} S={args.seq}"
        flops = attention_flops(batch, heads, args.seq, dim, causal)

        def run(q, k, v):
            return hopper_attention(q, k, v, causal=causal, v_t=v_t)

        if args.in_process:
            report = ab.compare(run, ("plain", "cutlass_"), inputs=(q, k, v), flops=flops, rounds=args.rounds,
                                check="bitwise", store=args.store, name=name, progress=False)
            format.show(report)
            print(f"{name}: SASS of plain and cutlass_ byte-identical: {same_sass(report, args.store)}")
        else:
            ab.bench(run, inputs=(q, k, v), name=name, flops=flops)


if __name__ == "__main__":
    main()
