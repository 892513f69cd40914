"""`UpgradeResult`: per kernel, the four cells of an upgrade at the cubin level, as plain data that renders itself
(rich) and to JSON, saved in the store as result kind `upgrade`."""

from __future__ import annotations

import dataclasses

from .. import format
from ..cubin import CubinDelta
from ..errors import TritonhookError
from ..store import ResultKind, register_result_kind

RESULT_KIND = "upgrade"
BASELINE, PTXAS_ONLY = "old PTX, old ptxas", "old PTX, new ptxas"
PTX_ONLY, BOTH = "new PTX, old ptxas", "new PTX, new ptxas"
CELLS = (BASELINE, PTXAS_ONLY, PTX_ONLY, BOTH)
"""The four builds of a kernel: today (the captured cubin), the ptxas change alone, the PTX change alone, both
(after the upgrade). Each ptxas runs with the flags of the release that runs it (`binaries.triton_ptxas_args`)."""


@dataclasses.dataclass
class Cell:
    """One build: `status` "ok", "unsupported" (a PTX ISA this ptxas cannot read, needed), or why ptxas gave no
    cubin (`binaries.CAUSES`); `delta` against today's cubin; `variant` the folder holding its cubin, PTX and
    metadata; `note` what was changed to build it (a PTX ISA lowered to what this ptxas reads)."""

    status: str
    ptxas: str | None = None
    delta: CubinDelta | None = None
    error: str | None = None
    variant: str | None = None
    note: str | None = None

    def text(self) -> str:
        if self.status != "ok":
            return f"{self.status}: {self.error}"
        built = self.delta.cell() if self.delta is not None else "today"
        return f"{built} ({self.note})" if self.note else built

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "delta": self.delta.to_json() if self.delta else None}

    @classmethod
    def from_json(cls, data: dict) -> "Cell":
        delta = data.get("delta")
        return cls(**{**data, "delta": CubinDelta.from_json(delta) if delta else None})


@dataclasses.dataclass
class KernelUpgrade:
    """One captured kernel. `ptx_changed`: whether the rebuilt PTX differs (None: not rebuilt); `rebuild_error`:
    the other release's compiler error, or why no rebuild was tried; `abi` is None when a launcher of today's
    kernel launches the rebuilt one as is, else what changed ("not replayable across these releases: ...")."""

    capture_id: int
    kernel: str
    entry: str
    arch: str
    specialization: str
    cells: dict[str, Cell]
    ptx_isa: tuple[str, str | None] = ("", None)
    triton_hash: str | None = None  # Triton's cache key of today's build: how a replay elsewhere finds the kernel
    ptx_changed: bool | None = None
    rebuild_error: str | None = None
    abi: str | None = None
    unknown_options: list[str] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "cells": {name: cell.to_json() for name, cell in self.cells.items()}}

    @classmethod
    def from_json(cls, data: dict) -> "KernelUpgrade":
        cells = {name: Cell.from_json(cell) for name, cell in data["cells"].items()}
        return cls(**{**data, "cells": cells, "ptx_isa": tuple(data["ptx_isa"])})

    def ptx_text(self) -> str:
        old, new = self.ptx_isa
        if self.ptx_changed is None:
            return one_line(self.rebuild_error) if self.rebuild_error else "-"
        isa = f", ISA {old}" + (f"→{new}" if new != old else "")
        return ("changed" if self.ptx_changed else "same") + isa


@dataclasses.dataclass
class UpgradeResult:
    """Every kernel's cells for one upgrade: `to_triton` None is a ptxas-only upgrade (`new_ptxas` under the same
    Triton). `variants` is the folder of each cell's cubin and metadata (`VARIANT/<capture id>/<cell>/`), laid out
    as a sweep replay's variants are: the seam a GPU replay of the four cells takes them from (not timed here)."""

    from_triton: str
    to_triton: str | None
    new_ptxas: str | None
    kernels: list[KernelUpgrade]
    variants: str | None = None
    recording_id: int | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)
    id: int | None = None
    warning_prefix = "tritonhook upgrade"

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "kernels": [k.to_json() for k in self.kernels]}

    @classmethod
    def from_json(cls, data: dict, *, source: str = "upgrade result") -> "UpgradeResult":
        try:
            fields = {f.name for f in dataclasses.fields(cls)} - {"kernels"}
            return cls(kernels=[KernelUpgrade.from_json(k) for k in data["kernels"]],
                       **{k: v for k, v in data.items() if k in fields})
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise TritonhookError(f"{source}: malformed upgrade result ({type(exc).__name__}: {exc})") from None

    def describe(self) -> str:
        """What was upgraded, and how many kernels: "Triton 3.6.0 → Triton 3.9.0, 2 kernel(s)"."""
        after = f"Triton {self.to_triton}" if self.to_triton else f"ptxas {self.new_ptxas} under the same Triton"
        return f"Triton {self.from_triton} → {after}, {len(self.kernels)} kernel(s)"

    def title(self) -> str:
        return f"tritonhook upgrade: {self.describe()}"

    def __rich_console__(self, console, options):
        from rich.markup import escape  # a compiler error may hold brackets rich would read as markup

        rows = [[f"{k.capture_id} {k.entry}" + (f" ({k.specialization})" if k.specialization else ""), k.arch,
                 k.ptx_text(), *(_cell_text(k, name) for name in CELLS[1:]),
                 k.abi or ("same" if k.ptx_changed is not None else "-")] for k in self.kernels]
        columns = ["capture kernel", "arch", "PTX", *(f"{name} ({_ptxas_of(self, name)})" for name in CELLS[1:]),
                   "launch ABI"]
        yield format.table(columns, [[escape(cell) for cell in row] for row in rows], title=self.title())
        if self.variants:
            yield format.line(f"each cell's cubin and metadata: {self.variants}/<capture id>/<cell> (not timed here)")


def one_line(error: str) -> str:
    """A compiler error in a table cell: its first line (where) and its last (what); the JSON keeps it whole."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    return lines[0] if len(lines) < 2 else f"{lines[0]} {lines[-1]}"


def _cell_text(kernel: KernelUpgrade, name: str) -> str:
    cell = kernel.cells.get(name)
    return cell.text() if cell is not None else "-"


def _ptxas_of(result: UpgradeResult, name: str) -> str:
    """The ptxas versions a column's cells were built with ("12.8.93", "13.4.x", or several)."""
    found = sorted({k.cells[name].ptxas for k in result.kernels if name in k.cells and k.cells[name].ptxas})
    return ", ".join(found) or "-"


register_result_kind(ResultKind(RESULT_KIND, UpgradeResult.from_json, source="recording_id"))
