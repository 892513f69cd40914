"""A torch.compile'd matmul with a fused ReLU under `max-autotune-no-cudagraphs`, GEMMs from Inductor's Triton
templates only, coordinate-descent tuning on: its compile benchmarks each template config (kernels `triton_mm_N`),
then it runs the template the choice emitted (`triton_tem_fused_*`) N times (default 20): the workload of
`tests/test_sweep_gpu.py::test_inductors_compile_time_benchmarks_are_not_the_workload`."""

import sys

import torch
import torch._inductor.config as inductor_config


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    a = torch.randn(1024, 2048, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(2048, 1024, device="cuda", dtype=torch.bfloat16)
    with inductor_config.patch({"max_autotune_gemm_backends": "TRITON", "coordinate_descent_tuning": True}):
        compiled = torch.compile(lambda x, y: torch.relu(x @ y) * 2, mode="max-autotune-no-cudagraphs")
        for _ in range(calls):
            compiled(a, b)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
