"""`tritonhook tune` on a CPU: the search space, the budget, and a whole search over a recording of real captures,
every candidate built by real ptxas from the captured PTX. Only the replay worker is replaced
(tests/sweep_fake_worker.py --time-by-text: a variant "takes" a time inversely proportional to its kernel's .text
size), so the test knows which candidate must win from the cubins alone; what a GPU measures is proven on the H200
(docs/variants.md#tune)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tritonhook import binaries as tools
from tritonhook.cubin import Cubin
from tritonhook.errors import TritonhookError
from tritonhook.measure.variants import PLAIN, parse_variant
from tritonhook.sweep.result import RESULT_KIND as RESULT_KIND_SWEEP
from tritonhook.sweep.replay import ReplayPlan
from tritonhook.sweep.tune import CHUNK, OPTION_SETS, TuneResult, TuneSpace, parse_budget, tune
from tritonhook.sweep.builds import build_variants, captured_ptxas

torch = pytest.importorskip("torch")

# the search, its counts and the confirmation (the worker is replaced): the same under every Triton
pytestmark = pytest.mark.release_independent

from sample_recording import sample_recording  # noqa: E402 - tests/sample_recording.py, after torch is known

FAKE_WORKER = [str(Path(__file__).with_name("sweep_fake_worker.py")), "--time-by-text",
               "--seconds-per-signature", "0.3"]  # replays take time: the chunks' workers are busy at once


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    return sample_recording(tmp_path_factory.mktemp("tune-store"), 2)  # one add, one fp32 matmul signature


def test_the_space_crosses_its_axes_one_axis_changed_first_and_leaves_plain_out():
    space = TuneSpace.parse("names,options")
    labels = [v.label for v in space.candidates()]
    assert len(labels) == 2 * (1 + len(OPTION_SETS)) - 1 and PLAIN not in labels
    assert labels[:1 + len(OPTION_SETS)] == sorted(labels[:1 + len(OPTION_SETS)], key=labels.index)
    single = [label for label in labels if label.count("+") + label.startswith("cutlass_") == 1]
    assert labels[:len(single)] == single  # every one-axis candidate before any combination
    assert TuneSpace.parse("options").names == (PLAIN,)


@pytest.mark.parametrize("axes, controls, message", [
    ("bogus", (), "--space 'bogus': give some of names, ptxas, options, acf, acf-search"),
    ("", (), "--space '': give some of names, ptxas, options, acf, acf-search"),
    ("names,acf", (), "--space acf: give the control files to try with --acf FILE[,FILE]"),
])
def test_a_bad_space_is_one_line(axes, controls, message):
    with pytest.raises(TritonhookError) as raised:
        TuneSpace.parse(axes, controls=controls)
    assert str(raised.value) == message


def test_the_budget_is_candidates_or_minutes():
    assert parse_budget("40") == (40, None) and parse_budget("20m") == (None, 1200.0)
    assert parse_budget(None) == (None, None)
    for bad in ("0", "-3", "ten", "5h"):
        with pytest.raises(TritonhookError, match="--budget"):
            parse_budget(bad)


def _builds(store, recording, space) -> dict[str, dict[str, tuple[int, str]]]:
    """Kernel -> variant label -> (.text size, .text sha256) of the kernel, each candidate built here."""
    found = {}
    for signature in recording.signatures:
        built = build_variants(store, store.get(signature.capture_id), [parse_variant(PLAIN), *space.candidates()])
        summaries = {b.label: Cubin.from_bytes(b.cubin, label=b.label).summary(b.entry) for b in built if not b.failed}
        found[signature.kernel] = {label: (s["text_size"], s["text_sha256"]) for label, s in summaries.items()}
    return found


def test_tune_keeps_for_each_kernel_the_candidate_that_beat_plain_most_and_confirms_it(recorded):
    store, recording = recorded
    space = TuneSpace.parse("names,options")
    result = tune(recording, store, space, share=1.0, rounds=7, confirm_rounds=7, worker=FAKE_WORKER)
    builds = _builds(store, recording, space)
    assert {k.kernel for k in result.kernels} == set(builds)
    for tuned in result.kernels:
        own = builds[tuned.kernel]
        assert len(tuned.trials) == len(space.candidates())  # every candidate tried on every kernel
        first_of_its_sass = [label for label in own if label != PLAIN and own[label][1] not in
                             {own[other][1] for other in list(own)[:list(own).index(label)]}]
        faster = {label for label in first_of_its_sass if own[PLAIN][0] / own[label][0] <= 0.995}
        assert {t.label for t in tuned.trials if t.outcome == "faster"} == faster
        assert tuned.counts.get("identical", 0) == len(own) - 1 - len(first_of_its_sass)
        if not faster:
            assert tuned.winner is None
            continue
        assert own[tuned.winner][0] == max(own[label][0] for label in faster)
        assert tuned.confirmed and tuned.vs_plain["ratio"] == pytest.approx(own[PLAIN][0] / own[tuned.winner][0])
        assert tuned.vs_cutlass["ratio"] == pytest.approx(own["cutlass_"][0] / own[tuned.winner][0])
    assert any(k.winner for k in result.kernels), builds  # the sample matmul's builds differ (cutlass_: spills)
    assert result.skipped == 0 and result.candidates_per_minute_per_gpu > 0
    saved = store.result(result.id)
    assert isinstance(saved, TuneResult) and saved.to_json() == result.to_json()


def test_a_budget_of_candidates_stops_the_search_and_says_how_many_were_left(recorded):
    store, recording = recorded
    space = TuneSpace.parse("names,options")
    result = tune(recording, store, space, top=1, budget="3", rounds=7, confirm_rounds=7, worker=FAKE_WORKER)
    assert [len(k.trials) for k in result.kernels] == [3]
    assert result.skipped == len(space.candidates()) - 3
    assert any(f"left {result.skipped} of {len(space.candidates())} candidates untried" in w for w in result.warnings)


def test_the_searchs_replays_share_their_workers_and_the_confirmation_starts_its_own(recorded, tmp_path):
    """Every chunk of the search is a replay of its own, and each used to start its workers (torch and a CUDA
    context: seconds each); they share one now. The confirmation starts its own: a process's steady offset that
    helped a winner in the search must not help it again there."""
    store, recording = recorded
    space = TuneSpace.parse("names,options")
    started = tmp_path / "started"
    result = tune(recording, store, space, top=1, rounds=7, confirm_rounds=7,
                  worker=[*FAKE_WORKER, "--started", str(started)])
    assert len(space.candidates()) > CHUNK and result.kernels[0].trials  # the search took more than one replay
    assert len(started.read_text().split()) == 1 + any(k.winner for k in result.kernels)


def test_on_two_gpus_a_chunk_waiting_for_its_slowest_signature_leaves_the_other_gpu_to_the_next(recorded, tmp_path,
                                                                                                  monkeypatch):
    """One after the other, every chunk of the search ended with one GPU waiting for the other's last signature
    (and then for the chunk's results to be kept). Now two chunks replay side by side over the two workers: while
    the first waits for a signature slowed by 4 s, the second chunk's signatures run on the free GPU. The search's
    counts and winners are the ones a single GPU finds (the fake worker's timings depend on the builds alone), with
    one worker per GPU for the whole search."""
    store, recording = recorded
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,7")
    space = TuneSpace.parse("names,options")
    assert len(space.candidates()) > CHUNK  # two chunks
    one = tune(recording, store, space, share=1.0, rounds=7, confirm_rounds=7, worker=FAKE_WORKER, gpus=[0])
    started, log = tmp_path / "started", tmp_path / "log"
    slow = str(recording.signatures[0].id)
    two = tune(recording, store, space, share=1.0, rounds=7, confirm_rounds=7, gpus=[0, 1],
               worker=[*FAKE_WORKER, "--slow", slow, "4", "--started", str(started), "--log", str(log)])
    replayed = [json.loads(line) for line in log.read_text().splitlines()]
    jobs = list(dict.fromkeys(r["job"] for r in sorted(replayed, key=lambda r: r["began"])))
    first, second = ([r for r in replayed if r["job"] == job] for job in jobs[:2])
    assert len(jobs) == 3 and min(r["began"] for r in second) < max(r["ended"] for r in first)  # and the confirmation
    assert len(started.read_text().split()) == 2 + any(k.winner for k in two.kernels)  # a worker a GPU, confirmation's
    assert [(k.kernel, k.winner, k.counts, [(t.label, t.outcome) for t in k.trials]) for k in two.kernels] == \
        [(k.kernel, k.winner, k.counts, [(t.label, t.outcome) for t in k.trials]) for k in one.kernels]
    assert two.gpus == 2 and two.skipped == 0 and two.times_s["search replay idle"] >= 0


@pytest.mark.miss_check  # the check on, as outside the tests: tune must leave it off itself
def test_the_search_says_where_its_time_went_and_replays_no_miss_again(recorded, monkeypatch):
    """The fake worker's times are not the recording's, so plain's rows miss the fidelity bar in every chunk; a
    sweep would replay them again under each other L2 rule to say why, and tune would do it once a chunk for
    nothing it reads; nor does a chunk explain its rows (a disassembly of every timed variant: the confirmation
    explains the winners). Its time splits into the chunks' builds and replays instead."""
    replay_module = sys.modules[ReplayPlan.__module__]
    explained, explain = [], replay_module.explain
    monkeypatch.setattr(replay_module, "explain", lambda rows, built: explained.append(rows) or explain(rows, built))
    store, recording = recorded
    space = TuneSpace.parse("names,options")
    result = tune(recording, store, space, top=1, rounds=7, confirm_rounds=7, worker=FAKE_WORKER)
    assert len(space.candidates()) > CHUNK and len(explained) == 1  # chunks replayed, the confirmation explained
    swept = [r for r in store.results(RESULT_KIND_SWEEP) if r.recording_id == recording.id][-1]
    assert swept.fidelity.within < swept.fidelity.signatures  # a miss a sweep would have replayed again
    assert {"search build", "search replay"} <= set(result.times_s)
    assert not any("miss" in stage for stage in result.times_s)
    assert not any("explain" in stage for stage in result.times_s)  # the search disassembles nothing to explain
    assert result.times_s["search build"] + result.times_s["search replay"] <= result.times_s["search"]


def test_the_search_builds_each_chunk_while_the_one_before_it_replays(recorded, monkeypatch, tmp_path):
    """The builds (ptxas on the host's cores) of a chunk begin before the chunk ahead of it has finished replaying,
    and run while it does; the replays wait only for what was not built ahead. The real build and replay
    functions, watched: when each began and ended, per chunk (its variants' labels); every build made anew (none
    kept from the other tests' searches)."""
    monkeypatch.setenv("TRITONHOOK_CACHE", str(tmp_path / "cache"))
    tune_module = sys.modules[TuneResult.__module__]  # the module (the package exports its function by the name)

    store, recording = recorded
    space = TuneSpace.parse("names,options")
    seen: dict[tuple[str, tuple], list[float]] = {}

    def watched(kind: str, function, labels_of):
        def call(*args, **kwargs):
            spans = seen.setdefault((kind, labels_of(args)), [])
            spans.append(time.monotonic())
            try:
                return function(*args, **kwargs)
            finally:
                spans.append(time.monotonic())
        return call

    labels = lambda variants: tuple(v.label for v in variants)  # noqa: E731
    monkeypatch.setattr(tune_module, "build_captures", watched("build", tune_module.build_captures,
                                                               lambda args: labels(args[2])))
    monkeypatch.setattr(tune_module, "replay", watched("replay", tune_module.replay, lambda args: labels(args[2])))
    result = tune(recording, store, space, top=1, rounds=7, confirm_rounds=7, worker=FAKE_WORKER)
    chunks = [(PLAIN, *(v.label for v in space.candidates()[start:start + CHUNK]))
              for start in range(0, len(space.candidates()), CHUNK)]
    assert len(chunks) > 1 and all(k.trials for k in result.kernels)
    for before, chunk in zip(chunks, chunks[1:]):
        assert seen[("build", chunk)][0] < seen[("replay", before)][1]  # built while the chunk before replayed
    assert result.times_s["search build"] < result.times_s["search builds in all"]


def test_every_replay_of_a_tune_takes_its_l2_dirt(recorded):
    """The fake worker fails every signature whose job carries another dirt: each trial and the confirmation ran."""
    store, recording = recorded
    worker = [*FAKE_WORKER, "--expect", 'l2_dirt="clean"']
    result = tune(recording, store, TuneSpace.parse("names"), top=1, rounds=7, confirm_rounds=7, worker=worker,
                  l2_dirt="clean")
    assert result.kernels and all(k.status == "ok" and k.trials for k in result.kernels), result.to_json()
    assert all(t.outcome != "fault" for k in result.kernels for t in k.trials)


def test_a_candidate_whose_ptxas_crashes_loses_only_itself(recorded, tmp_path):
    store, recording = recorded
    real = captured_ptxas(store.get(recording.signatures[1].capture_id))
    crashing = tmp_path / "crashing-ptxas"
    crashing.write_text(f'#!/bin/sh\ncase "$1" in --version) exec "{real}" "$@";; esac\nulimit -c 0\n"{real}" "$@"\n'
                        f'kill -s SEGV $$\n')
    crashing.chmod(0o755)
    space = TuneSpace(names=(PLAIN, "cutlass_"), ptxas=(None, str(crashing)), options=((),))
    result = tune(recording, store, space, kernel="matmul", rounds=7, confirm_rounds=7, worker=FAKE_WORKER)
    (tuned,) = result.kernels
    assert tuned.counts["crashed"] == 2 and len(tuned.trials) == 3  # plain@crashing, cutlass_@crashing
    assert {t.label for t in tuned.trials if t.outcome == "crashed"} == {
        f"plain@{tools.ptxas_version(str(crashing))}", f"cutlass_@{tools.ptxas_version(str(crashing))}"}
    assert tuned.winner in (None, "cutlass_")  # the one candidate that built is still judged


def test_the_cli_says_a_bad_space_in_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tritonhook", "tune", "--store", str(tmp_path / "s"), "--space",
                           "names,acf"], capture_output=True, text=True, env={**os.environ})
    assert done.returncode == 2 and done.stderr.strip() == (
        "tritonhook: error: --space acf: give the control files to try with --acf FILE[,FILE]")


def test_the_confirmation_times_the_winner_built_as_searched_not_a_ptxas_found_by_its_label(recorded, tmp_path):
    """A winner assembled by a ptxas given as a path is confirmed with that binary: its label names only a version,
    which the ptxas Triton ships answers too."""
    store, recording = recorded
    real = captured_ptxas(store.get(recording.signatures[1].capture_id))
    tuned_ptxas = tmp_path / "ptxas"  # the real ptxas, always with one more codegen option
    tuned_ptxas.write_text(f'#!/bin/sh\ncase "$1" in --version) exec "{real}" "$@";; esac\n'
                           f'exec "{real}" "$@" --register-usage-level=0\n')
    tuned_ptxas.chmod(0o755)
    space = TuneSpace(names=(PLAIN,), ptxas=(None, str(tuned_ptxas)), options=((),))
    result = tune(recording, store, space, kernel="matmul", rounds=7, confirm_rounds=7, worker=FAKE_WORKER)
    (tuned,) = result.kernels
    plain, searched = _builds(store, recording, TuneSpace(names=(PLAIN,), ptxas=(None, str(tuned_ptxas)),
                                                          options=((),)))[tuned.kernel].values()
    assert searched[0] != plain[0], "the wrapper's option must change the matmul's SASS for this test to mean much"
    assert tuned.winner == f"plain@{tools.ptxas_version(real)}" and tuned.confirmed
    assert tuned.vs_plain["ratio"] == pytest.approx(plain[0] / searched[0])  # not 1.0: the real ptxas's build
