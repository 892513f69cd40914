"""Variants: which kernel name each arm of a comparison (A/B, sweep) compiles with."""

from __future__ import annotations

import dataclasses
from typing import Sequence

from ..errors import TritonhookError
from ..rename import STRIP, Rename, prefixer, rename_description

PLAIN = "plain"
STRIP_LABEL = "strip"


@dataclasses.dataclass(frozen=True)
class Variant:
    label: str                # unique within one comparison: "plain", "cutlass_", "plain#2"
    rename: Rename | None     # None: Triton's own name

    def describe(self) -> str:
        return "no rename" if self.rename is None else rename_description(self.rename)


def parse_variants(spec: str | Sequence[str]) -> list[Variant]:
    """"plain,cutlass_" -> variants. `plain`: no rename; `strip`: remove `cutlass`; anything else: a prefix.
    A repeated name (an A/A run) gets `#2`, `#3` so the two arms stay apart."""
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec)]
    if len(names) < 2 or not all(names):
        raise TritonhookError(f"variants {spec!r}: give at least two, e.g. plain,cutlass_ (or plain,plain for A/A)")
    variants, seen = [], {}
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        label = name if seen[name] == 1 else f"{name}#{seen[name]}"
        if name == PLAIN:
            rename = None
        elif name == STRIP_LABEL:
            rename = STRIP
        else:
            prefixer(name)  # validates the prefix now rather than in the middle of a compile
            rename = name
        variants.append(Variant(label, rename))
    return variants

