"""The store's records as people read them: `CaptureListing` (`tritonhook ls`) and `CaptureSummary`
(`tritonhook show ID`). Each renders itself (rich) and to JSON."""

from __future__ import annotations

import dataclasses
import time

from . import format
from .format import human_bytes
from .store import TRITON_FRONTENDS, Capture
from .tma_scope import FIXED_KEY


def artifact_size(capture: Capture, stage: str) -> str:
    artifact = capture.artifacts.get(stage)
    return human_bytes(artifact.size) if artifact else "-"


@dataclasses.dataclass
class CaptureListing:
    """The newest captures matching a filter; `total` (when known and larger) says how many the filter matched."""

    captures: list[Capture]
    total: int | None = None
    empty_note: str = ""

    def to_json(self) -> list[dict]:
        return [c.to_json() for c in self.captures]

    def __rich_console__(self, console, options):
        if not self.captures:
            yield format.line(f"no captures{self.empty_note}")
            return
        rows = [(c.id, time.strftime("%H:%M:%S", time.localtime(c.created)), c.event, c.frontend_label,
                 c.entry if not c.renamed else f"{c.entry} (was {c.original_entry})", c.specialization or "-",
                 c.arch, c.ptxas_version or "-", artifact_size(c, "ptx"), artifact_size(c, "cubin"),
                 f"{sum(c.times.values()):.2f}") for c in self.captures]
        yield format.table(("id", "time", "event", "frontend", "kernel (PTX entry)", "specialization", "arch",
                            "ptxas", "ptx", "cubin", "compile s"), rows,
                           right_align=("id", "ptx", "cubin", "compile s"))

    @property
    def warnings(self) -> list[str]:
        """The "more rows exist" hint, for stderr (stdout keeps the table alone)."""
        if self.total is None or self.total <= len(self.captures):
            return []
        return [f"showing newest {len(self.captures):,} of {self.total:,}; --all for every row"]


@dataclasses.dataclass
class CaptureSummary:
    """One capture's record: kernel, target, toolchain, options, times and artifacts. A field its frontend does not
    record (the source line and num_warps of a PTX that the ptxas wrapper saw, the ptxas of a CuTe DSL dump) is left
    out rather than shown as None."""

    capture: Capture

    def to_json(self) -> dict:
        return self.capture.to_json()

    def __rich_console__(self, console, options):
        capture = self.capture
        rows = [(name, value) for name, value in self._fields() if value not in (None, "")]
        rows += [(f"artifact {a.stage}", f"{human_bytes(a.size)}  sha256 {a.sha256[:16]}")
                 for a in capture.artifacts.values()]
        yield format.table(("field", "value"), rows, title=f"capture {capture.id}")

    def _fields(self):
        """(field, value) pairs; a value of None or "" is not known for this capture."""
        c = self.capture
        warps, stages = c.options.get("num_warps"), c.options.get("num_stages")
        shared = c.metadata.get("shared")
        yield from (("kernel", c.kernel), ("entry", c.entry), ("original entry", c.original_entry),
                    ("event", c.event), ("frontend", c.frontend_label))
        yield "source", c.src_file if c.src_line is None else f"{c.src_file}:{c.src_line}"
        yield "arch", c.arch
        yield "ptxas", " ".join(part for part in (c.ptxas_version, c.ptxas_path and f"({c.ptxas_path})") if part)
        yield "num_warps / num_stages", \
            None if warps is None and stages is None else f"{format.count(warps)} / {format.count(stages)}"
        yield "shared memory", None if shared is None else human_bytes(shared)
        if c.frontend in TRITON_FRONTENDS:  # the TMA-scope rewrite is a stage of Triton's compile
            yield "TMA loads rewritten to CTA scope", c.metadata.get(FIXED_KEY, "-")
        yield "stage times", ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in c.times.items())
