"""Inductor's compile-time choice on a CPU, under the autotune tracer: a Linear + ReLU compiled with max-autotune,
frozen weights and the CPP GEMM template beside MKL's extern kernel (`max_autotune_gemm_backends="CPP,ATEN"`), so
`select_algorithm` benchmarks two choices in process with no GPU. Prints the tracer's decisions as JSON on stdout
(Inductor prints its own AUTOTUNE table on stderr), whether the compiled code calls MKL's extern kernel, then whether
uninstalling put Inductor's functions back.

    python select_algorithm_cpu.py [STORE PINS]   # under the decisions of file PINS (`tritonhook.session(apply=)`)"""

import contextlib
import dataclasses
import json
import sys

import torch

import tritonhook
from tritonhook import _triton

decisions = []
tracer = _triton.AutotuneTracer(decisions.append)
tracer.install()
import torch._inductor.config as inductor_config  # noqa: E402
from torch._inductor import compile_fx, select_algorithm  # noqa: E402
from torch._inductor.utils import run_and_get_code  # noqa: E402



def wrapped() -> list[bool]:
    """Whether each function the tracer wraps for this is a wrapper now (`functools.wraps` sets `__wrapped__`)."""
    functions = (select_algorithm.AlgorithmSelectorCache.__dict__["benchmark_choice"].__func__,
                 compile_fx._compile_fx_inner)
    return [hasattr(function, "__wrapped__") for function in functions]


while_installed = wrapped()
model = torch.nn.Sequential(torch.nn.Linear(512, 256), torch.nn.ReLU()).eval()
pinned = tritonhook.session(sys.argv[1], apply=sys.argv[2], subprocesses=False) if sys.argv[2:] else \
    contextlib.nullcontext()
with pinned, torch.no_grad(), inductor_config.patch({"max_autotune": True, "max_autotune_gemm_backends": "CPP,ATEN",
                                                     "freezing": True, "autotune_in_subproc": False}):
    _, code = run_and_get_code(torch.compile(model), torch.randn(128, 512))
tracer.uninstall()
print(json.dumps({"decisions": [dataclasses.asdict(d) for d in decisions], "wrapped": while_installed,
                  "after_uninstall": wrapped(), "calls_mkl": any("_mkl_linear" in text for text in code)}))
