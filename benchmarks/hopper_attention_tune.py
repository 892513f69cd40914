"""Tune the Hopper Gluon attention (ws kernel, bf16) against cuDNN SDPA on one sm_90 GPU: a small grid of knob
sets per (head dim, causal) family, every S of the family timed against cuDNN and FLASH (SDPA backends pinned).
`--fp8` tunes the fp8 (e4m3) builds instead (`GRID_FP8`), timed against our bf16 build as it ships (the goal is a
ratio over it; outputs are compared with its) and the fp8 build as it ships (`TUNED_WS_FP8`, arm "table").

    PYTHONPATH=$PWD python benchmarks/hopper_attention_tune.py --out tune.json           # full: <= 7 min on an H200
    PYTHONPATH=$PWD python benchmarks/hopper_attention_tune.py --quick --out tune.json   # D=128, 3 S, 5 configs
    PYTHONPATH=$PWD python benchmarks/hopper_attention_tune.py --emit-table tune.json    # TUNED_WS literal
    PYTHONPATH=$PWD python benchmarks/hopper_attention_tune.py --fp8 --seqlens 1024,2048 --out tune8.json

Shapes as FlashAttention-3's benchmark: 16k tokens (B = 16384 / S), hidden 2048 (H = 2048 / D); TFLOPS =
4 B H S^2 D / t, halved for causal. Per shape, cuDNN, FLASH and every config are timed call by call in one
interleaved run (`tritonhook.measure.timing.bench_interleaved`: CUDA events, stream held while the host queues), so clock
swings fall on all alike. A config whose output differs from cuDNN's by more than 1e-2 (relative norm) is
reported and never chosen. Compiles come first, all at once, in a process pool (`--jobs`, default the CPU count):
each worker runs the real wrapper once per config on a small tensor, which leaves the build in Triton's disk cache
under exactly the key the timed calls look up (an AOT `triton.compile` keys on another specialization and would
miss). The table is printed last; every sample summary goes to --out. `--emit-table` turns that JSON into the
`TUNED_WS` table of gluon_kernels/tuning.py: per (causal, D), the best config of each S whose interval against
the default lies wholly above 1, consecutive S with the same choice merged.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import time

SEQLENS = (1024, 2048, 4096, 8192, 16384)
TOKENS, HIDDEN = 16384, 2048
ERR_LIMIT = 1e-2
FP8_ERR_GROWTH = 1.25
"""An fp8 config is wrong where its output is further from our bf16 build's than this many times the shipped fp8
build's is: fp8 builds differ from each other by ~1e-2 (relative norm; H200, D=128, S=1k-2k) where their key blocks
differ in width (P is rounded to e4m3 against each block's row maxima), and from bf16 by ~5e-2."""

# Knob sets per (head_dim, causal), the default first ({}); every set is compiled once and reused across S.
# Shared memory: Q 4 x 64 x D, K+V 2 x BLOCK_N x D per stage (2-byte elements), at most 227 KB per CTA.
# head_group (causal only): FA3's LPT sections hold as many heads as fit K/V in L2 (50 MB): D=128 bf16 that is
# 64 heads at S=1k, 32 at 2k, 16 at 4k, 4 at 8k, 2 at 16k; 0 is all heads in one section, in snake order. Sections
# hold at long S only where the tiles in flight are consecutive ones (dynamic_tiles, as the causal tables ship from
# 2k, or one program a tile): persistent programs walking fixed strides drift across sections.
GRID: dict[tuple[int, bool], list[dict]] = {
    (128, False): [{}, dict(pingpong=False), dict(block_n=64, stages=4), dict(block_n=64, stages=4, pingpong=False),
                   dict(block_n=64, stages=3)],
    (128, True): [{}, dict(pingpong=False), dict(head_group=8), dict(head_group=32),
                  dict(head_group=8, pingpong=False), dict(head_group=2, pingpong=False),
                  dict(head_group=8, pingpong=False, dynamic_tiles=True),
                  dict(head_group=4, pingpong=False, dynamic_tiles=True)],
    (64, False): [{}, dict(pingpong=False), dict(stages=4), dict(block_n=64, stages=5), dict(stages=4, pingpong=False)],
    (64, True): [{}, dict(pingpong=False), dict(head_group=4), dict(head_group=16),
                 dict(head_group=16, pingpong=False, dynamic_tiles=True),
                 dict(head_group=16, pingpong=False), dict(head_group=16, stages=4),
                 dict(block_n=64, stages=5, head_group=16)],
}
# fp8 knob sets over the fp8 defaults (`ws_defaults(D, fp8=True)`), the default first. D=128 up to 2k is where fp8
# sat under 1.4x our bf16 (1.33-1.40, docs/hopper_attention.md): the table's entry there and its neighbours (causal:
# head groups, ping-pong, stages, O's store; non-causal: 128- or 256-key tiles, stages, overlap and, for the per-tile
# work that dominates at 1k, head sections that keep a section's K and V in L2).
_BN256 = dict(block_n=256, overlap=False, pingpong=False, defer_wait=False, tc_rowsum=True)
GRID_FP8: dict[tuple[int, bool], list[dict]] = {
    (128, False): [{}, dict(_BN256, stages=2), dict(_BN256, stages=3), dict(_BN256, stages=2, head_group=16),
                   dict(tc_rowsum=True), dict(tc_rowsum=True, pingpong=False), dict(tc_rowsum=True, stages=2)],
    (128, True): [{}, dict(tc_rowsum=True, head_group=4, pingpong=False),
                  dict(tc_rowsum=True, head_group=8, pingpong=False), dict(tc_rowsum=True, head_group=8),
                  dict(tc_rowsum=True, head_group=4), dict(tc_rowsum=True, head_group=2, pingpong=False),
                  dict(tc_rowsum=True, head_group=4, pingpong=False, stages=2),
                  dict(tc_rowsum=True, head_group=4, pingpong=False, tma_store=False)],
}
QUICK = dict(families=[(128, False), (128, True)], seqlens=(1024, 2048, 8192), configs=5)

SHORT = {"block_n": "bn", "stages": "st", "pingpong": "pp", "overlap": "ov", "head_group": "hg",
         "consumer_regs": "cr", "producer_regs": "pr", "tc_rowsum": "tc", "tma_store": "ts", "defer_wait": "dw",
         "persistent": "ps", "dynamic_tiles": "dt"}
AS_SHIPPED = None
"""The knob set of an arm that passes no knob: the build as the wrapper ships it at that S (its tuned table)."""


def label(knobs: dict) -> str:
    """A config's name in the table and the JSON: 'default', 'table' (`AS_SHIPPED`) or e.g. 'bn64-st4-pp0'."""
    if knobs is AS_SHIPPED:
        return "table"
    return "-".join(f"{SHORT[k]}{int(v)}" for k, v in sorted(knobs.items())) or "default"


def over_defaults(D: int, knobs: dict, fp8: bool = False) -> dict:
    """A knob set with every other knob at the kernel's default: the wrapper applies the knobs it is given over the
    TUNED_WS entry of S, so a partial set would be timed over whatever the table holds (a "pingpong=False" at a
    causal S the table gives head groups of 8 was timed with them, and emitted without them)."""
    from gluon_kernels.tuning import ws_defaults

    return {**ws_defaults(D, fp8), **knobs}


def shape(S: int, D: int) -> tuple[int, int]:
    """(B, H) as FA3's benchmark: 16k tokens, hidden 2048."""
    return max(1, TOKENS // S), HIDDEN // D


def plan(quick: bool, families=None, seqlens=None, fp8: bool = False
         ) -> list[tuple[int, bool, tuple[int, ...], list[dict]]]:
    """[(D, causal, seqlens, knob sets)] for this run."""
    grids = GRID_FP8 if fp8 else GRID
    fams = families or (QUICK["families"] if quick and not fp8 else list(grids))
    unknown = [f"{D}:{int(causal)}" for D, causal in fams if (D, causal) not in grids]
    if unknown:
        raise SystemExit(f"no {'fp8 ' if fp8 else ''}grid for {', '.join(unknown)}; families: "
                         f"{', '.join(f'{D}:{int(c)}' for D, c in grids)}")
    sls = tuple(seqlens or (QUICK["seqlens"] if quick else SEQLENS))
    n = QUICK["configs"] if quick else None
    return [(D, causal, sls, grids[(D, causal)][:n]) for D, causal in fams]


def inputs(B: int, H: int, S: int, D: int, seed: int, fp8: bool) -> tuple:
    """(q, k, v) in bf16, from one seeded draw; with `fp8` also (q8, k8, v8 transposed for fp8) in e4m3 of them:
    every arm of an fp8 run takes all six."""
    import torch

    from gluon_kernels import transpose_v_for_fp8

    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (torch.randn((B, H, S, D), device="cuda", dtype=torch.float32, generator=g).to(torch.bfloat16)
               for _ in range(3))
    if not fp8:
        return q, k, v
    q8, k8, v8 = (t.to(torch.float8_e4m3fn) for t in (q, k, v))
    return q, k, v, q8, k8, transpose_v_for_fp8(v8)


def our_call(D: int, causal: bool, knobs: dict | None, fp8: bool):
    """Our kernel on `inputs`: fp8 or bf16, over the defaults with `knobs`, or as shipped (`AS_SHIPPED`)."""
    from gluon_kernels import hopper_attention

    kw = {} if knobs is AS_SHIPPED else over_defaults(D, knobs, fp8)
    if fp8:
        return lambda q, k, v, q8, k8, vt8: hopper_attention(q8, k8, None, v_t=vt8, causal=causal, **kw)
    return lambda q, k, v, *_: hopper_attention(q, k, v, causal, **kw)


# ---- compiles, in worker processes ----------------------------------------------------------------------------
def _warm(job):
    """Worker: run the wrapper once for one config (compiles it into Triton's disk cache); (job, seconds, error)."""
    D, causal, S, knobs, fp8 = job
    began = time.perf_counter()
    try:
        import torch

        B, H = shape(S, D)
        our_call(D, causal, knobs, fp8)(*inputs(B, H, S, D, seed=0, fp8=fp8))
        torch.cuda.synchronize()
        return job, time.perf_counter() - began, None
    except Exception as e:  # reported per config; the config is left out of the timing
        return job, time.perf_counter() - began, repr(e)[:300]


def warm_all(runs, jobs: int, fp8: bool = False) -> dict[tuple, str]:
    """Compile every (family, config) in a spawn pool of `jobs` processes; {(D, causal, label): error} of failures.
    With `fp8` also the two builds as shipped at each S (their tables choose by S): bf16 and fp8."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    work = [(D, causal, sls[0], knobs, fp8) for D, causal, sls, grid in runs for knobs in grid]
    if fp8:
        work += [(D, causal, S, AS_SHIPPED, kind) for D, causal, sls, _ in runs for S in sls for kind in (False, True)]
    failed = {}
    began = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=multiprocessing.get_context("spawn")) as pool:
        for (D, causal, _, knobs, _), seconds, err in pool.map(_warm, work):
            print(f"compiled D={D} causal={int(causal)} {label(knobs):<24} {seconds:5.1f} s"
                  + (f"  FAILED {err}" if err else ""), flush=True)
            if err:
                failed[(D, causal, label(knobs))] = err
    print(f"{len(work)} configs compiled in {time.perf_counter() - began:.0f} s with {jobs} processes", flush=True)
    return failed


# ---- timing ---------------------------------------------------------------------------------------------------
def time_shape(D: int, causal: bool, S: int, grid: list[dict], rep_ms: float, fp8: bool = False) -> dict:
    """Every config of `grid`, interleaved with the references, one JSON row. bf16: cuDNN and FLASH, outputs against
    cuDNN's; fp8: our bf16 and fp8 builds as shipped ("bf16", "table"), outputs against the bf16 build's."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from tritonhook.flops import attention_flops
    from tritonhook.measure.timing import bench_interleaved
    from tritonhook.measure.stats import summarize

    B, H = shape(S, D)
    flops = attention_flops(B, H, S, D, causal)
    data = inputs(B, H, S, D, seed=S + D + causal, fp8=fp8)
    if fp8:
        arms = {"bf16": (contextlib.nullcontext, our_call(D, causal, AS_SHIPPED, False)),
                "table": (contextlib.nullcontext, our_call(D, causal, AS_SHIPPED, True))}
        reference = "bf16"
    else:
        sdpa = lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        arms = {"cudnn": (lambda: sdpa_kernel([SDPBackend.CUDNN_ATTENTION]), sdpa),
                "flash": (lambda: sdpa_kernel([SDPBackend.FLASH_ATTENTION]), sdpa)}
        reference = "cudnn"
    for knobs in grid:
        arms[label(knobs)] = (contextlib.nullcontext, our_call(D, causal, knobs, fp8))
    results = dict(zip(arms, bench_interleaved(list(arms.values()), inputs=data, rep_ms=rep_ms, min_reps=20)))
    ref = results[reference].output.float()
    row = dict(D=D, causal=causal, S=S, B=B, H=H, flops=flops, dtype="fp8" if fp8 else "bf16",
               references=list(arms)[:2], arms={})
    for name, res in results.items():
        s = summarize(res.samples_ms)
        row["arms"][name] = dict(median_ms=s.median_ms, tflops=flops / (s.median_ms * 1e-3) / 1e12,
                                 spread_pct=s.spread_pct, samples_ms=res.samples_ms,
                                 relerr=((res.output.float() - ref).norm() / ref.norm()).item())
    return _verdicts(row, grid)


def _verdicts(row: dict, grid: list[dict]) -> dict:
    """Best correct config (bf16: within `ERR_LIMIT` of cuDNN; fp8: within `FP8_ERR_GROWTH` of the shipped fp8
    build's error against our bf16) and its speed relative to the references and to the default (x's time / best's
    time), each with the interval of `ratio_interval`; fp8 rows also the shipped fp8 build's over our bf16."""
    from tritonhook.measure.stats import ratio_interval

    arms = row["arms"]
    speed = lambda name, other: ratio_interval(arms[name]["samples_ms"], arms[other]["samples_ms"])
    limit = FP8_ERR_GROWTH * arms["table"]["relerr"] if row["dtype"] == "fp8" else ERR_LIMIT
    ours = [label(k) for k in grid if arms[label(k)]["relerr"] < limit]
    row["wrong"] = [label(k) for k in grid if label(k) not in ours]
    if "bf16" in arms:
        row["table_vs_bf16"] = speed("table", "bf16")
    if not ours:
        return row
    best = min(ours, key=lambda n: arms[n]["median_ms"])
    row["best"] = best
    row["best_knobs"] = next(k for k in grid if label(k) == best)
    for other in (*row["references"], "default"):
        if other in arms:  # speed of best over other = other's time / best's time: > 1 where best is faster
            row[f"best_vs_{other}"] = speed(best, other)
    return row


# ---- report ---------------------------------------------------------------------------------------------------
def print_table(meta: dict, rows: list[dict]) -> None:
    first, second = rows[0]["references"] if rows else ("cudnn", "flash")
    print(f"\n{meta['device']} | torch {meta['torch']} | triton {meta['triton']} | {meta['dtype']} TFLOPS (median; "
          f"spread = IQR / median) | best/x: x's median time / best's [95% interval], > 1: best is faster"
          + (" | table/bf16: the fp8 build as shipped over our bf16" if meta["dtype"] == "fp8" else ""))
    print(f"{'D':>4} {'causal':>6} {'S':>6} {first:>12} {second:>12} {'default':>12} {'best config':>24} "
          f"{'best':>12} {'best/' + first:>20} {'best/default':>20} {'table/bf16':>20} {'wrong':>5}")
    for r in rows:
        a = r["arms"]
        fmt = lambda n: f"{a[n]['tflops']:6.1f} ±{a[n]['spread_pct']:3.1f}%" if n in a else f"{'-':>12}"
        ratio = lambda key: (f"{r[key][0]:.3f} [{r[key][1]:.3f},{r[key][2]:.3f}]" if key in r else "-")
        print(f"{r['D']:>4} {int(r['causal']):>6} {r['S']:>6} {fmt(first)} {fmt(second)} "
              f"{fmt('default')} {r.get('best', '-'):>24} {fmt(r['best']) if 'best' in r else '-':>12} "
              f"{ratio('best_vs_' + first):>20} {ratio('best_vs_default'):>20} {ratio('table_vs_bf16'):>20} "
              f"{len(r['wrong']):>5}")


def tuned_table(rows: list[dict]) -> dict:
    """TUNED_WS from tuning rows: per (causal, D), S ascending, the best knobs where they beat the default beyond
    the interval (else the default, {}), consecutive S with the same knobs merged; the last range is open."""
    table = {}
    for causal, D in sorted({(bool(r["causal"]), r["D"]) for r in rows}):
        fam = sorted((r for r in rows if bool(r["causal"]) == causal and r["D"] == D), key=lambda r: r["S"])
        entries = []
        for r in fam:
            wins = "best_vs_default" in r and r["best_vs_default"][1] > 1.0
            knobs = r["best_knobs"] if wins else {}
            if entries and entries[-1][1] == knobs:
                entries[-1] = (r["S"], knobs)
            else:
                entries.append((r["S"], knobs))
        if entries:
            entries[-1] = (2**31 - 1, entries[-1][1])
        if any(knobs for _, knobs in entries):
            table[(causal, D)] = tuple(entries)
    return table


def table_literal(rows: list[dict]) -> str:
    """`tuned_table` as the literal of gluon_kernels/tuning.py it tunes (fp8 rows: TUNED_WS_FP8), over the S tuned."""
    fp8 = any(r.get("dtype") == "fp8" for r in rows)
    return f"TUNED_WS{'_FP8' if fp8 else ''} = {tuned_table(rows)!r}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="D=128 only, S 1k/2k/8k, the first 5 configs (~2 min)")
    ap.add_argument("--seqlens", default=None, help="comma-separated S (default: 1k..16k)")
    ap.add_argument("--families", default=None, help="comma-separated D:causal, e.g. 128:1,64:0")
    ap.add_argument("--jobs", type=int, default=os.cpu_count(), help="compile processes (default: CPU count)")
    ap.add_argument("--rep", type=float, default=60.0, help="timed milliseconds per arm and shape (more rounds "
                    "cost CPU time in the bootstrap intervals: ~0.4 s each at 150 rounds)")
    ap.add_argument("--out", default=None, help="write every result as JSON here")
    ap.add_argument("--emit-table", metavar="JSON", default=None,
                    help="print the TUNED_WS (TUNED_WS_FP8) literal for gluon_kernels/tuning.py from a --out JSON, "
                         "and exit")
    ap.add_argument("--fp8", action="store_true", help="tune the fp8 builds (GRID_FP8) against our bf16 and fp8 "
                    "builds as shipped")
    args = ap.parse_args(argv)

    if args.emit_table:
        with open(args.emit_table) as f:
            rows = json.load(f)["rows"]
        print(table_literal(rows))
        return

    import torch
    import triton

    families = [(int(d), bool(int(c))) for d, c in (x.split(":") for x in args.families.split(","))] \
        if args.families else None
    seqlens = [int(x) for x in args.seqlens.split(",")] if args.seqlens else None
    runs = plan(args.quick, families, seqlens, args.fp8)
    began = time.perf_counter()
    failed = warm_all(runs, args.jobs, args.fp8)
    rows = []
    for D, causal, sls, grid in runs:
        grid = [k for k in grid if (D, causal, label(k)) not in failed]
        for S in sls:
            rows.append(time_shape(D, causal, S, grid, args.rep, args.fp8))
            r = rows[-1]
            first = r["references"][0]
            print(f"timed D={D} causal={int(causal)} S={S}: best {r.get('best')} "
                  f"{r['arms'].get(r.get('best'), {}).get('tflops', 0):.1f} vs {first} "
                  f"{r['arms'][first]['tflops']:.1f} TFLOPS ({time.perf_counter() - began:.0f} s)", flush=True)
    meta = dict(device=torch.cuda.get_device_name(), torch=torch.__version__, triton=triton.__version__,
                python=platform.python_version(), tokens=TOKENS, hidden=HIDDEN, dtype="fp8" if args.fp8 else "bf16",
                rep_ms=args.rep,
                timing="tritonhook.measure.timing.bench_interleaved, medians, CUDA events, stream held",
                grid={f"{D}:{int(c)}": [label(k) for k in g] for D, c, _, g in runs},
                compile_failures={f"{D}:{int(c)}:{n}": e for (D, c, n), e in failed.items()},
                seconds=time.perf_counter() - began)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(meta=meta, rows=rows), f, indent=1)
    print_table(meta, rows)
    print("\n" + table_literal(rows))


if __name__ == "__main__":
    main()
