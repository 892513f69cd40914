"""Which ws-kernel knobs make the fp8 Hopper attention fastest against our bf16 (issue 18: fp8 >= 1.4x bf16).

    PYTHONPATH=$PWD python benchmarks/hopper_fp8_knobs.py [--head-dim 128|64] [--out fp8_knobs.json]

The fp8 path first ran the ws defaults (block_n 128, 3 stages, ping-pong, overlap); this sweep chose its TUNED_WS_FP8
table (gluon_kernels/tuning.py). Per shape (FA3's: 16k tokens, hidden 2048; D=128 unless --head-dim 64), bf16 with
its tuned defaults, fp8 with its defaults and fp8 under each knob set of KNOBS are timed call by call in one
`tritonhook.measure.timing.bench_interleaved` run; prints TFLOPS and fp8/bf16 per knob set, writes JSON. Outputs are checked
against bf16's before timing (relative norm < 0.1: e4m3 inputs alone give ~0.055).
"""
from __future__ import annotations

import argparse
import contextlib
import json

SHAPES = [(S, causal) for causal in (False, True) for S in (1024, 2048, 4096, 8192, 16384)]
BN256 = dict(block_n=256, stages=3, overlap=False, pingpong=False, defer_wait=False)
KNOBS = {128: [{}, dict(pingpong=False), dict(defer_wait=False), BN256, {**BN256, "stages": 2},
               {**BN256, "stages": 2, "defer_wait": True}, {**BN256, "stages": 2, "head_group": 8},
               dict(pingpong=False, head_group=8)],
         64: [{}, dict(pingpong=False), BN256, {**BN256, "stages": 4}, {**BN256, "stages": 2},
              {**BN256, "head_group": 4}, {**BN256, "head_group": 16}, {**BN256, "head_group": 4, "tma_store": True}]}
# --grid tc (thirteenth session): the row sums on the tensor cores (`tc_rowsum`) over the tuned builds' knobs.
TC_KNOBS = {D: [{}, dict(tc_rowsum=True), dict(tc_rowsum=True, pingpong=False), dict(tc_rowsum=True, head_group=8),
                dict(tc_rowsum=True, head_group=2, pingpong=False), {**BN256, "tc_rowsum": True},
                {**BN256, "stages": 2, "tc_rowsum": True},
                {**BN256, "stages": 2, "tc_rowsum": True, "defer_wait": True}] for D in (64, 128)}
# --grid tc-short: causal S <= 2k, where tc_rowsum alone stays near 1.33x.
TC_SHORT_KNOBS = {D: [{}, dict(tc_rowsum=True, head_group=8), dict(tc_rowsum=True, head_group=4),
                      dict(tc_rowsum=True, head_group=16), dict(tc_rowsum=True, head_group=4, pingpong=False),
                      dict(tc_rowsum=True, block_n=64, stages=4), dict(tc_rowsum=True, head_group=8, block_n=64, stages=4),
                      dict(tc_rowsum=True, head_group=8, pingpong=False)] for D in (64, 128)}
GRIDS = {"tuned": KNOBS, "tc": TC_KNOBS, "tc-short": TC_SHORT_KNOBS}
# Each set is timed over the kernel's defaults (`ws_defaults`), not over the table; the arm "fp8 table" is what
# the wrapper launches at that S (its TUNED_WS_FP8 entry). One exception: `tma_store` is None in the defaults
# (fp8: on where its O buffer fits), and a None knob leaves the table's value, so at D=64 causal (table: off) the
# sets without an explicit `tma_store` run without it.
# block_n 256 as FlashAttention-3's fp8 tile (128 x 224 for D=128, hopper/tile_size.h; Gluon tiles are powers of
# two): a step's fixed work (row max and sum, the O rescale, the barrier waits) spread over twice the keys. With
# overlap it spills (608 LDL in the sm_90a build); without, 168 registers and no spills.


def label(knobs: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in knobs.items()) or "default"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--head-dim", type=int, choices=sorted(KNOBS), default=128)
    ap.add_argument("--out", default="fp8_knobs.json")
    ap.add_argument("--grid", choices=sorted(GRIDS), default="tuned",
                    help="tuned: the sets TUNED_WS_FP8 was chosen from; tc: with and without tc_rowsum; tc-short: "
                         "tc_rowsum with head groups and 64-key blocks")
    ap.add_argument("--knobs", default=None, help="a JSON list of knob sets, timed instead of --grid's")
    ap.add_argument("--shapes", default=None, help="S:causal pairs, e.g. 1024:1,2048:1 (default: all of SHAPES)")
    args = ap.parse_args()
    import torch

    from gluon_kernels import hopper_attention, transpose_v_for_fp8
    from gluon_kernels.tuning import ws_defaults
    from tritonhook.flops import attention_flops
    from tritonhook.measure.timing import bench_interleaved
    from tritonhook.measure.stats import median

    results = []
    shapes = SHAPES if args.shapes is None else [(int(S), bool(int(c))) for S, c in
                                                  (pair.split(":") for pair in args.shapes.split(","))]
    for S, causal in shapes:
        D = args.head_dim
        B, H = 16384 // S, 2048 // D
        q, k, v = (torch.randn((B, H, S, D), device="cuda").to(torch.bfloat16) for _ in range(3))
        q8, k8 = q.to(torch.float8_e4m3fn), k.to(torch.float8_e4m3fn)
        vt8 = transpose_v_for_fp8(v.to(torch.float8_e4m3fn))
        reference = hopper_attention(q, k, v, causal=causal).float()
        arms, names = [(contextlib.nullcontext, lambda: hopper_attention(q, k, v, causal=causal))], ["bf16"]
        grid = json.loads(args.knobs) if args.knobs else GRIDS[args.grid][D]
        for name, knobs in [("table", None)] + [(label(k), {**ws_defaults(D, fp8=True), **k}) for k in grid]:
            call = lambda knobs=knobs or {}: hopper_attention(q8, k8, None, v_t=vt8, causal=causal, **knobs)
            err = ((call().float() - reference).norm() / reference.norm()).item()
            if err > 0.1:
                print(f"S={S} causal={causal} {name}: relative error {err:.3g}, skipped")
                continue
            arms.append((contextlib.nullcontext, call))
            names.append("fp8 " + name)
        timed = bench_interleaved(arms, rep_ms=80.0, min_reps=20)
        flops = attention_flops(B, H, S, D, causal)
        tflops = {name: flops / (median(r.samples_ms) * 1e-3) / 1e12 for name, r in zip(names, timed)}
        results.append(dict(S=S, causal=causal, tflops=tflops))
        print(f"S={S} causal={int(causal)}: " + "  ".join(f"{name} {t:.0f} ({t / tflops['bf16']:.3f})"
                                                        for name, t in tflops.items()), flush=True)
    with open(args.out, "w") as handle:
        json.dump({"device": torch.cuda.get_device_name(), "head_dim": args.head_dim, "results": results}, handle,
                  indent=1)


if __name__ == "__main__":
    main()
