"""Benchmark the Hopper Gluon attention against torch SDPA with each backend pinned, on one sm_90 GPU.

    PYTHONPATH=$PWD python benchmarks/hopper_attention.py --out bench.json            # 20 shapes, 3 runs
    PYTHONPATH=$PWD python benchmarks/hopper_attention.py --quick --out bench.json    # D=128, S 1k/4k/16k

Shapes follow FlashAttention-3's forward benchmark: 16k tokens per batch (B = 16384 / S) and a hidden size of 2048
(H = 2048 / D). FLOPs = 4 * B * H * S^2 * D, halved for causal. Each shape is measured ``--runs`` times; a run
times cuDNN, FLASH (and EFFICIENT with ``--efficient``), our kernel variants in bf16 (SDPA too; fp16 with
``--dtype fp16``) and, unless ``--no-fp8``, in fp8, call by call in one ``tritonhook.measure.timing.bench_interleaved`` (CUDA
events, stream held), so that clock and power swings fall on every arm alike. fp8 has no SDPA counterpart: "fp8" is our kernel with V given pre-transposed (the
K-major layout fp8 wgmma needs; see transpose_v_for_fp8), "fp8+T" includes the wrapper's V transpose on every call.

The table gives, per arm, the median over runs of each run's median TFLOPS and the spread over runs as min-max;
"ours/cuDNN" is the first variant's bf16 speed over cuDNN's (cuDNN's time / ours) with the 95% interval of
``tritonhook.measure.stats.ratio_interval`` over the call-by-call pairs of all runs; "fp8/bf16" likewise for our fp8 over our
bf16. Every sample goes to --out (JSON). Results the docs quote: benchmarks/results/hopper_attention_*_h200.json (benchmarks/README.md).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import platform
import time

SEQLENS = "1024,2048,4096,8192,16384"
QUICK = dict(head_dims="128", seqlens="1024,4096,16384")
THREE_OL = dict(variant="ws", consumers=3, overlap=True, masked_first=True)
"""ws-3wg-ol, the base of its -thread and -peel variants (the knobs of gluon_kernels.tuning.THREE_OVERLAPPED)."""
VARIANT_KWARGS = {"ws": dict(variant="ws"), "ws-aa": dict(variant="ws"), "simple": dict(variant="simple"),
                  "ws-nopp": dict(variant="ws", pingpong=False), "ws-noov": dict(variant="ws", overlap=False),
                  "ws-plain": dict(variant="ws", pingpong=False, overlap=False),
                  "ws-gst": dict(variant="ws", tma_store=False), "ws-wait": dict(variant="ws", defer_wait=False),
                  "ws-tc": dict(variant="ws", tc_rowsum=True),
                  "ws-whole-diag": dict(variant="ws", diagonal_halves=False),
                  "ws-rising": dict(variant="ws", masked_first=False),
                  "ws-2wg": dict(variant="ws", consumers=2),
                  "ws-3wg": dict(variant="ws", consumers=3),
                  "ws-3wg-ol": THREE_OL,
                  "ws-3wg-ol-thread": dict(THREE_OL, thread_rowsum=True),
                  "ws-3wg-ol-peel": dict(THREE_OL, peel_diagonal=True),
                  "ws-3wg-ol-peel-thread": dict(THREE_OL, peel_diagonal=True, thread_rowsum=True),
                  "ws-thread": dict(variant="ws", thread_rowsum=True),
                  "ws-late": dict(variant="ws", late_pv_wait=True),
                  "ws-early-pv-wait": dict(variant="ws", late_pv_wait=False),
                  "ws-hg2": dict(variant="ws", head_group=2), "ws-hg4": dict(variant="ws", head_group=4),
                  "ws-np": dict(variant="ws", persistent=False),
                  "ws-persistent": dict(variant="ws", persistent=True, dynamic_tiles=False, head_group=0),
                  "ws-persistent-hg2": dict(variant="ws", persistent=True, dynamic_tiles=False, head_group=2),
                  "ws-np-hg2": dict(variant="ws", persistent=False, head_group=2),
                  "ws-np-hg4": dict(variant="ws", persistent=False, head_group=4),
                  "ws-3wg-np-hg2": dict(THREE_OL, peel_diagonal=True, thread_rowsum=True, persistent=False,
                                        head_group=2),
                  "ws-3wg-np-hg4": dict(THREE_OL, peel_diagonal=True, thread_rowsum=True, persistent=False,
                                        head_group=4),
                  **{f"ws-dyn-hg{g}": dict(variant="ws", persistent=True, dynamic_tiles=True, head_group=g)
                     for g in (0, 2, 4, 8, 16)},
                  **{f"ws-3wg-dyn-hg{g}": dict(THREE_OL, peel_diagonal=True, thread_rowsum=True, persistent=True,
                                               dynamic_tiles=True, head_group=g) for g in (0, 2, 4, 8)},
                  "ws-static": dict(variant="ws", dynamic_tiles=False),
                  "ws-static-hg2": dict(variant="ws", dynamic_tiles=False, head_group=2),
                  "ws-pp": dict(variant="ws", pingpong=True)}
ONLY_AT_D = {name: 64 for name, kwargs in VARIANT_KWARGS.items() if kwargs.get("consumers") == 3}
"""Our variants built for one head dimension alone (three consumers: D=64)."""
SDPA_BACKENDS = ("cudnn", "flash", "efficient")
SIXTEEN_BIT = ("bf16", "fp16")


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seqlens", default=None, help=f"comma-separated S (default {SEQLENS})")
    ap.add_argument("--head-dims", default=None, help="comma-separated D (default 64,128)")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--variants", default="ws", help="our kernel variants, comma-separated: ws (persistent, "
                    "warp-specialized, tuned knobs), ws-aa (the same build again: an A/A pair with ws, how much "
                    "an arm's place in the interleaving moves it), ws-nopp (no ping-pong), ws-noov (no intra-warpgroup overlap), "
                    "ws-plain (neither), ws-gst (O written by direct global stores, not through shared memory and "
                    "TMA), ws-wait (each TMA store of O waited for at once, not after the next tile's first "
                    "block), ws-tc (P's row sums on the tensor cores), ws-whole-diag (the causal diagonal block handled whole, "
                    "not in halves), ws-rising (K/V blocks in rising order, the masked one last), ws-2wg (the tuned "
                    "build with two consumer warpgroups), ws-3wg (three consumer warpgroups, 192-row tiles; D=64 "
                    "only), ws-3wg-ol (ws-3wg with the intra-warpgroup overlap and, non-causal, the masked block "
                    "first: FlashAttention-4's D=64 configuration), ws-3wg-ol-thread (ws-3wg-ol with ws-thread's "
                    "row sums), ws-3wg-ol-peel (causal: both diagonal blocks first, the second peeled off the loop, "
                    "which then carries no mask), ws-3wg-ol-peel-thread (both), ws-thread (the row sums kept as each thread's share, the quad's "
                    "shares added once a tile: FlashAttention-4's), ws-late (the overlapped loop's wait for the "
                    "previous P V GEMM held after the softmax: late_pv_wait), ws-pp (the tuned build with the "
                    "ping-pong token on), ws-hg2 and ws-hg4 (causal tiles in sections of 2 or 4 heads), ws-np "
                    "(one program a tile, not one an SM: persistent=False), ws-np-hg2 and ws-np-hg4 (both), "
                    "ws-persistent and ws-persistent-hg2 (one program an SM walking tiles p, p + P, ..., all heads "
                    "at once or in sections of 2), ws-early-pv-wait (the tuned build without late_pv_wait), "
                    "ws-dyn-hgN and ws-3wg-dyn-hgN (tiles claimed from a counter, dynamic_tiles, in sections of N "
                    "heads, 0 all; 3wg: the tuned causal D=64 build), ws-static and ws-static-hg2 (the tuned build "
                    "without dynamic_tiles; in sections of 2), "
                    "ws-3wg-np-hg2 and ws-3wg-np-hg4 (the same with the tuned causal D=64 build), simple (one program per tile, no specialization)")
    ap.add_argument("--runs", type=int, default=3, help="measurements of each shape (default 3)")
    ap.add_argument("--quick", action="store_true", help=f"D={QUICK['head_dims']}, S {QUICK['seqlens']}")
    ap.add_argument("--no-fp8", action="store_true")
    ap.add_argument("--dtype", choices=SIXTEEN_BIT, default="bf16",
                    help="the 16-bit type of ours and SDPA's inputs (default bf16)")
    ap.add_argument("--efficient", action="store_true", help="also time SDPA's EFFICIENT_ATTENTION backend")
    ap.add_argument("--fa4", action="store_true", help="also time FlashAttention-4's Hopper forward (flash-attn-4, "
                    "bf16/fp16 only: its fp8 is SM100-only) as shipped and with `cutlass` taken out of its kernel's "
                    "name (benchmarks/fa4_arms.py)")
    ap.add_argument("--fa4-dump", default=None, metavar="DIR",
                    help="with --fa4: CuTe DSL dumps each FA4 kernel's PTX and cubin here, and the JSON says what "
                         "the name changed in the cubin")
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--rep", type=float, default=60.0, help="timed milliseconds per arm and run")
    ap.add_argument("--out", default=None, help="write all results as JSON here")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    unknown = set(args.variants.split(",")) - set(VARIANT_KWARGS)
    if unknown:
        ap.error(f"unknown variant(s) {sorted(unknown)}; known: {sorted(VARIANT_KWARGS)}")
    args.head_dims = args.head_dims or (QUICK["head_dims"] if args.quick else "64,128")
    for variant in args.variants.split(","):
        if variant in ONLY_AT_D and args.head_dims != str(ONLY_AT_D[variant]):
            ap.error(f"{variant} is built for D={ONLY_AT_D[variant]} only: give --head-dims {ONLY_AT_D[variant]}")
    args.seqlens = args.seqlens or (QUICK["seqlens"] if args.quick else SEQLENS)
    return args


def arm_names(variants, fp8: bool, efficient: bool, dtype: str = "bf16", fa4: bool = False) -> list[str]:
    """The arms of one run, in timing order: SDPA backends and FA4's first, then ours (`dtype`, fp8, fp8+T per
    variant)."""
    names = [b for b in SDPA_BACKENDS if efficient or b != "efficient"]
    if fa4:
        from fa4_arms import ARMS

        names += ARMS
    for var in variants:
        names += [f"{var}:{dtype}"] + ([f"{var}:fp8", f"{var}:fp8+T"] if fp8 else [])
    return names


def summarize_row(row: dict) -> dict:
    """Per arm of one shape's row (``row["runs"]``: one ``{arm: samples_ms}`` per run): the median of the runs'
    median TFLOPS and its min-max over runs; the speed ratios with their intervals over all runs' paired calls."""
    from tritonhook.measure.stats import median, ratio_interval

    runs = row["runs"]
    arms = {}
    for name in runs[0]:
        tflops = [row["flops"] / (median(run[name]) * 1e-3) / 1e12 for run in runs]
        arms[name] = dict(tflops=median(tflops), tflops_min=min(tflops), tflops_max=max(tflops), runs_tflops=tflops)
    pooled = lambda name: [ms for run in runs for ms in run[name]]
    ratios = {}
    ours = next((n for n in runs[0] if n.rpartition(":")[2] in SIXTEEN_BIT), None)
    fp8 = ours and ours.rpartition(":")[0] + ":fp8"
    if ours and "cudnn" in runs[0]:  # cuDNN's time / ours: > 1 where ours is faster
        ratios["ours/cudnn"] = ratio_interval(pooled(ours), pooled("cudnn"))
    if ours and "fa4" in runs[0]:
        ratios["ours/fa4"] = ratio_interval(pooled(ours), pooled("fa4"))
    if "fa4-nocutlass" in runs[0]:  # FA4's time with `cutlass` in its kernel name / without: > 1 where it costs
        ratios["nocutlass/fa4"] = ratio_interval(pooled("fa4-nocutlass"), pooled("fa4"))
    if fp8 in runs[0]:
        ratios[f"fp8/{ours.rpartition(':')[2]}"] = ratio_interval(pooled(fp8), pooled(ours))
    for other in [n for n in runs[0] if n != ours and n.rpartition(":")[2] in SIXTEEN_BIT]:  # later variants
        variant = other.rpartition(":")[0]
        ratios[f"{variant}/{ours.rpartition(':')[0]}"] = ratio_interval(pooled(other), pooled(ours))
        if "fa4" in runs[0]:
            ratios[f"{variant}/fa4"] = ratio_interval(pooled(other), pooled("fa4"))
    return dict(arms=arms, ratios=ratios)


def format_table(meta: dict, rows: list[dict]) -> str:
    """The printed report: one line per shape, ``median [min-max]`` TFLOPS per arm, then the ratios."""
    names = list(rows[0]["summary"]["arms"]) if rows else []
    ratio_names = list(rows[0]["summary"]["ratios"]) if rows else []
    lines = [f"{meta['device']} | torch {meta['torch']} | triton {meta['triton']} | {meta['runs']} runs | TFLOPS: "
             "median over runs [min-max over runs] | ratios: speed, median [95% interval]",
             f"{'D':>4} {'causal':>6} {'S':>6} " + " ".join(f"{n:>17}" for n in names)
             + "".join(f" {n:>21}" for n in ratio_names)]
    for r in rows:
        arms, ratios = r["summary"]["arms"], r["summary"]["ratios"]
        cells = [f"{a['tflops']:5.0f} [{a['tflops_min']:.0f}-{a['tflops_max']:.0f}]" for a in map(arms.get, names)]
        line = f"{r['D']:>4} {int(r['causal']):>6} {r['S']:>6} " + " ".join(f"{c:>17}" for c in cells)
        line += "".join(f" {f'{x[0]:.3f} [{x[1]:.3f},{x[2]:.3f}]':>21}" if (x := ratios.get(n)) else f" {'-':>21}"
                        for n in ratio_names)
        lines.append(line)
    return "\n".join(lines)


def time_shape(D: int, causal: bool, S: int, args) -> dict:
    """One shape: ``args.runs`` interleaved runs of every arm; the row with every sample and its summary."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from gluon_kernels import hopper_attention, transpose_v_for_fp8
    from tritonhook.flops import attention_flops
    from tritonhook.measure.timing import bench_interleaved

    B, H = max(1, args.tokens // S), args.hidden // D
    g = torch.Generator(device="cuda").manual_seed(S + D)
    sixteen = {"bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    q, k, v = (torch.randn((B, H, S, D), device="cuda", dtype=torch.float32, generator=g).to(sixteen)
               for _ in range(3))
    q8, k8, v8 = (t.to(torch.float8_e4m3fn) for t in (q, k, v))
    vt8 = transpose_v_for_fp8(v8)
    inputs = (q, k, v, q8, k8, v8, vt8)  # every arm takes them all: bench_interleaved rotates copies of them
    if args.fa4:
        from fa4_arms import bshd, fa4_calls

        inputs += bshd(q, k, v)
    sdpa = lambda q, k, v, *fp8: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    pinned = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
              "efficient": SDPBackend.EFFICIENT_ATTENTION}
    calls, fa4 = {}, fa4_calls(causal) if args.fa4 else {}
    for name in arm_names(args.variants.split(","), not args.no_fp8, args.efficient, args.dtype, args.fa4):
        if name in pinned:
            calls[name] = (lambda be=pinned[name]: sdpa_kernel([be]), sdpa)
            continue
        if name in fa4:
            calls[name] = fa4[name]
            continue
        var, kind = name.split(":")
        kw = dict(causal=causal, **VARIANT_KWARGS[var])
        fn = {args.dtype: lambda q, k, v, q8, k8, v8, vt8, *_, kw=kw: hopper_attention(q, k, v, **kw),
              "fp8": lambda q, k, v, q8, k8, v8, vt8, *_, kw=kw: hopper_attention(q8, k8, None, v_t=vt8, **kw),
              "fp8+T": lambda q, k, v, q8, k8, v8, vt8, *_, kw=kw: hopper_attention(q8, k8, v8, **kw)}[kind]
        calls[name] = (contextlib.nullcontext, fn)
    row = dict(B=B, H=H, S=S, D=D, causal=causal, flops=attention_flops(B, H, S, D, causal), runs=[])
    for _ in range(args.runs):
        results = bench_interleaved(list(calls.values()), inputs=inputs, rep_ms=args.rep, min_reps=20)
        row["runs"].append({name: res.samples_ms for name, res in zip(calls, results)})
    ref = results[0].output.float() if "cudnn" in calls else None
    if ref is not None:  # the last run's first outputs, against cuDNN's (FA4's in its own layout)
        as_bhsd = lambda name, out: out.transpose(1, 2) if name in fa4 else out
        row["relerr_vs_cudnn"] = {name: ((as_bhsd(name, res.output).float() - ref).norm() / ref.norm()).item()
                                  for name, res in zip(calls, results)}
    row["summary"] = summarize_row(row)
    return row


def main(argv=None):
    args = parse_args(argv)
    if args.fa4_dump:  # before CuTe DSL is imported
        import os

        from fa4_arms import dump_env

        os.environ.update(dump_env(args.fa4_dump))
    import torch
    import triton

    began = time.perf_counter()
    rows = []
    for D in [int(x) for x in args.head_dims.split(",")]:
        for causal in [bool(int(x)) for x in args.causal.split(",")]:
            for S in [int(x) for x in args.seqlens.split(",")]:
                rows.append(time_shape(D, causal, S, args))
                print(f"done D={D} causal={int(causal)} S={S} ({time.perf_counter() - began:.0f} s)", flush=True)
    meta = dict(device=torch.cuda.get_device_name(), torch=torch.__version__, triton=triton.__version__,
                dtype=args.dtype, python=platform.python_version(), tokens=args.tokens, hidden=args.hidden, runs=args.runs,
                rep_ms=args.rep, seconds=time.perf_counter() - began,
                timing="tritonhook.measure.timing.bench_interleaved per run (CUDA events, stream held); TFLOPS from each run's "
                       "median; spread = min-max over runs; ratios: ratio_interval over all runs' paired calls")
    names = None
    if args.fa4_dump:
        from fa4_arms import name_cubins

        names = name_cubins(args.fa4_dump)
        for pair in names:
            print(f"{pair['with_name']} -> {pair['without']}: {pair['why']}")
    if args.out:
        with open(args.out, "w") as f:  # compact: the per-call samples are most of the file
            json.dump(dict(meta=meta, rows=rows, fa4_name_cubins=names), f, separators=(",", ":"))
    print("\n" + format_table(meta, rows))


if __name__ == "__main__":
    main()
