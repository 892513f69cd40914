"""PTX text, read and rewritten: `.entry` names, the `.target`, the ISA `.version`, symbol renames, TMA scope, the
hash of its code.

Pure functions (text in, text or facts out) in one place, because every layer above reads the same few facts from
PTX (the capture hook its entry and target, ptxas runs their `--gpu-name`, `diff` whether an input is PTX at all)
and a second regex for the same directive drifts from the first. Nothing here runs a tool or imports Triton.
"""

from __future__ import annotations

import hashlib
import re

from .errors import TritonhookError

_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$%][\w$]*)")
_TARGET = re.compile(r"^\s*\.target\s+(sm_\w+)", re.MULTILINE)
_VERSION = re.compile(r"^\s*\.version\s+(\d+)\.(\d+)", re.MULTILINE)
# A quoted string (kept as is) or an identifier that does not start in the middle of a word or directive.
_TOKEN = re.compile(r'"[^"\n]*"|(?<![\w$.])[A-Za-z_$%][\w$]*')
_PARAM = "_param_"
_ENTRY_PARAMS = re.compile(r"\.entry\s+([A-Za-z_$%][\w$]*)\s*\(([^)]*)\)")
# What is not code: a `.file` path, a DWARF section that spells the paths (and their lengths) as bytes; then a comment
# (a `.loc` line's names the source file). Each begins with a literal, so a search skips to it: two passes over
# 160 KB of PTX cost about two of its sha256.
_SOURCE_PATHS = re.compile(r"\.file[ \t].*\n?|\.section[ \t]+\.debug_\w+\s*\{[^}]*\}")
_COMMENT = re.compile(r"//.*")
# The opcode of a TMA tensor load into a cluster-scoped destination, and its qualifiers after `.global`.
_CLUSTER_LOAD = re.compile(r"\bcp\.async\.bulk\.tensor\.[1-5]d\.shared::cluster\.global((?:\.[\w:]+)*)")


def as_text(ptx: str | bytes) -> str:
    """PTX as text: bytes are decoded leniently (a stray byte in a comment must not lose the whole module)."""
    return ptx.decode("utf-8", errors="replace") if isinstance(ptx, bytes) else ptx


def code_sha256(ptx: str | bytes) -> str:
    """The sha256 of a PTX module's code: its text less its comments and the paths of the source it was generated
    from (`.file` directives, `.debug_*` sections). Why: Triton writes the source file's path into the PTX (and its
    name into each `.loc` line's comment), and Inductor writes its kernels under its cache directory, each module
    named by the hash of its whole text: one kernel compiled in a run with another cache directory (a cold run, a
    rank, another user's), or rendered in a module that differs elsewhere (a template a pin chose, not a benchmark),
    is other PTX text for the same code. A build is known by its code, wherever it lived."""
    code = _COMMENT.sub("", _SOURCE_PATHS.sub("", as_text(ptx)))
    return hashlib.sha256(code.encode()).hexdigest()


def entries(ptx: str | bytes) -> list[str]:
    """The `.entry` names of a PTX module, in order."""
    return _ENTRY.findall(as_text(ptx))


def target(ptx: str | bytes, *, label: str = "PTX") -> str:
    """The `.target` GPU name ('sm_90a'); TritonhookError naming `label` when there is none."""
    match = _TARGET.search(as_text(ptx))
    if not match:
        raise TritonhookError(f"{label}: no `.target sm_XX` line; is it PTX?")
    return match.group(1)


def isa_version(ptx: str | bytes) -> tuple[int, int] | None:
    """The PTX ISA `.version` as (major, minor), e.g. (8, 7); None when the text has none."""
    match = _VERSION.search(as_text(ptx))
    return (int(match.group(1)), int(match.group(2))) if match else None


def entry_parameters(ptx: str | bytes, entry: str) -> list[str] | None:
    """The `.param` declarations of kernel `entry` without their names ('.param .u64 .ptr .global .align 1',
    '.param .align 64 .b8 [128]'): the launch ABI a launcher must match; None when there is no such entry."""
    for name, body in _ENTRY_PARAMS.findall(as_text(ptx)):
        if name == entry:
            return [re.sub(r"\s*[A-Za-z_$%][\w$]*(\[\d+\])?$", r" \1", " ".join(decl.split())).strip()
                    for decl in body.split(",") if decl.strip()]
    return None


def with_isa_version(ptx: str | bytes, version: str) -> str:
    """`ptx` with its `.version` directive set to `version` ("8.7"): what an older ptxas reads, where the module
    uses nothing newer (that ptxas then refuses the instruction that needs more)."""
    return _VERSION.sub(f".version {version}", as_text(ptx), count=1)


def looks_like_ptx(data: bytes) -> bool:
    """True for PTX text (a `.target sm_` line in the first 4 KiB, no NUL before the trailing ones)."""
    head = data[:4096]
    return b"\0" not in head.rstrip(b"\0") and _TARGET.search(as_text(head)) is not None


def sm_number(gpu_name: str) -> int:
    """'sm_100a' -> 100; TritonhookError for anything that is not a GPU name."""
    match = re.fullmatch(r"sm_(\d+)[af]?", gpu_name)
    if not match:
        raise TritonhookError(f"{gpu_name!r}: not a GPU name like sm_90a or sm_100a")
    return int(match.group(1))


def rename_symbols(ptx: str, mapping: dict[str, str]) -> str:
    """Replace each kernel name in `mapping` and its `_param_N` symbols; refuses a new name already in use.

    One pass over the tokens, quoted strings excepted (the `.file` paths keep the old name, and so do DWARF
    bytes, which ptxas copies into debug sections only; docs/rename_ab.md)."""
    if not mapping:
        return ptx
    tokens = {match.group(0) for match in _TOKEN.finditer(ptx)}
    for old, new in mapping.items():
        if new in tokens:
            raise TritonhookError(f"cannot rename kernel {old!r} to {new!r}: the PTX already uses that name")

    def replace(match: re.Match) -> str:
        token = match.group(0)
        if token in mapping:
            return mapping[token]
        base, sep, index = token.rpartition(_PARAM)
        if sep and index.isdigit() and base in mapping:
            return f"{mapping[base]}{_PARAM}{index}"
        return token

    return _TOKEN.sub(replace, ptx)


def rewrite_tma_scope(ptx: str) -> tuple[str, int]:
    """`(ptx, count)`: every non-multicast `cp.async.bulk.tensor` load into `shared::cluster` now targets
    `shared::cta`; `count` is how many instructions changed (why: `tma_scope`)."""
    count = 0

    def to_cta(match: re.Match) -> str:
        nonlocal count
        if ".multicast::" in match.group(1):
            return match.group(0)
        count += 1
        return match.group(0).replace(".shared::cluster.global", ".shared::cta.global", 1)

    return _CLUSTER_LOAD.sub(to_cta, ptx), count
