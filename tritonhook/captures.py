"""The store's records as people read them: `CaptureListing` (`tritonhook ls`) and `CaptureSummary`
(`tritonhook show ID`). Each renders itself (rich) and to JSON."""

from __future__ import annotations

import dataclasses
import time

from . import format
from .format import human_bytes
from .store import Capture
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
    """One capture's record: kernel, target, toolchain, options, times and artifacts."""

    capture: Capture

    def to_json(self) -> dict:
        return self.capture.to_json()

    def __rich_console__(self, console, options):
        capture = self.capture
        where = f"{capture.src_file}:{capture.src_line}" if capture.src_file else "-"
        rows = [("kernel", capture.kernel), ("entry", capture.entry), ("original entry", capture.original_entry),
                ("event", capture.event), ("frontend", capture.frontend_label), ("source", where),
                ("arch", capture.arch), ("ptxas", f"{capture.ptxas_version} ({capture.ptxas_path})"),
                ("num_warps / num_stages",
                 f"{capture.options.get('num_warps')} / {capture.options.get('num_stages')}"),
                ("shared memory", human_bytes(capture.metadata.get("shared"))),
                ("TMA loads rewritten to CTA scope", capture.metadata.get(FIXED_KEY, "-")),
                ("stage times", ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in capture.times.items()))]
        rows += [(f"artifact {a.stage}", f"{human_bytes(a.size)}  sha256 {a.sha256[:16]}")
                 for a in capture.artifacts.values()]
        yield format.table(("field", "value"), rows, title=f"capture {capture.id}")
