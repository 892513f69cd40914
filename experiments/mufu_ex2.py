"""Does a packed half-precision exp2 (`ex2.approx.f16x2` / `.bf16x2`) give Hopper's MUFU more exponentials per
clock than fp32 `ex2.approx.ftz.f32`? (issue 18: fp8 attention at D=128 needs as many MUFU exponentials per clock as
tensor-core work per clock, docs/notes.md §13.)

Each kernel chains ITERS exponentials per element over a grid that fills every SM; the figure is elements per clock
per SM at the GPU's maximum SM clock (`--clock-mhz`, the H200's 1980 by default; MUFU: 16 per clock per SM on
sm_90 for fp32).

    PYTHONPATH=$PWD python experiments/mufu_ex2.py [--clock-mhz 1980]
"""

import argparse

import torch
import triton
import triton.language as tl


@triton.jit
def _chain(x_ptr, ITERS: tl.constexpr, BLOCK: tl.constexpr, ASM: tl.constexpr, PACK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    for _ in range(ITERS):  # x <- 2^-x stays in (0.5, 1]
        x = tl.inline_asm_elementwise(ASM, "=r,r", [-x], dtype=x.dtype, is_pure=True, pack=PACK)
    tl.store(x_ptr + offs, x)


FORMS = (("f32", "ex2.approx.ftz.f32 $0, $1;", torch.float32, 1),
         ("f16x2", "ex2.approx.f16x2 $0, $1;", torch.float16, 2),
         ("bf16x2", "ex2.approx.ftz.bf16x2 $0, $1;", torch.bfloat16, 2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clock-mhz", type=float, default=1980.0, help="the GPU's maximum SM clock")
    clock_hz = ap.parse_args().clock_mhz * 1e6
    props = torch.cuda.get_device_properties(0)
    block, iters = 4096, 2048
    n = props.multi_processor_count * 8 * block
    print(f"{'form':8s} {'ms':>8s} {'exp/clk/SM':>11s}")
    for name, asm, dtype, pack in FORMS:
        x = torch.rand(n, device="cuda", dtype=dtype)
        run = lambda: _chain[(n // block,)](x, iters, block, asm, pack, num_warps=8)  # noqa: E731
        run()
        start, end = torch.cuda.Event(True), torch.cuda.Event(True)
        times = []
        for _ in range(5):
            start.record()
            run()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) * 1e-3)
        seconds = sorted(times)[len(times) // 2]
        print(f"{name:8s} {seconds * 1e3:8.3f} {n * iters / seconds / props.multi_processor_count / clock_hz:11.2f}")


if __name__ == "__main__":
    main()
