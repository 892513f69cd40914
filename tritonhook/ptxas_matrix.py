"""`tritonhook ptxas-matrix`: one PTX file assembled plain and renamed by every ptxas, measured side by side.

Why: the ptxas "cutlass" path (docs/ptxas_cutlass.md#the-cutlass-name-path) changes from one ptxas release to the
next, so whether a rename helps is a property of the (PTX, ptxas) pair. This is a feature over `binaries` (finding and
running ptxas), `rename` (the renamed variant) and `cubin` (the sizes); `PtxasMatrix` renders itself.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Sequence

from . import format, ptx as _ptx
from .cubin import Cubin
from .errors import TritonhookError
from .rename import DEFAULT_PREFIX, prefixer, rename_ptx
from .binaries import ControlFile, assemble, controls_refusal, ptxas_version


# ----- the matrix ------------------------------------------------------------------------------------------------
TOO_OLD, UNKNOWN_TARGET = "too old for this PTX", "does not know the target"
_REFUSALS = {TOO_OLD: re.compile(r"Unsupported \.version [\d.]+; current version is '[\d.]+'"),
             UNKNOWN_TARGET: re.compile(r"Value '\w+' is not defined for option 'gpu-name'")}
"""The refusals that skip a ptxas rather than fail the matrix: a PTX ISA newer than it reads, a target it does not
know (newer than it, or no GPU at all: which, only the other ptxas can tell)."""


def skip_reason(message: str) -> tuple[str, str] | None:
    """(why, ptxas's own words) when it refuses the PTX for a reason in `_REFUSALS`; None for any other refusal."""
    for why, pattern in _REFUSALS.items():
        if match := pattern.search(message):
            return why, match.group(0)
    return None


@dataclasses.dataclass(frozen=True)
class MatrixRow:
    ptxas: str
    version: str
    variant: str  # "plain" or "renamed"
    kernel: str
    cubin_size: int
    text_size: int
    capmerc_size: int
    registers: int | None
    spill_stores: int
    spill_loads: int
    seconds: float


@dataclasses.dataclass(frozen=True)
class MatrixRatio:
    """renamed / plain for one kernel and one ptxas; None where the plain build has none of it."""

    ptxas: str
    version: str
    kernel: str
    renamed: str
    cubin: float
    text: float | None
    capmerc: float | None
    seconds: float | None


@dataclasses.dataclass(frozen=True)
class SkippedPtxas:
    path: str
    version: str
    reason: str  # ptxas's words, or the line saying it cannot read the control file
    why: str = TOO_OLD


@dataclasses.dataclass(frozen=True)
class PtxasMatrix:
    rows: list[MatrixRow]
    ratios: list[MatrixRatio]
    skipped: list[SkippedPtxas]

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    def __rich_console__(self, console, options):
        """One row per build with the renamed/plain ratios on the renamed rows; a ptxas whose version another
        one shares is marked [n] and its path printed below; skipped ptxas are listed with ptxas's reason."""
        names = self._ptxas_names()
        ratios = {(r.ptxas, r.renamed): r for r in self.ratios}
        yield format.table(
            ("ptxas", "build", "kernel", "cubin", ".text", ".nv.capmerc", "regs", "spill st/ld", "time",
             "cubin ×", ".text ×", "capmerc ×"),
            [(names[r.ptxas], r.variant, r.kernel, f"{r.cubin_size:,}", f"{r.text_size:,}", f"{r.capmerc_size:,}",
              r.registers, f"{r.spill_stores}/{r.spill_loads}", f"{r.seconds * 1000:.0f} ms",
              *_ratio_cells(ratios.get((r.ptxas, r.kernel)) if r.variant == "renamed" else None))
             for r in self.rows],
            right_align=("cubin", ".text", ".nv.capmerc", "regs", "spill st/ld", "time", "cubin ×", ".text ×",
                         "capmerc ×"))
        for path, name in names.items():
            if name.endswith("]"):
                yield format.line(f"{name.rsplit(' ', 1)[1]} {path}")
        for skipped in self.skipped:
            yield format.line(f"skipped ptxas {skipped.version} ({skipped.path}): {skipped.why}: {skipped.reason}")

    def _ptxas_names(self) -> dict[str, str]:
        """path -> its version, with a [n] mark when two paths share that version."""
        versions = {row.ptxas: row.version for row in self.rows}
        shared = [path for path, version in versions.items() if list(versions.values()).count(version) > 1]
        return {path: f"{version} [{shared.index(path) + 1}]" if path in shared else version
                for path, version in versions.items()}


def _ratio_cells(ratio: MatrixRatio | None) -> tuple[str, str, str]:
    if ratio is None:
        return "", "", ""
    return tuple(format.times(value) for value in (ratio.cubin, ratio.text, ratio.capmerc))


def ptxas_matrix(ptx: str, ptxas_paths: Sequence[str], *, gpu_name: str | None = None, prefix: str = DEFAULT_PREFIX,
                 label: str = "PTX", extra_args: Sequence[str] = (), controls: ControlFile | None = None
                 ) -> PtxasMatrix:
    """Assemble `ptx` as is and with its entries renamed `prefix + name`, with each ptxas, and measure both.

    `extra_args` go to every ptxas call: pass the flags your frontend uses (Triton 3.9 adds
    `--regAllocOptLevel=2`, which changes spills), or the figures describe another build than the one you run.
    `controls` (a control file, `ptxas-matrix --options acf:FILE`) goes to every ptxas too.
    A ptxas older than the PTX (its `.version` or target), or one that cannot read `controls`, is skipped with
    the reason; any other refusal, or no ptxas able to assemble it, is an error."""
    if not _ptx.entries(ptx):
        raise TritonhookError(f"{label}: no .entry in this PTX, so no kernel to assemble and compare")
    if gpu_name is not None:
        _ptx.sm_number(gpu_name)  # a bad name here would read as every ptxas refusing the PTX
    gpu = gpu_name or _ptx.target(ptx, label=label)
    variants = (("plain", ptx), ("renamed", rename_ptx(ptx, prefix)))
    rows, ratios, skipped = [], [], []
    for path in ptxas_paths:
        version = ptxas_version(path) or "?"
        if controls is not None and (refusal := controls_refusal(controls, path)):
            skipped.append(SkippedPtxas(path, version, refusal, "cannot read the control file"))
            continue
        try:
            built = {variant: assemble(source, path, gpu, extra_args, label=f"{label} ({variant})", controls=controls,
                                       reuse=False)  # each row says how long ptxas took
                     for variant, source in variants}
        except TritonhookError as exc:
            if (refusal := skip_reason(str(exc))) is None:
                raise
            skipped.append(SkippedPtxas(path, version, refusal[1], refusal[0]))
            continue
        cubins = {variant: Cubin.from_bytes(result.cubin, label=f"{label} ({variant}, ptxas {version})")
                  for variant, result in built.items()}
        for variant, cubin in cubins.items():
            rows += [MatrixRow(path, version, variant, kernel.name, cubin.size, kernel.text_size, kernel.capmerc_size,
                               kernel.registers, kernel.spill_stores, kernel.spill_loads, built[variant].seconds)
                     for kernel in cubin.kernels.values()]
        renamed_name = prefixer(prefix)
        for name, plain in cubins["plain"].kernels.items():
            renamed = cubins["renamed"].kernels[renamed_name(name)]
            ratios.append(MatrixRatio(path, version, name, renamed.name, cubins["renamed"].size / cubins["plain"].size,
                                      _over(renamed.text_size, plain.text_size),
                                      _over(renamed.capmerc_size, plain.capmerc_size),
                                      _over(built["renamed"].seconds, built["plain"].seconds)))
    if not rows:
        raise _none_assembled(label, gpu, skipped)
    return PtxasMatrix(rows, ratios, skipped)


def _none_assembled(label: str, gpu: str, skipped: list[SkippedPtxas]) -> TritonhookError:
    """Why no ptxas assembled the PTX; a target every ptxas refused is the target's fault (a typo such as sm_1000),
    not the versions': said as such."""
    if skipped and all(s.why == UNKNOWN_TARGET for s in skipped):
        return TritonhookError(f"{label}: {gpu} is a target unknown to every ptxas found "
                               f"({', '.join(s.version for s in skipped)}); give a GPU name such as sm_90a")
    return TritonhookError(f"{label}: no ptxas could assemble it: "
                           + "; ".join(f"{s.version} ({s.why}: {s.reason})" for s in skipped))


def _over(value: float, base: float) -> float | None:
    return value / base if base else None
