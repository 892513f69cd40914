"""How results look: the number formatters every report uses (one set, so a figure reads the same in every
table), and the rich building blocks results render themselves with (`table`, `line`, the console, `progress`).

Low in the layers: result types (memwatch, A/B, diff, preflight, store) import it, and so does the CLI:
printing a result is `show(result, as_json=...)`, with each result's `__rich_console__` and `to_json()`. The formatters are pure functions of plain values; "-" stands for a value that could not be
read (None). A result with a `plain_text()` (the `ls` listing) is printed as that when stdout is no terminal: no
rich to import or to lay the table out (most of `tritonhook ls | ...`'s time before).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Iterable, Sequence

from .files import json_text


def human_bytes(count: int | None) -> str:
    """1536 -> "1.5 KiB": bytes in the largest binary unit below 1024 of it."""
    if count is None:
        return "-"
    value = float(count)
    for unit in ("B", "KiB", "MiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def bytes_exact(value: int | None) -> str:
    """-1536 -> "-1.5 KiB (1,536 B)": human size and, from 1 KiB, the exact count (memory figures are compared
    to the byte with a formula)."""
    if value is None:
        return "-"
    sign = "-" if value < 0 else ""
    exact = f" ({value:,} B)" if abs(value) >= 1024 else ""
    return f"{sign}{human_bytes(abs(value))}{exact}"


def count(value) -> str:
    """An integer with thousands separators; anything else as text, None as "-"."""
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def delta(a, b) -> str:
    """b - a with its sign ("+1,024", "0"); empty when either side is not an integer."""
    if not isinstance(a, int) or not isinstance(b, int):
        return ""
    return f"{b - a:+,}" if b != a else "0"


def share(fraction: float | None) -> str:
    return "" if fraction is None else f"{fraction:.1%}"


def times(ratio: float | None, missing: str = "-") -> str:
    """A ratio as "1.15x"; `missing` where there is none."""
    return missing if ratio is None else f"{ratio:.2f}x"


def size_ratio(a, b) -> str:
    """b / a as "1.15x"; empty when a is zero or missing, or b is missing."""
    return "" if not a or b is None else times(b / a)


# ----- rich building blocks ---------------------------------------------------------------------------------
def console(stderr: bool = False):
    """A rich console; piped output gets a wide page instead of rich's 80 columns, so tables stay readable."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else 200
    return Console(stderr=stderr, highlight=False, soft_wrap=False, width=width)


def table(columns: Sequence[str], rows: Iterable[Sequence[Any]], *, title: str | None = None,
          right_align: Sequence[str] = ()):
    """A rich Table: `columns` headers, cells as text (None -> empty), `right_align` names the numeric columns."""
    from rich.table import Table

    built = Table(title=title, show_lines=False, header_style="bold")
    for column in columns:
        built.add_column(column, justify="right" if column in right_align else "left", overflow="fold")
    for row in rows:
        built.add_row(*("" if cell is None else str(cell) for cell in row))
    return built


def line(text: str):
    """A line of plain text as a renderable: no markup, no wrapping (a SASS diff line stays one line)."""
    from rich.text import Text

    return Text(text, no_wrap=True, overflow="ignore", end="\n")


class progress:
    """Progress of long work on stderr: `with progress(on, total, "A/B") as step: step("round 1")`. A terminal gets
    a rich bar; a log file (rich would leave blank lines there) a plain line at most every `LOG_EVERY_S`, and one
    at the end when it had any: a sweep running for minutes into a log says how far it got, a short one says
    nothing."""

    LOG_EVERY_S = 30.0

    def __init__(self, enabled: bool, total: int, label: str):
        self.enabled, self.total, self.label, self.bar = enabled, total, label, None
        self.done, self.began, self.logged_at = 0, time.monotonic(), None

    def __enter__(self):
        screen = console(stderr=True)
        if self.enabled and screen.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn(f"{self.label} {{task.description}}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), console=screen, transient=True)
            self.bar.start()
            self.task = self.bar.add_task("starting", total=self.total)
        return self._step

    def _step(self, description: str) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=description)
        elif self.enabled and time.monotonic() - (self.logged_at or self.began) >= self.LOG_EVERY_S:
            self._log(description)

    def _log(self, description: str) -> None:
        self.logged_at = time.monotonic()
        print(f"{self.label} {self.done}/{self.total} {description} ({self.logged_at - self.began:.0f} s)",
              file=sys.stderr, flush=True)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()
        elif self.logged_at is not None:
            self._log("done")
        return False


def stdout_is_terminal() -> bool:
    """Whether rich would draw for a terminal on stdout (its `Console.is_terminal`), read without importing rich:
    TTY_COMPATIBLE=1/0 and FORCE_COLOR decide as rich reads them, then `isatty`. A Jupyter kernel counts as one
    (rich renders there), so a notebook keeps the rich table."""
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    force = os.environ.get("FORCE_COLOR")
    if force is not None:
        return force != ""
    if "ipykernel" in sys.modules:
        return True
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # replaced by an object without it, or closed
        return False


def plain_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], *, right_align: Sequence[str] = ()) -> str:
    """A table as plain text for a pipe or a file: the header line, then one line per row, the columns two spaces
    apart and as wide as their widest cell (`right_align` ones flush right), no rule, box or escape code; each line
    ends without trailing spaces. Cells as in `table` (None -> empty)."""
    text = [tuple(columns), *(tuple("" if cell is None else str(cell) for cell in row) for row in rows)]
    widths = [max(len(row[i]) for row in text) for i in range(len(columns))]
    right = [column in right_align for column in columns]
    return "".join("  ".join(cell.rjust(width) if flush else cell.ljust(width)
                             for cell, width, flush in zip(row, widths, right)).rstrip() + "\n" for row in text)


def print_json(data: Any) -> None:
    sys.stdout.write(json_text(data, indent=2, sort_keys=True, default=str) + "\n")


def print_table(columns: Sequence[str], rows: Iterable[Sequence[Any]], *, title: str | None = None,
                right_align: Sequence[str] = ()) -> None:
    """A one-off table (the CLI's listings, benchmarks and examples); results of the library render themselves."""
    console().print(table(columns, rows, title=title, right_align=right_align))


def show(result, *, as_json: bool = False) -> None:
    """Print a result: its `to_json()` as JSON, or the result itself through rich (as its `plain_text()`, when it
    has one, where stdout is no terminal); the lines in its `warnings` go to stderr (prefixed with its
    `warning_prefix` when it has one), so stdout holds the result alone."""
    if as_json:
        print_json(result.to_json())
        return
    prefix = getattr(result, "warning_prefix", "")
    if hasattr(result, "plain_text") and not stdout_is_terminal():
        sys.stdout.write(result.plain_text())
        sys.stdout.flush()
        for warning in getattr(result, "warnings", ()):
            print(f"{prefix}: {warning}" if prefix else warning, file=sys.stderr)
        return
    console().print(result, crop=False)
    for warning in getattr(result, "warnings", ()):  # soft_wrap: one line, however long (rich wraps `line`s too)
        console(stderr=True).print(f"[yellow]{prefix}:[/] {warning}" if prefix else line(warning), soft_wrap=True)
