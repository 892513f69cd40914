"""Autotune picks across ranks and runs: each process's decisions recorded with its rank, the picks per tuning key
compared (`sweep.divergence`), one pick pinned for every process (`decisions divergence --pin`), and the pin run by
every rank with nothing benchmarked. Real processes (RANK as torchrun sets it), Triton's real Autotuner, the real
CLI; no GPU (`tests/divergent_ranks.py`)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tritonhook._triton import pick_identity
from tritonhook.store import Store
from tritonhook.sweep import recording as rec
from tritonhook.sweep.autotune import config_text
from tritonhook.sweep.divergence import divergence

SCRIPT = Path(__file__).with_name("divergent_ranks.py")
GPU = "NVIDIA H200"


def _ranks(*args, ranks=(0, 1)) -> list[subprocess.CompletedProcess]:
    """The script run as each rank at once, as a job's processes run."""
    started = [subprocess.Popen([sys.executable, str(SCRIPT), *map(str, args)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env={**os.environ, "RANK": str(rank),
                                                                        "WORLD_SIZE": str(len(ranks)),
                                                                        "TRITONHOOK_DECISIONS_GPU": GPU})
               for rank in ranks]
    done = []
    for process in started:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-2000:]
        done.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return done


def _cli(*args) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "tritonhook", *map(str, args)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """A store with two runs of a two-rank job, each process's autotune decision recorded."""
    store = tmp_path_factory.mktemp("divergence") / "store"
    for run in ("run-a", "run-b"):
        _ranks("record", store, run)
    return store


def test_each_processs_pick_is_recorded_with_its_rank_and_the_divergent_key_found(two_runs):
    recordings = Store(two_runs).results(rec.RESULT_KIND)
    assert sorted((r.label, r.rank) for r in recordings) == [("run-a", 0), ("run-a", 1), ("run-b", 0), ("run-b", 1)]
    found = divergence(recordings)
    (key,) = found.keys
    assert key.divergent and key.kernel == "add_kernel" and len(key.picks) == 4
    picked = {(p.run, p.rank): p.config["BLOCK"] for p in key.picks}
    assert picked == {("run-a", 0): 256, ("run-a", 1): 512, ("run-b", 0): 256, ("run-b", 1): 512}
    assert key.flip_rate == pytest.approx(0.5)  # two picks of four are not the commoner config (a tie: either)
    assert key.spread == pytest.approx(1.0)  # by the autotuners' own medians the rivals are a tie
    assert {text.split(",")[0] for text in key.timings} == {"BLOCK=256", "BLOCK=512", "BLOCK=1024"}


def test_a_pin_replays_the_rival_picks_first_and_says_when_it_could_not(two_runs, tmp_path):
    """`--pin` times each divergent key's rival picks before it pins (the autotuners' own µs timings are each
    process's draw: such pins ran slower in a DDP job at 5 of 32 keys): where nothing could be replayed (here: no
    rival pick's kernel was captured), the pins say they are the autotuners' fastest; `--no-replay` asks for that,
    and is refused in one line without `--pin`."""
    store = tmp_path / "store"
    shutil.copytree(two_runs, store)
    shown = json.loads(_cli("decisions", "divergence", "--store", store, "--pin", "--json").stdout)
    (warning,) = [w for w in shown["pins"]["warnings"] if w.startswith("nothing replayed")]
    assert "no divergent tuning key with its picks' kernels recorded to replay" in warning
    assert len(shown["pins"]["decisions"]) == 1
    refused = subprocess.run([sys.executable, "-m", "tritonhook", "decisions", "divergence", "--store", str(store),
                              "--no-replay"], capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [
        "tritonhook: error: --no-replay: only with --pin, and not with --replay"]


def test_one_pick_pinned_for_every_rank_runs_in_each_with_nothing_benchmarked(two_runs, tmp_path):
    shown = json.loads(_cli("decisions", "divergence", "--store", two_runs, "--pin", "--no-replay", "--json").stdout)
    assert shown["divergent"] == 1
    (pin,) = shown["pins"]["decisions"]
    assert pin["key"]["gpu"] == GPU and dict(pin["choice"]["config"])["BLOCK"] == 256  # the tie's fixed rule
    ran = [json.loads(done.stdout) for done in _ranks("apply", two_runs)]
    assert [(r["rank"], r["timed"], r["ran"]) for r in ran] == [(0, 0, {"BLOCK": 256}), (1, 0, {"BLOCK": 256})]
    again = tmp_path / "pinned"
    _ranks("record", again, "run-pinned")  # without the pin each rank picks its own again
    assert divergence(Store(again).results(rec.RESULT_KIND)).divergent


def test_a_key_every_process_agreed_on_is_pinned_at_its_pick_too(tmp_path):
    """Agreement over a few cold runs is a draw too: a 2-rank DDP job's key that all six processes of three cold
    runs picked alike split its ranks in the next run, pinned at its 39 divergent keys (H200). `--pin` pins every
    key: here one divergent (the tie, BLOCK 256 by the fixed rule) and one both ranks of both runs picked BLOCK 512
    at; each rank then runs both pins with nothing benchmarked."""
    from tritonhook.decisions.keep import AGREED_PICK_KIND, DIVERGENCE_KIND

    store = tmp_path / "store"
    for run in ("run-a", "run-b"):
        _ranks("record", store, run, "--agreed")
    shown = json.loads(_cli("decisions", "divergence", "--store", store, "--pin", "--no-replay", "--json").stdout)
    assert shown["divergent"] == 1 and len(shown["keys"]) == 2
    pinned = sorted((dict(p["choice"]["config"])["BLOCK"], p["evidence"]["source_kind"])
                    for p in shown["pins"]["decisions"])
    assert pinned == [(256, DIVERGENCE_KIND), (512, AGREED_PICK_KIND)]
    ran = [json.loads(done.stdout) for done in _ranks("apply", store, "--agreed")]
    assert [(r["timed"], {n: c["BLOCK"] for n, c in r["picks"].items()}) for r in ran] == \
        [(0, {"4096": 256, "8192": 512})] * 2


def test_a_rival_the_replay_measured_faster_is_pinned_instead_of_the_autotuners_fastest(two_runs, tmp_path):
    """The autotuners' own timings are draws: on an H200 a 2-rank job's replay ran a rival pick at 0.966 [0.958,
    0.980] of the pick its autotuners timed fastest. The pin takes the replay's measurement where one beat that pick
    beyond doubt (its interval below 1), with that interval as its evidence; a rival within noise changes nothing."""
    from tritonhook.decisions.keep import DIVERGENCE_KIND, DIVERGENCE_REPLAY_KIND, from_divergence
    from tritonhook.sweep.divergence import RivalTiming

    def pinned(rival: RivalTiming):
        found = divergence(Store(two_runs).results(rec.RESULT_KIND))
        (key,) = found.divergent
        key.replayed = [rival]
        (decision,) = from_divergence(Store(tmp_path / f"store-{rival.high}"), found, GPU).decisions
        return dict(decision.choice.config)["BLOCK"], decision.evidence

    block512 = next(text for text in divergence(Store(two_runs).results(rec.RESULT_KIND)).keys[0].configs
                    if text.startswith("BLOCK=512"))
    block, evidence = pinned(RivalTiming(block512, 0.966, 0.958, 0.980, "faster"))
    assert (block, evidence.source_kind, evidence.ratio, evidence.high) == (512, DIVERGENCE_REPLAY_KIND, 0.966, 0.980)
    block, evidence = pinned(RivalTiming(block512, 0.99, 0.97, 1.01, "no difference"))
    assert (block, evidence.source_kind) == (256, DIVERGENCE_KIND)


def test_the_gates_current_run_runs_the_baseline_picks_and_an_applied_decision_wins_its_key(two_runs, tmp_path):
    """A gate's second cold run draws its own autotune picks (a 2-rank DDP job's differed at 39 of 42 keys over 3
    cold runs), and a kernel at another config is a build the baseline never made: `check` pins the baseline's picks
    in the current run. Rank 1's recording picked BLOCK 512; rank 0, left alone, picks 256; under the baseline's pins
    file it runs 512 with nothing benchmarked. The picks travel in the portable baseline file; a decision given with
    --apply at the same key wins there (what the gate then checks is applying it)."""
    from tritonhook.check import Baseline
    from tritonhook.decisions import Choice, Decision
    from tritonhook.decisions.keep import BASELINE_PICK_KIND, write_entries
    from tritonhook.decisions.model import PLAIN

    store = Store(two_runs)
    (rank1,) = [r for r in store.results(rec.RESULT_KIND) if (r.label, r.rank) == ("run-a", 1)]
    baseline = Baseline.from_recording(rank1, store)
    (pick,) = baseline.picks
    assert dict(pick.choice.config)["BLOCK"] == 512 and pick.key.gpu == GPU
    assert (pick.evidence.source_kind, pick.evidence.source_id, baseline.unpinned) == (BASELINE_PICK_KIND, rank1.id, [])
    carried = Baseline.load(baseline.save(tmp_path / "baseline.json"))
    assert [p.to_json() for p in carried.picks] == [pick.to_json()]
    pins = carried.pins_file(tmp_path, None, store)
    (ran,) = [json.loads(done.stdout) for done in _ranks("apply", two_runs, pins, ranks=(0,))]
    assert (ran["rank"], ran["timed"], ran["ran"]) == (0, 0, {"BLOCK": 512})
    block1024 = tuple({**dict(pick.choice.config), "BLOCK": 1024, "num_warps": 8}.items())  # the third config
    applied = write_entries(tmp_path / "applied.json",
                            [(Decision(pick.key, Choice(PLAIN, config=block1024), pick.evidence), None)], "a test")
    both = carried.pins_file(tmp_path / "both", applied, store)
    (ran,) = [json.loads(done.stdout) for done in _ranks("apply", two_runs, both, ranks=(0,))]
    assert (ran["timed"], ran["ran"]) == (0, {"BLOCK": 1024})


def _ran(recording: rec.Recording, ms_per_launch: float, launches: int = 100) -> rec.Recording:
    """`recording` with the workload's launches of its decision's pick, sampled at `ms_per_launch` (what a GPU
    recording adds: this script's launch fails without one)."""
    (decision,) = recording.autotune
    ran = rec.Signature(id=0, kernel=decision["kernel"], triton_hash="0" * 64, capture_id=None, arch="sm_90a",
                        grid=[16, 1, 1], args=[], arg_names=[], signature={}, constexprs={}, launches=launches,
                        times_ms=[ms_per_launch] * 3, autotune={"group": decision["group"],
                                                              "config": decision["chosen"]})
    return dataclasses.replace(recording, signatures=[ran])


def test_what_a_divergent_pick_cost_is_the_slowest_ranks_time_against_the_fastest_pick(two_runs):
    """Per run, the slowest process at the key (its own sampled time per launch) against the fastest pick's median
    per launch, over the slowest's launches; the run where that is most. Ranks 0 picked BLOCK 256 (the fixed rule's
    pick of the tie), ranks 1 BLOCK 512."""
    recordings = {(r.label, r.rank): r for r in Store(two_runs).results(rec.RESULT_KIND)}
    sampled = {("run-a", 0): 0.010, ("run-a", 1): 0.012, ("run-b", 0): 0.011, ("run-b", 1): 0.016}
    (key,) = divergence([_ran(recordings[at], ms) for at, ms in sampled.items()]).keys
    cost = key.cost()
    assert (cost["run"], cost["rank"], cost["config"].split(",")[0]) == ("run-b", 1, "BLOCK=512")
    assert cost["best_ms_per_launch"] == pytest.approx(0.0105)  # BLOCK 256's two processes: 0.010 and 0.011
    assert cost["excess_ms"] == pytest.approx((0.016 - 0.0105) * 100)
    assert divergence(list(recordings.values())).keys[0].cost() is None  # nothing ran: nothing to cost


def test_replaying_rivals_without_their_kernels_recorded_is_one_line(two_runs):
    """These recordings hold the decisions only (no GPU: no launch was recorded): nothing to replay, said in one
    line before any worker starts."""
    done = subprocess.run([sys.executable, "-m", "tritonhook", "decisions", "divergence", "--store", str(two_runs),
                           "--replay"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "no divergent tuning key with its picks' kernels recorded to replay" in done.stderr


@pytest.mark.release_independent  # Inductor's select_algorithm: torch's, whatever the Triton release
def test_a_choice_inductor_made_while_compiling_is_pinned_for_every_rank_and_compiled_without_benchmarking(
        select_algorithm_cpu, tmp_path):
    """Inductor's compile-time choice among GEMM kernels (`select_algorithm`, recorded by the real tracer on a CPU:
    its CPP template against MKL's extern kernel) counts as a pick like any autotuner's: a rank that chose the other
    kernel makes its key divergent, reported with who decided. `--pin` pins it, and a gate pins its baseline's
    pick; under a pin of the choice Inductor did not make, it compiles that one (the generated code calls MKL or
    not, as pinned) with nothing benchmarked: the process's decision at that key is the pin's, none by
    select_algorithm."""
    from tritonhook.decisions.keep import baseline_picks, from_divergence

    done = select_algorithm_cpu
    assert done.returncode == 0, done.stderr[-3000:]
    unpinned = json.loads(done.stdout)
    (decision,) = unpinned["decisions"]
    other = next(config for config, _ in decision["timings"] if config != decision["chosen"])
    picked = {0: decision, 1: {**decision, "chosen": other}}  # rank 1 chose the other kernel
    recordings = [rec.Recording([], "x86", GPU, "3.6.0", "2.13.0", 100 + rank, label="run-a", rank=rank,
                                autotune=[picked[rank]]) for rank in (0, 1)]
    (key,) = divergence(recordings).keys
    assert key.tuner == "select_algorithm" and key.divergent and key.flip_rate == 0.5
    assert sorted(key.configs) == sorted(config_text(pick_identity(c)) for c in (decision["chosen"], other))
    (pin,) = from_divergence(Store(tmp_path / "store"), divergence(recordings), GPU).decisions
    assert dict(pin.choice.config) == pick_identity(decision["chosen"])  # the faster by Inductor's own timings
    (pin,), unpinned_keys = baseline_picks(recordings[1])  # a gate pins rank 1's pick: the other choice
    assert dict(pin.choice.config) == pick_identity(other) and unpinned_keys == []
    pinned = _run_choice(tmp_path, pin)
    assert [(d["tuner"], d["chosen"]) for d in pinned["decisions"]] == [("pinned", pick_identity(other))]
    assert unpinned["calls_extern"] == (decision["chosen"]["backend"] == "extern")
    assert pinned["calls_extern"] == (other["backend"] == "extern") != unpinned["calls_extern"]


def test_processes_that_chose_one_template_config_under_other_numbers_picked_alike():
    """Inductor numbers a process's template choices as it generates them, so one template config is `triton_mm_12`
    in one process and `triton_mm_15` in another (another rank, another cold run, one more benchmark compiled
    first): picks of one config under two numbers are one pick, not a divergence; another config is one, and the
    autotuners' timings of a config under its two numbers are one config's."""
    decided = {"group": 0, "kernel": "triton_mm", "key": ["bf16 [2048, 256]", "bf16 [256, 256]"], "bench_s": None,
               "tuner": "select_algorithm"}
    config = {"choice": "triton_mm_12", "BLOCK_M": 64, "num_warps": 4}

    def key_of(*chosen: dict):
        recordings = [rec.Recording([], "sm_90a", GPU, "3.6.0", "2.11.0", 100 + rank, label="run-a", rank=rank,
                                    autotune=[{**decided, "chosen": pick, "timings": [[pick, [0.01 * (rank + 1)]]]}])
                      for rank, pick in enumerate(chosen)]
        (key,) = divergence(recordings).keys
        return key

    renumbered = key_of(config, {**config, "choice": "triton_mm_15"})
    assert not renumbered.divergent and renumbered.configs == ["choice=triton_mm, BLOCK_M=64, num_warps=4"]
    assert renumbered.timings == {renumbered.configs[0]: [0.015, 0.01, 0.02]}
    assert key_of(config, {**config, "choice": "triton_mm_15", "BLOCK_M": 128}).divergent


@pytest.mark.release_independent  # Inductor's scheduler: torch's, whatever the Triton release
def test_a_template_fusion_near_a_tie_is_run_the_other_way_against_its_recorded_way_each_gemm_as_pinned(tmp_path):
    """Inductor's template fusion (a GEMM template finalized with its neighbour fused in or not, which under
    max-autotune on a GPU its scheduler decides by a benchmark while it compiles) is a decision per GEMM, keyed by
    the graph node the GEMM lowers, not by its shape alone: two GEMMs of one shape can end apart. Here on a CPU, two
    Linear + ReLU layers of one shape, recorded (as the scheduler's timings would have it) with the first GEMM left
    apart by a near tie (1.01x the other way) and the second fused by a wide margin, the CPP GEMM template for both.
    A sweep of that recording names the one near tie, and its confirmation runs the first GEMM the other way in one
    arm and as recorded in the other, the second as recorded in both: each arm's compiled module runs its GEMMs as
    pinned (as it is: the first GEMM alone, its ReLU, the second with its ReLU in it; the other way: both fused), and
    the pins are the run's only decisions. Which arm ran which way is read from the runs' decisions; the step then
    judges the fusion (given times here; its timing is the GPU test's)."""
    from tritonhook.decisions.confirm import (APPLIED, AS_IS, _measure_fusion, _only, _recorded_ways, arm_files,
                                             decisions_of)
    from tritonhook.errors import TritonhookError
    from tritonhook.decisions.confirmation import ARMS
    from tritonhook.decisions.keep import held_picks
    from tritonhook.decisions.model import read_file
    from tritonhook.sweep.fusion import near_ties, template_fusions
    from tritonhook.sweep.result import SweepResult

    unpinned = _run_choice(tmp_path / "unpinned", None, "--two-layers")
    (decision,) = unpinned["decisions"]
    assert unpinned["calls_extern"] == (decision["chosen"]["backend"] == "extern")
    template = next(config for config, _ in decision["timings"] if config.get("backend") == "CPP")

    def recorded_fusion(group: int, node: str, fused: bool, fused_ms: float, apart_ms: float) -> dict:
        return {**decision, "group": group, "tuner": "template fusion",
                "key": [*decision["key"], f"at {node} (forward)"], "chosen": {**template, "fused": fused},
                "timings": [[{**template, "fused": True}, [fused_ms]], [{**template, "fused": False}, [apart_ms]]]}

    first, second = unpinned["gemm_nodes"]
    recorded = [recorded_fusion(1, first, False, 0.101, 0.100), recorded_fusion(2, second, True, 0.050, 0.080)]
    store = Store(tmp_path / "store")
    recording = rec.Recording([], "x86", GPU, "3.6.0", "2.13.0", 1, autotune=recorded)
    recording.id = store.add_result(rec.RESULT_KIND, recording.to_json())
    fusions = template_fusions(recording.autotune)
    assert [round(f.margin, 3) for f in fusions] == [1.01, 1.6] and near_ties(fusions, 0.05) == fusions[:1]
    sweep = SweepResult([], ["plain", "cutlass_"], 3, recording.id, ["python", "w.py"], {},
                        fusions=[f.to_json() for f in fusions], fusion_near_tie=0.05)
    sweep.id = store.add_result("sweep", sweep.to_json())
    made = decisions_of(store, store.result(sweep.id))  # as saved
    (flip,) = made.decisions
    assert flip.key.tuning_key == tuple(recorded[0]["key"]) and dict(flip.choice.config)["fused"] is True
    ways = _recorded_ways(made)
    assert ways == {flip.key: recorded[0]["chosen"]}
    assert _only(made, f"at {first} ", "the sweep").decisions == [flip]  # `decisions confirm --only`
    with pytest.raises(TritonhookError, match=r"--only 'at nowhere': no decision of the sweep matches; its "
                                              r"decisions: triton_mm|cpp"):
        _only(made, "at nowhere", "the sweep")
    held, _ = held_picks(recording, made.decisions)
    files = arm_files(tmp_path / "arms", made.decisions, {}, ways, held)
    ran = {arm: _run_choice(tmp_path / arm, [d for d, _ in read_file(files[arm]).decisions], "--two-layers")
           for arm in ARMS}
    pinned_ways = {arm: sorted((d["tuner"], d["key"][-1], d["chosen"]["fused"]) for d in ran[arm]["decisions"])
                   for arm in ARMS}
    assert pinned_ways[AS_IS] == sorted(("pinned", d["key"][-1], d["chosen"]["fused"]) for d in recorded)
    assert pinned_ways[APPLIED] == sorted(("pinned", d["key"][-1], True) for d in recorded)
    assert not any(ran[arm]["calls_extern"] for arm in ARMS)
    calls = {arm: [(call["gemm"], call["relu"]) for call in ran[arm]["kernel_calls"]] for arm in ARMS}
    assert calls == {AS_IS: [(True, False), (False, True), (True, True)], APPLIED: [(True, True), (True, True)]}

    def judged(applied_ms: list[float], others: int = 0):
        runs = {AS_IS: [_step(ran[AS_IS], ms) for ms in (0.200, 0.2001, 0.2002)],
                APPLIED: [_step(ran[APPLIED], ms) for ms in applied_ms]}
        return _measure_fusion(flip, ways[flip.key], runs, 0.01, others)

    faster = judged([0.180, 0.1801, 0.1802])
    assert (faster.pinned_ran, faster.baseline_ran, faster.standing) == (True, True, "confirmed")
    assert faster.confirmed is True
    assert judged([0.230, 0.2301, 0.2302]).standing == "slower pinned"
    assert judged([0.195, 0.205, 0.200]).standing == "no gain"
    assert judged([0.180, 0.1801, 0.1802], others=1).standing == "step shared"
    swapped = _measure_fusion(flip, ways[flip.key], {AS_IS: [_step(ran[APPLIED], 0.2)] * 2,
                                                     APPLIED: [_step(ran[AS_IS], 0.18)] * 2}, 0.01, 0)
    assert (swapped.pinned_ran, swapped.baseline_ran, swapped.standing) == (False, False, "not pinned")


def _step(run: dict, ms: float) -> rec.Recording:
    """A recorded run of an arm: its real decisions, one launch signature timed at `ms` (the step's time)."""
    signature = rec.Signature(id=0, kernel="k", triton_hash="h", capture_id=None, arch="x86", grid=[1, 1, 1], args=[],
                              arg_names=[], signature={}, constexprs={}, launches=1, times_ms=[ms])
    return rec.Recording([signature], "x86", GPU, "3.6.0", "2.13.0", 1, autotune=run["decisions"])


@pytest.mark.gpu
def test_a_gemm_templates_fusion_is_recorded_and_pinned_the_other_way_on_the_gpu(tmp_path):
    """On a GPU, Inductor's Triton GEMM templates alone for two fp16 Linear + ReLU layers of one shape: the tracer
    records, per GEMM (a decision of `template fusion`, keyed by the GEMM's graph node), the template the scheduler
    finalized it with and whether it fused the ReLU into it, as the compiled module runs them, with what the
    scheduler timed to decide (fused, per choice it timed so; the template's best and the ReLU apart). Pinned with
    the first GEMM's fusion the other way and the second's as recorded, the next compile runs each GEMM as pinned,
    with nothing benchmarked."""
    import torch

    from tritonhook.decisions.keep import baseline_picks

    def expected(fused: list[bool]) -> list[tuple[bool, bool]]:  # per GEMM in order: (runs a GEMM, runs a ReLU)
        return [step for one in fused for step in ([(True, True)] if one else [(True, False), (False, True)])]

    gpu = torch.cuda.get_device_name()
    unpinned = _run_choice(tmp_path / "unpinned", None, "--cuda", "--templates-only", "--two-layers", gpu=gpu)
    fusions = {d["key"][-1]: d for d in unpinned["decisions"] if d["tuner"] == "template fusion"}
    recorded = [fusions[f"at {node} (forward)"] for node in unpinned["gemm_nodes"]]
    fused = [d["chosen"]["fused"] for d in recorded]
    assert [(c["gemm"], c["relu"]) for c in unpinned["kernel_calls"] if c["gemm"] or c["relu"]] == expected(fused)
    for decision in recorded:  # what the scheduler timed, carried by the decision, and the way it went by them
        times = {way: [ms[0] for config, ms in decision["timings"] if config["fused"] is way and ms[0] is not None]
                 for way in (True, False)}
        assert len(times[False]) == 1, decision["timings"]  # the template's best alone and the ReLU alone
        assert decision["chosen"]["fused"] == bool(times[True] and min(times[True]) < times[False][0])
    assert any(d["timings"] and any(config["fused"] for config, _ in d["timings"]) for d in recorded)
    wanted = [{**recorded[0], "chosen": {**recorded[0]["chosen"], "fused": not fused[0]}}, recorded[1]]
    pins, _ = baseline_picks(rec.Recording([], "sm_90a", gpu, "3.6.0", torch.__version__, 1, autotune=wanted))
    pinned = _run_choice(tmp_path / "pinned", pins, "--cuda", "--templates-only", "--two-layers", gpu=gpu)
    assert sorted((d["key"][-1], d["chosen"]["fused"]) for d in pinned["decisions"] if d["tuner"] == "pinned") == \
        sorted((d["key"][-1], d["chosen"]["fused"]) for d in wanted)
    assert not [d for d in pinned["decisions"] if d["tuner"] in ("select_algorithm", "template fusion")]
    assert [(c["gemm"], c["relu"]) for c in pinned["kernel_calls"] if c["gemm"] or c["relu"]] == \
        expected([not fused[0], fused[1]]), pinned["kernel_calls"]


def _run_choice(tmp_path: Path, pins=None, *flags: str, gpu: str = GPU) -> dict:
    """tests/select_algorithm_choice.py run in a fresh process and Inductor cache, under `pins` (a decision, or a
    list of them) where given."""
    from tritonhook.decisions.keep import write_entries

    tmp_path.mkdir(parents=True, exist_ok=True)
    entries = [(pin, None) for pin in (pins if isinstance(pins, list) else [pins])]
    pinned = [] if pins is None else [str(tmp_path / "s"), write_entries(tmp_path / "pins.json", entries, "a test")]
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / f"inductor-{pins is None}"),
           "TRITONHOOK_DECISIONS_GPU": gpu}
    ran = subprocess.run([sys.executable, str(SCRIPT.with_name("select_algorithm_choice.py")), *flags, *pinned],
                         capture_output=True, text=True, timeout=600, env=env)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(ran.stdout)


@pytest.mark.gpu
def test_a_pinned_triton_gemm_template_is_compiled_on_the_gpu_without_benchmarking(tmp_path):
    """On a GPU, Inductor's choice among Triton's GEMM templates and cuBLAS for an fp16 Linear + ReLU: pinned at a
    choice it did not make (the baseline pick of a recording that chose it), the next compile takes that choice with
    nothing benchmarked, and the code calls cuBLAS exactly when the pinned choice is cuBLAS's."""
    import torch

    from tritonhook.decisions.keep import baseline_picks

    gpu = torch.cuda.get_device_name()
    unpinned = _run_choice(tmp_path, None, "--cuda", gpu=gpu)
    (decision,) = [d for d in unpinned["decisions"] if d["tuner"] == "select_algorithm"]
    timed = [config for config, ms in decision["timings"] if ms and ms[0] is not None]
    other = next(config for config in reversed(timed) if pick_identity(config) != pick_identity(decision["chosen"]))
    recording = rec.Recording([], "sm_90a", gpu, "3.6.0", torch.__version__, 1,
                              autotune=[{**decision, "chosen": other}])
    (pin,), _ = baseline_picks(recording)
    pinned = _run_choice(tmp_path, pin, "--cuda", gpu=gpu)
    assert [(d["tuner"], d["chosen"]) for d in pinned["decisions"] if d["tuner"] != "coordinate descent"] == \
        [("pinned", pick_identity(other))]
    assert unpinned["calls_extern"] == (decision["chosen"].get("backend") == "extern")
    assert pinned["calls_extern"] == (other.get("backend") == "extern")


def test_an_inductor_kernel_only_inductors_own_benchmarks_launched_is_neither_counted_divergent_nor_pinned(tmp_path):
    """Inductor compiles fused kernels to benchmark them while it compiles (named `Placeholder.DESCRIPTIVE_NAME`)
    and tunes them; the workload never launches them, and their picks are draws that cost nothing. The divergence
    report counts them apart, and neither the gate's baseline nor `--pin` pins them (on an H200 a BERT gate reported
    four such pins as not applied; a pin of theirs is the code of a kernel the workload runs, in its way). The
    decisions are the real Inductor autotuner's, recorded by the real tracer; the second run drew another pick at
    the benchmark kernel."""
    heuristics = pytest.importorskip("torch._inductor.runtime.triton_heuristics")
    from test_sweep_autotune import inductor_tuner

    from tritonhook import _triton
    from tritonhook.decisions.keep import baseline_picks, from_divergence

    decided = []
    tracer = _triton.AutotuneTracer(lambda decision: decided.append(dataclasses.asdict(decision)))
    tracer.install()
    try:
        for name in ("triton_poi_fused_add_0", "Placeholder.DESCRIPTIVE_NAME"):
            inductor_tuner(heuristics, name=name).autotune_to_one_config()
    finally:
        tracer.uninstall()
    workload = _ran(rec.Recording([], "sm_90a", GPU, "3.6.0", "2.11.0", 1, autotune=decided[:1]), 0.01)
    drawn = {**decided[1], "chosen": {**decided[1]["chosen"], "BLOCK": 1024}}
    runs = [dataclasses.replace(workload, autotune=decided, label="run-a"),
            dataclasses.replace(workload, autotune=[decided[0], drawn], label="run-b")]
    found = divergence(runs)
    assert [(k.kernel, k.divergent, k.launched) for k in found.keys] == [
        ("Placeholder.DESCRIPTIVE_NAME", True, False), ("triton_poi_fused_add_0", False, True)]
    assert found.divergent == [] and found.to_json()["divergent"] == 0
    pins, warnings = baseline_picks(runs[0])
    made = from_divergence(Store(tmp_path / "store"), found, GPU)
    for pinned, said in ((pins, warnings), (made.decisions, made.warnings)):
        assert [pin.key.kernel for pin in pinned] == ["triton_poi_fused_add_0"]
        assert any(w.startswith("1 Inductor kernel(s) tuned but never launched by the workload") and
                   "Placeholder.DESCRIPTIVE_NAME" in w for w in said), said


def test_a_process_picks_what_its_last_decision_at_a_key_chose_not_the_benchmark_a_search_moved_on_from():
    """Inductor with coordinate descent on decides twice at one kernel and key in each process: its benchmark of
    the kernel's configs, then the search from the winner, whose result is what runs. A 2-rank DDP job on an H200
    read 39 of 42 keys divergent and, after pinning, 9 of 18 where each rank's benchmark pick differed but the
    search's (the pinned config) agreed: a process's pick is its last decision's. Real decisions' shape: the
    benchmark's, then coordinate descent's, per rank; rank 1's benchmark picked otherwise."""
    def decision(group, tuner, chosen, rank):
        return {"group": group, "kernel": "triton_poi_fused_add_0", "key": ["source:abc"], "tuner": tuner,
                "chosen": {"XBLOCK": chosen, "num_warps": 4}, "rank": rank, "pid": 100 + rank,
                "timings": [[{"XBLOCK": block, "num_warps": 4}, [ms]] for block, ms in ((512, 0.011), (1024, 0.010))]}

    def run(searched: dict[int, int]) -> list[rec.Recording]:
        return [rec.Recording([], "sm_90a", GPU, "3.6.0", "2.11.0", 100 + rank, label="run-a", rank=rank,
                              autotune=[decision(0, "Inductor's runtime autotuner", (1024, 512)[rank], rank),
                                        decision(1, "coordinate descent", searched[rank], rank)])
                for rank in (0, 1)]

    (agreed,) = divergence(run({0: 2048, 1: 2048})).keys
    assert not agreed.divergent and agreed.tuner == "coordinate descent"
    assert sorted(agreed.timings) == sorted(config_text({"XBLOCK": b, "num_warps": 4}) for b in (512, 1024))
    (split,) = divergence(run({0: 2048, 1: 4096})).keys
    assert split.divergent and sorted(split.configs) == sorted(config_text({"XBLOCK": b, "num_warps": 4})
                                                               for b in (2048, 4096))


@pytest.mark.gpu
def test_the_rival_picks_are_replayed_on_the_gpu_with_an_interval_and_their_cost_counted(tmp_path):
    """Two ranks recorded on the GPU (`tritonhook record`, RANK as torchrun sets it), each running its own pick 50
    times: the divergent key's rival pick replayed against the fastest on one GPU, with its interval, and the cost
    counted from each rank's own sampled times."""
    store = tmp_path / "store"
    for rank in (0, 1):
        done = subprocess.run([sys.executable, "-m", "tritonhook", "record", "--store", str(store), "--",
                               sys.executable, str(SCRIPT), "workload"], capture_output=True, text=True, timeout=600,
                              env={**os.environ, "RANK": str(rank), "WORLD_SIZE": "2"})
        assert done.returncode == 0, done.stderr[-3000:]
    shown = json.loads(_cli("decisions", "divergence", "--store", store, "--replay", "--json").stdout)
    (key,) = [key for key in shown["keys"] if key["divergent"]]
    (rival,) = key["replayed"]
    assert rival["config"].startswith("BLOCK=512") and rival["low"] <= rival["ratio"] <= rival["high"], rival
    assert key["cost"]["launches"] == 50 and key["cost"]["best_ms_per_launch"] > 0, key["cost"]


@pytest.mark.gpu
def test_the_gate_checks_a_second_run_at_the_baseline_pick_and_a_retuned_one_at_its_own(tmp_path):
    """The baseline recorded as rank 1 (its autotuner picks BLOCK 512); the gate's current run as rank 0, whose
    autotuner picks 256 when left alone. Pinned to the baseline's pick, the current run's kernel is the baseline's
    build at 512, checked; with --retune it runs its own pick, 256."""
    store = tmp_path / "store"
    workload = ["--", sys.executable, str(SCRIPT), "workload"]

    def tritonhook(*args, rank: int) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "tritonhook", *args], capture_output=True, text=True,
                              timeout=600, env={**os.environ, "RANK": str(rank), "WORLD_SIZE": "2"})

    done = tritonhook("record", "--store", str(store), *workload, rank=1)
    assert done.returncode == 0, done.stderr[-3000:]
    baseline = Store(store).results(rec.RESULT_KIND, limit=1)[0]  # the merged recording, saved after its parts
    for extra, block in (([], "BLOCK=512"), (["--retune"], "BLOCK=256")):
        done = tritonhook("check", "--store", str(store), "--baseline", str(baseline.id), "--json", *extra,
                          *workload, rank=0)
        gate = json.loads(done.stdout)
        (checked,) = [k for k in gate["kernels"] if k["kernel"] == "add_kernel"]
        assert block in checked["key"] and checked["verdict"] != "unmatched", (extra, checked, done.stderr[-3000:])
        pinned_line = "runs the baseline's autotune picks at 1 tuning key(s)" in done.stderr
        assert pinned_line == (not extra)
