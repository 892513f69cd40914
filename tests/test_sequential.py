"""The adaptive-rounds rule (`measure.sequential`) on simulated timings: its always-valid interval keeps the false
positives of an A/A at most at its level when stopping is allowed after every round (where the fixed-n interval
peeked at each round does not), decides large effects within a few rounds, and needs 7 rounds to decide anything.
Pure statistics: the same under every Triton."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from tritonhook.measure.sequential import (CAP, DECIDED, PRECISE, StopRule, median_interval, ratio_sequence,
                                          rounds_stop, stop_reason)
from tritonhook.measure.stats import t_interval_ratio, verdict

pytestmark = pytest.mark.release_independent

ALPHA, SIMS, ROUNDS = 0.05, 300, 40
ALLOWED = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / SIMS)  # the level, give or take three standard errors


def _ticks(rng: random.Random) -> float:
    """A short kernel's timing: a timer tick high or low (A/A ratios at ~0.965 or ~1.035, docs/check.md)."""
    return (0.965 if rng.random() < 0.5 else 1.035) * math.exp(rng.gauss(0, 0.002))


def _heavy(rng: random.Random) -> float:
    """1% log-normal noise, and one round in twenty hit by a hiccup of up to +20% or more."""
    return math.exp(rng.gauss(0, 0.01) + (abs(rng.gauss(0, 0.2)) if rng.random() < 0.05 else 0.0))


def _ever_different(noise, rng: random.Random, *, sequential: bool, effect: float = 0.0) -> bool:
    """Whether a rule called a difference at any round up to ROUNDS, looked at after every round."""
    base, other = [], []
    for _ in range(ROUNDS):
        base.append(noise(rng))
        other.append((1 + effect) * noise(rng))
        if sequential:
            interval = ratio_sequence(base, other, ALPHA)
            called = verdict(interval.ratio, interval.low, interval.high, 0.01)
        elif len(base) >= 3 and (bounds := t_interval_ratio(base, other)) is not None:
            called = verdict(statistics.median(other) / statistics.median(base), *bounds, 0.01)
        else:
            continue
        if called != "no difference":
            return True
    return False


@pytest.mark.parametrize("noise", [_ticks, _heavy], ids=["ticks", "heavy"])
def test_looking_after_every_round_keeps_the_aa_false_positives_at_the_level(noise):
    rng = random.Random(3)
    false = sum(_ever_different(noise, rng, sequential=True) for _ in range(SIMS)) / SIMS
    assert false <= ALLOWED, false


def test_the_fixed_n_interval_peeked_at_every_round_does_not():
    """The counter-proof: the same A/A simulation, judged by the fixed-n t interval after every round, calls a
    difference in far more than 5% of the signatures (the reason for a sequential rule)."""
    rng = random.Random(3)
    false = sum(_ever_different(_ticks, rng, sequential=False) for _ in range(SIMS)) / SIMS
    assert false > 2 * ALLOWED, false


def test_a_ten_percent_effect_is_decided_within_a_few_rounds_despite_hiccups():
    rng = random.Random(5)
    stops = []
    for _ in range(100):
        base, other = [], []
        while True:
            base.append(_heavy(rng))
            other.append(0.9 * _heavy(rng))
            interval = ratio_sequence(base, other)
            if (why := stop_reason(interval, min_effect=0.01, precision=0.001, cap=ROUNDS)) is not None:
                stops.append((why, len(base), verdict(interval.ratio, interval.low, interval.high, 0.01)))
                break
    assert sum(why == DECIDED and said == "faster" for why, _, said in stops) >= 95
    assert statistics.median(rounds for _, rounds, _ in stops) <= 10


def test_seven_rounds_of_one_sign_are_the_fewest_that_exclude_a_value():
    low, high = median_interval([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert low == -math.inf and high == math.inf  # six positive values cannot rule out any median
    low, _ = median_interval([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    assert low > 0  # seven can


def test_identical_timings_decide_no_difference_and_a_cap_stops_an_undecided_one():
    same = ratio_sequence([10.0] * 7, [10.0] * 7)
    assert (same.ratio, same.low, same.high) == (1.0, 1.0, 1.0)
    assert stop_reason(same, min_effect=0.01, precision=0.001, cap=50) == DECIDED
    rng = random.Random(1)
    base = [_ticks(rng) for _ in range(8)]
    wide = ratio_sequence(base, [_ticks(rng) for _ in range(8)])
    assert stop_reason(wide, min_effect=0.01, precision=0.001, cap=8) == CAP
    assert stop_reason(wide, min_effect=0.01, precision=10.0, cap=50) == PRECISE


def test_a_signature_stops_when_every_variant_has_a_reason_the_weakest_given():
    rule = StopRule(min_effect=0.01, precision=0.02, cap=21)
    clear = {"plain": [10.0] * 6, "cutlass_": [9.0] * 6, "plain#2": [10.0] * 6}
    assert rounds_stop(clear, list(clear), rule) is None  # six rounds decide nothing
    clear = {label: values + [values[0]] for label, values in clear.items()}
    assert rounds_stop(clear, list(clear), rule) == DECIDED  # faster, and the A/A arm inside the band
    rng = random.Random(2)
    noisy = {"plain": [_heavy(rng) for _ in range(7)], "cutlass_": [_heavy(rng) for _ in range(7)]}
    undecided = {**noisy, "fast": [0.5 * value for value in noisy["plain"]]}
    assert rounds_stop(undecided, list(undecided), rule) is None  # the noisy arm keeps the signature going
    assert rounds_stop(undecided, list(undecided), StopRule(0.01, 0.02, cap=7)) == CAP
    assert rounds_stop(noisy, list(noisy), StopRule(0.01, precision=10.0, cap=21)) == PRECISE


def test_a_baseline_timed_alone_stops_once_its_own_median_is_precise():
    rng = random.Random(4)
    alone = {"plain": [10.0 * _heavy(rng) for _ in range(7)]}
    assert rounds_stop(alone, ["plain"], StopRule(0.01, precision=0.5, cap=21)) == PRECISE
    assert rounds_stop(alone, ["plain"], StopRule(0.01, precision=1e-6, cap=21)) is None
