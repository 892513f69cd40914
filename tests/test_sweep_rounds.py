"""Adaptive rounds in a replay (`measure.sequential.StopRule` in the worker, `replay.stop_rule` per signature): each
signature's rounds stop where its rule says, the row carries how many and why, and `--fixed-rounds` times the cap.
Over a recording of real captures, with the worker program replaced by tests/sweep_fake_worker.py, which applies
the job's rule to its made-up rounds (variant i takes 100 µs + 1 µs per index and per round: every variant 1%
slower than the baseline in every round). The rule's statistics: tests/test_sequential.py; on a GPU:
docs/timing.md#adaptive-rounds."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from rich.console import Console

from tritonhook import config
from tritonhook.cli import build_parser, main as cli
from tritonhook.cli import sweep as sweep_cli
from tritonhook.errors import TritonhookError
from tritonhook.measure.sequential import CAP, DECIDED, FIXED, SEQUENCE_MIN_ROUNDS
from tritonhook.measure.variants import parse_variants
from tritonhook.sweep import ReplayPlan, Workers, replay
from tritonhook.sweep.replay import stop_rule
from tritonhook.sweep.builds import IDENTICAL

pytestmark = pytest.mark.release_independent
torch = pytest.importorskip("torch")
from sample_recording import sample_recording  # noqa: E402 - after torch is known

FAKE_WORKER = str(Path(__file__).with_name("sweep_fake_worker.py"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    return sample_recording(tmp_path_factory.mktemp("rounds-store"), 3)


def test_a_clear_difference_stops_at_the_fewest_rounds_and_the_row_says_so(recorded):
    store, recording = recorded
    result = replay(recording, store, parse_variants("plain,cutlass_"), ReplayPlan(rounds=21),
                    workers=Workers.at(worker=[FAKE_WORKER]))
    compared = [row for row in result.rows if row.variants[1].verdict != IDENTICAL]
    alone = [row for row in result.rows if row.variants[1].verdict == IDENTICAL]  # the baseline's median alone
    assert compared and alone, "the sample kernels must give both kinds of row for this test to mean much"
    assert {(row.rounds, row.stopped) for row in compared} == {(SEQUENCE_MIN_ROUNDS, DECIDED)}
    assert all(row.variants[1].verdict == "slower" and len(row.variants[1].samples) == SEQUENCE_MIN_ROUNDS
               for row in compared)
    # the fake baseline grows 1% a round: its median's interval never gets 2% narrow, so the cap stops it
    assert {(row.rounds, row.stopped) for row in alone} == {(21, CAP)}
    assert result.adaptive and (f"rounds: rows {7 * len(compared) + 21 * len(alone)} in all"
                                in result.rounds_line())
    console = Console(width=250, record=True)
    console.print(result)
    text = console.export_text()
    assert "at most 21 rounds, adaptive" in text and "7 decided" in text
    saved = store.result(result.id)
    assert [(row.rounds, row.stopped) for row in saved.rows] == [(row.rounds, row.stopped) for row in result.rows]


def test_fixed_rounds_time_the_cap_and_a_cap_below_seven_is_refused_unless_fixed(recorded):
    store, recording = recorded
    fixed = replay(recording, store, parse_variants("plain,cutlass_"), ReplayPlan(rounds=9, fixed_rounds=True),
                   workers=Workers.at(worker=[FAKE_WORKER]))
    assert {(row.rounds, row.stopped) for row in fixed.rows} == {(9, FIXED)} and not fixed.adaptive
    with pytest.raises(TritonhookError, match=r"--rounds 5: adaptive rounds decide nothing before 7"):
        replay(recording, store, parse_variants("plain,cutlass_"), ReplayPlan(rounds=5),
               workers=Workers.at(worker=[FAKE_WORKER]))
    capped = replay(recording, store, parse_variants("plain,cutlass_"), ReplayPlan(rounds=5, fixed_rounds=True),
                    workers=Workers.at(worker=[FAKE_WORKER]))
    assert {row.rounds for row in capped.rows} == {5}


def test_the_cli_passes_fixed_rounds_to_the_replay(recorded, capsys):
    """No GPU here: the replay's own check of the cap says whether the flag reached it (the real worker then fails
    on the CPU torch, after it)."""
    store, _ = recorded
    args = ["replay", "--store", str(store.path), "--variants", "plain,cutlass_", "--rounds", "5"]
    assert cli(args) == 2
    assert "--rounds 5: adaptive rounds decide nothing before 7" in capsys.readouterr().err
    assert cli([*args, "--fixed-rounds"]) == 2
    assert "adaptive rounds" not in capsys.readouterr().err


def test_autotune_candidates_are_only_ranked_the_config_a_workload_ran_is_a_row(recorded):
    _, recording = recorded
    signature = recording.signatures[0]
    tag = {"group": 0, "config": {"BLOCK": 64}}
    ran = stop_rule(dataclasses.replace(signature, autotune=tag, launches=50), 21, 0.005)
    benchmarked = stop_rule(dataclasses.replace(signature, autotune=tag, launches=0), 21, 0.005)
    assert (ran.precision, ran.cap) == (config.sweep.ROW_PRECISION, 21)
    assert (benchmarked.precision, benchmarked.cap) == (config.sweep.CANDIDATE_PRECISION, config.sweep.CANDIDATE_CAP)
    assert stop_rule(dataclasses.replace(signature, autotune=tag, launches=0), 9, 0.005).cap == 9
    assert stop_rule(signature, 21, 0.005) == ran


def test_the_cli_passes_the_l2_dirt_to_the_replay_and_refuses_an_unknown_one(recorded, capsys):
    store, _ = recorded
    for command in ("sweep", "replay"):
        args = build_parser().parse_args([command, "--store", str(store.path), "--l2-dirt", "half"])
        plan, _ = sweep_cli._plan(args)
        assert plan.l2_dirt == "half"
    for command in (["check", "--baseline", "b.json"], ["tune"]):  # their handlers hand it to gate_plan / tune
        assert build_parser().parse_args([*command, "--l2-dirt", "clean"]).l2_dirt == "clean"
    with pytest.raises(SystemExit):
        cli(["replay", "--store", str(store.path), "--l2-dirt", "grimy"])
    assert "--l2-dirt: invalid choice: 'grimy'" in capsys.readouterr().err
    with pytest.raises(TritonhookError, match=r"--l2-dirt grimy: one of measured, dirty, half, clean, none"):
        ReplayPlan(l2_dirt="grimy")
