"""MemwatchResult: what one watched region recorded; it renders itself (rich, JSON) and plots its timeline."""

from __future__ import annotations

import dataclasses
import io
import json
import os
from pathlib import Path

from .. import format
from ..errors import TritonhookError
from ..files import json_text, read_input, write_file
from ..format import bytes_exact, count
from ..store import ResultKind, Store, register_result_kind
from .attribution import Part, Snapshot, StackStart, attribute, stack_growths, stack_start, value_of
from .device import DeviceInfo
from .sampler import Sample

JSON_VERSION = 1
RESULT_KIND = "memwatch"
"""The kind memwatch results are saved under in the store's results table (declared below: found by label)."""
TIMELINE_MARGIN = 0.03
"""Space on each side of the plotted timeline, as a fraction of its length."""


@dataclasses.dataclass
class KernelStats:
    """Per kernel name: launches seen and the scratch they requested."""

    launches: int = 0
    loads: int = 0
    scratch_requests: int = 0
    scratch_bytes_max: int = 0
    scratch_bytes_total: int = 0
    scratch_in_torch: bool | None = None



@dataclasses.dataclass
class MemwatchResult:
    """Everything one watched region recorded; renders itself (`format.show`, `report()`), `to_json()` /
    `from_json()`, `plot()`; `save(store)` keeps it in a store (kind `RESULT_KIND`), where `tritonhook report`
    finds it. `label` says what was watched (the command, a --compare name); `id` is its store result id."""

    device: DeviceInfo
    interval_ms: float
    snapshots: list[Snapshot]
    samples: list[Sample]
    kernels: dict[str, KernelStats]
    warnings: list[str]
    label: str = ""
    id: int | None = None

    @property
    def before(self) -> Snapshot:
        return self.snapshots[0]

    @property
    def after(self) -> Snapshot:
        return self.snapshots[-1]

    def attribution(self) -> list[Part]:
        return attribute(self.snapshots, self.device)

    def stack_start(self) -> StackStart | None:
        return stack_start(self.snapshots)

    def summary(self) -> dict[str, int | None]:
        """The headline figures; `peak` is the highest NVML used seen (timeline or snapshot) minus before; the stack
        limit before is `stack_start` (the driver's default where the region started with no context)."""
        used = [s.used for s in (*self.samples, *self.snapshots) if s.used is not None]
        process = [s.process_used for s in self.samples if s.process_used is not None]
        base = value_of(self.before, "used")
        start = self.stack_start()
        return {"used_before": self.before.used, "used_after": self.after.used,
                "growth": value_of(self.after, "used") - base, "peak_growth": max(used) - base if used else None,
                "process_used_last": process[-1] if process else None,
                "process_used_peak": max(process) if process else None,
                "torch_reserved": self.after.torch_reserved, "torch_allocated": self.after.torch_allocated,
                "stack_limit_before": start.limit if start else None, "stack_limit_after": self.after.stack}

    def to_json(self) -> dict:
        return {"version": JSON_VERSION, "device": dataclasses.asdict(self.device), "interval_ms": self.interval_ms,
                "summary": self.summary(),
                "attribution": [dataclasses.asdict(p) for p in self.attribution()],
                "stack_growths": [dataclasses.asdict(g) for g in stack_growths(self.snapshots)],
                "kernels": {k: dataclasses.asdict(v) for k, v in self.kernels.items()},
                "warnings": self.warnings, "label": self.label,
                "snapshots": [dataclasses.asdict(s) for s in self.snapshots],
                "samples": [[s.t, s.used, s.reserved, s.process_used] for s in self.samples]}

    @classmethod
    def from_json(cls, data: dict, *, source: str = "memwatch JSON") -> "MemwatchResult":
        if not isinstance(data, dict) or data.get("version") != JSON_VERSION:
            raise TritonhookError(f"{source}: not a memwatch result (version {JSON_VERSION})")
        try:
            return cls(device=DeviceInfo(**data["device"]), interval_ms=data["interval_ms"],
                       snapshots=[Snapshot(**s) for s in data["snapshots"]],
                       samples=[Sample(*s) for s in data["samples"]],
                       kernels={k: KernelStats(**v) for k, v in data["kernels"].items()},
                       warnings=list(data["warnings"]), label=str(data.get("label", "")), id=data.get("id"))
        except (KeyError, TypeError) as exc:
            raise TritonhookError(f"{source}: malformed memwatch result ({exc})") from None

    def save(self, store: Store | str | os.PathLike | None) -> int:
        """Keep this result in `store` (a Store or its path; None: the default store); returns and sets its id."""
        self.id = Store.of(store).add_result(RESULT_KIND, self.to_json())
        return self.id

    # ----- presentation ---------------------------------------------------------------------------------------
    warning_prefix = "memwatch warning"

    def __rich_console__(self, console, options):
        device = self.device
        rows = [(key.replace("_", " "), self._figure_text(key, value)) for key, value in self.summary().items()]
        yield format.table(("figure", "value"), rows, title=f"memwatch: device {device.ordinal} {device.name} "
                           f"({device.sms} SMs x {device.max_threads_per_sm} threads/SM)")
        yield format.table(("part", "bytes", "formula", "detail"),
                           [(p.name, bytes_exact(p.bytes), p.formula, p.detail) for p in self.attribution()],
                           title="where the growth went (NVML used, after - before)", right_align=("bytes",))
        if self.kernels:
            yield format.table(("kernel", "loads", "launches", "scratch/launch max", "scratch total", "in torch"),
                               [(name, k.loads, k.launches, bytes_exact(k.scratch_bytes_max),
                                 bytes_exact(k.scratch_bytes_total), "-" if k.scratch_in_torch is None
                                 else str(k.scratch_in_torch).lower()) for name, k in self.kernels.items()],
                               title="Triton kernels", right_align=("loads", "launches", "scratch/launch max",
                                                                    "scratch total"))

    def _figure_text(self, key: str, value: int | None) -> str:
        if key == "stack_limit_before" and (start := self.stack_start()) is not None:
            return start.describe(count)
        return count(value) if "limit" in key else bytes_exact(value)

    def report(self) -> None:
        """Print the tables (stdout) and the warnings (stderr)."""
        format.show(self)

    def figure(self):
        """The timeline as a matplotlib figure (`plot` saves it, the report inlines it), the stack-limit rises
        marked. The time axis runs TIMELINE_MARGIN past the last reading, and the legend sits outside the axes, so
        a rise at the region's end shows with the level after it (the sampler runs on a while after the region)."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise TritonhookError("plotting a memwatch timeline needs matplotlib (pip install matplotlib)") from None
        figure, axes = plt.subplots(figsize=(10, 4))
        gib = 2 ** 30
        for label, field in (("NVML used", "used"), ("NVML reserved", "reserved"), ("this process", "process_used")):
            points = [(s.t, getattr(s, field)) for s in self.samples if getattr(s, field) is not None]
            if points:
                axes.plot([p[0] for p in points], [p[1] / gib for p in points], label=label)
        torch_points = [(s.t, s.torch_reserved) for s in self.snapshots if s.torch_reserved is not None]
        if torch_points:
            axes.step([p[0] for p in torch_points], [p[1] / gib for p in torch_points], where="post",
                      label="torch reserved")
        for growth in stack_growths(self.snapshots):
            axes.axvline(growth.t, color="red", linestyle="--", linewidth=0.8)
            axes.annotate(f"stack {growth.old}->{growth.new} ({growth.kernel or 'outside Triton'})",
                          (growth.t, axes.get_ylim()[1]), rotation=90, va="top", fontsize=7, color="red")
        times = [s.t for s in (*self.samples, *self.snapshots)]
        margin = TIMELINE_MARGIN * (max(times) - min(times)) or TIMELINE_MARGIN
        axes.set_xlim(min(times) - margin, max(times) + margin)
        axes.set_xlabel("seconds")
        axes.set_ylabel("GiB")
        axes.set_title(f"memwatch: {self.device.name}")
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        return figure

    def plot(self, path: str | os.PathLike) -> Path:
        """A PNG (or any matplotlib format) of the timeline (`figure`)."""
        import matplotlib.pyplot as plt

        figure, out, image = self.figure(), Path(path), io.BytesIO()
        try:  # drawn in memory: the file is written as every output file is (`files.write_file`)
            figure.savefig(image, format=out.suffix[1:] or "png", dpi=120, bbox_inches="tight")
        finally:
            plt.close(figure)
        return write_file(out, image.getvalue(), PLOT_WHAT)


register_result_kind(ResultKind(RESULT_KIND, MemwatchResult.from_json, label="label"))


# ----- comparing runs (each in a fresh process) -----------------------------------------------------------------
def compare_rows(results: dict[str, MemwatchResult]) -> list[tuple[str, ...]]:
    """One row per figure, one column per run; the first run is the baseline for the "vs" row."""
    names = list(results)
    summaries = {name: result.summary() for name, result in results.items()}  # each one a pass over the timeline
    baseline = summaries[names[0]]["used_after"] or 0
    rows = []
    for figure in ("used_after", "growth", "torch_reserved", "torch_allocated", "peak_growth"):
        rows.append((figure.replace("_", " "), *(bytes_exact(summaries[n][figure]) for n in names)))
    rows.append((f"used after vs {names[0]}",
                 *(bytes_exact((summaries[n]["used_after"] or 0) - baseline) for n in names)))
    parts = {name: result.attribution() for name, result in results.items()}
    for index, part in enumerate(parts[names[0]]):
        rows.append((part.name, *(bytes_exact(parts[n][index].bytes) for n in names)))
    rows.append(("stack limit after", *(count(results[n].after.stack) for n in names)))
    return rows


@dataclasses.dataclass
class MemwatchComparison:
    """Several runs side by side (`tritonhook memwatch --compare`), each recorded in a fresh process."""

    results: dict[str, MemwatchResult]

    def to_json(self) -> dict:
        return {name: result.to_json() for name, result in self.results.items()}

    def __rich_console__(self, console, options):
        yield format.table(("figure", *self.results), compare_rows(self.results),
                           title="memwatch comparison (one process each)", right_align=tuple(self.results))
        for name, result in self.results.items():
            for growth in stack_growths(result.snapshots):
                yield format.line(f"{name}: stack {growth.old} -> {growth.new} B/thread at {growth.where}")


PLOT_WHAT, JSON_WHAT = "plot", "memwatch result"
"""What a memwatch output file is called in the line that says it cannot be written (`files.write_file`)."""


def write_json(result: MemwatchResult | MemwatchComparison, path: str | os.PathLike) -> Path:
    """The result's JSON at `path`: what `tritonhook report --memwatch` reads (`load_result`)."""
    return write_file(path, json_text(result.to_json(), default=str), JSON_WHAT)


def load_result(path: Path) -> MemwatchResult:
    try:
        data = json.loads(read_input(path, JSON_WHAT))
    except ValueError as exc:
        raise TritonhookError(f"{path}: cannot read a memwatch result ({exc})") from None
    return MemwatchResult.from_json(data, source=str(path))


