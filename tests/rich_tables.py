"""Reading a rich table back from the text it printed: its rows as cells, so that a test compares what a table
shows with the data behind it cell by cell, not by substrings."""

from __future__ import annotations


def rich_cells(text: str) -> list[list[str]]:
    """A rich table's rows (header first) split at its column rules."""
    return [[cell.strip() for cell in line.strip("┃│").split(line[0])] for line in text.splitlines()
            if line[:1] in ("┃", "│")]
