"""Constants and dtype tables of `sm120_attn`, in one place for the kernels, their host code, the benchmarks and
the experiments. Imports neither torch nor the CuTe DSL (the DSL takes seconds to import)."""

LOG2E = 1.4426950408889634
"""log2(e): the kernels run an exp2-based softmax and take the score scale pre-multiplied by it."""

SM120_SMEM_BYTES = 101_376
"""Shared memory one block may use on SM120 (RTX 50xx / RTX PRO 6000 / GB10): 99 KiB (docs/capture_beyond_triton.md#cute-dsl-as-it-behaves)."""

SUPPORTED_HEAD_DIMS = (64, 128)

DSL_DTYPES = {"bfloat16": "BFloat16", "float16": "Float16", "float8_e4m3fn": "Float8E4M3FN"}
"""torch dtype name -> the CuTe DSL type's name in `cutlass` (Q, K, V element types the kernels take)."""
