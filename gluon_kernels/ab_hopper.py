"""Does the `cutlass_` name pay for the Hopper Gluon attention? A benchmark script for `tritonhook ab`.

    tritonhook ab --variants plain,cutlass_ --rounds 5 -- python gluon_kernels/ab_hopper.py

`tritonhook ab` runs this script once per variant per round, in fresh processes, interleaved; the rename
happens in Triton's PTX stage, so the same source gives both kernels. Each configuration is timed with
`tritonhook.ab.bench` (CUDA events, warm-up, median) and reported with its FLOP count; the inputs are seeded so
that every process computes the same outputs, which `tritonhook ab` compares across variants.
"""

from __future__ import annotations

import argparse

import torch

from gluon_kernels import hopper_attention, transpose_v_for_fp8
from tritonhook import ab

CONFIGS = [  # (dtype, causal): B=2, H=16, S=8192, D=128, the shape where the kernel is closest to cuDNN
    (torch.bfloat16, False),
    (torch.bfloat16, True),
    (torch.float8_e4m3fn, False),
]


def attention_flops(batch: int, heads: int, seq: int, dim: int, causal: bool) -> float:
    """QK^T and PV: 4 * B * H * S^2 * D, halved for causal."""
    return 4.0 * batch * heads * seq * seq * dim / (2 if causal else 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seq", type=int, default=8192)
    args = parser.parse_args()
    batch, heads, dim = 2, 16, 128
    for dtype, causal in CONFIGS:
        torch.manual_seed(0)
        q, k, v = (torch.randn(batch, heads, args.seq, dim, device="cuda").to(dtype) for _ in range(3))
        v_t = transpose_v_for_fp8(v) if dtype == torch.float8_e4m3fn else None
        name = f"{str(dtype).removeprefix('torch.')} {'causal' if causal else 'non-causal'} S={args.seq}"
        ab.bench(lambda q, k, v: hopper_attention(q, k, v, causal=causal, v_t=v_t), inputs=(q, k, v), name=name,
                 flops=attention_flops(batch, heads, args.seq, dim, causal))


if __name__ == "__main__":
    main()
