"""Inductor's compile-time choice under the autotune tracer: a Linear + ReLU compiled with max-autotune. On a CPU
(the default): frozen weights and the CPP GEMM template beside MKL's extern kernel (`max_autotune_gemm_backends=
"CPP,ATEN"`), so `select_algorithm` benchmarks two choices in process with no GPU; with `--cuda`: fp16 on the GPU,
Triton's GEMM templates beside cuBLAS ("TRITON,ATEN"). Prints the tracer's decisions as JSON on stdout (Inductor
prints its own AUTOTUNE table on stderr), whether the compiled code calls an extern kernel (MKL's, cuBLAS's) rather
than a template, then whether uninstalling put Inductor's functions back.

    python select_algorithm_choice.py [--cuda] [STORE PINS]   # under file PINS's decisions (`session(apply=)`)"""

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


EXTERN_CALLS = ("extern_kernels.", "torch.ops.mkl._mkl_linear")
"""How Inductor's generated code calls an extern GEMM: cuBLAS's `extern_kernels.addmm`, and on a CPU with frozen
weights MKL's packed linear op."""

while_installed = wrapped()
cuda = "--cuda" in sys.argv
args = [arg for arg in sys.argv[1:] if arg != "--cuda"]
device, dtype = ("cuda", torch.float16) if cuda else ("cpu", torch.float32)
model = torch.nn.Sequential(torch.nn.Linear(512, 256), torch.nn.ReLU()).eval().to(device, dtype)
options = {"max_autotune": True, "autotune_in_subproc": False,
           **({"max_autotune_gemm_backends": "TRITON,ATEN"} if cuda else
              {"max_autotune_gemm_backends": "CPP,ATEN", "freezing": True})}
pinned = tritonhook.session(args[0], apply=args[1], subprocesses=False) if args else contextlib.nullcontext()
with pinned, torch.no_grad(), inductor_config.patch(options):
    _, code = run_and_get_code(torch.compile(model), torch.randn(128, 512, device=device, dtype=dtype))
tracer.uninstall()
print(json.dumps({"decisions": [dataclasses.asdict(d) for d in decisions], "wrapped": while_installed,
                  "after_uninstall": wrapped(),
                  "calls_extern": any(call in text for call in EXTERN_CALLS for text in code)}))
