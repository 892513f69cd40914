"""The number formatters every report uses (one set, so a figure reads the same in every table).

Pure functions of plain values; "-" stands for a value that could not be read (None).
"""

from __future__ import annotations


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
