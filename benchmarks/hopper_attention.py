"""Benchmark the Hopper Gluon attention against torch SDPA with each backend pinned, on one sm_90 GPU.

    PYTHONPATH=$PWD python benchmarks/hopper_attention.py --out bench.json

Shapes follow FlashAttention-3's forward benchmark: 16k tokens per batch (B = 16384 / S) and a hidden size of 2048
(H = 2048 / D). FLOPs = 4 * B * H * S^2 * D, halved for causal. Times are medians of ``tritonhook.ab.bench``
(CUDA events around each call, after a warm-up). fp8 has no SDPA counterpart: it is compared
with our own bf16 and with cuDNN bf16, twice: "fp8" is the kernel with V given pre-transposed (the K-major layout
fp8 wgmma needs; see transpose_v_for_fp8) and "fp8+T" includes the wrapper's V transpose on every call. Columns
"bf16/cudnn" and "fp8/bf16" are ratios of the first variant listed. The table is printed last; every number also
goes to --out (JSON). Results of earlier runs: benchmarks/results/bench_h200_*.json.
"""
from __future__ import annotations

import argparse
import json
import platform


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seqlens", default="1024,2048,4096,8192,16384")
    ap.add_argument("--head-dims", default="64,128")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--variants", default="ws", help="our kernel variants to time, comma-separated: ws (persistent, "
                    "warp-specialized, intra-warpgroup overlap + ping-pong), ws-nopp (no ping-pong), ws-noov (no "
                    "intra-warpgroup overlap), ws-plain (neither), simple (one program per tile, no specialization)")
    ap.add_argument("--no-fp8", action="store_true")
    ap.add_argument("--no-sdpa", action="store_true")
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--rep", type=int, default=200, help="timed milliseconds per measurement")
    ap.add_argument("--out", default=None, help="write all results as JSON here")
    args = ap.parse_args(argv)

    import torch
    import triton
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from gluon_kernels import hopper_attention, transpose_v_for_fp8
    from tritonhook import ab
    from tritonhook.ab import attention_flops

    backends = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    variants = [v for v in args.variants.split(",") if v]
    variant_kwargs = {"ws": dict(variant="ws"), "simple": dict(variant="simple"),
                      "ws-nopp": dict(variant="ws", pingpong=False), "ws-noov": dict(variant="ws", overlap=False),
                      "ws-plain": dict(variant="ws", pingpong=False, overlap=False)}
    dev = torch.cuda.get_device_name()
    rows = []

    def bench(fn):
        return ab.bench(fn, warmup_ms=25, rep_ms=args.rep).median_ms

    for D in [int(x) for x in args.head_dims.split(",")]:
        for causal in [bool(int(x)) for x in args.causal.split(",")]:
            for S in [int(x) for x in args.seqlens.split(",")]:
                B = max(1, args.tokens // S)
                H = args.hidden // D
                flops = attention_flops(B, H, S, D, causal)
                tf = lambda ms: flops / (ms * 1e-3) / 1e12
                g = torch.Generator(device="cuda").manual_seed(S + D)
                q, k, v = (torch.randn((B, H, S, D), device="cuda", dtype=torch.float32, generator=g)
                           .to(torch.bfloat16) for _ in range(3))
                row = dict(B=B, H=H, S=S, D=D, causal=causal, flops=flops)
                ref = None
                if not args.no_sdpa:
                    for name, be in backends.items():
                        try:
                            with sdpa_kernel([be]):
                                f = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                                out = f()
                                if name == "cudnn":
                                    ref = out.float()
                                row[f"sdpa_{name}_ms"] = bench(f)
                        except Exception as e:  # a backend may refuse a shape
                            row[f"sdpa_{name}_ms"] = None
                            row[f"sdpa_{name}_error"] = repr(e)[:200]
                for var in variants:
                    f = lambda: hopper_attention(q, k, v, causal=causal, **variant_kwargs[var])
                    out = f()
                    if ref is not None:
                        row[f"{var}_bf16_relerr_vs_cudnn"] = ((out.float() - ref).norm() / ref.norm()).item()
                    row[f"{var}_bf16_ms"] = bench(f)
                    if not args.no_fp8:
                        q8, k8, v8 = (t.to(torch.float8_e4m3fn) for t in (q, k, v))
                        vt8 = transpose_v_for_fp8(v8)
                        # kernel alone, V already in the K-major layout fp8 wgmma needs (as an fp8 KV cache would
                        # store it) ...
                        f8 = lambda: hopper_attention(q8, k8, None, causal=causal, v_t=vt8, **variant_kwargs[var])
                        out8 = f8()
                        if ref is not None:
                            row[f"{var}_fp8_relerr_vs_cudnn"] = ((out8.float() - ref).norm() / ref.norm()).item()
                        row[f"{var}_fp8_ms"] = bench(f8)
                        # ... and end to end, the wrapper transposing V on every call
                        f8t = lambda: hopper_attention(q8, k8, v8, causal=causal, **variant_kwargs[var])
                        row[f"{var}_fp8T_ms"] = bench(f8t)
                        del q8, k8, v8, vt8
                for key in list(row):
                    if key.endswith("_ms") and row[key]:
                        row[key[:-3] + "_tflops"] = tf(row[key])
                rows.append(row)
                del q, k, v
                print(f"done D={D} causal={causal} S={S}", flush=True)

    meta = dict(device=dev, torch=torch.__version__, triton=triton.__version__, python=platform.python_version(),
                tokens=args.tokens, hidden=args.hidden, timing="tritonhook.ab.bench median, CUDA events")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(meta=meta, rows=rows), f, indent=1)

    # table last
    cols = [("cudnn", "sdpa_cudnn_tflops"), ("flash", "sdpa_flash_tflops"), ("effic", "sdpa_efficient_tflops")]
    for var in variants:
        cols.append((f"{var}:bf16", f"{var}_bf16_tflops"))
        if not args.no_fp8:
            cols.append((f"{var}:fp8", f"{var}_fp8_tflops"))
            cols.append((f"{var}:fp8+T", f"{var}_fp8T_tflops"))
    main_var = variants[0] if variants else None
    print(f"\n{dev} | torch {torch.__version__} | triton {triton.__version__} | TFLOPS (median)")
    hdr = f"{'D':>4} {'causal':>6} {'S':>6} " + " ".join(f"{c:>11}" for c, _ in cols)
    if main_var:
        hdr += f" {'bf16/cudnn':>10} {'fp8/bf16':>8}"
    print(hdr)
    for r in rows:
        line = f"{r['D']:>4} {str(r['causal']):>6} {r['S']:>6} "
        line += " ".join(f"{r[k]:>11.1f}" if r.get(k) else f"{'-':>11}" for _, k in cols)
        if main_var:
            b, c8, cu = r.get(f"{main_var}_bf16_tflops"), r.get(f"{main_var}_fp8_tflops"), r.get("sdpa_cudnn_tflops")
            line += f" {b / cu:>10.2f}" if (b and cu) else f" {'-':>10}"
            line += f" {c8 / b:>8.2f}" if (b and c8) else f" {'-':>8}"
        print(line)


if __name__ == "__main__":
    main()
