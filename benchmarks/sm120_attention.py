"""TFLOPS of the sm120_attn kernels against torch SDPA (FLASH_ATTENTION and CUDNN_ATTENTION backends pinned) and,
on sm_90, the repository's Hopper Gluon kernel (`gluon_kernels.hopper_attention`, wgmma).

    python benchmarks/sm120_attention.py [--json bench.json] [--quick] [--no-gluon]

Layouts: our kernels take (B, S, H, D). SDPA gets (B, H, S, D) views of the same tensors (`transpose(1, 2)`,
no copy: SDPA reads strided inputs). The Gluon kernel needs contiguous (B, H, S, D) (it would call
`.contiguous()` on a view, a copy per call), so it gets (B, H, S, D) copies made once, outside the timing, and
a preallocated (B, H, S, D) output; its host side (three TMA descriptors per call) is inside the timing, as the
Python dispatch of SDPA is. Every candidate's first output is compared with SDPA flash's (rel_vs_flash in the JSON).

FLOPs = 4 * B * H * Sq * Sk * D (two GEMMs), halved for causal. Each configuration is timed with
`tritonhook.ab.bench` (CUDA events around single launches after a warm-up; at least `--reps` samples), the median
reported (and min / max in the JSON). Inputs
are random normal; every kernel reads the same tensors. Our kernels are launched through their compiled CuTe DSL
function with arguments converted once (the per-call dlpack conversion of `attention()` is host overhead that
is not the kernel's). The table is printed last. Run from the repository root with the repository installed
(pip install -e '.[cute]') or PYTHONPATH=$PWD.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

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


def _agreement(candidates: dict, our_outputs: dict) -> dict:
    """||O - O_flash|| / ||O_flash|| for every candidate's output, all compared in (B, S, H, D)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "sm120_attn"))
    from gpu_check import rel_err

    if "sdpa_flash" not in candidates:
        return {}
    base = candidates["sdpa_flash"]().transpose(1, 2).float()
    rel = {}
    for name, fn in candidates.items():
        result = fn()
        out = our_outputs[name] if name in our_outputs else result.transpose(1, 2)
        rel[name] = rel_err(out, base)
    return rel


def main(argv=None) -> int:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import sm120_attn
    from sm120_attn.constants import LOG2E
    from tritonhook.ab import bench
    from tritonhook.flops import attention_flops

    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default="sm120_attn_bench.json")
    parser.add_argument("--variant", action="append")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reps", type=int, default=30, help="at least this many timed calls per kernel")
    parser.add_argument("--no-gluon", action="store_true", help="leave out the Hopper Gluon kernel")
    args = parser.parse_args(argv)
    variants = args.variant or ["cpasync", "tma"]
    gluon = None
    if not args.no_gluon and torch.cuda.get_device_capability()[0] == 9:
        try:
            from gluon_kernels import hopper_attention as gluon
        except Exception as exc:  # noqa: BLE001 - the column is left out, and why is printed
            print(f"bench: no Hopper Gluon column ({type(exc).__name__}: {exc})", flush=True)
    configs = CONFIGS[:2] + CONFIGS[3:4] if args.quick else CONFIGS
    rows = []
    torch.manual_seed(0)
    for b, h, s, d, causal in configs:
        q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        flops = attention_flops(b, h, s, d, causal)
        row = {"B": b, "H": h, "S": s, "D": d, "causal": causal, "tflops": {}, "ms": {}}
        candidates, our_outputs = {}, {}
        for variant in variants:
            out = torch.empty_like(q)
            our_outputs[variant] = out
            try:
                fn, cargs, stream = sm120_attn.compiled_kernel(variant, q, k, v, out, causal)
                scale_log2 = d ** -0.5 * LOG2E
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
        if gluon is not None:
            qc, kc, vc = (x.contiguous() for x in (qt, kt, vt))  # (B, H, S, D) copies, made once
            oc = torch.empty_like(qc)

            def run_gluon(qc=qc, kc=kc, vc=vc, oc=oc):
                return gluon(qc, kc, vc, causal=causal, out=oc)
            try:
                run_gluon()
                candidates["gluon_hopper"] = run_gluon
            except Exception as exc:
                row.setdefault("errors", {})["gluon_hopper"] = f"{type(exc).__name__}: {exc}"[:500]
        row["rel_vs_flash"] = _agreement(candidates, our_outputs)
        for name, fn in candidates.items():
            timed = bench(fn, min_reps=args.reps)
            row["ms"][name] = {"median": timed.median_ms, "min": min(timed.samples_ms), "max": max(timed.samples_ms)}
            row["tflops"][name] = flops / (timed.median_ms * 1e-3) / 1e12
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(args.json, "w") as fh:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, fh, indent=1)
    names = [n for n in [*variants, "sdpa_flash", "sdpa_cudnn", "gluon_hopper"] if any(n in r["tflops"] for r in rows)]
    print(f"\nTFLOPS (median of >= {args.reps} calls), {torch.cuda.get_device_name()}, bf16; "
          "ratio = best ours / sdpa_flash")
    print(f"{'B':>2} {'H':>3} {'S':>5} {'D':>4} {'causal':>6} " + " ".join(f"{n:>11}" for n in names) + "  ratio")
    for r in rows:
        ours = [r["tflops"][n] for n in variants if n in r["tflops"]]
        ratio = max(ours) / r["tflops"]["sdpa_flash"] if ours and "sdpa_flash" in r["tflops"] else float("nan")
        print(f"{r['B']:>2} {r['H']:>3} {r['S']:>5} {r['D']:>4} {str(r['causal']):>6} "
              + " ".join(f"{r['tflops'].get(n, float('nan')):>11.1f}" for n in names) + f"  {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
