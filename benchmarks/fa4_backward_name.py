"""The `cutlass` name on FlashAttention-4's Hopper backward (issue 41): its three kernels timed with the name CuTe
DSL gives them (`kernel_cutlass_...`) and without it (`set_name_prefix("", remove_cutlass_symbol=True)`), compiled
separately in one process, interleaved call by call (GPU).

    python benchmarks/fa4_backward_name.py [--head-dims 64,128] [--causal 0,1] [--seqlens 2048,8192]
        [--dump DIR] [--out fa4_backward_name.json]

Shapes as benchmarks/hopper_attention.py's: B·S = 16k tokens, H·D = 2048, bf16. Per shape: the forward once (its
`out` and `lse`), then the backward per arm (`benchmarks/fa4_arms.py`), each arm's dQ compared with the other's
(FA4 accumulates dQ with atomics, so the two may differ by rounding order). `--dump DIR` keeps every compiled
kernel's PTX and cubin and says what the name changed in each cubin. Prints a table, writes JSON (one row per shape
as it finishes, so a run cut short keeps what it timed).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def time_shape(torch, D: int, causal: bool, S: int, rounds: int) -> dict:
    from fa4_arms import ARMS, fa4_backward_calls, fa4_forward_for_backward

    from tritonhook.measure.stats import ratio_interval
    from tritonhook.measure.timing import bench_interleaved

    B, H = 16384 // S, 2048 // D
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    out, lse = fa4_forward_for_backward(q, k, v, causal)
    dout = torch.randn_like(out)
    calls = fa4_backward_calls(causal)
    samples = {arm: [] for arm in ARMS}
    for _ in range(rounds):
        results = bench_interleaved([calls[arm] for arm in ARMS], inputs=(q, k, v, out, dout, lse), min_reps=20)
        for arm, result in zip(ARMS, results):
            samples[arm] += result.samples_ms
    dq = {arm: result.output.float() for arm, result in zip(ARMS, results)}
    ratio, low, high = ratio_interval(samples["fa4-nocutlass"], samples["fa4"])
    flops = 2.5 * 4 * B * H * S * S * D / (2 if causal else 1)  # backward: 2.5x the forward's two matmuls
    median = lambda xs: sorted(xs)[len(xs) // 2]
    return dict(D=D, causal=causal, S=S, B=B, H=H, samples_ms=samples,
                tflops={arm: flops / (median(samples[arm]) * 1e-3) / 1e12 for arm in ARMS},
                with_over_without=[ratio, low, high],
                dq_relative_difference=((dq["fa4"] - dq["fa4-nocutlass"]).norm() / dq["fa4"].norm()).item())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--head-dims", default="64,128")
    parser.add_argument("--causal", default="0,1")
    parser.add_argument("--seqlens", default="2048,8192")
    parser.add_argument("--rounds", type=int, default=3, help="bench_interleaved runs per shape, pooled")
    parser.add_argument("--dump", default=None, metavar="DIR")
    parser.add_argument("--out", default="fa4_backward_name.json")
    args = parser.parse_args()
    if args.dump:  # before CuTe DSL is imported
        from fa4_arms import dump_env

        os.environ.update(dump_env(args.dump))
    import torch

    began, rows = time.perf_counter(), []
    out = Path(args.out)
    for D in map(int, args.head_dims.split(",")):
        for causal in (bool(int(c)) for c in args.causal.split(",")):
            for S in map(int, args.seqlens.split(",")):
                row = time_shape(torch, D, causal, S, args.rounds)
                rows.append(row)
                ratio, low, high = row["with_over_without"]
                print(f"D={D} causal={int(causal)} S={S}: {row['tflops']['fa4']:.0f} TFLOPS with the name; "
                      f"time with / without {ratio:.4f} [{low:.4f}, {high:.4f}]; dQ differs by "
                      f"{row['dq_relative_difference']:.1e} ({time.perf_counter() - began:.0f} s)", flush=True)
                out.write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__,
                                               rows=rows), indent=1))
    if args.dump:
        from fa4_arms import name_cubins

        names = name_cubins(args.dump)
        for pair in names:
            print(f"{pair['with_name']} -> {pair['without']}: {pair['why']}")
        data = json.loads(out.read_text())
        out.write_text(json.dumps({**data, "name_cubins": names}, indent=1))


if __name__ == "__main__":
    main()
