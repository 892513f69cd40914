"""Kernel variants built from a capture: the captured cubin (plain), the captured PTX renamed (or stripped) and
assembled with the ptxas and flags Triton used, and the same PTX assembled by other ptxas binaries, with other
codegen options or a control file (the variant grammar, `measure.variants`; docs/variants.md).

No GPU needed: everything here is PTX text, ptxas and cubin parsing, so it is tested on real captures on a CPU.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
from typing import Sequence

from .. import _triton, ptx as _ptx

from .. import binaries
from ..cubin import Cubin
from ..measure.variants import PLAIN, Variant
from ..rename import STRIP, prefixer, rename_ptx, strip_name, strip_ptx
from ..store import Capture, Store

IDENTICAL = "SASS identical"
"""The verdict of a variant whose kernel `.text` is byte-identical to plain's: it is not timed again."""


@dataclasses.dataclass
class BuiltVariant:
    """One variant of one captured kernel, ready to load: its entry name, cubin and metadata JSON, and what made
    it. A variant ptxas could not build has `failed` (its `binaries.AssembleError.cause`), `error` and no cubin."""

    label: str
    entry: str
    cubin: bytes = dataclasses.field(repr=False)
    metadata_json: bytes = dataclasses.field(repr=False)
    ptxas: str | None
    ptxas_version: str | None
    summary: dict
    same_text_as: str | None = None  # the label of an earlier variant whose kernel .text is byte-identical
    options: tuple[str, ...] = ()
    controls_sha256: str | None = None
    failed: str | None = None
    error: str | None = None

    def facts(self) -> dict:
        """What a report quotes: the cubin summary, and what built it (ptxas, options, control file)."""
        made = {"ptxas": self.ptxas, "ptxas_options": list(self.options), "controls_sha256": self.controls_sha256}
        if self.failed:
            made |= {"build_failed": self.failed, "build_error": self.error}
        return {"entry": self.entry, "ptxas_version": self.ptxas_version, "same_text_as": self.same_text_as,
                **made, **self.summary}


def with_extra_ptxas(variants: Sequence[Variant], ptxas: Sequence[str]) -> list[Variant]:
    """The variants, then each variant that names no ptxas of its own again for every extra ptxas (`--ptxas
    P1,P2`, a runtime ptxas matrix): `cutlass_`, then `plain@13.0.88`, `cutlass_@13.0.88` for each."""
    return [*variants, *(v.with_ptxas(path) for path in ptxas for v in variants if v.ptxas is None)]


def captured_ptxas(capture: Capture) -> str:
    """The ptxas that built the capture: its recorded path when it is still there, else the one Triton picks now."""
    if capture.ptxas_path and os.access(capture.ptxas_path, os.X_OK):
        return capture.ptxas_path
    return _triton.triton_ptxas(capture.arch)


def build_variants(store: Store, capture: Capture, variants: Sequence[Variant], ptxas: Sequence[str] = ()
                   ) -> list[BuiltVariant]:
    """Every variant of `capture` (the first is the baseline; `plain` with the captured ptxas and no options is
    the captured cubin itself), assembled with Triton's flags, then the variant's options and control file. A
    renamed or re-assembled variant whose kernel `.text` equals an earlier one's is marked `same_text_as` (a
    repeated `plain`, the A/A arm, never is). A variant other than the baseline that ptxas fails to build (an
    error, a crash, a hang, a control file it cannot read) is kept with `failed` set; a failing baseline raises.
    The variants are assembled side by side (`binaries.PTXAS_SLOTS` caps the ptxas processes): `tune` searches
    tens of them on few kernels, and one after another their builds were what a second GPU could not share."""
    ptx = _ptx.as_text(store.read(capture, "ptx"))
    metadata_json = store.read(capture, "json")
    flags = binaries.triton_ptxas_args(capture.options, _triton.parse_version(capture.frontend_version))
    wanted = with_extra_ptxas(variants, ptxas)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(len(wanted), os.cpu_count() or 1))) as pool:
        made = list(pool.map(lambda variant: _assembled(store, capture, ptx, flags, variant), wanted))
    built: list[BuiltVariant] = []
    for variant, (entry, tool, cubin) in zip(wanted, made):
        facts = dict(options=variant.options, controls_sha256=variant.controls.sha256 if variant.controls else None)
        version = binaries.ptxas_version(tool) if tool else capture.ptxas_version
        if isinstance(cubin, binaries.AssembleError):
            if not built:
                raise cubin
            built.append(BuiltVariant(variant.label, entry, b"", metadata_json, tool, version, {}, **facts,
                                      failed=cubin.cause, error=str(cubin)))
            continue
        summary = Cubin.from_bytes(cubin, label=f"capture {capture.id} {variant.label}").summary(entry)
        same = None if _captured(variant) else next(  # a repeated plain is an A/A arm: timed
            (b.label for b in built if b.summary.get("text_sha256") == summary["text_sha256"]), None)
        built.append(BuiltVariant(variant.label, entry, cubin, metadata_json, tool, version, summary, same, **facts))
    return built


def _captured(variant: Variant) -> bool:
    """Whether `variant` is the captured cubin itself: not renamed, not assembled again."""
    return variant.rename is None and not variant.assembles


def _assembled(store: Store, capture: Capture, ptx: str, flags: list[str], variant: Variant
               ) -> tuple[str, str | None, bytes | binaries.AssembleError]:
    """One variant's (entry name, the ptxas that built it, its cubin or why ptxas refused it)."""
    entry, source = _renamed(ptx, capture.entry, variant)
    if _captured(variant):
        return entry, capture.ptxas_path, store.read(capture, "cubin")
    tool = variant.ptxas or captured_ptxas(capture)
    try:
        return entry, tool, binaries.assemble(source, tool, capture.arch, [*flags, *variant.options],
                                              controls=variant.controls,
                                              label=f"capture {capture.id} ({capture.entry}, {variant.label})").cubin
    except binaries.AssembleError as exc:
        return entry, tool, exc


def _renamed(ptx: str, entry: str, variant: Variant) -> tuple[str, str]:
    """(new entry name, PTX) of `variant`."""
    if variant.rename is None:
        return entry, ptx
    if variant.rename is STRIP:
        return strip_name(entry), strip_ptx(ptx, entry=entry)
    return prefixer(variant.rename)(entry), rename_ptx(ptx, variant.rename, entry=entry)


__all__ = ["IDENTICAL", "PLAIN", "BuiltVariant", "build_variants", "captured_ptxas", "with_extra_ptxas"]
