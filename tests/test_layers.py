"""The layer order of tritonhook's modules, checked on every import (module-level and inside functions).

Why: imports inside functions used to hide cycles (`_triton` -> `rename` -> `_triton`, `_triton` -> `ptxas` ->
`rename`); a lower layer that reaches up makes every module above it harder to test and to move. A module may
import modules of its own layer or of lower layers, never of a higher one, and the import graph has no cycle.

The order (this table is its only declaration; docs/layout.md describes it); a package keeps one layer, whole:
  0 foundations   errors (and warnings at the user's line), config, format (number formatters, rich building blocks),
                  files (output files: one line when one cannot be written; file names of kernel names), flops,
                  _nvml_sampler (a script),
                  _imports (running code right after a module's import), processes (who is alive: pid and start)
  1 text & tools  ptx (PTX text), binaries (finding and running ptxas / nvdisasm), _native (building and
                  loading tritonhook's C helpers)
  2 data          cubin/ (model, ELF, fatbin, SASS), store/ (records, result kinds, blob holds, connection and
                  migrations, queries and paging, verify and repair), samples
  3 adapters      _triton (the only module touching Triton internals), _ray (the only one touching Ray), rename,
                  tma_scope, ptxas/ (the recording wrapper; tune_space, the only module touching CompileIQ),
                  launcher (the one way into a child process: the settings it inherits, the only code that builds its
                  environment)
  4 capture       ptx_capture (the capture core: sessions, enable, disable, a child's capture at start-up; it
                  imports no feature: a session's listeners, such as preflight's checker, are registered from above
                  in `ptx_capture.LISTENER_FACTORIES`, by the package), cute adapters (they write into the active
                  session's store)
  5 prediction    preflight (its `capture_checker` warns during capture; the package wires it into every session)
  6 measurement   measure/ (the GPU timer, statistics, output check and variants that ab/ and sweep/ share: no
                  feature is another's library)
  7 features      ab/, memwatch (its public API) over mem/, diff, ptxas_matrix (ptxas-matrix), captures (listing and
                  summary of captures),
                  sweep/ (record, replay, schedule, tune), doctor (asks the layers below what they see, changes nothing),
                  upgrade/ (a kernel rebuilt under another Triton release: the four cells of PTX x ptxas),
                  decisions/ (per-kernel decisions made from sweep/replay/tune results: the store, the portable file)
                  exports (a recording's timeline as a Chrome trace, captures as TritonParse NDJSON)
                  check/ (the regression gate: each signature replayed with the baseline's build beside the current one)
  8 presentation  run (the CLI's orchestration as a library), page/ (the HTML report and the demo: they read
                  every feature's results)
  9 entry points  cli/, _autoload, __main__, the package itself, pytest_plugin (the gate as a pytest plugin)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tritonhook

pytestmark = pytest.mark.release_independent  # tritonhook's own sources, read as syntax trees

PACKAGE = Path(tritonhook.__file__).parent
LAYERS: list[set[str]] = [
    {"errors", "config", "format", "files", "flops", "_nvml_sampler", "_version", "_imports", "processes"},
    {"ptx", "binaries", "_native"},
    {"cubin", "store", "samples"},
    {"_triton", "_ray", "rename", "tma_scope", "ptxas", "launcher"},
    {"ptx_capture", "cute"},
    {"preflight"},
    {"measure"},
    {"ab", "mem", "memwatch", "diff", "ptxas_matrix", "captures", "sweep", "doctor", "upgrade",
     "decisions", "exports", "check"},
    {"run", "page"},
    {"cli", "_autoload", "__main__", "_bootstrap", "tritonhook", "pytest_plugin"},
]
LAYER_OF = {name: index for index, layer in enumerate(LAYERS) for name in layer}


def _modules() -> dict[str, Path]:
    """Dotted name (tritonhook.x.y) -> file, for every module of the package."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The tritonhook modules `name` imports anywhere in its file (relative or absolute; `from . import x` names
    module x when x is a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "tritonhook"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{base}.{node.module}" if node.module else base
            elif (node.module or "").split(".")[0] == "tritonhook":
                base = node.module
            else:
                continue
            submodules = {f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules}
            found |= submodules
            if len(submodules) < len(node.names):  # names defined in `base` itself
                found.add(base)
    return {_owner(module, modules) for module in found} - {None, name}


def _owner(module: str, modules: dict[str, Path]) -> str | None:
    while module and module not in modules:
        module = module.rpartition(".")[0]
    return module or None


def _top(module: str) -> str:
    """The layer-table name of a module: tritonhook.cubin.elf -> cubin; the package itself -> tritonhook."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_every_module_has_a_layer():
    missing = sorted({_top(name) for name in _modules()} - set(LAYER_OF))
    assert not missing, f"modules without a layer (add them to LAYERS): {missing}"


def test_no_module_imports_a_higher_layer():
    upward = [f"{name} (layer {LAYER_OF[_top(name)]}) imports {imported} (layer {LAYER_OF[_top(imported)]})"
              for name, imports in _graph().items() for imported in sorted(imports)
              if _top(name) in LAYER_OF and _top(imported) in LAYER_OF
              and LAYER_OF[_top(imported)] > LAYER_OF[_top(name)]]
    assert not upward, "\n".join(upward)


def test_no_import_cycles():
    graph = _graph()
    # a package's __init__ re-exports its submodules, which import siblings through the package path: the
    # package -> submodule edges are not cycles of code, so only edges between different files count here
    edges = {name: {m for m in imports if not name.startswith(m + ".")} for name, imports in graph.items()}
    cycles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [node, nxt]) if nxt in stack else f"{node} -> {nxt}")
            elif nxt not in state:
                visit(nxt, stack + [node])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [])
    assert not cycles, "\n".join(cycles)


KERNEL_PACKAGES = ("gluon_kernels", "sm120_attn")
"""The bundled kernels are tritonhook's subjects, not its users: they must compile and run without it, so what
reads them with tritonhook (ptxas reports, cubin facts, captures) lives in tests/ and benchmarks/."""


def test_kernel_packages_import_nothing_from_tritonhook():
    offenders = []
    for package in KERNEL_PACKAGES:
        for path in sorted((PACKAGE.parent / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    names = [node.module or ""]
                else:
                    continue
                offenders += [f"{path.relative_to(PACKAGE.parent)}:{node.lineno} imports {name}" for name in names
                              if name.split(".")[0] == "tritonhook"]
    assert not offenders, "\n".join(offenders)
