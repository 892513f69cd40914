"""The store's records as people read them: `CaptureListing` (`tritonhook ls`) and `CaptureSummary`
(`tritonhook show ID`). Each renders itself (rich) and to JSON; the listing also as plain text (`plain_text`), what
`format.show` prints when stdout is no terminal."""

from __future__ import annotations

import dataclasses
import time

from . import format
from .format import human_bytes
from .store import TRITON_FRONTENDS, Capture


def artifact_size(capture: Capture, stage: str) -> str:
    artifact = capture.artifacts.get(stage)
    return human_bytes(artifact.size) if artifact else "-"


@dataclasses.dataclass
class CaptureListing:
    """One page of captures matching a filter: the newest (the default), or a keyset page after or before an id
    (`after` / `before`, as `Store.page` reads them); `total` (when known and larger) says how many the filter
    matched there, and the hint on stderr names the next page."""

    captures: list[Capture]
    total: int | None = None
    empty_note: str = ""
    after: int | None = None
    before: int | None = None

    COLUMNS = ("id", "time", "event", "frontend", "kernel (PTX entry)", "specialization", "arch", "ptxas", "ptx",
               "cubin", "compile s")
    RIGHT_ALIGN = ("id", "ptx", "cubin", "compile s")

    def to_json(self) -> list[dict]:
        return [c.to_json() for c in self.captures]

    def rows(self) -> list[tuple[str, ...]]:
        """The cells of the rows shown, as text: one list for the rich table and the plain one."""
        return [(str(c.id), time.strftime("%H:%M:%S", time.localtime(c.created)), c.event, c.frontend_label,
                 c.entry if not c.renamed else f"{c.entry} (was {c.original_entry})", c.specialization or "-",
                 c.arch, c.ptxas_version or "-", artifact_size(c, "ptx"), artifact_size(c, "cubin"),
                 f"{sum(c.times.values()):.2f}") for c in self.captures]

    def __rich_console__(self, console, options):
        if not self.captures:
            yield format.line(f"no captures{self.empty_note}")
            return
        yield format.table(self.COLUMNS, self.rows(), right_align=self.RIGHT_ALIGN)

    def plain_text(self) -> str:
        """The table for a pipe or a file: the same columns and cells, aligned with spaces, without rich."""
        if not self.captures:
            return f"no captures{self.empty_note}\n"
        return format.plain_table(self.COLUMNS, self.rows(), right_align=self.RIGHT_ALIGN)

    @property
    def warnings(self) -> list[str]:
        """The "more rows exist" hint, for stderr (stdout keeps the table alone)."""
        if self.total is None or self.total <= len(self.captures):
            return []
        shown = f"{len(self.captures):,} of {self.total:,}"
        if self.after is not None:
            return [f"showing {shown} after id {self.after}; next page: --after {self.captures[-1].id}"]
        if self.before is not None:
            return [f"showing {shown} before id {self.before}; next page: --before {self.captures[0].id}"]
        return [f"showing newest {shown}; --all for every row"]


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
            from .tma_scope import FIXED_KEY  # here: tma_scope loads the Triton adapter, which `ls` never needs

            yield "TMA loads rewritten to CTA scope", c.metadata.get(FIXED_KEY, "-")
        yield "stage times", ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in c.times.items())
