"""The GPU half of `upgrade`: each recorded kernel's four cells timed by the sweep's replay engine (isolated
workers, interleaved rounds, intervals, outputs checked against today's build and its own run-to-run spread), and
each kernel's change split into Triton's codegen (new PTX, today's ptxas), ptxas (today's PTX, the new ptxas) and
their interaction (what the upgraded build adds beyond the product of the two).

The cells are built where the other Triton release is installed (`cells.upgrade`, any machine); only their cubins
and metadata travel. The recording replayed may be another one than the cells were built from (the same workload
recorded again on the GPU machine): a signature finds its kernel's cells by Triton's cache key (`triton_hash`),
which is the same wherever the same Triton compiles the same kernel. The split is saved in the replay's store as
result kind `upgrade-timing` (the replay itself as a sweep result), for the HTML report.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Sequence

from .. import config, format
from ..cubin import Cubin
from ..errors import TritonhookError
from ..store import ResultKind, Store, register_result_kind
from ..sweep.recording import Recording, Signature, capability_of
from ..sweep.replay import ReplayPlan, Workers, replay
from ..sweep.result import SweepResult
from ..sweep.schedule import WORKER
from ..sweep.builds import BuiltVariant
from ..binaries import CAUSES
from .result import BASELINE, BOTH, CELLS, PTX_ONLY, PTXAS_ONLY, KernelUpgrade, UpgradeResult

RESULT_KIND = "upgrade-timing"
SPLITS = ("codegen", "ptxas", "upgraded")
"""The `KernelSplit` ratios, each a cell's time over today's: new PTX, new ptxas, both."""
LABELS = {BASELINE: "today", PTXAS_ONLY: "new ptxas", PTX_ONLY: "new PTX", BOTH: "upgraded"}
"""The replay's variant label of each cell (short: they head the sweep table's columns)."""


@dataclasses.dataclass
class KernelSplit:
    """One kernel's change after the upgrade: each ratio of a cell's time to today's (None: not timed) with its
    interval, and the interaction: the upgraded ratio over the product of the two single changes."""

    signature: int
    label: str
    share: float | None
    codegen: tuple | None
    ptxas: tuple | None
    upgraded: tuple | None
    outputs: str

    @property
    def interaction(self) -> float | None:
        if None in (self.codegen, self.ptxas, self.upgraded):
            return None
        return self.upgraded[0] / (self.codegen[0] * self.ptxas[0])

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "interaction": self.interaction}

    @classmethod
    def from_json(cls, data: dict) -> "KernelSplit":
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: (tuple(v) if k in SPLITS and v is not None else v) for k, v in data.items() if k in fields})


@dataclasses.dataclass
class UpgradeTiming:
    """The replay of the cells (`sweep`, saved as a sweep result) and each kernel's split; renders both.

    The split is saved as well (`saved`, result kind `upgrade-timing`): with the sweep's id in place of the sweep,
    a result of its own; with what was upgraded (`upgrade`, `UpgradeResult.describe`); and with the store that
    holds upgrade `upgrade_id` when it is not the replay's own (`cells_store`, `--cells-store`): an id names a
    result of one store only. Loaded from there, `sweep` is None."""

    upgrade_id: int | None
    sweep: SweepResult | None
    kernels: list[KernelSplit]
    upgrade: str = ""
    cells_store: str | None = None
    sweep_id: int | None = None
    id: int | None = None

    def workload(self, change: str = "upgraded") -> float | None:
        """The recorded workload's Triton GPU time after the change over today's: every kernel's share times its
        ratio (`change`: "codegen", "ptxas" or "upgraded"), a kernel not timed counted unchanged. A point estimate:
        the shares are the recording's, the ratios the replay's medians."""
        shares = [(k.share or 0.0, getattr(k, change)) for k in self.kernels]
        total = sum(share for share, _ in shares)
        if not total:
            return None
        return sum(share * (ratio[0] if ratio else 1.0) for share, ratio in shares) / total

    def to_json(self) -> dict:
        return {"upgrade_id": self.upgrade_id, "sweep": self.sweep.to_json() if self.sweep is not None else None,
                "kernels": [k.to_json() for k in self.kernels],
                "workload": {change: self.workload(change) for change in SPLITS}}

    def saved(self) -> dict:
        """What the store keeps: `to_json` with the sweep's id for the sweep, and where the upgrade is."""
        return {**{k: v for k, v in self.to_json().items() if k != "sweep"}, "upgrade": self.upgrade,
                "cells_store": self.cells_store, "sweep_id": self.sweep_id}

    @classmethod
    def from_json(cls, data: dict, *, source: str = "upgrade timing") -> "UpgradeTiming":
        try:
            return cls(data["upgrade_id"], None, [KernelSplit.from_json(k) for k in data["kernels"]],
                       data.get("upgrade", ""), data.get("cells_store"), data.get("sweep_id"), data.get("id"))
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise TritonhookError(f"{source}: malformed upgrade timing ({type(exc).__name__}: {exc})") from None

    def __rich_console__(self, console, options):
        from rich.markup import escape  # kernel labels hold brackets rich would read as markup

        if self.sweep is not None:
            yield self.sweep
        rows = [[escape(k.label), format.share(k.share), _ratio(k.codegen), _ratio(k.ptxas),
                 "-" if k.interaction is None else f"{k.interaction:.3f}", _ratio(k.upgraded), escape(k.outputs)]
                for k in self.kernels]
        yield format.table(("kernel", "share", "Triton codegen", "ptxas", "interaction", "upgraded", "outputs"), rows,
                           title=f"upgrade {self.upgrade_id}: time after / today, median [95% interval]")
        estimates = {change: self.workload(change) for change in SPLITS}
        if None not in estimates.values():
            yield format.line("workload (Triton GPU time after / today, untimed kernels unchanged): "
                              + ", ".join(f"{change} x{ratio:.3f}" for change, ratio in estimates.items()))


def time_cells(recording: Recording, store: Store, upgraded: UpgradeResult, cells_store: Store, *,
               rounds: int = config.sweep.DEFAULT_ROUNDS, l2: str = config.sweep.L2_MODES[0],
               kernel: str | None = None, top: int | None = None, progress: bool = False,
               worker: Sequence[str] = WORKER) -> UpgradeTiming:
    """Replay `recording` (in `store`, on this machine's GPU) with each signature's cells from `upgraded` (saved in
    `cells_store`, whose `upgrades/` folder holds the cells' cubins) as its variants; the split saved in `store`.
    `worker`: as `replay`'s."""
    by_hash = {k.triton_hash: k for k in upgraded.kernels if k.triton_hash}
    if not by_hash:
        raise TritonhookError(f"upgrade {upgraded.id}: its kernels carry no Triton cache key (made before "
                              f"`upgrade` recorded them): build the cells again")
    refuse_other_arch(recording, recording.signatures, {h: k.arch for h, k in by_hash.items()},
                      f"upgrade {upgraded.id}'s cells")

    def prebuilt(signature: Signature) -> dict[str, BuiltVariant] | str:
        cells = by_hash.get(signature.triton_hash)
        if cells is None:
            return f"no cells of this kernel in upgrade {upgraded.id}"
        return built_cells(cells, cells_store.path)

    sweep = replay(recording, store, [], ReplayPlan(kernel=kernel, top=top, rounds=rounds, l2=l2, explain_misses=False),
                   workers=Workers.at(worker=worker, progress=progress), prebuilt=prebuilt)
    splits = [KernelSplit(row.signature, row.label, row.share,
                          *(_ratio_of(row, LABELS[c]) for c in (PTX_ONLY, PTXAS_ONLY, BOTH)),
                          row.outputs if row.status == "ok" else row.status) for row in sweep.rows]
    elsewhere = Path(cells_store.path).resolve() != Path(store.path).resolve()
    timing = UpgradeTiming(upgraded.id, sweep, splits, upgraded.describe(),
                           str(cells_store.path) if elsewhere else None, sweep.id)
    timing.id = store.add_result(RESULT_KIND, timing.saved())
    return timing


def refuse_other_arch(recording: Recording, signatures: Sequence[Signature], builds: dict[str, str],
                      what: str) -> None:
    """One line, before anything is built or replayed, where `signatures` of `recording` were recorded on another
    GPU architecture than the builds they would be timed with (`builds`: Triton cache key -> the build's arch,
    `what` names them): a signature whose own kernel's build is for another arch, or builds none of whose archs the
    recording has (cells made from another machine's captures, whose kernels no signature finds then)."""
    recorded = {s.id: s.arch or recording.arch for s in signatures if s.arch or recording.arch}
    for signature in signatures:
        arch = builds.get(signature.triton_hash)
        ours = recorded.get(signature.id)
        if arch is not None and ours is not None and capability_of(arch) != capability_of(ours):
            raise TritonhookError(f"recording {recording.id}: signature {signature.id} ({signature.kernel}) was "
                                  f"recorded on {ours}, {what} are for {arch}: a recording from another arch (time "
                                  f"it with builds for {ours})")
    theirs, ours = set(builds.values()), set(recorded.values())
    if theirs and ours and not {capability_of(a) for a in theirs} & {capability_of(a) for a in ours}:
        raise TritonhookError(f"recording {recording.id} was recorded on {', '.join(sorted(ours))}, {what} are for "
                              f"{', '.join(sorted(theirs))}: a recording from another arch (time it with builds for "
                              f"its own)")


def built_cells(kernel: KernelUpgrade, cells_root: Path) -> dict[str, BuiltVariant] | str:
    """The kernel's cells as replay variants, today's first. A cell that did not build, or a new-PTX cell whose
    launch ABI today's launcher cannot serve (`kernel.abi`), is kept as a failed variant (not timed, says why)."""
    built: dict[str, BuiltVariant] = {}
    texts: dict[str, str] = {}
    for name in CELLS:
        cell = kernel.cells.get(name)
        if cell is None:
            continue
        label = LABELS[name]
        reason = cell.error if cell.status != "ok" else kernel.abi if name in (PTX_ONLY, BOTH) else None
        if reason is not None or cell.variant is None:
            cause = cell.status if cell.status in CAUSES else "unsupported"
            built[label] = BuiltVariant(label, kernel.entry, b"", b"", cell.ptxas, None, {}, failed=cause,
                                        error=reason or "no cubin written")
            continue
        folder = _folder(cell.variant, cells_root)
        cubin = (folder / "kernel.cubin").read_bytes()
        parsed = Cubin.from_bytes(cubin, label=str(folder / "kernel.cubin"))
        entry = next(iter(parsed.kernels))
        summary = parsed.summary(entry)
        twin = next((other for other, text in texts.items() if text == summary["text_sha256"]), None)
        texts.setdefault(label, summary["text_sha256"])
        built[label] = BuiltVariant(label, entry, cubin, (folder / "metadata.json").read_bytes(), cell.ptxas, None,
                                    summary, same_text_as=twin)
    if LABELS[BASELINE] not in built or built[LABELS[BASELINE]].failed:
        return "today's build is not among the cells"
    return built


def _folder(written: str, cells_root: Path) -> Path:
    """A cell's folder: as written, else the same place under this copy of the cells' store (the store moved
    between the machine that built the cells and the GPU machine)."""
    path = Path(written)
    if path.is_dir():
        return path
    parts = path.parts
    if "upgrades" in parts:
        moved = cells_root.joinpath(*parts[parts.index("upgrades"):])
        if moved.is_dir():
            return moved
    raise TritonhookError(f"{written}: no such cell folder (nor under {cells_root / 'upgrades'})")


def _ratio_of(row, label: str) -> tuple | None:
    timing = next((v for v in row.variants if v.label == label), None)
    if timing is None or timing.ratio is None or not math.isfinite(timing.ratio):
        return None
    return timing.ratio, timing.low, timing.high


def _ratio(value: tuple | None) -> str:
    return "-" if value is None else f"{value[0]:.3f} [{value[1]:.3f}, {value[2]:.3f}]"


register_result_kind(ResultKind(RESULT_KIND, UpgradeTiming.from_json))
