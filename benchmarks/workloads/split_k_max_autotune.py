"""A hard case of our own for the sweep's reading of Inductor's compile-time choices: GEMMs with a long reduction
(weight-gradient shaped: two 256-wide matrices reduced over many tokens) compiled under
`torch.compile(mode="max-autotune-no-cudagraphs")`, Inductor's Triton templates only and coordinate descent on.

For such a GEMM max-autotune offers decompose-K (`select_algorithm` choices named `decompose_k_mm_<split>_split`):
split-K as a batched GEMM over the splits and then a sum over them, a subgraph whose pick runs two kernels, neither
named for the choice. At K = 65,536 (256 times M) it is the only kind of choice (Inductor leaves the plain GEMM
template out from 64 times M on); at K = 12,288 (48 times M) it competes with the GEMM template, and a ReLU after
it is an epilogue the scheduler may fuse into a template, by a benchmark. So: a pick among subgraphs, a pick that
may be a subgraph or a template, and the compile-time benchmarks of every split, none of them the workload's
(`torch._inductor.config.triton.decompose_k_threshold`, 32, and `num_decompose_k_splits`, 10, by default in torch
2.13). bf16, forward only under
`torch.inference_mode()`; on a CUDA GPU only (decompose-K is Inductor's for CUDA).

    python benchmarks/workloads/split_k_max_autotune.py [STEPS] [--profile OUT.json]

`--profile OUT.json`: `torch.profiler`'s kernel table of the steps after the first two (`steady_profile`).
"""

import torch

import steady_profile

WIDTH, LONG_K, MID_K = 256, 65536, 12288


def long_k_gemms(x_long, y_long, x_mid, y_mid):
    """Two reductions over tokens: the long one alone, the mid one with a ReLU after it."""
    return x_long.t() @ y_long, torch.relu(x_mid.t() @ y_mid)


def build():
    torch.manual_seed(0)
    inputs = {f"{side}_{name}": torch.randn(k, WIDTH, device="cuda", dtype=torch.bfloat16)
              for name, k in (("long", LONG_K), ("mid", MID_K)) for side in ("x", "y")}
    return torch.compile(long_k_gemms, mode="max-autotune-no-cudagraphs"), inputs


if __name__ == "__main__":
    steady_profile.inference_main(build)
