"""Old path of `tritonhook.render` and `tritonhook.format` (kept for one release)."""

from .format import human_bytes
from .render import console, print_json, print_table

__all__ = ["console", "human_bytes", "print_json", "print_table"]
