"""A captured kernel rebuilt under another Triton release (`tritonhook upgrade`): the record a capture keeps, and
the compile from it (in `upgrade.worker`, a process of the other release).

A capture of an `ASTSource` (or Gluon's) compile keeps two artifacts beside Triton's stages, so that a rebuild never
depends on files that moved or changed since: `python`, the text of the module file defining the `@triton.jit`
function (an Inductor kernel's generated module alike; read at compile time, left out when it cannot be read), and
`rebuild`, JSON naming the function and its specialization (signature, constexprs, attributes, the compile options
that are choices rather than facts of the release, the target). Not `source`: Triton's own first stage is stored
under that name (its MLIR before the passes). A kernel that calls `@triton.jit` helpers defined in other modules
keeps a third, `helpers`: those modules' texts under their dotted names, found by Triton's own dependency walk (the
one behind `JITFunction.cache_key`), which the rebuild imports in place of whatever is installed then.

Encoding (at capture, under the capture's release) and decoding (at rebuild, under the other release) live here
together so that the two sides of the format cannot drift. The compile runs under any Triton from 3.6 to 3.9: all
four take `ASTSource(fn, signature, constexprs, attrs)` with constexprs keyed by argument path and attributes as
`{path: [[name, value], ...]}`, and `triton.compile(src, target=, options=)` drops options its `CUDAOptions` does
not know (named back to the caller here rather than silently).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
from pathlib import Path

from .. import config
from .version import _plain_json, option_names, triton_version

REBUILD_FORMAT = 1
HELPERS_FORMAT = 1
"""The `helpers` artifact's format; a capture made before it has no such artifact and rebuilds as before."""
PYTHON_STAGE, REBUILD_STAGE, HELPERS_STAGE = "python", "rebuild", "helpers"
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
    roots = [fn, *(value for value in (getattr(src, "constants", None) or {}).values() if _is_jit(value))]
    helpers = _helpers(roots, python_fn.__module__)
    if helpers is not None:
        found[HELPERS_STAGE] = helpers
    return found


@functools.lru_cache(maxsize=64)
def _module_text(path: Path, mtime_ns: int, size: int) -> bytes:
    """A module file's bytes, read once per version of the file: every kernel of a module (and every cache hit of
    each) records the same text."""
    return path.read_bytes()


def _helpers(roots: list, own_module: str) -> bytes | None:
    """The `helpers` artifact: JSON {"format", "modules": [{"module", "file", "text"}], "left_out": [names]} with
    the text of every module that defines a JIT function `roots` reach, in the order they must be executed (a
    module after those it calls into); None when they reach none outside `own_module`. Triton's own modules are
    never recorded (the rebuild's release brings its own), nor `__main__` (no module imports from it); modules past
    `config.upgrade.REBUILD_HELPERS_MAX_BYTES` in all are named in `left_out` and imported from what is installed."""
    try:
        modules = _helper_order(roots)
    except Exception:  # noqa: BLE001 - a walk this release's Triton refuses: the rebuild imports what is installed
        return None
    recorded, left_out, size = [], [], 0
    for name, path in modules:
        if name == own_module or name == "__main__" or name == "triton" or name.startswith("triton."):
            continue
        try:
            version = Path(path).stat()
            text = _module_text(Path(path), version.st_mtime_ns, version.st_size)
        except OSError:
            left_out.append(name)
            continue
        size += len(text)
        if size > config.upgrade.REBUILD_HELPERS_MAX_BYTES:
            left_out.append(name)
            continue
        recorded.append({"module": name, "file": path, "text": text.decode("utf-8", "replace")})
    if not recorded and not left_out:
        return None
    return json.dumps({"format": HELPERS_FORMAT, "modules": recorded, "left_out": left_out}).encode()


def _helper_order(roots: list) -> list[tuple[str, str]]:
    """(module name, file) of every JIT function `roots` reach, transitively, each module after the modules its
    reached functions call into (depth first; a cycle between modules is cut where it closes)."""
    files, calls, todo, seen = {}, {}, list(roots), {id(fn) for fn in roots}
    while todo:
        fn = todo.pop()
        module = fn.__module__
        files.setdefault(module, fn.fn.__code__.co_filename)
        callees = _callees(fn)
        calls.setdefault(module, []).extend(callee.__module__ for callee in callees)
        for callee in callees:
            if id(callee) not in seen:
                seen.add(id(callee))
                todo.append(callee)
    order, visited = [], set()

    def visit(module):
        visited.add(module)
        for called in calls.get(module, ()):
            if called not in visited:
                visit(called)
        order.append(module)

    for fn in roots:
        if fn.__module__ not in visited:
            visit(fn.__module__)
    return [(module, files[module]) for module in order]


def _callees(fn) -> list:
    """The JIT functions `fn`'s body refers to, as Triton's dependency walk resolves them (globals, closure
    variables, `module.attribute`; not Triton's own language modules). The walk is Triton's `DependenciesFinder`,
    run again here (its hash is cached by `cache_key`, which keeps no list of what it hashed in)."""
    finder = _callee_finder()(name=fn._fn_name, globals=fn.__globals__,
                              nonlocals=inspect.getclosurevars(fn.fn).nonlocals, src=fn.src)
    finder.visit(fn.parse())
    return finder.callees


@functools.cache
def _callee_finder():
    """Triton's `DependenciesFinder`, noting each JIT function it hashes in (3.6-3.9 pass each one, callee or
    constexpr JIT function alike, to `_update_hash`)."""
    from triton.runtime.jit import DependenciesFinder

    class CalleeFinder(DependenciesFinder):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.callees = []

        def _update_hash(self, func):
            self.callees.append(func)
            super()._update_hash(func)

    return CalleeFinder


def _is_jit(value) -> bool:
    from triton.runtime.jit import JITCallable

    return isinstance(value, JITCallable)


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


def specialized_on(record: dict, arg_names: list[str]) -> dict[str, str]:
    """What Triton specialized a build on besides its argument types and constexprs, per argument (`arg_names`: the
    kernel's parameters in order; a tuple argument's element as `name[i]`), from a rebuild record: "%16" for a
    pointer or integer divisible by 16, else "attribute=value". Two launches of one kernel whose integer argument
    (a seed) is divisible by 16 at one and not at the other are two builds, often of identical code: this is what
    tells them apart."""
    names = list(arg_names)
    found = {}
    for path, attributes in record.get("attrs") or []:
        name = names[path[0]] if path and path[0] < len(names) else str(path[0] if path else "?")
        name += "".join(f"[{index}]" for index in path[1:])
        found[name] = " ".join(f"%{value}" if attribute == "tt.divisibility" else f"{attribute}={value}"
                               for attribute, value in attributes)
    return found


def helper_modules(data: bytes) -> dict:
    """The `helpers` artifact read back ({"modules": [{"module", "file", "text"}, ...], "left_out": [...]}, modules
    in the order they are to be executed); one written in a format this tritonhook does not read is a ValueError
    saying so."""
    helpers = json.loads(data)
    if helpers.get("format") != HELPERS_FORMAT:
        raise ValueError(f"its helpers artifact has format {helpers.get('format')!r}; this tritonhook reads "
                         f"{HELPERS_FORMAT}")
    return helpers


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


# ----- the rebuild side: the compile under the running release ------------------------------------------------------
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
