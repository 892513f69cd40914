"""A split-K sum under `triton.autotune` keyed by its length rounded up to a power of two (as trifast keys its
triangle attention): every length of a bucket runs the pick made at the first, and the configs accumulate into
the output with atomics, zeroed before each benchmarked config (`reset_to_zero`). Imported by
tests/test_sweep_gpu.py."""

import triton
import triton.language as tl

CONFIGS = [triton.Config({"BLOCK": block}, num_warps=warps) for block, warps in ((128, 1), (512, 4), (2048, 8))]


@triton.autotune(CONFIGS, key=["bucket"], reset_to_zero=["out_ptr"])
@triton.jit
def bucketed_sum_kernel(x_ptr, out_ptr, n, bucket, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)))


def bucketed_sum(x, out):
    """out[0] = x.sum() (out zeroed by the caller), under the autotuner's pick for x's bucket."""
    n = x.numel()
    bucketed_sum_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n, triton.next_power_of_2(n))
