"""Comparison statistics (pure; A/B and sweep): per-variant summaries, the interval of the time ratio, and the verdict.

The unit of comparison is a round: one median per variant per round. `ratio_interval` takes the wider of a
percentile bootstrap with rounds resampled in pairs (so slow drift of clocks and temperature cancels) and a
Student-t interval on the per-round log ratios, which stays honest with few rounds.
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Sequence

from .. import config
from ..errors import TritonhookError


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default) of a non-empty sample."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float:
    return quantile(values, 0.5)


def interquartile_mean(values: Sequence[float]) -> float:
    """The mean of the middle half of a non-empty sample (its quartile tails dropped): as robust to stragglers as
    the median, but it resolves below the sample's quantum. CUDA event times come in steps (32 ns on Hopper):
    the median of a 3 us kernel's calls moves in 1% steps, so two rounds' medians tie or differ by a whole step,
    and a paired interval over such ties is too narrow: it can exclude 1 at exactly one step between two
    identical arms."""
    ordered = sorted(values)
    cut = len(ordered) // 4
    middle = ordered[cut:len(ordered) - cut] or ordered
    return sum(middle) / len(middle)


@dataclasses.dataclass(frozen=True)
class Summary:
    n: int
    median_ms: float
    p25_ms: float
    p75_ms: float
    min_ms: float
    max_ms: float

    @property
    def spread_pct(self) -> float:
        """Interquartile range relative to the median, in percent."""
        return 100.0 * (self.p75_ms - self.p25_ms) / self.median_ms if self.median_ms else 0.0


def summarize(samples_ms: Sequence[float]) -> Summary:
    if not samples_ms:
        raise TritonhookError("no timings to summarize")
    return Summary(len(samples_ms), median(samples_ms), quantile(samples_ms, 0.25), quantile(samples_ms, 0.75),
                   min(samples_ms), max(samples_ms))


def bootstrap_ratio(base: Sequence[float], other: Sequence[float], *, resamples: int = 4000,
                    level: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """(median(other) / median(base), low, high): a percentile-bootstrap interval of the time ratio.

    Samples of equal length are rounds of an interleaved run: they are resampled in pairs (a round that ran
    while the GPU was hot is drawn for both arms). The seed is fixed so a report is reproducible.
    """
    if not base or not other:
        raise TritonhookError("bootstrap_ratio: both variants need at least one timing")
    rng = random.Random(seed)
    paired = len(base) == len(other)
    ratios = []
    for _ in range(resamples):
        picks = [rng.randrange(len(base)) for _ in base]
        others = picks if paired else [rng.randrange(len(other)) for _ in other]
        ratios.append(median([other[i] for i in others]) / median([base[i] for i in picks]))
    tail = (1.0 - level) / 2
    return median(other) / median(base), quantile(ratios, tail), quantile(ratios, 1.0 - tail)


# Two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom (beyond 30: the normal's 1.96 is within 4%).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t_interval_ratio(base: Sequence[float], other: Sequence[float]) -> tuple[float, float] | None:
    """A 95% Student-t interval of the per-round time ratio (on its logarithm), from paired rounds.

    With few rounds the percentile bootstrap is too narrow (it cannot know the spread it has not seen), and
    between fresh processes it can call a kernel "faster" than its byte-identical self. The t interval widens
    with the small-sample factor. None when the rounds are not paired or fewer than two."""
    if len(base) != len(other) or len(base) < 2:
        return None
    logs = [math.log(o / b) for b, o in zip(base, other)]
    mean = sum(logs) / len(logs)
    spread = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1) / len(logs))
    t = _T975[len(logs) - 2] if len(logs) - 1 <= len(_T975) else 1.96
    return math.exp(mean - t * spread), math.exp(mean + t * spread)


def ratio_interval(base: Sequence[float], other: Sequence[float]) -> tuple[float, float, float]:
    """(ratio of medians, low, high): the wider of the paired percentile bootstrap and the t interval, so the
    verdict errs towards "no difference" when rounds are few or noisy."""
    ratio, low, high = bootstrap_ratio(base, other)
    t_bounds = t_interval_ratio(base, other)
    if t_bounds is not None:
        low, high = min(low, t_bounds[0]), max(high, t_bounds[1])
    return ratio, low, high


def min_effect_at(baseline_ms: float | None, min_effect: float = config.ab.DEFAULT_MIN_EFFECT) -> float:
    """The smallest change a verdict reports at a kernel that takes `baseline_ms` a launch: `min_effect`, or
    `config.ab.MIN_EFFECT_US` of that time where that is more (a µs-scale kernel, where one build against itself
    reads tenths of a µs apart); `min_effect` where the time is unknown."""
    if not baseline_ms or baseline_ms <= 0:
        return min_effect
    return max(min_effect, config.ab.MIN_EFFECT_US / (baseline_ms * 1e3))


def verdict(ratio: float, low: float, high: float, min_effect: float = config.ab.DEFAULT_MIN_EFFECT,
            baseline_ms: float | None = None) -> str:
    """"faster" / "slower" when the interval excludes 1 and the change is at least `min_effect` (at least
    `min_effect_at(baseline_ms)` where the baseline's time a launch is given)."""
    effect = min_effect_at(baseline_ms, min_effect)
    if high < 1.0 and ratio <= 1.0 - effect:
        return "faster"
    if low > 1.0 and ratio >= 1.0 + effect:
        return "slower"
    return "no difference"

