"""Correctness of the sm120_attn kernels on a CUDA GPU against torch SDPA computed in float32.

    PYTHONPATH=$PWD python tests/sm120_attn/gpu_check.py [--variant cpasync --variant tma ...] [--json out.json]

For each case: fresh random inputs, the output poisoned with NaN first (every element must be written), then
rel = ||O - ref||_2 / ||ref||_2 with ref = SDPA(q.float(), k.float(), v.float()) (math backend, fp32).
Bounds: BF16 1.5e-2, FP16 5e-3 (inputs and P are rounded to 16 bits, FP32 accumulation), FP8 6e-2 (e4m3 P and
inputs, reference on the same e4m3-rounded inputs). NaN never passes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

BOUNDS = {"bfloat16": 1.5e-2, "float16": 5e-3, "float8_e4m3fn": 6e-2}

CASES = [
    # (B, Sq, Sk, H, D)
    (1, 128, 128, 1, 128),
    (2, 1000, 1000, 3, 128),
    (1, 77, 333, 2, 128),
    (1, 517, 200, 2, 128),
    (2, 1, 129, 2, 128),
    (1, 2048, 2048, 4, 128),
    (2, 300, 300, 3, 64),
    (1, 200, 1111, 2, 64),
    (1, 1025, 64, 1, 64),
]


def reference(q, k, v, causal, scale):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    qf, kf, vf = (x.float().transpose(1, 2) for x in (q, k, v))
    with sdpa_kernel([SDPBackend.MATH]):
        out = torch.nn.functional.scaled_dot_product_attention(qf, kf, vf, is_causal=causal, scale=scale)
    return out.transpose(1, 2)


def rel_err(out, ref) -> float:
    """||out - ref||_2 / ||ref||_2, out taken to fp32 (NaN if out holds NaN)."""
    return float((out.float() - ref).norm() / ref.norm())


def check_case(variant, dtype, case, causal, **kw):
    import torch

    import sm120_attn

    b, sq, sk, h, d = case
    gen_dtype = torch.bfloat16 if dtype == torch.float8_e4m3fn else dtype
    q = torch.randn(b, sq, h, d, device="cuda", dtype=gen_dtype)
    k = torch.randn(b, sk, h, d, device="cuda", dtype=gen_dtype)
    v = torch.randn(b, sk, h, d, device="cuda", dtype=gen_dtype)
    if dtype == torch.float8_e4m3fn:
        q, k, v = (x.to(dtype) for x in (q, k, v))
    out_dtype = torch.bfloat16 if dtype == torch.float8_e4m3fn else dtype
    out = torch.full((b, sq, h, d), float("nan"), device="cuda", dtype=out_dtype)
    scale = d ** -0.5
    sm120_attn.attention(q, k, v, causal=causal, variant=variant, out=out, scale=scale, **kw)
    torch.cuda.synchronize()
    ref = reference(q, k, v, causal, scale)
    unwritten = int(torch.isnan(out).sum())
    rel = rel_err(out, ref)
    bound = BOUNDS[str(dtype).split(".")[-1]]
    ok = unwritten == 0 and rel == rel and rel < bound
    return {"variant": variant, "dtype": str(dtype).split(".")[-1], "B": b, "Sq": sq, "Sk": sk, "H": h, "D": d,
            "causal": causal, "rel_err": rel, "bound": bound, "nan_or_unwritten": unwritten, "ok": ok}


def main(argv=None) -> int:
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--variant", action="append")
    parser.add_argument("--dtype", action="append", default=None)
    parser.add_argument("--json")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    variants = args.variant or ["cpasync", "tma"]
    dtypes = [getattr(torch, x) for x in (args.dtype or ["bfloat16"])]
    results = []
    torch.manual_seed(0)
    t0 = time.time()
    for variant in variants:
        for dtype in dtypes:
            if variant == "fp8":
                dtype = torch.float8_e4m3fn
            for causal in (False, True):
                for case in (CASES[:3] if args.quick else CASES):
                    try:
                        r = check_case(variant, dtype, case, causal)
                    except Exception as exc:  # report and go on: one failure must not hide the rest
                        r = {"variant": variant, "dtype": str(dtype), "case": case, "causal": causal,
                             "ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]}
                    results.append(r)
                    print(json.dumps(r), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    bad = [r for r in results if not r["ok"]]
    print(f"gpu_check: {len(results) - len(bad)}/{len(results)} passed in {time.time() - t0:.0f} s")
    for r in results:
        if "rel_err" in r:
            print(f"  {r['variant']:8} {r['dtype']:9} B{r['B']} Sq{r['Sq']:5} Sk{r['Sk']:5} H{r['H']} D{r['D']:3} "
                  f"{'causal' if r['causal'] else 'full  '} rel {r['rel_err']:.2e} (< {r['bound']:.1e}) "
                  f"{'ok' if r['ok'] else 'FAIL'}")
        else:
            print(f"  {r['variant']:8} {r.get('case')} causal={r['causal']} ERROR {r['error'][:300]}")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
