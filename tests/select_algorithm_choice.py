"""Inductor's compile-time choice under the autotune tracer: a Linear + ReLU compiled with max-autotune. On a CPU
(the default): frozen weights and the CPP GEMM template beside MKL's extern kernel (`max_autotune_gemm_backends=
"CPP,ATEN"`), so `select_algorithm` benchmarks two choices in process with no GPU; with `--cuda`: fp16 on the GPU,
Triton's GEMM templates beside cuBLAS ("TRITON,ATEN"), or with `--templates-only` the templates alone ("TRITON":
a template is then always the pick, fused with the ReLU or not by the scheduler's benchmark). `--two-layers`: two
Linear + ReLU layers of one shape (two GEMMs at one tuning key). Prints the tracer's decisions as JSON on stdout
(Inductor prints its own AUTOTUNE table on stderr), whether the compiled code calls an extern kernel (MKL's,
cuBLAS's) rather than a template, the kernels it calls in order (each with whether it runs a GEMM and a ReLU), the
GEMM nodes of the graph Inductor lowered, in order, then whether uninstalling put Inductor's functions back.

    python select_algorithm_choice.py [--cuda [--templates-only]] [--two-layers] [STORE PINS]   # under PINS"""

import contextlib
import dataclasses
import json
import re
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

GEMM_OPS = ("mm", "addmm", "_mkl_linear")
"""The graph nodes a Linear lowers to a GEMM from, by their op's name."""
gemm_nodes = []


def note_gemm_nodes(graph) -> None:
    """Inductor's last pass on the graph it lowers (`post_grad_custom_post_pass`): the GEMM nodes' names."""
    gemm_nodes.extend(node.name for node in graph.nodes
                      if node.op == "call_function" and getattr(node.target, "__name__", "").split(".")[0] in GEMM_OPS)


GEMM_MARKS, RELU_MARKS = ("micro_gemm", "tl.dot("), ("max_propagate_nan", "clamp_min", "triton_helpers.maximum(")
"""What a generated kernel's source holds where it runs a GEMM (the CPP template's micro-kernel, a Triton dot) and a
ReLU."""


def kernel_calls(module_code: str) -> list[dict]:
    """The kernels a generated module's `call` launches, in order, each with whether its source runs a GEMM and a
    ReLU: which GEMM a ReLU was fused into, or left apart from."""
    sources = dict(re.findall(r"^(\w+) = async_compile\.(.*?)^'''", module_code, re.MULTILINE | re.DOTALL))
    body = module_code[module_code.find("def call("):]
    called = [name for name in re.findall(r"^\s+(\w+)(?:\.run)?\(", body, re.MULTILINE) if name in sources]
    return [{"kernel": name, "gemm": any(mark in sources[name] for mark in GEMM_MARKS),
             "relu": any(mark in sources[name] for mark in RELU_MARKS)} for name in called]


while_installed = wrapped()
flags = ("--cuda", "--templates-only", "--two-layers")
cuda, templates_only, two_layers = (flag in sys.argv for flag in flags)
args = [arg for arg in sys.argv[1:] if arg not in flags]
device, dtype = ("cuda", torch.float16) if cuda else ("cpu", torch.float32)
layers = ([torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU()] if two_layers else
          [torch.nn.Linear(512, 256), torch.nn.ReLU()])
model = torch.nn.Sequential(*layers).eval().to(device, dtype)
options = {"max_autotune": True, "autotune_in_subproc": False, "post_grad_custom_post_pass": note_gemm_nodes,
           **({"max_autotune_gemm_backends": "TRITON" if templates_only else "TRITON,ATEN"} if cuda else
              {"max_autotune_gemm_backends": "CPP,ATEN", "freezing": True})}
pinned = tritonhook.session(args[0], apply=args[1], subprocesses=False) if args else contextlib.nullcontext()
with pinned, torch.no_grad(), inductor_config.patch(options):
    _, code = run_and_get_code(torch.compile(model), torch.randn(128, 512, device=device, dtype=dtype))
tracer.uninstall()
print(json.dumps({"decisions": [dataclasses.asdict(d) for d in decisions], "wrapped": while_installed,
                  "after_uninstall": wrapped(),
                  "calls_extern": any(call in text for call in EXTERN_CALLS for text in code),
                  "kernel_calls": [call for text in code for call in kernel_calls(text)],
                  "gemm_nodes": gemm_nodes}))
