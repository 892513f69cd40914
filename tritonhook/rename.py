"""Rename kernels in PTX so that ptxas takes (or leaves) its "cutlass" code path
(docs/ptxas_cutlass.md#the-cutlass-name-path).

ptxas changes how it compiles a kernel whose name contains the substring `cutlass`; renaming is the only
lever. The rename has to happen in the PTX, before ptxas, and everything that refers to the kernel by name
must follow, or the launcher's `cuModuleGetFunction(metadata["name"])` fails.

What is renamed, in one pass over the PTX tokens (quoted strings excepted):
  * the `.entry` name and every other identifier equal to it (`.globl` comments, calls, `// @name`),
  * its parameters `<name>_param_<N>`.
What is not renamed: quoted strings (the `.file` paths), DWARF bytes (`.b8` lists in `.debug_*` sections,
which hold the kernel's name as `DW_AT_name` when it inlines JIT helpers: ptxas copies them into the cubin's
debug sections only, never into its code; docs/rename_ab.md), other functions and symbols whose name merely
starts with the kernel's name, and names Triton keeps outside the PTX (the cache file names follow
`fn.__name__`).

The functions here are pure: text in, text out. `make_ptx_transform` builds the stage callback that
`session.enable(rename=..., select=...)` installs.
"""

from __future__ import annotations

import hashlib
import re
from typing import Callable, Iterable, Union

from .ptx import entries as ptx_entries, rename_symbols
from ._triton import ORIGINAL_NAME_KEY, PtxTransform
from . import config
from .errors import TritonhookError

CUTLASS = "cutlass"
DEFAULT_PREFIX = "cutlass_"


class _Strip:
    """The `rename=` value that removes `cutlass` from kernel names instead of adding it."""

    def __repr__(self) -> str:
        return "tritonhook.STRIP"


STRIP = _Strip()

Rename = Union[str, _Strip]
Selector = Union[None, str, re.Pattern, Iterable[str], Callable[[str, dict], bool]]

# Triton's make_ptx finds the name with `.visible .entry ([a-zA-Z_][a-zA-Z0-9_]*)`: new names must match it.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# ----- renaming kernels in PTX -------------------------------------------------------------------------------------------------
def rename_ptx(ptx: str, prefix: str = DEFAULT_PREFIX, *, entry: str | None = None) -> str:
    """Prefix the kernel `entry` (default: every `.entry`) with `prefix`; names that already start with it
    are left alone, so renaming twice is the same as renaming once."""
    return _apply(ptx, prefixer(prefix), entry)


def strip_ptx(ptx: str, *, entry: str | None = None, substring: str = CUTLASS) -> str:
    """Remove `substring` (and one `_` after it) from the names of the entries that carry it, so a kernel
    named `cutlass_attention` can be measured as `attention`."""
    return _apply(ptx, lambda name: strip_name(name, substring), entry)


def strip_name(name: str, substring: str = CUTLASS) -> str:
    stripped = re.sub(re.escape(substring) + "_?", "", name)
    if stripped != name:
        _check_name(stripped, what=f"{name!r} without {substring!r}")
    return stripped


def _apply(ptx: str, new_name: Callable[[str], str], entry: str | None) -> str:
    entries = ptx_entries(ptx)
    if entry is not None and entry not in entries:
        raise TritonhookError(f"PTX has no .entry {entry!r} (entries: {', '.join(entries) or 'none'})")
    mapping = {name: new_name(name) for name in ([entry] if entry is not None else entries)}
    return rename_symbols(ptx, {old: new for old, new in mapping.items() if old != new})


def prefixer(prefix: str) -> Callable[[str], str]:
    """name -> prefix + name, except for names that already start with the prefix (never prefix twice)."""
    _check_name(prefix, what="rename prefix")
    if len(prefix) > config.rename.PREFIX_MAX_CHARS:
        raise TritonhookError(f"rename prefix {prefix[:20]!r}...: {len(prefix)} characters, at most "
                              f"{config.rename.PREFIX_MAX_CHARS}")
    return lambda name: name if name.startswith(prefix) else prefix + name


def _check_name(name: str, *, what: str) -> None:
    if not _NAME.fullmatch(name):
        raise TritonhookError(f"{what} {name!r}: not a usable kernel name (letters, digits and '_', not starting "
                              f"with a digit)")


# ----- selecting kernels ----------------------------------------------------------------------------------------
def make_selector(select: Selector) -> tuple[Callable[[str, dict], bool], str]:
    """`(predicate(name, metadata) -> bool, key)`; the key names the selection for the cache key.

    `select` is None (every kernel), a regex (string or compiled, searched in the kernel name), a list of exact
    names, or a callable `(name, metadata) -> bool` (keyed by its qualified name and bytecode: change the
    function and the cached builds are not reused).
    """
    if select is None:
        return (lambda name, metadata: True), "all"
    if isinstance(select, (str, re.Pattern)):
        pattern = compile_select(select)
        return (lambda name, metadata: pattern.search(name) is not None), f"re:{pattern.pattern}"
    if callable(select):
        return select, f"fn:{_callable_key(select)}"
    try:
        names = frozenset(select)
    except TypeError:
        raise TritonhookError(f"select={select!r}: give a regex, a list of kernel names or a callable "
                              f"(name, metadata) -> bool") from None
    if not all(isinstance(n, str) for n in names):
        raise TritonhookError(f"select={sorted(names, key=repr)!r}: kernel names must be strings")
    return (lambda name, metadata: name in names), "names:" + ",".join(sorted(names))


def compile_select(pattern: str | re.Pattern) -> re.Pattern:
    if isinstance(pattern, re.Pattern):
        return pattern
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise TritonhookError(f"select {pattern!r}: not a valid regular expression ({exc})") from None


def exact_names_pattern(names: Iterable[str]) -> str:
    """The `--select` regex that matches exactly these kernel names and no other (each escaped: a name may hold
    regex characters), as `run --select`, the sweep's estimate and the report's A/B estimate write it."""
    return "^(?:" + "|".join(re.escape(name) for name in sorted(set(names))) + ")$"


def _callable_key(fn: Callable) -> str:
    code = getattr(fn, "__code__", None)
    digest = hashlib.sha256(code.co_code + repr(code.co_consts).encode()).hexdigest()[:16] if code else "-"
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}:{digest}"


# ----- the compile-pipeline transform ---------------------------------------------------------------------------
def rename_description(rename: Rename) -> str:
    """`strip` or `prefix=<p>`: used in cache keys and reports."""
    return "strip" if isinstance(rename, _Strip) else f"prefix={rename}"


def make_ptx_transform(rename: Rename, select: Selector = None) -> tuple[PtxTransform, str]:
    """`(transform, cache_key)` for `HookInstallation`: the transform renames the selected kernel in the "ptx"
    stage output and sets `metadata["name"]` (what the launcher looks up) and the original name."""
    if isinstance(rename, _Strip):
        new_name = strip_name
    elif isinstance(rename, str):
        new_name = prefixer(rename)
    else:
        raise TritonhookError(f"rename={rename!r}: give a prefix such as {DEFAULT_PREFIX!r} or tritonhook.STRIP")
    selected, select_key = make_selector(select)

    def rename_stage(ptx: str, metadata: dict) -> str:
        original = metadata.get("name") or ptx_entries(ptx)[0]
        if not selected(original, metadata):
            return ptx
        return rename_in_stage(ptx, metadata, original, new_name(original))

    return rename_stage, f"rename:{rename_description(rename)};select:{select_key}"


def rename_in_stage(ptx: str, metadata: dict, original: str, target: str) -> str:
    """The PTX stage's output with kernel `original` named `target`, and the compile's metadata following it:
    `name` (what the launcher looks up) and the original name (which cache hits still need). The one place a
    compile is renamed (`make_ptx_transform`, and a decision applied at compile time)."""
    if target == original:
        return ptx
    metadata["name"] = target
    metadata[ORIGINAL_NAME_KEY] = original
    return rename_symbols(ptx, {original: target})


STRIP_TEXT = ":strip"
"""`STRIP` as a child process reads it (no prefix starts with ':', which a kernel name cannot hold)."""


def encode(rename: Rename | None) -> str | None:
    """The text a child process reads back as `rename` (`decode`): the prefix, or `STRIP_TEXT`."""
    return STRIP_TEXT if isinstance(rename, _Strip) else rename


def decode(text: str | None) -> Rename | None:
    """The rename `encode` wrote."""
    return STRIP if text == STRIP_TEXT else text
