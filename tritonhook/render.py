"""Presentation for the CLI: rich tables for people, JSON for programs. No computation here.

Results render themselves: each result type has `__rich_console__` (rich renderables built with `table` and
`line` below) and `to_json()`; `show(result, as_json=...)` prints one either way. Warnings a result carries in a
`warnings` list go to stderr, so stdout holds the result alone.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Iterable, Sequence


def console(stderr: bool = False):
    """A rich console; piped output gets a wide page instead of rich's 80 columns, so tables stay readable."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else 200
    return Console(stderr=stderr, highlight=False, soft_wrap=False, width=width)


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=True, default=str)
    sys.stdout.write("\n")


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


def print_table(columns: Sequence[str], rows: Iterable[Sequence[Any]], *, title: str | None = None,
                right_align: Sequence[str] = ()) -> None:
    console().print(table(columns, rows, title=title, right_align=right_align))


def show(result, *, as_json: bool = False) -> None:
    """Print a result: its `to_json()` as JSON, or the result itself through rich (and its warnings to stderr)."""
    if as_json:
        print_json(result.to_json())
        return
    console().print(result, crop=False)
    for warning in getattr(result, "warnings", ()):
        console(stderr=True).print(f"[yellow]{getattr(result, 'warning_prefix', 'warning')}:[/] {warning}")


class progress:
    """A rich progress bar on a terminal's stderr: `with progress(on, total, "A/B") as step: step("round 1")`.
    A log file gets no bar (rich would leave blank lines there)."""

    def __init__(self, enabled: bool, total: int, label: str):
        self.enabled, self.total, self.label, self.bar = enabled, total, label, None

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
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=description)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()
        return False
