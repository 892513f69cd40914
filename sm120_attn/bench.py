"""TFLOPS of the sm120_attn kernels against torch SDPA (FLASH_ATTENTION and CUDNN_ATTENTION backends pinned).

    python -m sm120_attn.bench [--json bench.json] [--quick]

FLOPs = 4 * B * H * Sq * Sk * D (two GEMMs), halved for causal. Each configuration is timed with CUDA events
around single launches after a warm-up: `reps` samples, the median reported (and min / max in the JSON). Inputs
are random normal; every kernel reads the same tensors. Our kernels are launched through their compiled CuTe DSL
function with arguments converted once (the per-call dlpack conversion of `attention()` is host overhead that
is not the kernel's). The table is printed last.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

CONFIGS = [
    # (B, H, S, D, causal)
    (4, 16, 2048, 128, False),
    (2, 16, 4096, 128, False),
    (1, 16, 8192, 128, False),
    (4, 16, 2048, 128, True),
    (2, 16, 4096, 128, True),
    (1, 16, 8192, 128, True),
    (4, 16, 4096, 64, False),
    (4, 16, 4096, 64, True),
]


def time_fn(fn, reps=30, warmup=5):
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times), max(times)


def main(argv=None) -> int:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import sm120_attn

    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default="sm120_attn_bench.json")
    parser.add_argument("--variant", action="append")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args(argv)
    variants = args.variant or ["cpasync", "tma"]
    configs = CONFIGS[:2] + CONFIGS[3:4] if args.quick else CONFIGS
    rows = []
    torch.manual_seed(0)
    for b, h, s, d, causal in configs:
        q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
        row = {"B": b, "H": h, "S": s, "D": d, "causal": causal, "tflops": {}, "ms": {}}
        candidates = {}
        for variant in variants:
            out = torch.empty_like(q)
            try:
                fn, cargs, stream = sm120_attn.compiled_kernel(variant, q, k, v, out, causal)
                scale_log2 = d ** -0.5 * 1.4426950408889634
                candidates[variant] = (lambda fn=fn, a=cargs, st=stream: fn(*a, scale_log2, st))
            except Exception as exc:
                row.setdefault("errors", {})[variant] = f"{type(exc).__name__}: {exc}"[:500]
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
        for name, backend in (("sdpa_flash", SDPBackend.FLASH_ATTENTION), ("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION)):
            def run(backend=backend):
                with sdpa_kernel([backend]):
                    return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
            try:
                run()
                candidates[name] = run
            except Exception as exc:
                row.setdefault("errors", {})[name] = f"{type(exc).__name__}: {exc}"[:500]
        for name, fn in candidates.items():
            med, lo, hi = time_fn(fn, reps=args.reps)
            row["ms"][name] = {"median": med, "min": lo, "max": hi}
            row["tflops"][name] = flops / (med * 1e-3) / 1e12
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(args.json, "w") as fh:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, fh, indent=1)
    names = [n for n in [*variants, "sdpa_flash", "sdpa_cudnn"] if any(n in r["tflops"] for r in rows)]
    print(f"\nTFLOPS (median of {args.reps}), {torch.cuda.get_device_name()}, bf16; ratio = best ours / sdpa_flash")
    print(f"{'B':>2} {'H':>3} {'S':>5} {'D':>4} {'causal':>6} " + " ".join(f"{n:>11}" for n in names) + "  ratio")
    for r in rows:
        ours = [r["tflops"][n] for n in variants if n in r["tflops"]]
        ratio = max(ours) / r["tflops"]["sdpa_flash"] if ours and "sdpa_flash" in r["tflops"] else float("nan")
        print(f"{r['B']:>2} {r['H']:>3} {r['S']:>5} {r['D']:>4} {str(r['causal']):>6} "
              + " ".join(f"{r['tflops'].get(n, float('nan')):>11.1f}" for n in names) + f"  {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
