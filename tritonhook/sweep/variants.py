"""Kernel variants built from a capture: the captured cubin (plain), the captured PTX renamed (or stripped) and
assembled with the ptxas and flags Triton used, and the same PTX assembled by other ptxas binaries.

No GPU needed: everything here is PTX text, ptxas and cubin parsing, so it is tested on real captures on a CPU.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Sequence

from .. import _triton, ptx as _ptx, tools
from ..cubin import Cubin
from ..errors import TritonhookError
from ..measure.variants import PLAIN, Variant
from ..rename import STRIP, prefixer, rename_ptx, strip_name, strip_ptx
from ..store import Capture, Store

IDENTICAL = "SASS identical"
"""The verdict of a variant whose kernel `.text` is byte-identical to plain's: it is not timed again."""


@dataclasses.dataclass
class BuiltVariant:
    """One variant of one captured kernel, ready to load: its entry name, cubin and metadata JSON."""

    label: str
    entry: str
    cubin: bytes = dataclasses.field(repr=False)
    metadata_json: bytes = dataclasses.field(repr=False)
    ptxas: str | None
    ptxas_version: str | None
    summary: dict
    same_text_as: str | None = None  # the label of an earlier variant whose kernel .text is byte-identical

    def facts(self) -> dict:
        """What a report quotes: the cubin summary, and which ptxas built it."""
        return {"entry": self.entry, "ptxas_version": self.ptxas_version, "same_text_as": self.same_text_as,
                **self.summary}


def variant_labels(variants: Sequence[Variant], ptxas: Sequence[str]) -> list[tuple[Variant, str | None, str]]:
    """(variant, ptxas path or None for the captured one, label) for every name x ptxas combination:
    `cutlass_`, then `plain@13.0.88`, `cutlass_@13.0.88` for each extra ptxas."""
    combos = [(variant, None, variant.label) for variant in variants]
    for path in ptxas:
        version = tools.ptxas_version(path)
        if not version:
            raise TritonhookError(f"--ptxas {path}: not a ptxas that answers --version")
        combos += [(variant, path, f"{variant.label}@{version}") for variant in variants]
    return combos


def captured_ptxas(capture: Capture) -> str:
    """The ptxas that built the capture: its recorded path when it is still there, else the one Triton picks now."""
    if capture.ptxas_path and os.access(capture.ptxas_path, os.X_OK):
        return capture.ptxas_path
    return _triton.triton_ptxas(capture.arch)


def build_variants(store: Store, capture: Capture, variants: Sequence[Variant], ptxas: Sequence[str] = ()
                   ) -> list[BuiltVariant]:
    """Every variant of `capture` (the first is the baseline; `plain` with the captured ptxas is the captured
    cubin itself). A renamed or re-assembled variant whose kernel `.text` equals an earlier one's is marked
    `same_text_as` (a repeated `plain`, the A/A arm, never is)."""
    ptx = _ptx.as_text(store.read(capture, "ptx"))
    metadata_json = store.read(capture, "json")
    flags = tools.triton_ptxas_args(capture.options, _triton.parse_version(capture.frontend_version))
    built: list[BuiltVariant] = []
    for variant, path, label in variant_labels(variants, ptxas):
        entry, source = _renamed(ptx, capture.entry, variant)
        if variant.rename is None and path is None:
            cubin, tool = store.read(capture, "cubin"), capture.ptxas_path
        else:
            tool = path or captured_ptxas(capture)
            cubin = tools.assemble(source, tool, capture.arch, flags,
                                   label=f"capture {capture.id} ({capture.entry}, {label})").cubin
        summary = Cubin.from_bytes(cubin, label=f"capture {capture.id} {label}").summary(entry)
        same = None if variant.rename is None and path is None else next(  # a repeated plain is an A/A arm: timed
            (b.label for b in built if b.summary["text_sha256"] == summary["text_sha256"]), None)
        built.append(BuiltVariant(label, entry, cubin, metadata_json, tool,
                                  tools.ptxas_version(tool) if tool else capture.ptxas_version, summary, same))
    return built


def _renamed(ptx: str, entry: str, variant: Variant) -> tuple[str, str]:
    """(new entry name, PTX) of `variant`."""
    if variant.rename is None:
        return entry, ptx
    if variant.rename is STRIP:
        return strip_name(entry), strip_ptx(ptx, entry=entry)
    return prefixer(variant.rename)(entry), rename_ptx(ptx, variant.rename, entry=entry)


__all__ = ["IDENTICAL", "PLAIN", "BuiltVariant", "build_variants", "captured_ptxas", "variant_labels"]
