"""A torch.compile'd pointwise function whose Inductor kernel is autotuned at runtime (several XBLOCK configs),
called N times (default 20): the workload of `tests/test_sweep_gpu.py::test_an_inductor_pin_applies_under_a_warm_
autotune_cache`. Its caches are Inductor's own, under TORCHINDUCTOR_CACHE_DIR, so a second run finds the first run's
pick in Inductor's autotune cache."""

import sys

import torch
import torch._inductor.config as inductor_config


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    x, y = torch.randn(1 << 22, device="cuda"), torch.randn(1 << 22, device="cuda")
    with inductor_config.patch({"triton.autotune_pointwise": True}):
        compiled = torch.compile(lambda a, b: (a * b + 1).sin())
        for _ in range(calls):
            compiled(x, y)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
