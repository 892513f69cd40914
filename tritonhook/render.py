"""Presentation for the CLI: rich tables for people, JSON for programs. No computation here.

Results render themselves: each result type has `__rich_console__` (rich renderables built with `format.table`
and `format.line`) and `to_json()`; `show(result, as_json=...)` prints one either way, with the warnings a result
carries in a `warnings` list on stderr, so stdout holds the result alone. The pieces live in `format`, low in the
layers, so that a result can also print itself (`MemwatchResult.report()`); this module is the CLI's entry.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from .format import console, print_json, show, table

__all__ = ["console", "print_json", "print_table", "show"]


def print_table(columns: Sequence[str], rows: Iterable[Sequence[Any]], *, title: str | None = None,
                right_align: Sequence[str] = ()) -> None:
    """A one-off table (benchmarks and examples); results of the library render themselves instead."""
    console().print(table(columns, rows, title=title, right_align=right_align))
