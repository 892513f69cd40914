"""A torch.compile'd pointwise function whose Inductor kernel is autotuned at runtime (several XBLOCK configs),
called N times (default 20): the workload of `tests/test_sweep_gpu.py::test_an_inductor_pin_applies_under_a_warm_
autotune_cache`. Its caches are Inductor's own, under TORCHINDUCTOR_CACHE_DIR, so a second run finds the first run's
pick in Inductor's autotune cache. `--coordesc`: Inductor's coordinate descent on (as max-autotune sets it), which
searches on from the benchmark's pick. Its kernel is compiled in one of Inductor's compile workers (the pool made
ready first), as a model's kernels are: this process then holds it without its Python function, which a pin that
builds a config must load again.

    python inductor_pin_workload.py [N] [--coordesc]"""

import sys

import torch
import torch._inductor.config as inductor_config


def main():
    numbers = [arg for arg in sys.argv[1:] if arg.isdigit()]
    calls = int(numbers[0]) if numbers else 20
    x, y = torch.randn(1 << 22, device="cuda"), torch.randn(1 << 22, device="cuda")
    if "--coordesc" in sys.argv:
        from torch._inductor.async_compile import AsyncCompile

        AsyncCompile.use_process_pool()  # starts the pool; compiles go to it once it is ready
        AsyncCompile.wait_pool_ready()
    with inductor_config.patch({"triton.autotune_pointwise": True,
                                "coordinate_descent_tuning": "--coordesc" in sys.argv}):
        compiled = torch.compile(lambda a, b: (a * b + 1).sin())
        for _ in range(calls):
            compiled(x, y)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
