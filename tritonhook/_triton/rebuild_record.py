"""The record a capture keeps so that its kernel can be rebuilt under another Triton release (`tritonhook upgrade`).

A capture of an `ASTSource` (or Gluon's) compile keeps two artifacts beside Triton's stages, so that a rebuild never
depends on files that moved or changed since: `python`, the text of the module file defining the `@triton.jit`
function (an Inductor kernel's generated module alike; read at compile time, left out when it cannot be read), and
`rebuild`, JSON naming the function and its specialization (signature, constexprs, attributes, the compile options
that are choices rather than facts of the release, the target). Not `source`: Triton's own first stage is stored
under that name (its MLIR before the passes).

Encoding (at capture, under the capture's release) and decoding (at rebuild, under the other release: `rebuild`)
live here together so that the two sides of the format cannot drift.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from .version import triton_version

REBUILD_FORMAT = 1
PYTHON_STAGE, REBUILD_STAGE = "python", "rebuild"
RELEASE_FACTS = frozenset({"arch", "backend_name", "ptx_version", "extern_libs", "supported_fp8_dtypes",
                           "deprecated_fp8_dot_operand_dtypes", "allowed_dot_input_precisions", "warp_size",
                           "ir_override"})
"""`CUDAOptions` fields a rebuild must not carry over: the release or the machine derives them (the libdevice path,
the PTX ISA, the fp8 types of the target), or they name a local file."""


# ----- the capture side --------------------------------------------------------------------------------------------
def rebuild_artifacts(src, metadata: dict, options: dict) -> dict[str, bytes]:
    """{"python": module text, "rebuild": JSON} for a compile of a Python function; {} for an IR source. A value
    the JSON cannot express is recorded as `unsupported` (a later rebuild says why instead of guessing)."""
    fn = getattr(src, "fn", None)
    python_fn = getattr(fn, "fn", None)
    if python_fn is None:
        return {}
    found = {}
    try:
        path = Path(python_fn.__code__.co_filename)
        version = path.stat()
        found[PYTHON_STAGE] = _module_text(path, version.st_mtime_ns, version.st_size)
    except (OSError, AttributeError):
        pass  # a function made from a string, a file gone: the rebuild will say there is no source
    found[REBUILD_STAGE] = json.dumps(_rebuild_record(src, python_fn, metadata, options),
                                      sort_keys=True).encode()
    return found


@functools.lru_cache(maxsize=64)
def _module_text(path: Path, mtime_ns: int, size: int) -> bytes:
    """A module file's bytes, read once per version of the file: every kernel of a module (and every cache hit of
    each) records the same text."""
    return path.read_bytes()


def _rebuild_record(src, python_fn, metadata: dict, options: dict) -> dict:
    record = {"format": REBUILD_FORMAT, "frontend": "gluon" if "Gluon" in type(src).__name__ else "triton",
              "module": python_fn.__module__, "file": python_fn.__code__.co_filename,
              "function": python_fn.__name__, "target": metadata.get("target"),
              "options": {k: v for k, v in options.items() if k not in RELEASE_FACTS and v is not None}}
    try:
        record["signature"] = {name: _plain(kind) for name, kind in (src.signature or {}).items()}
        record["constexprs"] = [[list(_path(k)), _encode(v)] for k, v in (src.constants or {}).items()]
        record["attrs"] = [[list(_path(k)), _plain(v)] for k, v in (getattr(src, "attrs", None) or {}).items()]
    except Exception as exc:  # noqa: BLE001 - a source of a release we do not know: say so, never lose the capture
        record["unsupported"] = f"{python_fn.__name__}: {exc}"
    return record


class _Unsupported(ValueError):
    """A specialization value JSON cannot carry to another release."""


def _path(key) -> tuple:
    return key if isinstance(key, tuple) else (key,)


def _plain(value):
    """Signature kinds and attributes: strings, numbers, nested tuples (as lists)."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise _Unsupported(f"a {type(value).__name__} in the signature")


def _encode(value):
    """A constexpr value as JSON: scalars as they are, the rest tagged ({"dtype": "fp16"}, {"tuple": [...]},
    {"constexpr": v}, {"jit": name}, a JIT function found by name in its module when rebuilt)."""
    kind = type(value).__name__
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return {"tuple": [_encode(v) for v in value]}
    if kind == "dtype":
        return {"dtype": str(value)}
    if kind == "constexpr":
        return {"constexpr": _encode(value.value)}
    if kind in ("JITFunction", "GluonJITFunction"):
        return {"jit": value.fn.__name__}
    raise _Unsupported(f"a constexpr of type {kind}")


# ----- the rebuild side: the record back into Triton's objects -----------------------------------------------------
def specialization(module, record: dict) -> tuple:
    """(signature, constexprs, attrs) as `ASTSource` takes them, from `record`; a JIT function passed as a constexpr
    is looked up by name in `module`."""
    signature = {name: _tuples(kind) for name, kind in record["signature"].items()}
    constexprs = {tuple(path): _decode(value, module) for path, value in record["constexprs"]}
    attrs = {tuple(path): value for path, value in record["attrs"]}
    return signature, constexprs, attrs


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _decode(value, module):
    if not isinstance(value, dict):
        return value
    import triton.language as tl

    if "tuple" in value:
        return tuple(_decode(v, module) for v in value["tuple"])
    if "dtype" in value:
        return tl.dtype(value["dtype"])
    if "constexpr" in value:
        return tl.constexpr(_decode(value["constexpr"], module))
    return jit_function(getattr(module, value["jit"], None), value["jit"])


def jit_function(found, name: str):
    """The JIT function under `name`: an autotuner or heuristics wrapper is unwrapped to the function it runs."""
    while found is not None and type(found).__name__ not in ("JITFunction", "GluonJITFunction"):
        found = getattr(found, "fn", None)
    if found is None:
        raise LookupError(f"no @triton.jit function {name!r} at the top level of its module under Triton "
                          f"{triton_version()}")
    return found
