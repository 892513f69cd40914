"""An always-valid interval for a paired time ratio, and the rule that stops timing once it has decided.

Why: the replay and the A/B timer take one figure per variant per round, the variants interleaved call by call, and
compare them. Stopping as soon as the usual fixed-n 95% interval looks decided, looked at after every round, finds a
"difference" far more often than 5% of the time on A/A data (docs/timing.md#adaptive-rounds): each look is another
chance to be fooled. A confidence sequence is valid at every round at once (Ville's inequality on a nonnegative
martingale): the chance that it *ever* excludes the truth is at most `alpha`, however often it is looked at and
whenever timing stops.

The sequence here is distribution-free, because measured kernel times are neither normal nor unimodal (heavy tails
from clock and scheduling hiccups; short kernels' A/A ratios sit at two values a timer tick apart): it is for the
median of the rounds' paired log-ratios (variant over baseline, each round one pair), from the sign test. For a
candidate median m, the signs of (log-ratio - m) are fair coins if m is the median; the Beta-binomial mixture of
their likelihood ratio against p = 1/2 is a martingale under that hypothesis, and the interval keeps every m whose
martingale stays below 1/alpha. It excludes no value before 7 rounds at alpha 0.05 (seven signs alike are needed)
and narrows as rounds come. Pure functions: tested on simulated timings (tests/test_sequential.py) and measured for
its false-positive rate and power by benchmarks/sequential_rule.py.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

DEFAULT_ALPHA = 0.05
MIXTURE_PRIOR = 0.5
"""The Beta(a, a) prior the sign martingale mixes over (a = 1/2, Jeffreys'): smaller a reacts sooner to a large
effect, larger a narrows faster around a small one; 1/2 is the usual middle."""

SEQUENCE_MIN_ROUNDS = 7
"""Rounds before the sequence can exclude any value at alpha 0.05: seven paired signs alike (see the docstring)."""

DECIDED, PRECISE, CAP = "decided", "precise enough", "cap"
"""Why timing stopped: the interval decided against the min-effect (a verdict, or an effect smaller than it), its
width reached the precision asked for, or the rounds reached their cap."""


@dataclasses.dataclass(frozen=True)
class SequentialInterval:
    """The median ratio (variant / baseline) of the rounds so far and its always-valid interval."""

    ratio: float
    low: float
    high: float
    rounds: int

    @property
    def width(self) -> float:
        """Relative width, (high - low) / ratio; infinite while a bound is."""
        return (self.high - self.low) / self.ratio if math.isfinite(self.high) and self.low > 0 else math.inf


def _log_mixture(successes: int, trials: int, prior: float) -> float:
    """log of the Beta(prior, prior)-mixed likelihood ratio of `successes` in `trials` coin flips against p = 1/2."""
    return (math.lgamma(prior + successes) + math.lgamma(prior + trials - successes) - math.lgamma(2 * prior + trials)
            - (2 * math.lgamma(prior) - math.lgamma(2 * prior)) + trials * math.log(2.0))


def median_interval(values: Sequence[float], alpha: float = DEFAULT_ALPHA,
                    prior: float = MIXTURE_PRIOR) -> tuple[float, float]:
    """The always-valid interval for the median of `values` (observations so far, in any order): the range of m
    whose sign martingale (the count of values below m among all) stays under 1/alpha. Its bounds are observed
    values and it is closed, so values tied at a timer's ticks never narrow it past them."""
    ordered = sorted(values)
    n, bound = len(ordered), math.log(1.0 / alpha)
    plausible = [k for k in range(n + 1) if _log_mixture(k, n, prior) < bound]  # k of the values below m
    if not plausible:  # cannot happen for alpha < 1 (k = n/2 is the minimum and < 0): kept as the whole line
        return -math.inf, math.inf
    low = ordered[plausible[0] - 1] if plausible[0] > 0 else -math.inf
    high = ordered[plausible[-1]] if plausible[-1] < n else math.inf
    return low, high


def ratio_sequence(base: Sequence[float], other: Sequence[float], alpha: float = DEFAULT_ALPHA
                   ) -> SequentialInterval:
    """The median of the rounds' paired ratios (`other[i] / base[i]`) with its always-valid interval."""
    logs = [math.log(o / b) for b, o in zip(base, other)]
    if not logs:
        return SequentialInterval(math.nan, 0.0, math.inf, 0)
    ordered = sorted(logs)
    middle = len(ordered) // 2
    center = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    low, high = median_interval(logs, alpha)
    return SequentialInterval(math.exp(center), math.exp(low) if math.isfinite(low) else 0.0,
                              math.exp(high) if math.isfinite(high) else math.inf, len(logs))


def stop_reason(interval: SequentialInterval, *, min_effect: float, precision: float, cap: int) -> str | None:
    """Why timing may stop after these rounds, None to go on. Decided: the interval excludes 1 with the median
    beyond the min-effect (a verdict), or lies wholly inside the band of ±min-effect (whatever the effect, it is
    smaller than the smallest worth reporting). Precise enough: its relative width is at most `precision`. Cap:
    `cap` rounds reached."""
    band_low, band_high = 1.0 - min_effect, 1.0 + min_effect
    faster = interval.high < 1.0 and interval.ratio <= band_low
    slower = interval.low > 1.0 and interval.ratio >= band_high
    if faster or slower or (band_low <= interval.low and interval.high <= band_high):
        return DECIDED
    if interval.width <= precision:
        return PRECISE
    if interval.rounds >= cap:
        return CAP
    return None


FIXED = "fixed"
"""A replay timed a fixed number of rounds (`--fixed-rounds`): no rule stopped it."""


@dataclasses.dataclass(frozen=True)
class StopRule:
    """When a signature's rounds may stop: `min_rounds` first (the sign sequence decides nothing before 7), then
    after every round `stop_reason` for every variant against the baseline, at `precision` (relative width of the
    interval) and `cap` rounds. Rows get a fine precision; autotune candidates, which are only ranked, a coarse one
    and a lower cap."""

    min_effect: float
    precision: float
    cap: int
    min_rounds: int = SEQUENCE_MIN_ROUNDS

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def rounds_stop(samples: dict[str, list[float]], labels: Sequence[str], rule: StopRule) -> str | None:
    """Why a signature's rounds may stop now (`samples`: per-round figures by label, `labels[0]` the baseline), None
    to go on: every variant's `ratio_sequence` against the baseline has a stop reason (the weakest is given: cap,
    then precise enough, then decided); with the baseline alone timed, its own median's always-valid interval
    reaching `precision`."""
    rounds = len(samples[labels[0]])
    if rounds >= rule.cap:
        return CAP
    if rounds < rule.min_rounds:
        return None
    if len(labels) == 1:
        low, high = median_interval(samples[labels[0]])
        center = sorted(samples[labels[0]])[rounds // 2]
        return PRECISE if low > 0 and math.isfinite(high) and (high - low) / center <= rule.precision else None
    reasons = [stop_reason(ratio_sequence(samples[labels[0]], samples[label]), min_effect=rule.min_effect,
                           precision=rule.precision, cap=rule.cap) for label in labels[1:]]
    if None in reasons:
        return None
    return next(reason for reason in (CAP, PRECISE, DECIDED) if reason in reasons)
