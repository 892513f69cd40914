"""`tritonhook diff A B`: what changed between two builds of the same kernels.

Inputs are cubins, fatbins holding one cubin, PTX (assembled here with the chosen ptxas) or capture ids of the
store (`load_input`). `diff_cubins` is a pure function of two parsed cubins (and, with `--sass`, their
disassembly); `render` and `to_json` present its result. Kernels and their sections are paired by name modulo
the rename prefix, so `matmul_kernel` meets `cutlass_matmul_kernel`.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import difflib
import os
import re
from pathlib import Path
from typing import Callable

from . import report
from .cubin import (Cubin, Instruction, disassemble, fatbin_cubins, is_fatbin, normalized_sass, opcode_histogram,
                    read_input)
from .errors import TritonhookError
from .rename import DEFAULT_PREFIX

KERNEL_METRICS: tuple[tuple[str, Callable], ...] = (
    ("registers", lambda k: k.registers),
    ("stack frame", lambda k: k.frame_size),
    ("max stack", lambda k: k.max_stack_size),
    ("spill stores", lambda k: k.spill_stores),
    ("spill loads", lambda k: k.spill_loads),
    ("shared static", lambda k: k.shared_static),
    ("barriers", lambda k: k.barriers),
    ("instructions", lambda k: k.instructions),
    (".text", lambda k: k.text_size),
    (".nv.capmerc", lambda k: k.capmerc_size),
)


# ----- inputs ----------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Input:
    label: str
    data: bytes
    cubin: Cubin
    origin: str  # "cubin", "fatbin", "PTX via ptxas 12.9.86", "capture 3"


def load_input(spec: str, *, ptxas: str | None = None, gpu_name: str | None = None,
               store: str | os.PathLike | None = None) -> Input:
    """A cubin, fatbin or PTX file, or else a capture id of the store."""
    path = Path(spec)
    if path.is_file():
        return _from_file_bytes(spec, read_input(path), ptxas=ptxas, gpu_name=gpu_name)
    if spec.isdigit():
        from .store import Store, default_store_path

        capture_store = Store(store if store is not None else default_store_path(), readonly=True)
        capture = capture_store.get(spec)
        label = f"capture {capture.id} ({capture.entry})"
        data = capture_store.read(capture, "cubin")
        return Input(label, data, Cubin.from_bytes(data, label=label), f"capture {capture.id}")
    raise TritonhookError(f"{spec}: no such file, and not a capture id (see `tritonhook ls`)")


def _from_file_bytes(label: str, data: bytes, *, ptxas: str | None, gpu_name: str | None) -> Input:
    if is_fatbin(data):
        cubins = fatbin_cubins(data)
        if len(cubins) == 1:
            return Input(label, cubins[0], Cubin.from_bytes(cubins[0], label=f"{label} (cubin in fatbin)"),
                         "fatbin")
        Cubin.from_bytes(data, label=label)  # raises, describing what the fatbin holds
    if _looks_like_ptx(data):
        return _assemble_input(label, data.decode("utf-8", errors="replace"), ptxas=ptxas, gpu_name=gpu_name)
    return Input(label, data, Cubin.from_bytes(data, label=label), "cubin")


def _looks_like_ptx(data: bytes) -> bool:
    head = data[:4096]
    return b"\0" not in head.rstrip(b"\0") and re.search(rb"^\s*\.target\s+sm_", head, re.MULTILINE) is not None


def _assemble_input(label: str, ptx: str, *, ptxas: str | None, gpu_name: str | None) -> Input:
    from .ptxas import assemble, ptx_target, ptxas_version, triton_ptxas

    gpu = gpu_name or ptx_target(ptx, label=label)
    tool = ptxas or triton_ptxas(gpu)
    result = assemble(ptx, tool, gpu, label=label)
    return Input(label, result.cubin, Cubin.from_bytes(result.cubin, label=label),
                 f"PTX via ptxas {ptxas_version(tool) or tool}")


def disassemble_both(a: Input, b: Input, *, nvdisasm: str | None = None) -> tuple[dict, dict]:
    """Run nvdisasm on both inputs at once (each run is a separate process)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        jobs = [pool.submit(disassemble, side.data, nvdisasm=nvdisasm, label=side.label) for side in (a, b)]
        return jobs[0].result(), jobs[1].result()


# ----- the diff ----------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class SectionRow:
    name: str
    size_a: int | None  # None: the section is absent on that side
    size_b: int | None
    changed: bool


@dataclasses.dataclass(frozen=True)
class KernelRow:
    name_a: str
    name_b: str
    metrics: dict[str, tuple]  # metric -> (a, b)


@dataclasses.dataclass(frozen=True)
class CubinDiff:
    label_a: str
    label_b: str
    header_a: str
    header_b: str
    identical: bool
    sections: list[SectionRow]
    kernels: list[KernelRow]
    only_a: list[str]
    only_b: list[str]
    histogram: list[tuple[str, int, int]] | None  # (opcode, count a, count b), largest change first
    sass_diff: list[str] | None

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["kernels"] = [{"name_a": k.name_a, "name_b": k.name_b,
                            "metrics": {m: {"a": a, "b": b} for m, (a, b) in k.metrics.items()}}
                           for k in self.kernels]
        if self.histogram is not None:
            data["histogram"] = [{"opcode": op, "a": a, "b": b, "delta": b - a} for op, a, b in self.histogram]
        return data


def canonical_name(name: str, prefix: str = DEFAULT_PREFIX) -> str:
    """A kernel or section name without the rename prefix (`.text.cutlass_k` -> `.text.k`)."""
    if not prefix:
        return name
    return re.sub(rf"(^|\.){re.escape(prefix)}", r"\1", name)


def diff_cubins(a: Cubin, b: Cubin, *, prefix: str = DEFAULT_PREFIX, sass_a: dict | None = None,
                sass_b: dict | None = None) -> CubinDiff:
    """Compare two parsed cubins; with both disassemblies, also their opcode histograms and normalized SASS."""
    kernels_a = {canonical_name(name, prefix): k for name, k in a.kernels.items()}
    kernels_b = {canonical_name(name, prefix): k for name, k in b.kernels.items()}
    paired = [name for name in kernels_a if name in kernels_b]
    rows = [KernelRow(kernels_a[n].name, kernels_b[n].name,
                      {metric: (get(kernels_a[n]), get(kernels_b[n])) for metric, get in KERNEL_METRICS})
            for n in paired]
    with_sass = sass_a is not None and sass_b is not None
    return CubinDiff(
        label_a=a.label, label_b=b.label, header_a=_header(a), header_b=_header(b),
        identical=a.sha256 == b.sha256, sections=_section_rows(a, b, prefix), kernels=rows,
        only_a=sorted(kernels_a[n].name for n in kernels_a if n not in kernels_b),
        only_b=sorted(kernels_b[n].name for n in kernels_b if n not in kernels_a),
        histogram=_histogram_rows(sass_a, sass_b) if with_sass else None,
        sass_diff=_sass_diff(a, b, sass_a, sass_b, [(kernels_a[n].name, kernels_b[n].name) for n in paired])
        if with_sass else None)


def _header(cubin: Cubin) -> str:
    tool = f"{cubin.tool.name} {cubin.tool.version}".strip() or "tool unknown (no .note.nv.tkinfo)"
    return f"{cubin.arch}, {tool}, {cubin.size} B"


def _section_rows(a: Cubin, b: Cubin, prefix: str) -> list[SectionRow]:
    sections_a = {canonical_name(s.name, prefix): s for s in a.sections}
    sections_b = {canonical_name(s.name, prefix): s for s in b.sections}
    names = list(sections_a) + [name for name in sections_b if name not in sections_a]
    rows = []
    for name in names:
        sa, sb = sections_a.get(name), sections_b.get(name)
        changed = sa is None or sb is None or (sa.size, sa.sha256) != (sb.size, sb.sha256)
        rows.append(SectionRow(name, sa.size if sa else None, sb.size if sb else None, changed))
    return rows


def _histogram_rows(sass_a: dict, sass_b: dict) -> list[tuple[str, int, int]]:
    count_a, count_b = _histogram(sass_a), _histogram(sass_b)
    rows = [(op, count_a[op], count_b[op]) for op in set(count_a) | set(count_b) if count_a[op] != count_b[op]]
    return sorted(rows, key=lambda row: (-abs(row[2] - row[1]), row[0]))


def _histogram(sass: dict[str, list[Instruction]]) -> collections.Counter:
    return opcode_histogram(i for instructions in sass.values() for i in instructions)


def _sass_diff(a: Cubin, b: Cubin, sass_a: dict, sass_b: dict, pairs: list[tuple[str, str]]) -> list[str]:
    lines: list[str] = []
    for name_a, name_b in pairs:
        lines += difflib.unified_diff(normalized_sass(sass_a.get(name_a, [])),
                                      normalized_sass(sass_b.get(name_b, [])),
                                      fromfile=f"{a.label}:{name_a}", tofile=f"{b.label}:{name_b}", lineterm="")
    return lines


# ----- presentation ----------------------------------------------------------------------------------------------
def render(diff: CubinDiff) -> None:
    """Tables for people (rich), in the order one reads a diff: what, where, how much, which instructions."""
    if diff.identical:
        print(f"identical: {diff.label_a} and {diff.label_b} are the same cubin ({diff.header_a})")
        return
    print(f"A: {diff.label_a} [{diff.header_a}]\nB: {diff.label_b} [{diff.header_b}]")
    report.print_table(("section", "size A", "size B", "Δ", "ratio", "changed"),
                       [(r.name, _num(r.size_a), _num(r.size_b), _delta(r.size_a, r.size_b),
                         _ratio(r.size_a, r.size_b), "yes" if r.changed else "") for r in diff.sections],
                       title="sections", right_align=("size A", "size B", "Δ", "ratio"))
    for row in diff.kernels:
        title = row.name_a if row.name_a == row.name_b else f"{row.name_a} -> {row.name_b}"
        report.print_table(("resource", "A", "B", "Δ"),
                           [(metric, _num(va), _num(vb), _delta(va, vb)) for metric, (va, vb) in row.metrics.items()],
                           title=f"kernel {title}", right_align=("A", "B", "Δ"))
    for side, names in (("A", diff.only_a), ("B", diff.only_b)):
        if names:
            print(f"only in {side}: {', '.join(names)}")
    if diff.histogram is None:
        print("(opcode histogram and SASS diff: pass --sass, which runs nvdisasm)")
        return
    report.print_table(("opcode", "A", "B", "Δ"), [(op, ca, cb, f"{cb - ca:+d}") for op, ca, cb in diff.histogram],
                       title="opcode histogram (changed, largest first)", right_align=("A", "B", "Δ"))
    if diff.sass_diff:
        print("\n".join(diff.sass_diff))
    else:
        print("normalized SASS: identical")


def _num(value) -> str:
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def _delta(a, b) -> str:
    if not isinstance(a, int) or not isinstance(b, int):
        return ""
    return f"{b - a:+,}" if b != a else "0"


def _ratio(a, b) -> str:
    if not a or b is None:
        return ""
    return f"{b / a:.2f}x"

