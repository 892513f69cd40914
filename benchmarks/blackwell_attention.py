"""TFLOPS of the Blackwell Gluon attention: fp16 / fp8, plain vs ``cutlass_`` kernel name, vs cuDNN SDPA.

NEVER RUN by this project (no Blackwell GPU was available): written to be ready for anyone with a B200/GB200.
On any other machine it prints why it skipped and exits 0.

    python benchmarks/blackwell_attention.py                         # B=4 H=32, D 64/128, S 1k..16k, both masks
    python benchmarks/blackwell_attention.py --dtype fp8e4nv --head-dim 128 --seq 4096 8192 --json out.json

Each name variant runs in its own child process with its own Triton cache (on Triton 3.6 a renamed build would
otherwise be served from the plain build's cache entry, docs/triton_hooks.md#what-a-plugin-touches-per-release); the ``cutlass_`` child compiles under
``tritonhook.enable(rename="cutlass_")``. The parent prints one table. cuDNN SDPA (pinned with
``torch.nn.attention.sdpa_kernel(SDPBackend.CUDNN_ATTENTION)``) is the baseline for 16-bit inputs; for fp8 inputs
it is measured on the same shapes in bf16 (SDPA has no fp8 path). FLOPs: 4*B*H*S*S*D, halved when causal.
Times: medians of ``tritonhook.ab.bench`` (CUDA events). Run from the repository root with the repository installed
(pip install -e .) or PYTHONPATH=$PWD. For an interleaved, statistically checked A/B of the two names, see also ``tritonhook ab``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from scratch import scratch_dir

VARIANTS = ("plain", "cutlass_")


def _skip_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU"
    major, minor = torch.cuda.get_device_capability()
    if major != 10:
        return f"needs a compute capability 10.x GPU (sm_100), this one is {major}.{minor}"
    return None


def _torch_dtype(name):
    import torch

    from gluon_kernels.host import TORCH_DTYPE_NAMES
    return getattr(torch, TORCH_DTYPE_NAMES[name])


def run_child(args) -> list[dict]:
    """Measure this process's variant (args.variant) over the grid."""
    import torch

    from gluon_kernels.blackwell import blackwell_attention
    from tritonhook.ab import bench
    from tritonhook.flops import attention_flops

    if args.variant == "cutlass_":
        import tritonhook
        tritonhook.enable(scratch_dir("bench-blackwell-store-"), rename="cutlass_", subprocesses=False)
    rows = []
    for dtype in args.dtype:
        for D in args.head_dim:
            for causal in args.causal:
                for S in args.seq:
                    B, H = args.batch, args.heads
                    g = torch.Generator(device="cuda").manual_seed(0)
                    q, k, v = (torch.randn((B, H, S, D), device="cuda", generator=g).mul_(0.5).to(_torch_dtype(dtype))
                               for _ in range(3))
                    fn = lambda: blackwell_attention(q, k, v, causal=causal)  # noqa: E731
                    ms = bench(fn, warmup_ms=args.warmup, rep_ms=args.rep).median_ms
                    rows.append(dict(variant=args.variant, dtype=dtype, D=D, causal=causal, S=S, B=B, H=H, ms=ms,
                                     tflops=attention_flops(B, H, S, D, causal) / (ms * 1e-3) / 1e12))
    return rows


def run_cudnn(args) -> list[dict]:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from tritonhook.ab import bench
    from tritonhook.flops import attention_flops

    rows = []
    for dtype in args.dtype:
        sdpa_dtype = _torch_dtype(dtype) if dtype in ("fp16", "bf16") else torch.bfloat16
        for D in args.head_dim:
            for causal in args.causal:
                for S in args.seq:
                    B, H = args.batch, args.heads
                    q, k, v = (torch.randn((B, H, S, D), device="cuda", dtype=sdpa_dtype) for _ in range(3))
                    try:
                        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                            fn = lambda: torch.nn.functional.scaled_dot_product_attention(  # noqa: E731
                                q, k, v, is_causal=causal)
                            ms = bench(fn, warmup_ms=args.warmup, rep_ms=args.rep).median_ms
                    except RuntimeError as exc:  # cuDNN not available for this shape / build
                        print(f"cuDNN SDPA failed for {dtype} D={D} S={S}: {exc}", file=sys.stderr)
                        continue
                    rows.append(dict(variant=f"cudnn-{str(sdpa_dtype).split('.')[-1]}", dtype=dtype, D=D,
                                     causal=causal, S=S, B=B, H=H, ms=ms,
                                     tflops=attention_flops(B, H, S, D, causal) / (ms * 1e-3) / 1e12))
    return rows


def _child_argv(args, variant, out):
    argv = [sys.executable, os.path.abspath(__file__), "--variant", variant, "--child-json", out,
            "--batch", str(args.batch), "--heads", str(args.heads), "--warmup", str(args.warmup),
            "--rep", str(args.rep), "--dtype", *args.dtype, "--head-dim", *map(str, args.head_dim),
            "--seq", *map(str, args.seq), "--causal", *("1" if c else "0" for c in args.causal)]
    return argv


def table(rows: list[dict]) -> str:
    keys = sorted({(r["dtype"], r["D"], r["causal"], r["S"]) for r in rows},
                  key=lambda k: (k[0], k[1], k[2], k[3]))
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    lookup = {(r["variant"], r["dtype"], r["D"], r["causal"], r["S"]): r["tflops"] for r in rows}
    head = "| dtype | D | causal | S | " + " | ".join(f"{v} TFLOPS" for v in variants) + " | cutlass_/plain |"
    out = [head, "|" + "---|" * (5 + len(variants))]
    for key in keys:
        vals = [lookup.get((v, *key)) for v in variants]
        plain, cut = lookup.get(("plain", *key)), lookup.get(("cutlass_", *key))
        ratio = f"{cut / plain:.3f}" if plain and cut else "-"
        out.append(f"| {key[0]} | {key[1]} | {'yes' if key[2] else 'no'} | {key[3]} | "
                   + " | ".join("-" if x is None else f"{x:.1f}" for x in vals) + f" | {ratio} |")
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", nargs="+", default=["fp16", "fp8e4nv"], help="fp16 bf16 fp8e4nv fp8e5")
    parser.add_argument("--head-dim", nargs="+", type=int, default=[64, 128])
    parser.add_argument("--seq", nargs="+", type=int, default=[1024, 2048, 4096, 8192, 16384])
    parser.add_argument("--causal", nargs="+", type=int, default=[0, 1], help="0 and/or 1")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="plain,cutlass_")
    parser.add_argument("--no-cudnn", action="store_true")
    parser.add_argument("--warmup", type=int, default=25, help="warm-up milliseconds per measurement")
    parser.add_argument("--rep", type=int, default=100, help="timed milliseconds per measurement")
    parser.add_argument("--json", help="write all rows here")
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)  # child mode
    parser.add_argument("--child-json", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.causal = [bool(c) for c in args.causal]

    reason = _skip_reason()
    if reason:
        print(f"bench_blackwell: skipped: {reason}")
        return 0
    if args.variant:  # child
        rows = run_child(args)
        with open(args.child_json, "w") as handle:
            json.dump(rows, handle)
        return 0

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-blackwell-") as tmp:
        for variant in args.variants.split(","):
            out = os.path.join(tmp, f"{variant}.json")
            env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(tmp, f"cache-{variant}"))
            subprocess.run(_child_argv(args, variant, out), env=env, check=True)
            with open(out) as handle:
                rows += json.load(handle)
    if not args.no_cudnn:
        rows += run_cudnn(args)
    print(table(rows))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
