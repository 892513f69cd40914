"""Reproduce the driver's stack (local-memory) reservation and watch memwatch find it (docs/tma_stack.md#the-stack-reservation).

    python examples/stack_reservation.py --kernel local      # a Triton kernel with a 16 KiB .local array
    python examples/stack_reservation.py --kernel tma        # Triton device-side TMA copy (global scratch)
    python examples/stack_reservation.py --kernel plain      # an elementwise add: nothing should move
    python examples/stack_reservation.py --kernel local --reset   # then reset_stack_limit() and launch again
    tritonhook memwatch --compare local="python examples/stack_reservation.py --kernel local --no-watch" \
                                  plain="python examples/stack_reservation.py --kernel plain --no-watch"

On sm_120a with Triton 3.4-3.6 the TMA kernel itself would call `__cuda_syscall_cp_async_bulk_tensor_*` and
trigger the reservation; on the H200 (sm_90a) it does not, so the `local` kernel reproduces the mechanism
there: its inline PTX declares a `.local` array, ptxas gives the kernel that much stack, and the first launch
makes the driver raise CU_LIMIT_STACK_SIZE and reserve (limit - 1024) x SMs x max threads per SM.
Each run is its own process: the reservation lasts for the context's life.
"""

from __future__ import annotations

import argparse

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

BLOCK = 128
"""Elements per program; with 4 warps each thread runs the inline asm once, so its frame holds one array."""


@triton.jit
def local_array_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, ASM: tl.constexpr):
    """out = a word read back from a per-thread `.local` array that x was stored into (ASM declares it)."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    value = tl.inline_asm_elementwise(ASM, "=r,r", [tl.load(x_ptr + offsets)], dtype=tl.int32, is_pure=True,
                                      pack=1)
    tl.store(out_ptr + offsets, value)


def local_array_asm(frame_bytes: int) -> str:
    """Inline PTX with a `frame_bytes` `.local` array, indexed by the data so ptxas must keep all of it."""
    words = frame_bytes // 4
    return f"""{{
    .local .align 16 .b32 tritonhook_frame[{words}];
    .reg .u32 %i;
    .reg .u64 %a, %o;
    rem.u32 %i, $1, {words};
    mul.wide.u32 %o, %i, 4;
    mov.u64 %a, tritonhook_frame;
    add.u64 %a, %a, %o;
    st.local.u32 [%a], $1;
    ld.local.u32 $0, [tritonhook_frame+4];
    }}"""


def compile_local_array(frame_bytes: int, capability: int):
    """Ahead-of-time compile (no GPU needed) of the local-array kernel; returns Triton's CompiledKernel."""
    source = ASTSource(local_array_kernel, {"x_ptr": "*i32", "out_ptr": "*i32"},
                       {"BLOCK": BLOCK, "ASM": local_array_asm(frame_bytes)})
    return triton.compile(source, target=GPUTarget("cuda", capability, 32), options={"num_warps": 4})


# ----- running it on a GPU --------------------------------------------------------------------------------------
def launch(kind: str, frame_bytes: int):
    """Launch one kernel of `kind` once (tensors are allocated by the caller's torch); returns the CompiledKernel."""
    import torch

    from tritonhook.samples import add_kernel, tma_copy_kernel

    n = 1 << 20
    if kind == "local":
        x = torch.arange(n, dtype=torch.int32, device="cuda")
        return local_array_kernel[(n // BLOCK,)](x, torch.empty_like(x), BLOCK=BLOCK,
                                                 ASM=local_array_asm(frame_bytes))
    if kind == "tma":
        a = torch.randn(4096, 4096, dtype=torch.float16, device="cuda")
        return tma_copy_kernel[(4096 // 64, 4096 // 64)](a, torch.empty_like(a), 4096, 4096, BLOCK_M=64, BLOCK_N=64)
    x = torch.randn(n, device="cuda")
    return add_kernel[(n // 1024,)](x, x, torch.empty_like(x), n, BLOCK=1024)


def torch_scratch_allocator(size: int, alignment: int, stream):
    """Global scratch for device-side TMA descriptors, taken from torch's caching allocator."""
    import torch

    return torch.empty(size, dtype=torch.int8, device="cuda")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernel", choices=("local", "tma", "plain"), default="local")
    parser.add_argument("--frame-bytes", type=int, default=16384, help="size of the .local array (local kernel)")
    parser.add_argument("--no-watch", action="store_true", help="no memwatch inside (run under `tritonhook memwatch`)")
    parser.add_argument("--reset", action="store_true",
                        help="then give the reservation back with memwatch.reset_stack_limit() and launch once more")
    args = parser.parse_args()

    import torch

    torch.ones(1, device="cuda")  # context and torch allocator exist before the region, as in a real program
    triton.set_allocator(torch_scratch_allocator)
    if args.no_watch:
        launch(args.kernel, args.frame_bytes)
        torch.cuda.synchronize()
        return
    import tritonhook

    with tritonhook.memwatch.watch(device=0, interval_ms=2) as watch:
        compiled = launch(args.kernel, args.frame_bytes)
        torch.cuda.synchronize()
    watch.report()
    print_summary(watch.result, compiled)
    if args.reset:
        show_reset_and_regrowth(watch.result, args.kernel, args.frame_bytes)


def print_summary(result, compiled) -> None:
    """The short table last: measured limit and growth next to preflight's prediction for this very cubin."""
    from tritonhook import format, preflight
    from tritonhook.cubin import Cubin

    device = result.device
    gpu = preflight.GpuSpec(device.name, 0, device.sms, device.max_threads_per_sm, "measured by memwatch")
    cubin = Cubin.from_bytes(compiled.asm["cubin"], label=compiled.name)
    predicted = preflight.predict_cubin(cubin, [gpu])[0]
    stack = next(p for p in result.attribution() if p.name.startswith("stack"))
    summary = result.summary()
    format.print_table(("kernel", "stack limit", "predicted limit", "NVML growth", "stack part", "predicted reserve",
                        "torch reserved delta"),
                       [(compiled.name, f"{result.before.stack} -> {result.after.stack}",
                         f"{predicted.stack_low}-{predicted.stack_high}", f"{summary['growth']:,}", f"{stack.bytes:,}",
                         f"{predicted.reserve_low:,}-{predicted.reserve_high:,}",
                         f"{(result.after.torch_reserved or 0) - (result.before.torch_reserved or 0):,}")],
                       title="stack reservation: measured vs predicted")


def show_reset_and_regrowth(first, kind: str, frame_bytes: int) -> None:
    """Watch `reset_stack_limit()` free the reservation, then the next launch take it again."""
    import torch

    import tritonhook
    from tritonhook import format
    from tritonhook.memwatch import reset_stack_limit

    steps = [("first launch", first)]
    with tritonhook.memwatch.watch(device=0, interval_ms=2) as watch:
        previous, now = reset_stack_limit()
    steps.append((f"reset_stack_limit() {previous} -> {now}", watch.result))
    with tritonhook.memwatch.watch(device=0, interval_ms=2) as watch:
        launch(kind, frame_bytes)
        torch.cuda.synchronize()
    steps.append(("launch again", watch.result))
    format.print_table(("step", "stack limit", "NVML used delta"),
                       [(step, f"{result.before.stack} -> {result.after.stack}",
                         f"{result.after.used - result.before.used:+,}") for step, result in steps],
                       title="reset_stack_limit: the reservation given back and taken again")


if __name__ == "__main__":
    main()
