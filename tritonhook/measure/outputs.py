"""Comparing a kernel's outputs between builds: per buffer, bitwise or how far (ULPs, relative error), with NaN and
Inf positions treated as data, and a variant judged against the run-to-run spread of the baseline itself.

Why not `torch.equal` / `allclose`: NaN never equals NaN, so a kernel that produces NaN on random inputs "differs"
from itself; a kernel that is not run-to-run deterministic (atomics, split reductions) differs from itself too.
Either would read as "the variant changes the outputs", which a user takes for "the rename breaks the kernel". So
the baseline is first compared with itself (`spread`: several runs from the same inputs), and a variant is judged
against that spread; and the figures behind the word (elements that differ, largest ULP distance, largest relative
error, NaN/Inf that appear or vanish) are kept, not only the word.

Pure functions over torch tensors (torch is imported by the caller: these run wherever the tensors live).
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Mapping

from .. import config
from ..errors import TritonhookError

BITWISE, WITHIN_SPREAD, CLOSE, DIFFER, NO_OUTPUT = "bitwise", "within spread", "close", "differ", "no output"
VERDICTS = (DIFFER, CLOSE, WITHIN_SPREAD, BITWISE, NO_OUTPUT)
"""Worst first: a row's verdict is its worst variant's (`worst`). "close": beyond the baseline's own spread but
within the tolerance (another rounding order); "differ": beyond the tolerance, or NaN/Inf where the baseline has
none."""

SPREAD_MARGIN = 4.0
"""A variant is within the baseline's spread when its distance from the baseline's first run is at most this many
times the largest distance between the baseline's own runs: a few runs see only part of a nondeterministic
kernel's range, and a variant's own runs vary as much. The distance compared is norm-wise (`Difference.norm_rel`):
element-wise ULPs and relative errors of a sum by atomics blow up wherever the sum is near zero, so two runs of
one cubin can lie thousands of ULPs apart, and a variant's run farther than the baseline's own."""


@dataclasses.dataclass(frozen=True)
class Difference:
    """How far a set of output buffers is from a reference set (all buffers together).

    `differing`: elements whose bits differ (two NaNs count as equal, whatever their payload); `max_ulp`: the largest
    distance in units in the last place over the elements finite in both (integer buffers: the largest absolute
    difference); `max_rel`: the largest |a - b| / max(|a|, |b|) over those; `nonfinite_mismatch`: positions where
    one side is NaN or ±Inf and the other is not the same; `beyond_tolerance`: elements outside
    |a - b| <= tol + tol * |a| (`config.sweep.RTOL`), NaN/Inf mismatches included; `norm_rel`: max |a - b| over
    max |a| (finite elements), the distance of the buffer as a whole."""

    elements: int = 0
    differing: int = 0
    max_ulp: int = 0
    max_rel: float = 0.0
    nonfinite_mismatch: int = 0
    beyond_tolerance: int = 0
    norm_rel: float = 0.0

    @property
    def bitwise(self) -> bool:
        return self.differing == 0

    def __add__(self, other: "Difference") -> "Difference":
        return Difference(self.elements + other.elements, self.differing + other.differing,
                          max(self.max_ulp, other.max_ulp), max(self.max_rel, other.max_rel),
                          self.nonfinite_mismatch + other.nonfinite_mismatch,
                          self.beyond_tolerance + other.beyond_tolerance, max(self.norm_rel, other.norm_rel))

    def within(self, spread: "Difference", margin: float = SPREAD_MARGIN) -> bool:
        """Whether this distance is no larger than the baseline's own run-to-run `spread` (times `margin`)."""
        if self.bitwise:
            return True
        if spread.bitwise:
            return False
        return (self.nonfinite_mismatch <= margin * spread.nonfinite_mismatch
                and self.norm_rel <= margin * spread.norm_rel and self.differing <= margin * spread.differing)

    def text(self) -> str:
        """Short, for a table cell: "bitwise", or how many elements differ and by how much."""
        if self.bitwise:
            return BITWISE
        parts = [f"{self.differing}/{self.elements} el", f"{self.max_ulp} ulp", f"rel {self.max_rel:.1e}"]
        if self.nonfinite_mismatch:
            parts.append(f"{self.nonfinite_mismatch} NaN/Inf moved")
        return ", ".join(parts)


def difference(torch, reference, other, tolerance: float = config.sweep.RTOL) -> Difference:
    """The `Difference` of one buffer from its reference (same dtype and shape)."""
    a, b = reference.reshape(-1), other.reshape(-1)
    if a.numel() == 0:
        return Difference()
    if not a.dtype.is_floating_point:
        differing = int((a != b).sum())
        delta = (a.long() - b.long()).abs() if a.dtype != torch.bool else (a != b).long()
        return Difference(a.numel(), differing, int(delta.max()), 0.0, 0, differing)
    bits_a, bits_b = as_bits(torch, a), as_bits(torch, b)
    if a.element_size() == 1:  # fp8: few kernels exist for it (exact in fp32)
        a, b = a.float(), b.float()
    nan_a, nan_b = torch.isnan(a), torch.isnan(b)
    finite = torch.isfinite(a) & torch.isfinite(b)
    differing = int(((bits_a != bits_b) & ~(nan_a & nan_b)).sum())
    if differing == 0:
        return Difference(a.numel())
    mismatch = ~finite & ~(nan_a & nan_b) & ~((a == b) & ~finite)
    ulp = (_ordered(torch, bits_a) - _ordered(torch, bits_b)).abs()[finite]
    wide_a, wide_b = a.double()[finite], b.double()[finite]
    scale = torch.maximum(wide_a.abs(), wide_b.abs())
    gap = (wide_a - wide_b).abs()
    rel = torch.where(scale > 0, gap / scale, torch.zeros_like(scale))
    beyond = int((gap > tolerance + tolerance * wide_a.abs()).sum())
    nonfinite_moved = int(mismatch.sum())
    peak = float(wide_a.abs().max()) if wide_a.numel() else 0.0
    largest_gap = float(gap.max()) if gap.numel() else 0.0
    norm_rel = largest_gap / peak if peak > 0 else (0.0 if largest_gap == 0 else float("inf"))
    return Difference(a.numel(), differing, int(ulp.max()) if ulp.numel() else 0,
                      float(rel.max()) if rel.numel() else 0.0, nonfinite_moved, beyond + nonfinite_moved, norm_rel)


def as_bits(torch, values):
    """The raw bits of a float tensor as signed integers of the same width (the sign bit is the integer's)."""
    width = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[values.element_size()]
    return values.view(width)


def _ordered(torch, bits):
    """Sign-magnitude bits mapped onto a line where neighbouring floats are neighbouring integers (+0 == -0), in
    int64: the ULP distance of two floats is the difference of their images."""
    magnitude_mask = (1 << (bits.element_size() * 8 - 1)) - 1
    magnitude = bits.long() & magnitude_mask
    return torch.where(bits < 0, -magnitude, magnitude)


def nonfinite(torch, buffers: Mapping[object, object]) -> int:
    """NaN and ±Inf elements over `buffers` (float ones): what the inputs made the kernel produce."""
    return sum(int((~torch.isfinite(buffer.float() if buffer.element_size() == 1 else buffer)).sum())
               for buffer in buffers.values() if buffer.dtype.is_floating_point)


def compare_sets(torch, reference: Mapping[object, object], other: Mapping[object, object]) -> Difference:
    """The `Difference` of every buffer of `other` from the same buffer of `reference`, added up."""
    total = Difference()
    for key, buffer in reference.items():
        total += difference(torch, buffer, other[key])
    return total


@dataclasses.dataclass(frozen=True)
class OutputCheck:
    """A kernel's outputs across builds: the baseline against itself (`spread`, over `baseline_runs` runs from the
    same inputs), each variant against the baseline's first run (`variants`: label -> Difference), a verdict per
    variant and for the row (its worst), and the NaN/Inf the baseline produced on these inputs (`nonfinite`)."""

    written: int
    baseline_runs: int
    spread: Difference
    variants: dict[str, Difference]
    verdicts: dict[str, str]
    nonfinite: int

    @property
    def verdict(self) -> str:
        return worst(self.verdicts.values()) if self.written else NO_OUTPUT

    @property
    def deterministic(self) -> bool:
        return self.spread.bitwise

    def text(self) -> str:
        """A table cell: the verdict, what stands behind it when not bitwise, and the NaN/Inf flag."""
        if not self.written:
            return NO_OUTPUT
        parts = [self.verdict]
        worst_label = max(self.variants, key=lambda label: VERDICTS[::-1].index(self.verdicts[label]), default=None)
        if worst_label is not None and not self.variants[worst_label].bitwise:
            parts.append(self.variants[worst_label].text())
        if not self.deterministic:
            parts.append(f"plain vs plain: {self.spread.text()}")
        if self.nonfinite:
            parts.append(f"{self.nonfinite} NaN/Inf from these inputs")
        return "; ".join(parts)

    def to_json(self) -> dict:
        return {"verdict": self.verdict, "text": self.text(), "written": self.written, "baseline_runs": self.baseline_runs,
                "deterministic": self.deterministic, "spread": dataclasses.asdict(self.spread),
                "variants": {label: {**dataclasses.asdict(d), "verdict": self.verdicts[label]}
                             for label, d in self.variants.items()},
                "nonfinite": self.nonfinite}


def check_outputs(torch, baseline_runs: Iterable[Mapping[object, object]],
                  variants: Iterable[tuple[str, Mapping[object, object]]], margin: float = SPREAD_MARGIN
                  ) -> OutputCheck:
    """Judge each variant's written buffers (`variants`: (label, {buffer: tensor})) against the baseline's runs
    (each {buffer: tensor}, the same buffers; at least one): bitwise, within the baseline's own spread, or differ.
    Each run after the first is compared before the next is taken, so the runs may be given lazily, each reusing
    the buffers of the one before (only the first is kept)."""
    runs = iter(baseline_runs)
    first, count = next(runs), 1
    spread = Difference()
    for run in runs:
        spread += compare_sets(torch, first, run)
        count += 1
    differences = {label: compare_sets(torch, first, outputs) for label, outputs in variants}
    verdicts = {label: judge(d, spread, margin) for label, d in differences.items()}
    return OutputCheck(len(first), count, spread, differences, verdicts, nonfinite(torch, first))


def judge(variant: Difference, spread: Difference, margin: float = SPREAD_MARGIN) -> str:
    if variant.bitwise:
        return BITWISE
    if variant.within(spread, margin):
        return WITHIN_SPREAD
    return CLOSE if not variant.beyond_tolerance else DIFFER


def worst(verdicts) -> str:
    """The worst of some verdicts (`VERDICTS` order); "no output" when there are none."""
    return min(verdicts, key=VERDICTS.index, default=NO_OUTPUT)


def compare_outputs(outputs: dict[str, object], check, *, rtol: float = 1e-2, atol: float = 1e-2) -> str:
    """Compare every variant's output with the first one's: "bitwise" when all are identical (NaN and Inf positions
    compared as data, `difference`), "allclose" when
    `check` allows tolerance and all are close, else "MISMATCH"; "not checked" without outputs or `check`."""
    values = [v for v in outputs.values() if v is not None]
    if check is None or len(values) < 2:
        return "not checked"
    import torch

    base, others = values[0], values[1:]
    if callable(check):
        return "check passed" if all(check(base, other) for other in others) else "MISMATCH"
    if check not in ("bitwise", "allclose"):
        raise TritonhookError(f"check={check!r}: use 'bitwise', 'allclose', a callable (a, b) -> bool, or None")
    if all(base.shape == other.shape and difference(torch, base, other).bitwise for other in others):
        return "bitwise"  # NaN at the same positions is equal: a kernel producing NaN does not differ from itself
    if check == "allclose" and all(torch.allclose(base.float(), other.float(), rtol=rtol, atol=atol, equal_nan=True)
                                   for other in others):
        return "allclose"
    return "MISMATCH"
