"""GPU check of capture: every Triton kernel that runs must be in the store.

Run under capture (no tritonhook import needed for the capture itself):

    tritonhook run --store runs/gpu -- python examples/gpu_capture_check.py

It launches JIT kernels (the bundled add and fp16 matmul) and a `torch.compile`d function (Inductor generates
Triton kernels, compiled in its worker processes), records the CUDA kernel names with the torch profiler, then
reads the store named by $TRITONHOOK_STORE and prints, for every Triton kernel the profiler saw, whether the
store holds a capture with that entry name. Exits 1 if any is missing.
"""

from __future__ import annotations

import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

import tritonhook
from tritonhook import format
from tritonhook.samples import add_kernel, matmul_kernel


def run_jit_kernels() -> None:
    x, y = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    out = torch.full_like(x, float("nan"))
    add_kernel[(x.numel() // 1024,)](x, y, out, x.numel(), BLOCK=1024)
    torch.testing.assert_close(out, x + y)
    a = torch.randn(512, 256, device="cuda", dtype=torch.float16)
    b = torch.randn(256, 384, device="cuda", dtype=torch.float16)
    c = torch.full((512, 384), float("nan"), device="cuda", dtype=torch.float16)
    matmul_kernel[(4, 3)](a, b, c, 512, 384, 256, a.stride(0), b.stride(0), c.stride(0),
                          BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, PRECISION="tf32", num_warps=8)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=2e-1)


@torch.compile
def fused(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x * y.sin(), dim=-1) + y.cumsum(-1)


def triton_kernels_seen_by_profiler() -> set[str]:
    x, y = torch.randn(64, 4096, device="cuda"), torch.randn(64, 4096, device="cuda")
    fused(x, y)  # compile outside the profile window
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run_jit_kernels()
        expected = torch.softmax(x * y.sin(), dim=-1) + y.cumsum(-1)
        torch.testing.assert_close(fused(x, y), expected, rtol=1e-4, atol=1e-4)
        torch.cuda.synchronize()
    names = {event.name for event in prof.events() if event.device_type.name == "CUDA"}
    return {name for name in names if name.startswith(("triton", "add_kernel", "matmul_kernel"))}


def main() -> int:
    seen = triton_kernels_seen_by_profiler()
    store = tritonhook.Store(os.environ["TRITONHOOK_STORE"], create=False)
    captured = {c.entry: c for c in store.captures()}
    rows = [(name, "yes" if name in captured else "MISSING",
             captured[name].event if name in captured else "-", captured[name].arch if name in captured else "-")
            for name in sorted(seen)]
    format.print_table(("kernel the profiler saw", "in store", "event", "arch"), rows,
                       title=f"{len(seen)} Triton kernels ran; store holds {len(store.captures())} captures")
    missing = [name for name in seen if name not in captured]
    print(f"torch {torch.__version__}, triton {__import__('triton').__version__}, "
          f"{torch.cuda.get_device_name()}: {len(seen) - len(missing)}/{len(seen)} captured")
    return 1 if missing or not seen else 0


if __name__ == "__main__":
    sys.exit(main())
