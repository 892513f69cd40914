"""A captured kernel compiled again under the running Triton release (`tritonhook.upgrade.rebuild`'s worker).

Runs under any Triton from 3.6 to 3.9, in a process of that release: all four take `ASTSource(fn, signature,
constexprs, attrs)` with constexprs keyed by argument path and attributes as `{path: [[name, value], ...]}`, and
`triton.compile(src, target=, options=)` drops options its `CUDAOptions` does not know (named back to the caller
here rather than silently). The record it compiles is `rebuild_record`'s.
"""

from __future__ import annotations

import dataclasses

from .compile import option_names
from .rebuild_record import jit_function, specialization
from .version import _plain_json


@dataclasses.dataclass(frozen=True)
class RebuiltKernel:
    """A kernel compiled again by the running release: its PTX, cubin and metadata (plain JSON), and the recorded
    options it does not know (not passed)."""

    ptx: str
    cubin: bytes
    metadata: dict
    unknown_options: list[str]


def compile_rebuilt(module, record: dict) -> RebuiltKernel:
    """Compile `record`'s function, taken by name from `module` (the recorded module text imported from a file),
    for the recorded target with the recorded specialization and options, under the running Triton."""
    import triton
    from triton.backends.compiler import GPUTarget

    fn = jit_function(getattr(module, record["function"], None), record["function"])
    signature, constexprs, attrs = specialization(module, record)
    known = set(option_names())
    options = {k: v for k, v in record["options"].items() if k in known}
    target = record["target"]
    compiled = triton.compile(_source_class(record["frontend"])(fn, signature, constexprs, attrs),
                              target=GPUTarget(target["backend"], target["arch"], target["warp_size"]),
                              options=options)
    return RebuiltKernel(compiled.asm["ptx"], compiled.asm["cubin"], _plain_json(compiled.metadata._asdict()),
                         sorted(set(record["options"]) - known))


def _source_class(frontend: str):
    if frontend == "gluon":
        from triton.experimental.gluon._runtime import GluonASTSource

        return GluonASTSource
    from triton.compiler import ASTSource

    return ASTSource
