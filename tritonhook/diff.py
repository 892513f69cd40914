"""`tritonhook diff A B`: what changed between two builds of the same kernels.

Inputs are cubins, fatbins holding one cubin, PTX (assembled here with the chosen ptxas) or capture ids of the
store (`load_input`). `diff_cubins` is a pure function of two parsed cubins (and, with `--sass`, their
disassembly); its result renders itself (`format.show`) or to JSON (`to_json`). Kernels pair up as `--pair` says,
else by name modulo the rename prefix (`matmul_kernel` meets `cutlass_matmul_kernel`), else a lone kernel on each
side with the other; each section follows its kernel and keeps its own name on each side. SASS is called identical
only when every function's normalized SASS has its twin on the other side, so an unpaired kernel can never hide a
difference.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import difflib
import os
from typing import Callable, Sequence

from . import format, ptx as _ptx
from ._triton import triton_ptxas
from .cubin import Cubin, cubin_histogram, disassemble, fatbin_cubins, is_fatbin, normalized_sass, opcode_changes
from .errors import TritonhookError
from .files import read_input
from .format import count, delta, share, size_ratio
from .measure.variants import Variant
from .rename import DEFAULT_PREFIX, STRIP, rename_ptx, strip_ptx
from .binaries import assemble, ptxas_version

KERNEL_METRICS: tuple[tuple[str, Callable], ...] = (
    ("registers", lambda k: k.registers),
    ("stack frame", lambda k: k.frame_size),
    ("cumulative stack", lambda k: k.min_stack_size),
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
DIFF_INPUT = "cubin, fatbin or PTX"
"""What `diff` reads from a file, as its errors name it."""

@dataclasses.dataclass(frozen=True)
class Input:
    label: str
    data: bytes
    cubin: Cubin
    origin: str  # "cubin", "fatbin", "PTX via ptxas 12.9.86", "capture 3"


def load_input(spec: str, *, ptxas: str | None = None, ptxas_args: Sequence[str] = (), gpu_name: str | None = None,
               store: str | os.PathLike | None = None, variant: Variant | None = None) -> Input:
    """A cubin, fatbin or PTX file, or else a capture id of the store. PTX is assembled with `ptxas` (default:
    Triton's for the target) and `ptxas_args`: pass the frontend's flags to diff the build it makes. `variant`
    (`diff --variants`, docs/variants.md) renames the PTX and picks its ptxas, extra options and control file."""
    if not os.path.lexists(spec) and not spec.isdigit():
        raise TritonhookError(f"{spec}: no such file, and not a capture id (see `tritonhook ls`)")
    data = read_input(spec, DIFF_INPUT) if os.path.lexists(spec) else None
    if variant is not None and (variant.rename is not None or variant.assembles) and not (
            data is not None and _ptx.looks_like_ptx(data)):
        raise TritonhookError(f"{spec}: --variants {variant.label} applies to PTX inputs (assembled here); "
                              f"this is a cubin or a capture")
    if data is not None:
        return _from_file_bytes(spec, data, ptxas=ptxas, ptxas_args=ptxas_args, gpu_name=gpu_name, variant=variant)
    from .store import Store

    capture_store = Store.of(store, readonly=True)
    capture = capture_store.get(spec)
    label = f"capture {capture.id} ({capture.entry})"
    data = capture_store.read(capture, "cubin")
    return Input(label, data, Cubin.from_bytes(data, label=label), f"capture {capture.id}")


def _from_file_bytes(label: str, data: bytes, *, ptxas: str | None, ptxas_args: Sequence[str],
                     gpu_name: str | None, variant: Variant | None = None) -> Input:
    if is_fatbin(data):
        cubins = fatbin_cubins(data)
        if len(cubins) == 1:
            return Input(label, cubins[0], Cubin.from_bytes(cubins[0], label=f"{label} (cubin in fatbin)"),
                         "fatbin")
        Cubin.from_bytes(data, label=label)  # raises, describing what the fatbin holds
    if _ptx.looks_like_ptx(data):
        return _assemble_input(label, data.decode("utf-8", errors="replace"), ptxas=ptxas, ptxas_args=ptxas_args,
                               gpu_name=gpu_name, variant=variant)
    return Input(label, data, Cubin.from_bytes(data, label=label), "cubin")


def _assemble_input(label: str, ptx: str, *, ptxas: str | None, ptxas_args: Sequence[str],
                    gpu_name: str | None, variant: Variant | None = None) -> Input:
    gpu = gpu_name or _ptx.target(ptx, label=label)
    controls = None
    if variant is not None:
        label = f"{label} ({variant.label})"
        if variant.rename is not None:
            ptx = strip_ptx(ptx) if variant.rename is STRIP else rename_ptx(ptx, variant.rename)
        ptxas, ptxas_args = variant.ptxas or ptxas, [*ptxas_args, *variant.options]
        controls = variant.controls
    tool = ptxas or triton_ptxas(gpu)
    result = assemble(ptx, tool, gpu, ptxas_args, label=label, controls=controls)
    return Input(label, result.cubin, Cubin.from_bytes(result.cubin, label=label),
                 " ".join(["PTX via ptxas", ptxas_version(tool) or tool, *ptxas_args,
                           *([f"--apply-controls={controls.path} (sha256 {controls.sha256})"] if controls else [])]))


def disassemble_both(a: Input, b: Input, *, nvdisasm: str | None = None) -> tuple[dict, dict]:
    """Run nvdisasm on both inputs at once (each run is a separate process)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        jobs = [pool.submit(disassemble, side.data, nvdisasm=nvdisasm, label=side.label) for side in (a, b)]
        return jobs[0].result(), jobs[1].result()


# ----- the diff ----------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class KernelPair:
    """Which kernel of A is compared with which of B, and why (`--pair`, name, prefix, or the lone kernel of each
    side), so a reader can tell a real match from a guess."""

    name_a: str
    name_b: str
    paired_by: str  # "--pair", "same name", "name modulo prefix", "only kernel on each side"


@dataclasses.dataclass(frozen=True)
class SectionRow:
    name_a: str | None  # None: the section is absent on that side
    name_b: str | None
    size_a: int | None
    size_b: int | None
    changed: bool
    in_file: bool  # False for NOBITS sections (shared memory): a size, but no bytes in the cubin
    share: float | None  # this row's part of the total change of the file bytes; None when it is not part of it

    @property
    def delta(self) -> int:
        return (self.size_b or 0) - (self.size_a or 0)


@dataclasses.dataclass(frozen=True)
class KernelRow:
    name_a: str
    name_b: str
    paired_by: str
    metrics: dict[str, tuple]  # metric -> (a, b)


@dataclasses.dataclass(frozen=True)
class CubinDiff:
    label_a: str
    label_b: str
    header_a: str
    header_b: str
    identical: bool
    sections: list[SectionRow]  # largest |Δ| first, or ELF order (`elf_order=True`)
    section_total: tuple[int, int]  # bytes of all sections that occupy the file, A and B
    kernels: list[KernelRow]
    only_a: list[str]
    only_b: list[str]
    histogram: list[tuple[str, int, int]] | None  # (opcode, count a, count b), largest change first
    sass_diff: list[str] | None
    sass_identical: bool | None  # None without disassembly; True only when every function's SASS matches

    def __rich_console__(self, console, options):
        yield from _renderables(self)

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["sections"] = [{**dataclasses.asdict(row), "delta": row.delta} for row in self.sections]
        total_a, total_b = self.section_total
        data["section_total"] = {"a": total_a, "b": total_b, "delta": total_b - total_a}
        data["kernels"] = [{"name_a": k.name_a, "name_b": k.name_b, "paired_by": k.paired_by,
                            "metrics": {m: {"a": a, "b": b} for m, (a, b) in k.metrics.items()}}
                           for k in self.kernels]
        if self.histogram is not None:
            data["histogram"] = [{"opcode": op, "a": a, "b": b, "delta": b - a} for op, a, b in self.histogram]
        return data


def canonical_name(name: str, prefix: str = DEFAULT_PREFIX) -> str:
    """A kernel name without the rename prefix (`cutlass_k` -> `k`)."""
    return name[len(prefix):] if prefix and name.startswith(prefix) else name


def parse_pairs(specs: Sequence[str]) -> dict[str, str]:
    """`["a_kernel=b_kernel", ...]` (the `--pair` option) -> {name in A: name in B}."""
    pairs = {}
    for spec in specs:
        name_a, sep, name_b = spec.partition("=")
        if not sep or not name_a or not name_b:
            raise TritonhookError(f"--pair {spec!r}: write it as KERNEL_IN_A=KERNEL_IN_B")
        pairs[name_a] = name_b
    return pairs


def pair_kernels(names_a: Sequence[str], names_b: Sequence[str], *, prefix: str = DEFAULT_PREFIX,
                 explicit: dict[str, str] | None = None) -> tuple[list[KernelPair], list[str], list[str]]:
    """(pairs, only in A, only in B): explicit pairs first, then equal names, then names equal once the rename
    prefix is removed, then, when exactly one kernel of each side is left, those two."""
    pairs = []
    for name_a, name_b in (explicit or {}).items():
        for name, side, names in ((name_a, "A", names_a), (name_b, "B", names_b)):
            if name not in names:
                raise TritonhookError(f"--pair {name_a}={name_b}: {side} has no kernel {name!r} "
                                      f"(kernels: {', '.join(names) or 'none'})")
        pairs.append(KernelPair(name_a, name_b, "--pair"))
    left_a = [n for n in names_a if n not in {p.name_a for p in pairs}]
    left_b = [n for n in names_b if n not in {p.name_b for p in pairs}]
    for rule, key in (("same name", lambda n: n), ("name modulo prefix", lambda n: canonical_name(n, prefix))):
        keys_b = {key(n): n for n in left_b}
        matched = [(a, keys_b[key(a)]) for a in left_a if key(a) in keys_b]
        pairs += [KernelPair(a, b, rule) for a, b in matched]
        left_a = [n for n in left_a if n not in {a for a, _ in matched}]
        left_b = [n for n in left_b if n not in {b for _, b in matched}]
    if len(left_a) == len(left_b) == 1:
        pairs.append(KernelPair(left_a[0], left_b[0], "only kernel on each side"))
        left_a, left_b = [], []
    return pairs, sorted(left_a), sorted(left_b)


def diff_cubins(a: Cubin, b: Cubin, *, prefix: str = DEFAULT_PREFIX, pairs: dict[str, str] | None = None,
                sass_a: dict | None = None, sass_b: dict | None = None, elf_order: bool = False) -> CubinDiff:
    """Compare two parsed cubins; with both disassemblies, also their opcode histograms and normalized SASS.

    `pairs` names kernels to compare whatever their names ({name in A: name in B}); the others pair up as
    `pair_kernels` says. Sections follow their kernel's pair, so `.text.k` meets `.text.cutlass_k`."""
    kernel_pairs, only_a, only_b = pair_kernels(list(a.kernels), list(b.kernels), prefix=prefix, explicit=pairs)
    rows = [KernelRow(p.name_a, p.name_b, p.paired_by,
                      {metric: (get(a.kernels[p.name_a]), get(b.kernels[p.name_b])) for metric, get in KERNEL_METRICS})
            for p in kernel_pairs]
    sections, total = _section_rows(a, b, kernel_pairs, elf_order=elf_order)
    with_sass = sass_a is not None and sass_b is not None
    return CubinDiff(
        label_a=a.label, label_b=b.label, header_a=_header(a), header_b=_header(b),
        identical=a.sha256 == b.sha256, sections=sections, section_total=total, kernels=rows,
        only_a=only_a, only_b=only_b,
        histogram=_histogram_rows(sass_a, sass_b) if with_sass else None,
        sass_diff=_sass_diff(a, b, sass_a, sass_b, kernel_pairs) if with_sass else None,
        sass_identical=_same_sass(sass_a, sass_b) if with_sass else None)


def _header(cubin: Cubin) -> str:
    tool = f"{cubin.tool.name} {cubin.tool.version}".strip() or "tool unknown (no .note.nv.tkinfo)"
    return f"{cubin.arch}, {tool}, {cubin.size} B"


def _section_rows(a: Cubin, b: Cubin, kernel_pairs: list[KernelPair], *,
                  elf_order: bool) -> tuple[list[SectionRow], tuple[int, int]]:
    """Sections of A and B side by side under their own names, the file-byte totals, and each row's share of
    the total change; largest change first unless `elf_order`."""
    keys_a = _section_keys(a, {p.name_a: index for index, p in enumerate(kernel_pairs)})
    keys_b = _section_keys(b, {p.name_b: index for index, p in enumerate(kernel_pairs)})
    by_key_b = {key: section for key, section in zip(keys_b, b.sections)}
    matched = [(sa, by_key_b.get(key)) for key, sa in zip(keys_a, a.sections)]
    seen_a = set(keys_a)
    matched += [(None, sb) for key, sb in zip(keys_b, b.sections) if key not in seen_a]
    total = tuple(sum(s.size for s in cubin.sections if s.sha256 is not None) for cubin in (a, b))
    total_delta = total[1] - total[0]
    rows = []
    for sa, sb in matched:
        in_file = (sa or sb).sha256 is not None
        row_delta = (sb.size if sb else 0) - (sa.size if sa else 0)
        rows.append(SectionRow(sa.name if sa else None, sb.name if sb else None, sa.size if sa else None,
                               sb.size if sb else None,
                               sa is None or sb is None or (sa.size, sa.sha256) != (sb.size, sb.sha256), in_file,
                               row_delta / total_delta if in_file and total_delta else None))
    if not elf_order:
        rows.sort(key=lambda row: -abs(row.delta))
    return rows, total


def _section_keys(cubin: Cubin, kernel_index: dict[str, int]) -> list[str]:
    """One key per section: its name, with the name of a paired kernel at its end replaced by the pair's number,
    so that the sections of paired kernels get equal keys on both sides."""
    keys = []
    for section in cubin.sections:
        owners = [name for name in kernel_index if section.name.endswith("." + name)]
        if owners:
            owner = max(owners, key=len)
            keys.append(f"{section.name[:-len(owner)]}\0{kernel_index[owner]}")
        else:
            keys.append(section.name)
    return keys


def _histogram_rows(sass_a: dict, sass_b: dict) -> list[tuple[str, int, int]]:
    return opcode_changes(cubin_histogram(sass_a), cubin_histogram(sass_b))


def _sass_diff(a: Cubin, b: Cubin, sass_a: dict, sass_b: dict, pairs: list[KernelPair]) -> list[str]:
    lines: list[str] = []
    for pair in pairs:
        lines += difflib.unified_diff(normalized_sass(sass_a.get(pair.name_a, [])),
                                      normalized_sass(sass_b.get(pair.name_b, [])),
                                      fromfile=f"{a.label}:{pair.name_a}", tofile=f"{b.label}:{pair.name_b}",
                                      lineterm="")
    return lines


def _same_sass(sass_a: dict, sass_b: dict) -> bool:
    """Every function of A has its normalized SASS in B and the other way round, whatever the names: the only
    claim of identity that holds when kernels went unpaired or device functions were renamed."""
    return sorted(map(normalized_sass, sass_a.values())) == sorted(map(normalized_sass, sass_b.values()))


# ----- presentation ----------------------------------------------------------------------------------------------
def _renderables(diff: CubinDiff):
    """Tables for people (rich), in the order one reads a diff: what, where, how much, which instructions."""
    if diff.identical:
        yield format.line(f"identical: {diff.label_a} and {diff.label_b} are the same cubin ({diff.header_a})")
        return
    yield format.line(f"A: {diff.label_a} [{diff.header_a}]")
    yield format.line(f"B: {diff.label_b} [{diff.header_b}]")
    total_a, total_b = diff.section_total
    yield format.table(("section", "size A", "size B", "Δ", "share of Δ", "ratio", "changed"),
                       [*([_section_name(r), count(r.size_a), count(r.size_b), delta(r.size_a or 0, r.size_b or 0),
                           share(r.share), size_ratio(r.size_a, r.size_b), "yes" if r.changed else ""]
                          for r in diff.sections),
                        ["total (bytes in the file)", count(total_a), count(total_b), delta(total_a, total_b),
                         "100.0%" if total_a != total_b else "", size_ratio(total_a, total_b), ""]],
                       title="sections", right_align=("size A", "size B", "Δ", "share of Δ", "ratio"))
    for row in diff.kernels:
        title = row.name_a if row.name_a == row.name_b else f"{row.name_a} -> {row.name_b}"
        yield format.table(("resource", "A", "B", "Δ"),
                           [(metric, count(va), count(vb), delta(va, vb)) for metric, (va, vb) in row.metrics.items()],
                           title=f"kernel {title}" + ("" if row.paired_by in ("same name", "name modulo prefix")
                                                      else f" (paired: {row.paired_by})"),
                           right_align=("A", "B", "Δ"))
    for side, names in (("A", diff.only_a), ("B", diff.only_b)):
        if names:
            yield format.line(f"only in {side}: {', '.join(names)} (compare with --pair A_NAME=B_NAME)")
    if diff.histogram is None:
        yield format.line("(opcode histogram and SASS diff: pass --sass, which runs nvdisasm)")
        return
    yield format.table(("opcode", "A", "B", "Δ"), [(op, ca, cb, f"{cb - ca:+d}") for op, ca, cb in diff.histogram],
                       title="opcode histogram (changed, largest first)", right_align=("A", "B", "Δ"))
    yield from map(format.line, diff.sass_diff)
    yield format.line("normalized SASS: identical" if diff.sass_identical else
                      "normalized SASS: differs" + ("" if diff.sass_diff else " (outside the paired kernels: see the "
                                                    "histogram and the unpaired kernels)"))


def _section_name(row: SectionRow) -> str:
    both = row.name_a and row.name_b and row.name_a != row.name_b
    name = f"{row.name_a} -> {row.name_b}" if both else row.name_a or row.name_b
    return name if row.in_file else f"{name} (no file bytes)"
