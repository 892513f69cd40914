"""Per-kernel decisions (issue 40, bullets 1 and 5): made from sweep/replay/tune results on real captures, kept in
the store, exported and imported as a portable file that is validated as data (hostile files refused entry by
entry, nothing run, nothing written outside the store)."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import subprocess
import sys

import pytest

from tritonhook import decisions, ptx as _ptx
from tritonhook.errors import TritonhookError
from tritonhook.sweep import recording as rec
from tritonhook.sweep.result import SweepResult, SweepRow, analyze_row
from tritonhook.sweep.tune import KernelTune, Trial, TuneResult

sys.path.insert(0, os.path.dirname(__file__))
from sample_recording import sample_recording  # noqa: E402

# the captures are inputs only: a decision is made, kept and exported from their recorded facts (PTX hash, arch,
# ptxas version); applying one in a compile (tests/test_decisions_apply.py) runs under every release
pytestmark = pytest.mark.release_independent

GPU = "NVIDIA H200"


def _noisy(center: float, seed: int) -> list[float]:
    import random

    rng = random.Random(seed)
    return [center * (1 + rng.gauss(0, 0.003)) for _ in range(9)]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A store with real sm_90a captures of `add` and the FFMA matmul and a recording of 2 signatures on `GPU`."""
    store, recording = sample_recording(tmp_path_factory.mktemp("decisions") / "store", 2)
    recording = dataclasses.replace(recording, device=GPU, id=None)
    recording.id = store.add_result(rec.RESULT_KIND, recording.to_json())
    return store, recording


def _sweep(store, recording, *, outputs=("bitwise", "bitwise"), in_workload_ms=0.1) -> SweepResult:
    """`add` faster renamed, `matmul` slower; `in_workload_ms`: `add`'s time inside the workload (its plain build
    replays in 0.1 ms)."""
    facts = {"plain": {"ptxas_version": "12.8.93"}, "cutlass_": {"ptxas_version": "12.8.93", "ptxas_options": []}}
    add, matmul = recording.signatures
    rows = [analyze_row(SweepRow(add.id, add.kernel, add.kernel, 0.4, 10, in_workload_ms, "snapshot", "ok",
                                 outputs[0]),
                        {"plain": _noisy(0.1, 1), "cutlass_": _noisy(0.09, 2)}, facts, {}),  # faster
            analyze_row(SweepRow(matmul.id, matmul.kernel, matmul.kernel, 0.6, 20, 0.05, "snapshot", "ok",
                                 outputs[1]),
                        {"plain": _noisy(0.05, 3), "cutlass_": _noisy(0.06, 4)}, facts, {})]  # slower
    result = SweepResult(rows, ["plain", "cutlass_"], 9, recording.id, None, {}).finish()
    result.id = store.add_result("sweep", result.to_json())
    return result


def _key_of(store, signature) -> str:
    capture = store.get(signature.capture_id)
    return _ptx.code_sha256(store.read(capture, "ptx"))


def test_a_sweep_gives_a_decision_for_the_kernel_that_got_faster_only(recorded):
    store, recording = recorded
    made = decisions.from_result(store, _sweep(store, recording).id)
    assert len(made.decisions) == 1
    decision = made.decisions[0]
    add = recording.signatures[0]
    assert decision.key == decisions.Key(_key_of(store, add), "sm_90a", store.get(add.capture_id).ptxas_version, GPU)
    assert decision.choice == decisions.Choice("cutlass_")
    assert decision.evidence.ratio < 1 and decision.evidence.low <= decision.evidence.ratio <= decision.evidence.high
    assert (decision.evidence.outputs, decision.evidence.source_kind) == ("bitwise", "sweep")
    shown = decisions.get(store, decision.id)
    assert shown.key == decision.key and shown.choice == decision.choice
    # the same result again replaces the decision of that key rather than adding a second one
    again = decisions.from_result(store, _sweep(store, recording).id).decisions[0]
    assert [d.id for d in decisions.listing(store).decisions if d.key == decision.key] == [again.id]
    decisions.remove(store, again.id)
    assert not decisions.listing(store).decisions


def test_a_kernel_faster_only_where_the_replay_missed_the_fidelity_bar_gives_no_decision(recorded):
    """A replay 12% faster than the kernel ran inside the workload (outside the ±10% bar): its ratio is the replay's,
    so no decision, and a warning that says why and how to confirm it."""
    store, recording = recorded
    add = recording.signatures[0]
    made = decisions.from_result(store, _sweep(store, recording, in_workload_ms=0.1136).id)
    assert not made.decisions
    assert any(w.startswith(f"{add.kernel} cutlass_: no decision: faster only in a replay that missed the fidelity "
                            f"bar (replay/workload: {add.kernel} 0.88") for w in made.warnings), made.warnings


def test_changed_outputs_and_a_baseline_other_than_plain_give_no_decision(recorded):
    store, recording = recorded
    assert not decisions.from_result(store, _sweep(store, recording, outputs=("differ", "bitwise")).id).decisions
    other = SweepResult([], ["cutlass_", "plain"], 9, recording.id, None, {})
    other.id = store.add_result("sweep", other.to_json())
    with pytest.raises(TritonhookError, match="not plain"):
        decisions.from_result(store, other.id)
    with pytest.raises(TritonhookError, match=f"result {recording.id}: a"):
        decisions.from_result(store, recording.id)


def test_tune_gives_its_confirmed_winners_with_their_options(recorded):
    store, recording = recorded
    add, matmul = recording.signatures
    winner = {"label": "cutlass_+opt:-O2", "rename": "cutlass_", "ptxas": None, "ptxas_version": None,
              "options": ["-O2"], "controls": None}
    confirmed = {"ratio": 0.95, "low": 0.94, "high": 0.96, "verdict": "faster"}
    kernels = [KernelTune(add.id, add.kernel, add.kernel, 0.4, [Trial(winner["label"], "faster", 0.94, 0.93, 0.95,
                                                                      "bitwise")],
                          winner=winner["label"], vs_plain=confirmed),
               KernelTune(matmul.id, matmul.kernel, matmul.kernel, 0.6, [], winner=winner["label"],
                          vs_plain={**confirmed, "verdict": "no difference"})]  # not confirmed: no decision
    result = TuneResult(kernels, recording.id, {"candidates": [winner]}, 9, 18, {})
    result.id = store.add_result("tune", result.to_json())
    made = decisions.from_result(store, result.id).decisions
    assert [(d.evidence.kernel, d.choice, d.evidence.ratio) for d in made] == [
        (add.kernel, decisions.Choice("cutlass_", None, ("-O2",)), 0.95)]
    for decision in made:
        decisions.remove(store, decision.id)


def _entry(**changes) -> dict:
    entry = {"key": {"ptx_sha256": "a" * 64, "arch": "sm_90a", "ptxas_version": "12.8.93", "gpu": GPU},
             "choice": {"name": "cutlass_", "ptxas_version": None, "options": ["-O2"], "controls": None},
             "evidence": {"kernel": "k", "ratio": 0.97, "low": 0.96, "high": 0.98, "outputs": "bitwise",
                          "date": "2026-11-24", "tritonhook_version": "0.1.0", "source_kind": "sweep",
                          "source_id": 3}}
    for path, value in changes.items():
        part, _, field = path.partition("__")
        entry[part][field] = value
    return entry


def _write(path, entries) -> str:
    path.write_text(json.dumps({"format": "tritonhook-decisions", "version": 1, "decisions": entries}))
    return str(path)


def test_export_and_import_round_trip_with_the_control_file_inside(recorded, tmp_path):
    store, _ = recorded
    acf = b"\x00control file bytes\xff"
    sha = hashlib.sha256(acf).hexdigest()
    with_controls = _entry(choice__controls={"sha256": sha, "base64": base64.b64encode(acf).decode()},
                           key__ptx_sha256="b" * 64)
    imported = decisions.import_file(store, _write(tmp_path / "in.json", [_entry(), with_controls]))
    assert not imported.warnings and len(imported.decisions) == 2
    assert store.read_blob(sha) == acf  # stored by its content hash
    store.verify(repair=True, min_age=0)  # a repair keeps it (and the recording's input snapshots)
    assert store.read_blob(sha) == acf
    assert store.verify().orphans == []
    decisions.export(store, tmp_path / "out.json")
    again = decisions.read_file(tmp_path / "out.json")
    assert not again.refused
    assert sorted((d.key.ptx_sha256, d.choice.controls_sha256, c) for d, c in again.decisions) == [
        ("a" * 64, None, None), ("b" * 64, sha, acf)]
    for decision in imported.decisions:
        decisions.remove(store, decision.id)


EVIL_PTXAS = "EVIL_PTXAS"
"""Stands for the path of a script named ptxas that would leave a mark if it ran."""
HOSTILE = [
    ("a path as ptxas", {"choice__ptxas_version": "EVIL_PTXAS"}, "never a path"),
    ("an output option", {"choice__options": ["-o /etc/x"]}, "choice.options[0]"),
    ("an output option, one word", {"choice__options": ["--output-file=/etc/x"]}, "names the output"),
    ("a control file by path", {"choice__options": ["--apply-controls=/etc/passwd"]}, "names a file"),
    ("a prefix with /", {"choice__name": "a/b"}, "not a name prefix"),
    ("a prefix with ;", {"choice__name": "x;rm -rf /"}, "not a name prefix"),
    ("a 10 MB string", {"choice__name": "x" * (10 << 20)}, "10485760 characters"),
    ("a 10 MB GPU name", {"key__gpu": "x" * (10 << 20)}, "10485760 characters"),
    ("a number as a name", {"choice__name": 5}, "a number where a string expected"),
    ("a string as options", {"choice__options": "-O2"}, "a string where a list expected"),
    ("a boolean as a ratio", {"evidence__ratio": True}, "a boolean where a number expected"),
    ("a control file path", {"choice__controls": {"sha256": "c" * 64, "path": "/etc/passwd"}}, "unknown field"),
    ("a control file that does not hash", {"choice__controls": {"sha256": "c" * 64, "base64": "AAAA"}},
     "do not hash"),
    ("an unknown field", {"choice__run": "sh -c x"}, "unknown field 'run'"),
    ("a short hash", {"key__ptx_sha256": "abc"}, "not a sha256"),
    ("a NaN ratio", {"evidence__ratio": float("nan")}, "evidence.ratio: nan, where a ratio of two times"),
    ("an infinite ratio", {"evidence__ratio": float("inf")}, "evidence.ratio: inf, where a ratio of two times"),
    ("a negative ratio", {"evidence__ratio": -3}, "evidence.ratio: -3, where a ratio of two times"),
    ("an infinite bound", {"evidence__high": float("-inf")}, "evidence.high: -inf, where a ratio of two times"),
]


def test_a_hostile_file_is_refused_entry_by_entry_one_line_each_and_runs_nothing(recorded, tmp_path):
    store, _ = recorded
    canary = tmp_path / "ran"
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "ptxas").write_text(f"#!/bin/sh\ntouch {canary}\n")
    (evil / "ptxas").chmod(0o755)
    entries = [_entry(**{k: str(evil / "ptxas") if v == EVIL_PTXAS else v for k, v in changes.items()})
               for _, changes, _ in HOSTILE]
    entries += [_entry(), ["not", "an", "object"]]
    hostile = _write(tmp_path / "hostile.json", entries)
    before = {p for p in tmp_path.rglob("*")}
    result = decisions.import_file(store, hostile)
    assert [d.key.ptx_sha256 for d in result.decisions] == ["a" * 64]  # only the good entry is kept
    assert len(result.warnings) == len(HOSTILE) + 1
    for index, ((what, _, expected), line) in enumerate(zip(HOSTILE, result.warnings)):
        assert line.startswith(f"{tmp_path / 'hostile.json'} entry {index}: "), what
        assert expected in line, (what, line)
        assert "\n" not in line and len(line) < 300, what
    assert "entry: an object expected, got a list" in result.warnings[-1]
    assert not canary.exists()  # the file's "ptxas" never ran
    assert {p for p in tmp_path.rglob("*")} == before  # nothing written outside the store
    decisions.remove(store, result.decisions[0].id)


@pytest.mark.parametrize("text, expected", [
    ('{"format": "tritonhook-decisions", "version": 1, "decisions": [{"key": ', "not JSON"),
    ('[1, 2]', "not a decisions file"),
    ('{"format": "tritonhook-decisions", "version": 99, "decisions": []}',
     "version 99, this tritonhook reads version 1"),
    ('{"format": "tritonhook-decisions", "version": 1, "decisions": "all"}',
     "\"decisions\" is a string ('all'), where a list of decisions is expected"),
    ('{"format": "tritonhook-decisions", "version": 1, "decisions": [], "exec": "x"}', "unknown field 'exec'"),
])
def test_a_truncated_or_foreign_file_is_one_line_naming_it(recorded, tmp_path, text, expected):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(TritonhookError) as caught:
        decisions.import_file(recorded[0], path)
    assert str(caught.value).startswith(str(path)) and expected in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_stored_nan_ratio_is_left_out_of_the_export_which_is_strict_json(recorded, tmp_path):
    """A decision saved with a NaN ratio (by a tritonhook that let one in) is left out of the export with a line
    naming it, and the file holds no bare NaN, which strict JSON parsers refuse."""
    import sqlite3

    store, _ = recorded
    [saved] = decisions.import_file(store, _write(tmp_path / "in.json", [_entry(key__ptx_sha256="d" * 64)])).decisions
    with sqlite3.connect(store.path / "index.sqlite") as conn:
        (data,) = conn.execute("SELECT data FROM results WHERE id = ?", (saved.id,)).fetchone()
        data = json.loads(data)
        data["evidence"]["ratio"] = float("nan")
        conn.execute("UPDATE results SET data = ? WHERE id = ?", (json.dumps(data), saved.id))
    try:
        exported = decisions.export(store, tmp_path / "out.json")
    finally:
        store.remove_result(decisions.RESULT_KIND, saved.id)

    def refuse(word):
        raise ValueError(f"{word} is not JSON")

    written = json.loads((tmp_path / "out.json").read_text(), parse_constant=refuse)
    assert "d" * 64 not in [e["key"].get("ptx_sha256") for e in written["decisions"]]
    assert [w for w in exported.warnings if "evidence.ratio: nan" in w] == [
        f"{store.path} result {saved.id} (decision): evidence.ratio: nan, where a ratio of two times (a finite "
        f"number above 0) expected"]


def test_json_for_other_programs_has_no_bare_nan_or_infinity():
    from tritonhook.files import json_text

    text = json_text({"ratio": float("nan"), "times": [1.5, float("inf"), (float("-inf"),)]})
    assert json.loads(text, parse_constant=lambda word: pytest.fail(f"{word} in {text}")) == {
        "ratio": None, "times": [1.5, None, [None]]}


def test_the_cli_is_thin_over_the_library(recorded, tmp_path):
    store, _ = recorded
    good = _write(tmp_path / "good.json", [_entry(), _entry(choice__name="a/b")])

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "tritonhook", "decisions", *args, "--store", str(store.path)],
                              capture_output=True, text=True, timeout=120)

    imported = cli("import", good, "--json")
    assert imported.returncode == 1, imported.stderr  # one entry refused
    report = json.loads(imported.stdout)
    assert [line.split(": ")[1] for line in report["warnings"]] == ["choice.name"]  # entry 1, one line
    [kept] = report["decisions"]
    listed = cli("ls", "--json")
    assert [d["id"] for d in json.loads(listed.stdout)["decisions"]] == [kept["id"]]
    assert "entry 1: choice.name" in cli("import", good).stderr  # the table's run says it on stderr
    [kept] = json.loads(cli("ls", "--json").stdout)["decisions"]  # imported again: it replaced the first
    shown = cli("show", str(kept["id"]))
    assert "cutlass_+opt:-O2" in shown.stdout
    assert cli("rm", str(kept["id"])).returncode == 0
    missing = cli("show", str(kept["id"]))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert (json.loads(cli("ls", "--json").stdout)["decisions"]) == []


def test_confirm_takes_a_sweeps_build_decisions_and_one_the_workload_refuted_is_not_made(recorded):
    """`decisions confirm` runs the workload with the decisions `from-result` would make of a sweep, builds
    included (not saved); once a confirmation finds one not faster in the workload, `from-result` leaves it out
    with one warning, until a newer confirmation confirms it."""
    from tritonhook.decisions.confirm import decisions_of, identity
    from tritonhook.decisions.confirmation import RESULT_KIND, BuildConfirmation, Confirmation

    store, recording = recorded
    sweep = _sweep(store, recording)
    (made,) = decisions_of(store, sweep).decisions
    assert made.choice == decisions.Choice("cutlass_") and made.id is None and not decisions.listing(store).decisions

    def confirmed(verdict: str, ratio: float) -> int:
        build = BuildConfirmation("add_kernel", "cutlass_", identity(made), {"ratio": 0.9, "low": 0.89, "high": 0.91},
                                  {"unpinned": [1.0, 1.0], "pinned": [ratio] * 2}, ratio, ratio - 0.01, ratio + 0.01,
                                  verdict, applied_ran=True, plain_ran=True)
        return store.add_result(RESULT_KIND, Confirmation(sweep.id, ["w"], 2, [], {}, {}, builds=[build]).to_json())

    refuted = confirmed("no difference", 1.0)
    left_out = decisions.from_result(store, sweep.id)
    assert not left_out.decisions
    assert left_out.warnings == [f"add_kernel cutlass_: no decision, the workload did not confirm it (not confirmed "
                                 f"x1.000 [0.990, 1.010] (confirmation {refuted}))"]
    confirmed("faster", 0.92)
    (kept,) = decisions.from_result(store, sweep.id).decisions
    decisions.remove(store, kept.id)


def test_the_answer_after_a_confirmation_applies_what_from_result_keeps_and_nothing_the_workload_refuted(recorded):
    """`sweep/tune --confirm N` ends with one line: the decisions the workload confirmed and the commands that keep
    and apply them, which keep exactly those; where the workload refuted them, nothing to apply."""
    from tritonhook.decisions.confirm import Confirmed, decisions_of, identity
    from tritonhook.decisions.confirmation import RESULT_KIND, BuildConfirmation, Confirmation

    store, recording = recorded
    sweep = _sweep(store, recording)
    (made,) = decisions_of(store, sweep).decisions
    for verdict, ratio in (("faster", 0.9), ("no difference", 1.0)):
        build = BuildConfirmation("add_kernel", "cutlass_", identity(made), {"ratio": 0.9, "low": 0.89, "high": 0.91},
                                  {"unpinned": [1.0, 1.0], "pinned": [ratio] * 2}, ratio, ratio - 0.01, ratio + 0.01,
                                  verdict, applied_ran=True, plain_ran=True)
        confirmation = Confirmation(sweep.id, ["python", "train.py", "--steps", "6"], 2, [], {}, {}, builds=[build])
        confirmation.id = store.add_result(RESULT_KIND, confirmation.to_json())
        answer = Confirmed(sweep, confirmation, store_path=str(store.path))
        kept = decisions.from_result(store, sweep.id).decisions
        line = answer.to_json()["answer"]["line"]
        assert answer.to_json()["answer"]["confirmed"] == [f"add_kernel {d.choice.label}" for d in kept]
        if kept:
            assert line == (f"answer: apply what the workload confirmed (add_kernel cutlass_): tritonhook decisions "
                            f"from-result {sweep.id} --store {store.path}, then tritonhook run --apply {store.path} "
                            f"-- python train.py --steps 6")
            decisions.remove(store, kept[0].id)
        else:
            assert line == ("answer: nothing to apply: no decision confirmed in the workload: 1 refuted "
                            "(add_kernel cutlass_)")


def test_from_result_keeps_the_picks_its_newest_confirmation_held_with_the_decisions_it_confirmed(recorded):
    """Where the newest confirmation of a sweep ran both arms with its recording's autotune picks held (the
    recording compiled as a first run does), what it confirmed holds with those picks: `from-result` keeps them
    with the decisions, pinned as the recording ran them, and the answer says so; where the newest confirmation held
    none, the decisions alone."""
    from tritonhook.decisions.confirm import Confirmed, decisions_of, identity
    from tritonhook.decisions.confirmation import RESULT_KIND, BuildConfirmation, Confirmation

    store, recording = recorded
    first_run = dataclasses.replace(recording, id=None, autotune=[
        {"tuner": "select_algorithm", "kernel": "mm", "key": ["torch.float16", f"[{m}, 2048]"], "group": m,
         "chosen": {"choice": f"triton_mm_{m}"}, "timings": []} for m in (256, 4096)])
    first_run.id = store.add_result(rec.RESULT_KIND, first_run.to_json())
    sweep = _sweep(store, first_run)
    (made,) = decisions_of(store, sweep).decisions
    build = BuildConfirmation("add_kernel", "cutlass_", identity(made), {"ratio": 0.9, "low": 0.89, "high": 0.91},
                              {"unpinned": [1.0, 1.0], "pinned": [0.9] * 2}, 0.9, 0.89, 0.91, "faster",
                              applied_ran=True, plain_ran=True)
    for held in (2, 0):
        confirmation = Confirmation(sweep.id, ["python", "w.py"], 2, [], {}, {}, builds=[build], inductor_cold=True,
                                    held_picks=held)
        confirmation.id = store.add_result(RESULT_KIND, confirmation.to_json())
        kept = decisions.from_result(store, sweep.id)
        assert sorted(d.key.tuning_key[1] if isinstance(d.key, decisions.AutotuneKey) else d.choice.label
                      for d in kept.decisions) == (["[256, 2048]", "[4096, 2048]", "cutlass_"] if held else
                                                   ["cutlass_"]), kept.decisions
        assert kept.title.endswith(", with the 2 autotune picks its confirmation held" if held else str(sweep.id))
        line = Confirmed(sweep, confirmation, str(store.path)).answer()
        assert ("(it keeps the 2 autotune picks both arms held too), then tritonhook run" in line) == bool(held)
        for decision in decisions.listing(store).decisions:
            decisions.remove(store, decision.id)


def test_sweep_and_tune_end_with_a_confirmation_or_the_line_saying_there_is_nothing_to_confirm(recorded):
    """`sweep/tune --confirm N`: a result that supports no decision is shown with the line saying so (nothing
    run); a result whose recording names no command is one line; N below 2 is refused before the workload runs."""
    from tritonhook.decisions.confirm import ending

    store, recording = recorded
    nothing = _sweep(store, recording, outputs=("differ", "bitwise"))
    answer = ending(store, nothing, ["python", "w.py"], 3)
    assert answer.confirmation is None and answer.warnings == [
        f"sweep result {nothing.id}: no autotune regret, faster config, faster build or template fusion near a tie "
        f"to confirm"]
    assert answer.to_json()["result"]["rows"] and answer.to_json()["confirmation"] is None
    assert answer.answer() == (f"answer: nothing to apply (sweep result {nothing.id}: no autotune regret, faster "
                               f"config, faster build or template fusion near a tie to confirm)")
    with pytest.raises(TritonhookError, match=f"result {nothing.id}: its recording names no command"):
        ending(store, nothing, None, 3)
    refused = subprocess.run([sys.executable, "-m", "tritonhook", "sweep", "--store", str(store.path), "--confirm",
                              "1", "--", sys.executable, "-c", "raise SystemExit('the workload ran')"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and refused.stderr.strip().endswith("--confirm 1: at least 2 runs per arm, for "
                                                                       "an interval"), refused.stderr
