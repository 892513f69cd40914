"""Why a timed row moved: what changed between the baseline's cubin and a variant's (docs/sweep.md#why-a-row-moved).

`CubinDelta` puts the one cubin summary (`Cubin.summary`, `SUMMARY_FIELDS`) of both kernels side by side and adds the
instruction mix: the base opcodes whose count changed most (`sass.opcode_changes`, the histogram `tritonhook diff
--sass` shows in full). It is plain data that renders itself in one table cell and to JSON, so a sweep, a replay, an
A/B report, the HTML page or a tuner quote the same figures. `CubinDeltas` computes many of them, each cubin parsed
and disassembled once (nvdisasm takes up to a second a cubin, and a sweep asks for one capture's pair at every
signature of it).
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import hashlib
import os
from typing import Sequence

from ..errors import TritonhookError
from ..format import human_bytes
from .model import SUMMARY_FIELDS, Cubin
from .sass import cubin_histogram, disassemble, opcode_changes

MIX_TOP = 5
"""How many opcodes a delta quotes, the most changed first (`tritonhook diff --sass` lists them all)."""


@dataclasses.dataclass(frozen=True)
class CubinDelta:
    """The baseline's kernel `base_entry` against the variant's `variant_entry`.

    `resources`: each `SUMMARY_FIELDS` field as (baseline, variant). `sass_identical`: the kernels' `.text` hashes
    match (then nothing was disassembled and `mix` is empty). `mix`: (opcode, baseline count, variant count) of the
    `top` opcodes whose count changed most, over every function of each cubin; None when nvdisasm could not run,
    with the reason in `mix_error`: the resources stand without it."""

    base_entry: str
    variant_entry: str
    resources: dict[str, tuple[int | None, int | None]]
    sass_identical: bool
    mix: list[tuple[str, int, int]] | None
    mix_error: str | None = None

    @classmethod
    def between(cls, base_cubin: bytes, variant_cubin: bytes, base_entry: str, variant_entry: str, *,
                top: int = MIX_TOP, nvdisasm: str | None = None) -> "CubinDelta":
        """The delta of two cubins' bytes (one pair; `CubinDeltas` for many)."""
        return CubinDeltas(top=top, nvdisasm=nvdisasm).between(base_cubin, variant_cubin, base_entry, variant_entry)

    @classmethod
    def of(cls, base: Cubin, variant: Cubin, base_entry: str, variant_entry: str, *,
           histograms: tuple[collections.Counter, collections.Counter] | None = None, mix_error: str | None = None,
           top: int = MIX_TOP) -> "CubinDelta":
        """From two parsed cubins and, unless their kernels' `.text` match, their opcode histograms
        (`sass.cubin_histogram`; None with `mix_error` saying why there are none)."""
        before, after = base.summary(base_entry), variant.summary(variant_entry)
        resources = {field: (before[field], after[field]) for field in SUMMARY_FIELDS}
        identical = before["text_sha256"] is not None and before["text_sha256"] == after["text_sha256"]
        if identical:
            mix, mix_error = [], None
        elif histograms is None:
            mix, mix_error = None, mix_error or "not disassembled"
        else:
            mix, mix_error = opcode_changes(*histograms)[:top], None
        return cls(base_entry, variant_entry, resources, identical, mix, mix_error)

    def cell(self) -> str:
        """One short table cell: `regs 255, spills 0/0→64/64 B, stack 0→64 B, .text +2.0 KiB, IMAD +152 LEA -45`.
        A resource is named when it changed or (registers always) is worth knowing; unchanged zeros are left out."""
        parts = [self._figure("regs", "registers", always=True)]
        stores, loads = self.resources["spill_stores"], self.resources["spill_loads"]
        if stores != loads or stores[0] or stores[1]:
            before, after = f"{stores[0]}/{loads[0]}", f"{stores[1]}/{loads[1]}"
            parts.append(f"spills {before} B" if before == after else f"spills {before}→{after} B")
        parts.append(self._figure("stack", "frame_size", unit=" B"))
        parts += [self._growth(".text", "text_size"), self._growth("capmerc", "capmerc_size"), self.sass_change()]
        return ", ".join(part for part in parts if part)

    def sass_change(self) -> str:
        """The SASS part of `cell`: identical, the opcodes whose count changed most, or why there is no mix (a
        table that shows the resources in columns of their own, the HTML report's, shows this beside them)."""
        if self.sass_identical:
            return "SASS identical"
        if self.mix is None:
            return f"no opcode mix ({_first_clause(self.mix_error or '')})"
        if self.mix:
            return " ".join(f"{op} {after - before:+d}" for op, before, after in self.mix)
        return "same opcode counts"

    def _figure(self, name: str, field: str, *, unit: str = "", always: bool = False) -> str:
        before, after = self.resources[field]
        if before == after:
            return f"{name} {before}{unit}" if always or before else ""
        return f"{name} {before}→{after}{unit}"

    def _growth(self, name: str, field: str) -> str:
        before, after = self.resources[field]
        if before == after or before is None or after is None:
            return ""
        change = after - before
        return f"{name} {'+' if change > 0 else '-'}{human_bytes(abs(change))}"

    def to_json(self) -> dict:
        """Every figure and the cell's text (`text`): what a report's `--json` row carries."""
        return {"base_entry": self.base_entry, "variant_entry": self.variant_entry,
                "resources": {field: {"base": before, "variant": after}
                              for field, (before, after) in self.resources.items()},
                "sass_identical": self.sass_identical,
                "mix": None if self.mix is None else [{"opcode": op, "base": before, "variant": after,
                                                       "delta": after - before} for op, before, after in self.mix],
                "mix_error": self.mix_error, "text": self.cell()}

    @classmethod
    def from_json(cls, data: dict) -> "CubinDelta":
        return cls(data["base_entry"], data["variant_entry"],
                   {field: (value["base"], value["variant"]) for field, value in data["resources"].items()},
                   data["sass_identical"],
                   None if data["mix"] is None else [(m["opcode"], m["base"], m["variant"]) for m in data["mix"]],
                   data.get("mix_error"))


def _first_clause(reason: str) -> str:
    """'no nvdisasm found' of 'no nvdisasm found (looked in ...); pass --nvdisasm PATH': the cell's short reason
    (the JSON keeps the whole one)."""
    return reason.split(" (")[0].split(";")[0].strip() or "nvdisasm did not run"


_HISTOGRAMS: dict[str | None, dict[bytes, collections.Counter | TritonhookError]] = {}
"""Opcode histograms by nvdisasm and cubin digest, kept for the process (`CubinDeltas`): disassembling is slow."""


class CubinDeltas:
    """`CubinDelta`s of many (baseline, variant) cubin pairs: each distinct cubin parsed once and disassembled at most
    once (only where a pair's `.text` differ), each pair computed once; `many` runs nvdisasm on a few cubins at a
    time. A cubin that does not parse raises `TritonhookError`; nvdisasm missing or failing only leaves the mix out."""

    def __init__(self, *, top: int = MIX_TOP, nvdisasm: str | None = None):
        self.top, self.nvdisasm = top, nvdisasm
        self._parsed: dict[bytes, Cubin] = {}
        # per process, by nvdisasm: a sweep's replays and `tune`'s chunks meet the same cubins again and again
        self._histograms = _HISTOGRAMS.setdefault(nvdisasm, {})
        self._deltas: dict[tuple, CubinDelta] = {}

    def between(self, base_cubin: bytes, variant_cubin: bytes, base_entry: str, variant_entry: str) -> CubinDelta:
        return self.many([(base_cubin, variant_cubin, base_entry, variant_entry)])[0]

    def many(self, pairs: Sequence[tuple[bytes, bytes, str, str]]) -> list[CubinDelta]:
        """The delta of each (baseline cubin, variant cubin, baseline entry, variant entry), in order."""
        keys = [(_digest(a), _digest(b), entry_a, entry_b) for a, b, entry_a, entry_b in pairs]
        for (digest_a, digest_b, _, _), (a, b, _, _) in zip(keys, pairs):
            for digest, data in ((digest_a, a), (digest_b, b)):
                if digest not in self._parsed:
                    self._parsed[digest] = Cubin.from_bytes(data, label=f"cubin {digest.hex()[:12]}")
        wanted = {}
        for (digest_a, digest_b, entry_a, entry_b), (a, b, _, _) in zip(keys, pairs):
            if not self._same_text(digest_a, digest_b, entry_a, entry_b):
                wanted.update({digest: data for digest, data in ((digest_a, a), (digest_b, b))
                               if digest not in self._histograms})
        self._disassemble(wanted)
        return [self._delta(key) for key in keys]

    def _same_text(self, digest_a: bytes, digest_b: bytes, entry_a: str, entry_b: str) -> bool:
        text_a = self._parsed[digest_a].summary(entry_a)["text_sha256"]
        return text_a is not None and text_a == self._parsed[digest_b].summary(entry_b)["text_sha256"]

    def _disassemble(self, wanted: dict[bytes, bytes]) -> None:
        if not wanted:
            return
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(len(wanted), os.cpu_count() or 1)) as pool:
            jobs = {digest: pool.submit(disassemble, data, nvdisasm=self.nvdisasm, label=f"cubin {digest.hex()[:12]}")
                    for digest, data in wanted.items()}
            for digest, job in jobs.items():
                try:
                    self._histograms[digest] = cubin_histogram(job.result())
                except TritonhookError as exc:
                    self._histograms[digest] = exc

    def _delta(self, key: tuple) -> CubinDelta:
        if key not in self._deltas:
            digest_a, digest_b, entry_a, entry_b = key
            found = [self._histograms.get(digest_a), self._histograms.get(digest_b)]
            error = next((str(h) for h in found if isinstance(h, TritonhookError)), None)
            histograms = None if error or None in found else tuple(found)
            self._deltas[key] = CubinDelta.of(self._parsed[digest_a], self._parsed[digest_b], entry_a, entry_b,
                                              histograms=histograms, mix_error=error, top=self.top)
        return self._deltas[key]


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()
