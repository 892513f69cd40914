"""The measuring package shared by A/B and the sweep (tritonhook.measure, moved here from tests/test_ab.py with it):
statistics (pure), the timer's L2 rotation, the variants, and the output check (NaN as data, ULPs, the baseline's own
spread)."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from hypothesis import given, settings, strategies as st

from benchmark_scripts import load_benchmark
from tritonhook.errors import TritonhookError
from tritonhook.measure import stats, timing
from tritonhook.measure.variants import parse_variants

pytestmark = pytest.mark.release_independent  # pure statistics and the output check

samples = st.lists(st.floats(min_value=0.01, max_value=100.0, allow_nan=False), min_size=2, max_size=40)


# ----- statistics -------------------------------------------------------------------------------------------------
@given(values=samples)
def test_quantiles_agree_with_the_standard_library(values):
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    assert stats.quantile(values, 0.25) == pytest.approx(q1)
    assert stats.median(values) == pytest.approx(statistics.median(values)) == pytest.approx(q2)
    assert stats.quantile(values, 0.75) == pytest.approx(q3)


@settings(max_examples=30, deadline=None)
@given(values=samples)
def test_the_interval_holds_the_ratio_and_an_identical_copy_gives_one(values):
    ratio, low, high = stats.bootstrap_ratio(values, [v * 1.5 for v in values], resamples=300)
    assert low <= ratio <= high
    assert ratio == pytest.approx(1.5)
    assert stats.bootstrap_ratio(values, list(values), resamples=300) == (1.0, 1.0, 1.0)


def noisy(center: float, count: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [center * (1 + rng.gauss(0, 0.01)) for _ in range(count)]


def test_verdicts_from_known_distributions():
    base = noisy(1.0, 15, 1)
    for other, expected in ((noisy(1.0, 15, 2), "no difference"), (noisy(0.9, 15, 3), "faster"),
                            (noisy(1.1, 15, 4), "slower"), (noisy(1.003, 15, 5), "no difference")):
        assert stats.verdict(*stats.bootstrap_ratio(base, other)) == expected


def test_min_effect_keeps_tiny_but_certain_differences_as_no_difference():
    assert stats.verdict(0.998, 0.997, 0.999) == "no difference"
    assert stats.verdict(0.998, 0.997, 0.999, min_effect=0.001) == "faster"
    assert stats.verdict(1.02, 1.01, 1.03) == "slower"


def test_interquartile_mean_resolves_below_the_quantum_and_ignores_stragglers():
    quantum = 0.032
    base = [100 * quantum] * 60 + [101 * quantum] * 40 + [900 * quantum]      # a straggler, 40% one step up
    other = [100 * quantum] * 45 + [101 * quantum] * 55 + [900 * quantum]
    assert (stats.median(base), stats.median(other)) == (100 * quantum, 101 * quantum)  # medians jump a whole step
    mean_base, mean_other = stats.interquartile_mean(base), stats.interquartile_mean(other)
    assert 100 * quantum < mean_base < mean_other < 101 * quantum  # the 15% shift shows, the straggler does not
    assert stats.interquartile_mean([2.0]) == 2.0


def test_rotation_sets_span_four_l2s_and_at_least_three_sets_within_half_the_free_memory():
    l2, free = 50 * 2**20, 100 * 2**30
    assert timing.rotation_sets(3 * 2**20, l2, free) == 64            # 67 sets would span four L2s: capped
    assert timing.rotation_sets(20 * 2**20, l2, free) == 10           # four L2s' worth of 20 MiB sets
    assert timing.rotation_sets(512 * 2**20, l2, free) == 3           # larger than the L2: still three sets
    assert timing.rotation_sets(512 * 2**20, l2, 2 * 2**30) == 3      # two copies in half of 2 GiB
    assert timing.rotation_sets(512 * 2**20, l2, 2**30) == 2          # room for one copy
    assert timing.rotation_sets(512 * 2**20, l2, 2**30 - 1) == 1      # for none
    assert timing.rotation_sets(0, l2, free) == 1


def test_a_copy_of_the_inputs_keeps_a_tensor_passed_twice_one_tensor():
    torch = pytest.importorskip("torch")
    x, y = torch.arange(4.0), torch.ones(3)
    copied = timing.copy_inputs(torch, (x, x, 7, y))
    assert copied[0] is copied[1] and copied[0] is not x and copied[3] is not y and copied[2] == 7
    assert torch.equal(copied[0], x) and torch.equal(copied[3], y)
    copied[0].add_(1)
    assert torch.equal(x, torch.arange(4.0))  # a copy, not a view


@pytest.mark.parametrize("arms", range(2, 10))
def test_input_sets_never_repeat_back_to_back_and_reach_every_arm_alike(arms):
    """Two calls in a row never read one set (the second would find the first's reads in L2), and with the count
    `rotation_sets` gives, each arm reads every set equally often over `sets` cycles. A count that shares a
    factor with the calls of a cycle (8 sets, 2 arms) keeps each arm on half of the sets for good."""
    from collections import Counter

    def calls(sets, cycles):
        rounds = timing.whole_cycles(1, arms) * cycles
        return [(arm, timing.input_set(r, place, arms, sets))
                for r in range(rounds) for place, arm in enumerate(timing.round_order(r, arms))]

    for wanted in (2, 3, 8, 10, 64):
        sets = timing.rotation_sets(2**20, wanted * 2**18, 2**40, arms)  # four L2s over 1 MiB sets: `wanted`
        assert sets >= max(wanted, 3) and math.gcd(sets, 2 * arms) == 1
        sequence = calls(sets, sets)
        assert all(a[1] != b[1] for a, b in zip(sequence, sequence[1:]))
        for arm in range(arms):
            assert set(Counter(s for a, s in sequence if a == arm).values()) == {2 * arms}
    if arms == 2:
        assert len(Counter(s for a, s in calls(8, 8) if a == 0)) == 4


@pytest.mark.parametrize("arms", range(1, 10))
def test_every_arm_takes_every_place_and_follows_every_other_arm_alike_over_whole_cycles(arms):
    """A call's time depends on what ran just before it: the stream hold (the first place of a round), or a kernel
    that read the same inputs, or some other kernel. So over whole cycles every arm sits at every place equally
    often, comes first as often as any other, and follows every other arm equally often. A B C, C B A kept a
    middle arm off the ends; shifting that order kept each arm behind its two list neighbours alone."""
    from collections import Counter

    rounds = timing.whole_cycles(1, arms)
    orders = [timing.round_order(r, arms) for r in range(rounds)]
    assert all(sorted(order) == list(range(arms)) for order in orders)       # each arm once a round
    places = Counter((arm, place) for order in orders for place, arm in enumerate(order))
    assert set(places.values()) == {2} and len(places) == arms * arms
    firsts = Counter(order[0] for order in orders)
    assert set(firsts.values()) == {2} and len(firsts) == arms
    followers = Counter(pair for order in orders for pair in zip(order, order[1:]))
    assert len(followers) == arms * (arms - 1) and set(followers.values()) <= {2}
    assert timing.whole_cycles(20, 7) == 28 and timing.whole_cycles(28, 7) == 28 and timing.whole_cycles(1, 1) == 2


def test_parse_variants():
    parsed = parse_variants("plain,cutlass_,strip,plain")
    assert [(v.label, v.describe()) for v in parsed] == [
        ("plain", "no rename"), ("cutlass_", "prefix=cutlass_"), ("strip", "strip"), ("plain#2", "no rename")]
    with pytest.raises(TritonhookError, match="at least two"):
        parse_variants("plain")
    with pytest.raises(TritonhookError, match="rename prefix 'a-b'"):
        parse_variants("plain,a-b")


def test_a_a_false_positives_stay_near_five_percent_with_few_rounds():
    """Simulated A/A runs of 6 rounds with 1% noise per round and arm: the percentile bootstrap alone calls
    7.3% of them different; the interval used (widened by the t interval) must stay at or under 5%."""
    trials = 300
    false_positives = 0
    for seed in range(trials):
        rng = random.Random(seed)
        base, other = ([1 + rng.gauss(0, 0.01) for _ in range(6)] for _ in range(2))
        false_positives += stats.verdict(*stats.ratio_interval(base, other), min_effect=0.0) != "no difference"
    assert false_positives / trials <= 0.05


# ----- outputs: NaN as data, ULPs, the baseline's own spread ---------------------------------------------------------
def test_nan_and_inf_at_the_same_positions_are_equal_and_moved_ones_are_counted():
    torch = pytest.importorskip("torch")
    from tritonhook.measure.outputs import difference

    x = torch.randn(4096).log()  # NaN wherever randn was negative: what random inputs do to many kernels
    x[7] = float("inf")
    assert torch.isnan(x).any() and not torch.equal(x, x.clone())  # what used to read as "differ"
    assert difference(torch, x, x.clone()).bitwise
    moved = x.clone()
    first_nan = int(torch.isnan(x).nonzero()[0])
    moved[first_nan] = 0.5
    found = difference(torch, x, moved)
    assert (found.differing, found.nonfinite_mismatch, found.beyond_tolerance) == (1, 1, 1)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_ulp_distance_counts_representable_steps_across_zero(dtype):
    torch = pytest.importorskip("torch")
    from tritonhook.measure.outputs import difference

    dt = getattr(torch, dtype)
    one = torch.ones(1, dtype=dt)
    up = torch.nextafter(one, one * 2)
    up3 = torch.nextafter(torch.nextafter(up, one * 2), one * 2)
    assert difference(torch, one, up3).max_ulp == 3
    tiny = torch.nextafter(torch.zeros(1, dtype=dt), one)  # the smallest subnormal
    assert difference(torch, tiny, -tiny).max_ulp == 2  # +tiny -> +0/-0 -> -tiny
    assert difference(torch, torch.zeros(1, dtype=dt), -torch.zeros(1, dtype=dt)).max_ulp == 0


def test_fp8_and_integer_buffers_are_compared_too():
    torch = pytest.importorskip("torch")
    from tritonhook.measure.outputs import difference

    values = torch.tensor([1.0, 2.0, -3.0]).to(torch.float8_e4m3fn)
    other = torch.tensor([1.0, 2.25, -3.0]).to(torch.float8_e4m3fn)  # e4m3 steps by 0.25 between 2 and 4
    assert difference(torch, values, other).max_ulp == 1
    counts = torch.tensor([5, 9, 2], dtype=torch.int32)
    found = difference(torch, counts, torch.tensor([5, 7, 2], dtype=torch.int32))
    assert (found.differing, found.max_ulp, found.beyond_tolerance) == (1, 2, 1)


def test_a_variant_is_judged_against_the_baselines_own_run_to_run_spread():
    """A nondeterministic baseline (atomics: the sum's rounding depends on the order) makes a variant that is
    just as nondeterministic "within spread", not "differ"; a deterministic one makes any bit change "close" or
    "differ" by the tolerance."""
    torch = pytest.importorskip("torch")
    from tritonhook.measure.outputs import BITWISE, CLOSE, DIFFER, WITHIN_SPREAD, check_outputs

    parts = torch.randn(64, 1024)

    def racy_sum() -> dict:  # the order atomics would add the rows in, different at every run
        return {0: parts[torch.randperm(64)].sum(0)}

    runs = [racy_sum() for _ in range(3)]
    assert not all(torch.equal(runs[0][0], r[0]) for r in runs[1:])  # the spread is real
    check = check_outputs(torch, runs, {"plain#2": racy_sum(), "bad": {0: runs[0][0] + 1.0}}.items())
    assert not check.deterministic and check.verdicts == {"plain#2": WITHIN_SPREAD, "bad": DIFFER}
    assert check.verdict == DIFFER and check.variants["plain#2"].max_ulp > 0

    steady = [{0: parts.sum(0)} for _ in range(3)]
    rounded = {0: torch.nextafter(steady[0][0], steady[0][0] * 2)}
    same = {0: steady[0][0].clone()}
    check = check_outputs(torch, steady, {"rounded": rounded, "same": same}.items())
    assert check.deterministic and check.verdicts == {"rounded": CLOSE, "same": BITWISE}
    assert check.variants["rounded"].max_ulp == 1 and "1 ulp" in check.text()


def test_outputs_given_one_at_a_time_in_one_buffer_are_each_compared_before_the_next_overwrites_it():
    """The sweep's worker keeps one baseline run and hands every later call's outputs in the buffers the kernel
    writes (a copy per run ran an H100 out of memory on a 262k-token loss backward): each must be judged before
    the next call overwrites them. A check that kept the runs and compared afterwards would see the last values in
    every one: no spread, and the racy variant not within it."""
    from tritonhook.measure.outputs import DIFFER, WITHIN_SPREAD, check_outputs

    torch = pytest.importorskip("torch")
    written = torch.zeros(64)
    values = iter([1.0, 1.0 + 1e-6, 1.0 + 3e-6, 1.0 + 2e-6, 1.0 + 1e-6, 2.0])  # 4 baseline runs, variants a, b

    def call(kept: bool = False) -> dict:
        written.fill_(next(values))
        return {0: written.clone() if kept else written}

    check = check_outputs(torch, (call(kept=run == 0) for run in range(4)), ((label, call()) for label in ("a", "b")))
    assert check.baseline_runs == 4 and not check.deterministic and check.spread.max_ulp > 0
    assert check.verdicts == {"a": WITHIN_SPREAD, "b": DIFFER}


def test_compare_outputs_of_ab_calls_a_kernel_that_makes_nan_equal_to_itself():
    torch = pytest.importorskip("torch")
    from tritonhook.measure.outputs import compare_outputs

    produced = torch.randn(1000).sqrt()
    assert compare_outputs({"plain": produced, "cutlass_": produced.clone()}, "bitwise") == "bitwise"
    assert compare_outputs({"plain": produced, "cutlass_": produced.nan_to_num()}, "allclose") == "MISMATCH"


def test_the_place_study_reads_a_slow_first_place_on_the_ends_of_the_old_order_and_on_no_arm_of_round_order():
    """benchmarks/timer_places.py's summary of an A/A: with the first place of every round 5% slow, round_order's
    arms read alike, while pooling the calls as A B C, C B A placed them puts the slowness on the two end arms."""
    arms, rounds = 7, timing.whole_cycles(1, 7)
    samples = [[0.0] * rounds for _ in range(arms)]
    for r in range(rounds):
        for place, arm in enumerate(timing.round_order(r, arms)):
            samples[arm][r] = 1.05 if place == 0 else 1.0 + 0.001 * place
    row = load_benchmark("timer_places").places_row(samples)
    assert row["by_place"][0] == max(row["by_place"]) > 1.04
    assert max(row["by_arm"]) == min(row["by_arm"])
    ends, middle = row["alternating_order_by_arm"][0], row["alternating_order_by_arm"][3]
    assert row["alternating_order_by_arm"][-1] == ends > middle + 0.02


def test_the_neighbour_study_finds_the_arm_behind_which_calls_read_slow():
    """benchmarks/timer_neighbours.py's reading of a run: with every call right behind arm 0 5% slow, each arm's
    median behind arm 0 reads 1.05 of its others. Under round_order every arm follows arm 0; under the shifted
    order the timer had, arm 2 of 4 never does (it only ever follows arms 1 and 3)."""
    neighbours = load_benchmark("timer_neighbours")
    names = ["a", "b", "c", "d"]
    for order, behind_a in ((timing.round_order, {"b", "c", "d"}), (neighbours.shifted_order, {"b", "d"})):
        rounds = timing.whole_cycles(1, len(names)) * 3
        run = {name: [0.0] * rounds for name in names}
        for r in range(rounds):
            arms = order(r, len(names))
            for place, arm in enumerate(arms):
                run[names[arm]][r] = 1.05 if place and arms[place - 1] == 0 else 1.0
        row = neighbours.neighbours_row(dict(D=128, causal=False, S=1024, runs=[run]), order, [("b", "c")])
        assert {name for name, behind in row["by_predecessor"].items() if "a" in behind} == behind_a
        for name in behind_a:
            behind = row["by_predecessor"][name]
            assert behind["a"] == max(behind.values()) == 1.05 * min(behind.values())
        assert set(row["pair_ratios"]) == {"c/b"}


@pytest.mark.release_independent  # torch's profiler state, no compile
def test_the_recorder_knows_while_torch_profiler_traces_the_process():
    """`timing.profiler_traces`, which the recorder asks before it times a launch (on a GPU, kernel tracing lengthens
    what events read: `test_launches_while_torch_profiler_traces_the_workload_are_not_timed`): a real profiler, on
    the CPU, on only while it runs."""
    torch = pytest.importorskip("torch")
    from tritonhook.measure import timing

    assert not timing.profiler_traces(torch)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        assert timing.profiler_traces(torch)
    assert not timing.profiler_traces(torch)
