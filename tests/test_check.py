"""The regression gate (`tritonhook check`, its pytest plugin) on a machine with no GPU: real compiles and real
recordings (tests/sample_recording.py, tests/check_kernels.py), replayed by the real replay engine and scheduler
with the worker replaced by tests/sweep_fake_worker.py --time-with-text (a build "takes" a time proportional to its
kernel's .text size), so a regression the tests expect follows from the cubins alone; and the gate's rule on real
recorded timings (benchmarks/results)."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import random
import sys
from importlib.metadata import entry_points
from pathlib import Path
from xml.etree import ElementTree

import pytest
from rich.console import Console

import tritonhook
from tritonhook import check as gate, config
from tritonhook.check import Baseline, check, gate_plan, load_baseline
from tritonhook.check.baseline import VERSION
from tritonhook.cli import main
from tritonhook.cubin import Cubin
from tritonhook.errors import TritonhookError
from tritonhook.measure.sequential import StopRule, ratio_sequence, rounds_stop
from tritonhook.measure.stats import interquartile_mean, median, verdict
from tritonhook.samples import compile_sample
from tritonhook.store import Store
from tritonhook.sweep.replay import MIN_REPS

pytestmark = pytest.mark.release_independent
torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).parent))
from check_kernels import compile_dropout, compile_numbered, compile_scale, compile_template  # noqa: E402 - tests/check_kernels.py
from sample_recording import save_recording  # noqa: E402 - tests/sample_recording.py

FAKE = str(Path(__file__).with_name("sweep_fake_worker.py"))
BY_TEXT = [FAKE, "--time-with-text"]
ROUNDS = 7  # the fewest at which the adaptive rule decides
PLAN = gate_plan(rounds=ROUNDS)


def _run(store_dir: Path, kernels: dict[str, object]) -> tuple[Store, object]:
    """A store with captures of `kernels` (name -> a function compiling it) and a recording launching each once."""
    with tritonhook.session(store_dir) as session:
        compiled = {name: make() for name, make in kernels.items()}
    store = Store(store_dir)
    launches = []
    for name, kernel in compiled.items():
        size = 4096
        if name.startswith("add"):
            args = (torch.randn(size), torch.randn(size), torch.empty(size), size, 1024)
        elif name.startswith("dropout"):
            args = (torch.randn(size), torch.empty(size), size, 32 if name.endswith("16") else 17, 0.1, 1024)
        elif name.startswith("matmul"):
            a, b, c = torch.randn(64, 64), torch.randn(64, 64), torch.empty(64, 64)
            args = (a, b, c, 64, 64, 64, 64, 64, 64, 128, 128, 32, "ieee")
        else:
            args = (torch.randn(size), torch.empty(size), size, 1024)
        launches.append((kernel, args))
    return store, save_recording(store, launches, session.capture_ids)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The baseline run (add, scale v1, a matmul) and two current runs in one other store: "grown" (add, scale
    grown, add at 8 warps: a new build) and "changed" (scale with another constant)."""
    base_store, base = _run(tmp_path_factory.mktemp("base"), {
        "add": lambda: compile_sample("add", 90), "scale": lambda: compile_scale("v1"),
        "matmul": lambda: compile_sample("matmul_fp32_ieee", 90)})
    store_dir = tmp_path_factory.mktemp("current")
    store, grown = _run(store_dir, {"add": lambda: compile_sample("add", 90), "scale": lambda: compile_scale("grown"),
                                    "add8": lambda: compile_sample("add", 90, num_warps=8)})
    _, changed = _run(store_dir, {"scale": lambda: compile_scale("changed")})
    baseline_file = base_store.path / "baseline.json"
    Baseline.from_recording(base, base_store).save(baseline_file)
    return base_store, base, store, grown, changed, baseline_file


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    """Two attention templates of one name, kernel arguments and specialization whose code differs (a mask, a
    softcap; tests/check_kernels.py `compile_template`, each its own generated module). The baseline run (add,
    both templates) saved as a file; and in another store, the modules written anew elsewhere (as on another CI
    machine), three current runs: "same" (the two templates, in the other order), "edited" (the causal template,
    and the softcap template edited) and "lone" (add, and the edited softcap template alone)."""
    def run(folder: Path, kernels: dict[str, str]) -> tuple[Store, object]:
        (folder / "modules").mkdir(exist_ok=True)
        return _run(folder / "store", {name: functools.partial(compile_template, folder / "modules", modifier)
                                       if modifier else functools.partial(compile_sample, name, 90)
                                       for name, modifier in kernels.items()})

    base_dir, current_dir = tmp_path_factory.mktemp("templates-base"), tmp_path_factory.mktemp("templates-now")
    base_store, base = run(base_dir, {"add": None, "tem_causal": "causal", "tem_softcap": "softcap"})
    store, same = run(current_dir, {"tem_softcap": "softcap", "tem_causal": "causal"})
    _, edited = run(current_dir, {"tem_causal": "causal", "tem_softcap": "softcap2"})
    _, lone = run(current_dir, {"add": None, "tem_softcap": "softcap2"})
    Baseline.from_recording(base, base_store).save(base_dir / "baseline.json")
    return base_store, base, base_dir / "baseline.json", store, same, edited, lone


AMBIGUOUS = ("ambiguous: 2 baseline builds and 1 current build of this kernel name and specialization, and its code "
             "(source hash, module text, PTX) is no single {} build's")


def test_templates_of_one_name_each_meet_their_own_baseline_build(templates):
    """By name and specialization alone the two templates are one key with two baseline builds (the gate skipped
    them); by their code each current build meets its own: the same machine code, so not timed."""
    base_store, base, baseline_file, store, same, _, _ = templates
    baseline = Baseline.load(baseline_file)
    assert sorted(len(builds) for builds in baseline.by_key().values()) == [1, 2]
    sizes = {_text_size(run_store, s.capture_id) for run_store, run in ((base_store, base), (store, same))
             for s in run.signatures if s.kernel == "triton_tem_fused_0"}
    assert len(sizes) == 2  # the templates' machine code differs: a build that met the other's would not be identical
    result = check(baseline, same, store, PLAN, worker=BY_TEXT)
    assert result.exit_code == 0 and result.unchecked_share == 0
    assert [(u.label.split(" ")[0], u.signature) for u in result.unmatched] == [("add_kernel", None)]  # not launched
    assert [k.verdict for k in result.kernels] == ["SASS identical"] * 2
    timed = check(baseline, same, store, PLAN, worker=BY_TEXT, time_identical=True)
    assert [k.ratio for k in timed.kernels] == [pytest.approx(1.0)] * 2


def test_two_builds_apart_only_in_a_seeds_divisibility_each_meet_their_own(tmp_path):
    """A kernel given a fresh seed at each launch is built again when the seed is divisible by 16 (Triton
    specializes integers on it), and both builds have the same source, module text and PTX: by name, types,
    constexprs and code alone the two are one key that nothing pairs (flash-attn-triton's dropout kernels left 0.99
    of its GPU time unchecked so). By what Triton specialized each on, each meets its own."""
    kernels = {"dropout": lambda: compile_dropout(False), "dropout16": lambda: compile_dropout(True)}
    base_store, base = _run(tmp_path / "base", kernels)
    store, current = _run(tmp_path / "current", dict(reversed(kernels.items())))
    ptx = {base_store.get(s.capture_id).artifacts["ptx"].sha256 for s in base.signatures}
    assert len({s.triton_hash for s in base.signatures}) == 2 and len(ptx) == 1  # two builds, one code
    result = check(Baseline.from_recording(base, base_store), current, store, PLAN, worker=BY_TEXT)
    assert result.exit_code == 0 and result.unchecked_share == 0 and result.unmatched == []
    assert sorted(k.key.split("] ")[1] for k in result.kernels) == ["n%16 seed%16 w4 s3", "n%16 w4 s3"]


def _numbered_check(folder: Path, baseline: dict[int, float], current: dict[int, float]):
    """The gate of a current run against a baseline run, each of Inductor-like kernels `triton_poi_fused_mul_N` (N
    -> the factor it multiplies by: one factor under two numbers is one machine code); (the current run, the
    result)."""
    (folder / "modules").mkdir()
    run = lambda where, kernels: _run(folder / where, {  # noqa: E731
        f"poi_{n}": functools.partial(compile_numbered, folder / "modules", f"triton_poi_fused_mul_{n}", factor)
        for n, factor in kernels.items()})
    (base_store, base), (store, now) = run("base", baseline), run("current", current)
    return now, check(Baseline.from_recording(base, base_store), now, store, PLAN, worker=BY_TEXT)


def test_a_kernel_numbered_anew_meets_the_baseline_build_of_its_machine_code_and_a_changed_one_stays_unmatched(
        tmp_path):
    """Inductor numbers a graph's kernels in order; a second cold run that compiled one kernel more before them
    (another template chosen) names every later one anew: BERT's gate under max-autotune left 0.68 of its GPU time
    unchecked so. A current kernel with no baseline build of its name meets the unlaunched baseline build whose
    machine code it is (not timed: the same code); one whose code changed too stays unmatched, with its share."""
    current, result = _numbered_check(tmp_path, {3: 2.0, 5: 3.0}, {4: 2.0, 6: 5.0})
    assert [(k.kernel, k.baseline_kernel, k.verdict) for k in result.kernels] == [
        ("triton_poi_fused_mul_4", "triton_poi_fused_mul_3", "SASS identical")]
    assert sorted((u.label.split(" ")[0], u.why.split(",")[0]) for u in result.unmatched) == [
        ("triton_poi_fused_mul_5", "in the baseline"),
        ("triton_poi_fused_mul_6", "no baseline build of this kernel and specialization")]
    changed = next(sig for sig in current.signatures if sig.kernel == "triton_poi_fused_mul_6")
    assert result.unchecked_share == pytest.approx(current.share(changed)) and result.exit_code == 3
    assert any("triton_poi_fused_mul_4 <- triton_poi_fused_mul_3" in w for w in result.warnings)


def test_a_kernel_whose_number_another_kernel_had_meets_its_own_code_not_the_name(tmp_path):
    """Where Inductor's numbers moved by one, a current kernel bears the name of another baseline kernel: a gate by
    name compares two different kernels (on an H200 two cold compiles of BERT named two transposes alike, and the
    gate failed "outputs changed", 1.44x "slower"). Each current kernel meets the baseline build of its machine code
    instead, and the baseline build whose name it took is the one its own code replaced, not a change."""
    _, result = _numbered_check(tmp_path, {3: 2.0, 4: 3.0}, {4: 2.0, 5: 3.0})
    assert sorted((k.kernel, k.baseline_kernel, k.verdict) for k in result.kernels) == [
        ("triton_poi_fused_mul_4", "triton_poi_fused_mul_3", "SASS identical"),
        ("triton_poi_fused_mul_5", "triton_poi_fused_mul_4", "SASS identical")]
    assert result.unmatched == [] and result.unchecked_share == 0 and result.exit_code == 0


def test_an_edited_template_meets_the_baseline_build_its_unedited_sibling_left(templates):
    """The causal template unchanged meets its own build by its code; the softcap template, edited, matches no
    baseline build by code, and is the one current build left beside the one baseline build left: the same kernel,
    its code changed, timed against the softcap build (not the causal one, a third of its size)."""
    base_store, base, baseline_file, store, _, edited, _ = templates
    result = check(Baseline.load(baseline_file), edited, store, PLAN, worker=BY_TEXT)
    assert [u.why for u in result.unmatched] == ["in the baseline, not launched by the current run"]  # add
    causal, softcap = ({k.signature: k for k in result.kernels}[s.id] for s in edited.signatures)
    assert causal.verdict == "SASS identical"
    base_softcap, now_softcap = base.signatures[2], edited.signatures[1]
    assert base_softcap.source != now_softcap.source and softcap.verdict != "SASS identical"  # its code changed
    expected = _text_size(store, now_softcap.capture_id) / _text_size(base_store, base_softcap.capture_id)
    assert softcap.ratio == pytest.approx(expected, rel=1e-6)
    assert _text_size(store, now_softcap.capture_id) / _text_size(base_store, base.signatures[1].capture_id) > 2


def test_a_template_no_single_baseline_build_has_the_code_of_is_unmatched_with_its_share_and_fails_the_gate(
        templates, tmp_path):
    """The edited softcap template launched alone: two baseline builds of its key, neither with its code, so which
    one it is is not known. It is unmatched with its share of the run's GPU time (its launches and times as
    recorded), and with 80% of the time unchecked the gate fails (exit 3) unless allowed that much."""
    _, _, baseline_file, store, _, _, lone = templates
    baseline = Baseline.load(baseline_file)
    result = check(baseline, lone, store, PLAN, worker=BY_TEXT)
    add, softcap = lone.signatures
    assert [k.kernel for k in result.kernels] == ["add_kernel"] and result.failures == []
    (current,) = [u for u in result.unmatched if u.signature is not None]
    gpu_ms = {s.id: sum(s.times_ms) / len(s.times_ms) * s.launches for s in lone.signatures}
    expected = gpu_ms[softcap.id] / sum(gpu_ms.values())
    assert expected > 0.5 and current.signature == softcap.id and current.why == AMBIGUOUS.format("baseline")
    assert current.share == pytest.approx(expected) and result.unchecked_share == pytest.approx(expected)
    assert [u.why for u in result.unmatched if u.signature is None] == ["in the baseline, " +
                                                                       AMBIGUOUS.format("current")] * 2
    assert result.exit_code == 3 and result.too_unchecked == (
        f"{expected:.1%} of the current run's GPU time was not checked (1 signature(s) unmatched or not replayed), "
        f"beyond --max-unchecked 0.1")
    suite = ElementTree.fromstring(result.write_junit(tmp_path / "check.xml").read_text())
    assert [(c.get("name"), f.get("message")) for c in suite.iter("testcase") for f in c.iter("failure")] == \
        [("unchecked share", result.too_unchecked)]
    text = io.StringIO()
    Console(file=text, width=240).print(result)
    assert f"FAILED {result.too_unchecked}" in text.getvalue() and f"{expected:.1%}" in text.getvalue()
    allowed = check(baseline, lone, store, PLAN, worker=BY_TEXT, max_unchecked=0.9)
    assert allowed.exit_code == 0 and allowed.too_unchecked is None and "passed" in allowed.title()
    saved = store.result(result.id)
    assert saved.exit_code == 3 and saved.unmatched == result.unmatched  # the share and limit saved with it


def test_the_cli_exits_3_when_too_much_is_unchecked_and_takes_max_unchecked(templates, monkeypatch, capsys):
    _, _, baseline_file, store, _, _, lone = templates
    monkeypatch.setattr(gate, "check", functools.partial(check, worker=BY_TEXT))  # the fake worker: no GPU here
    common = ["check", "--store", str(store.path), "--current", str(lone.id), "--baseline", str(baseline_file),
              "--rounds", str(ROUNDS)]
    assert main([*common, "--json"]) == 3
    printed = json.loads(capsys.readouterr().out)
    assert printed["exit_code"] == 3 and printed["unchecked_share"] == pytest.approx(0.8)
    assert printed["unchecked_failure"].endswith("beyond --max-unchecked 0.1") and printed["max_unchecked"] == 0.1
    assert [u["share"] for u in printed["unmatched"]] == [pytest.approx(0.8), None, None]
    assert main([*common, "--max-unchecked", "0.8"]) == 0
    assert main([*common, "--max-unchecked", "2"]) == 2
    assert "--max-unchecked 2.0: a fraction in [0, 1]" in capsys.readouterr().err


def _cubin(store: Store, signature) -> bytes:
    """The cubin of the build a recorded signature launched."""
    return store.read(store.get(signature.capture_id), "cubin")


def _text_size(store: Store, capture_id: int) -> int:
    capture = store.get(capture_id)
    return Cubin.from_bytes(store.read(capture, "cubin")).summary(capture.entry)["text_size"]


def test_an_a_a_check_passes_untimed_and_timed(runs):
    _, _, store, grown, _, _ = runs
    baseline = Baseline.from_recording(grown, store)
    result = check(baseline, grown, store, PLAN, worker=BY_TEXT)
    assert result.exit_code == 0 and not result.unmatched
    assert [k.verdict for k in result.kernels] == ["SASS identical"] * 3
    timed = check(baseline, grown, store, PLAN, worker=BY_TEXT, time_identical=True)
    assert timed.exit_code == 0 and {k.status for k in timed.kernels} == {"passed"}
    assert all(k.ratio == pytest.approx(1.0) for k in timed.kernels)


@pytest.mark.miss_check  # the check on, as outside the tests: the gate must leave it off itself
def test_the_gate_replays_no_row_again_for_a_fidelity_it_never_reads(runs):
    """The fake worker's times are not the recording's: every row misses the fidelity bar, which a sweep would
    replay again under each other L2 rule to say why. The gate compares two builds inside one replay: none."""
    _, _, store, grown, _, _ = runs
    result = check(Baseline.from_recording(grown, store), grown, store, PLAN, worker=BY_TEXT, time_identical=True)
    swept = store.result(result.sweep_id)
    assert swept.fidelity.within < swept.fidelity.signatures and "miss check" not in swept.times_s


def test_a_kernel_whose_code_grew_is_caught_and_named_in_the_junit_xml(runs, tmp_path):
    """The grown scale_kernel unrolls a loop in front of v1's computation (another source, the same name and
    specialization). Its machine code, read here from the two cubins the gate compares (the baseline file's build
    and the current run's capture: their `.text.scale_kernel` sections), is larger by more than the gate's
    threshold; the fake worker stands in for the GPU by timing a build in proportion to that section. So the gate
    must pair exactly these two builds, time the current one over the baseline one (a pairing with another build,
    or the ratio upside down, reads another figure) and fail this kernel alone."""
    _, base, store, grown, _, baseline_file = runs
    baseline = Baseline.load(baseline_file)
    result = check(baseline, grown, store, PLAN, worker=BY_TEXT)
    by_kernel = {k.kernel: k for k in result.kernels}
    assert set(by_kernel) == {"add_kernel", "scale_kernel"}
    scale = by_kernel["scale_kernel"]
    (base_build,) = [build for build in baseline.builds if build.entry == "scale_kernel"]
    now_scale = next(s for s in grown.signatures if s.kernel == "scale_kernel")
    assert next(s for s in base.signatures if s.kernel == "scale_kernel").source != now_scale.source
    grew = (Cubin.from_bytes(_cubin(store, now_scale)).section_size(".text.scale_kernel")
            / Cubin.from_bytes(base_build.cubin).section_size(".text.scale_kernel"))
    assert grew > 1 + result.threshold
    assert scale.ratio == pytest.approx(grew, rel=1e-6) and scale.low > 1 + result.threshold
    assert scale.status == "regressed"
    assert by_kernel["add_kernel"].verdict == "SASS identical" and by_kernel["add_kernel"].status == "passed"
    assert result.exit_code == 1 and [k.kernel for k in result.failures] == ["scale_kernel"]
    # the unmatched fail no kernel: the add build at 8 warps is new, the matmul gone; but the new build is 0.9 of the
    # run's 1.4 ms of GPU time (tests/sample_recording.py), not checked: a failure of the gate's own
    why = {u.label.split(" ")[0]: u.why for u in result.unmatched}
    assert why["add_kernel"] == "no baseline build of this kernel and specialization, nor of its machine code"
    assert why["matmul_kernel"] == "in the baseline, not launched by the current run"
    suite = ElementTree.fromstring(result.write_junit(tmp_path / "check.xml").read_text())
    failures = [(case.get("classname"), failure.get("message")) for case in suite.iter("testcase")
                for failure in case.iter("failure")]
    assert [name for name, _ in failures] == ["scale_kernel", "tritonhook check"]
    assert "beyond the 3.0% threshold" in failures[0][1] and failures[1][1].startswith("64.3% of the current run's")
    assert suite.get("failures") == "2" and suite.get("tests") == str(len(result.kernels) + len(result.unmatched) + 1)
    # saved in the store as its own kind, and read back typed
    assert store.result(result.id).to_json() == {**result.to_json(), "id": result.id}
    assert not result.fixed_rounds and "at most 7 rounds, adaptive" in result.title()
    saved_before = {k: v for k, v in result.to_json().items() if k != "fixed_rounds"}  # a result saved before it
    assert gate.CheckResult.from_json(saved_before).title().endswith(", 7 rounds)")


def test_a_baseline_config_the_current_run_did_not_launch_names_the_config_it_launched(runs):
    """A baseline whose autotuner ran (a cold cache) launched every candidate config; a current run whose cache gave
    the pick launched one. Here the baseline launched `add` at 4 and 8 warps and the current run at 4 alone."""
    base_store, base, store, grown, _, _ = runs
    result = check(Baseline.from_recording(grown, store), base, base_store, PLAN, worker=BY_TEXT)
    (add8,) = [u for u in result.unmatched if u.signature is None]
    assert add8.label.startswith("add_kernel [") and add8.label.endswith(" w8 s3")
    assert add8.why == ("in the baseline, not launched by the current run, which launched "
                        f"{add8.label.replace(' w8 ', ' w4 ')} (another config of it: an autotune candidate or pick)")


def test_a_regression_is_replayed_again_in_new_processes_before_it_fails_the_gate(runs, tmp_path):
    """One worker process times the current build of the scale kernel 5% slower (a short kernel's steady offset
    within a process, as the H200's A/A found); the gate replays that regression once more, in new processes, where
    it is gone: the kernel passes, and the line says both. A kernel whose code grew regresses in both replays."""
    _, _, store, grown, _, baseline_file = runs
    offset = [*BY_TEXT, "--slow-once", str(tmp_path / "slowed"), "scale_kernel", "1.05"]
    aa = check(Baseline.from_recording(grown, store), grown, store, PLAN, worker=offset, time_identical=True)
    scale = next(k for k in aa.kernels if k.kernel == "scale_kernel")
    assert (tmp_path / "slowed").exists() and aa.exit_code == 0 and scale.status == "passed"
    assert scale.verdict.startswith("slower in one replay, not in a second (1.000 [") and scale.ratio > 1.04
    regressed = check(Baseline.load(baseline_file), grown, store, PLAN, worker=BY_TEXT)
    (grew,) = regressed.failures
    assert grew.kernel == "scale_kernel" and grew.retest.endswith(" slower") and "again in a second replay" in \
        grew.why(regressed.threshold)


def test_a_change_of_outputs_fails_the_gate_though_the_time_did_not_move(runs, tmp_path):
    """The baseline build of scale_kernel doubles its input, the changed build triples it, in code of one size. A
    cubin cannot run here, so the fake worker runs each build's kernel in Triton's interpreter from the recorded
    inputs (`--interpret`, the kernel known by its cubin) and the real output check judges the bytes: they differ,
    and the kernel fails the gate though its time did not move. The changed build against itself is bitwise."""
    base_store, base, store, _, changed, baseline_file = runs
    scale_cubins = {version: _cubin(run_store, next(s for s in run.signatures if s.kernel == "scale_kernel"))
                    for version, run_store, run in (("v1", base_store, base), ("changed", store, changed))}
    kernels = tmp_path / "kernels.json"
    kernels.write_text(json.dumps({hashlib.sha256(cubin).hexdigest(): version
                                   for version, cubin in scale_cubins.items()}))
    interpreted = [*BY_TEXT, "--interpret", str(kernels)]
    result = check(Baseline.load(baseline_file), changed, store, PLAN, worker=interpreted)
    (scale,) = result.kernels
    assert scale.ratio == pytest.approx(1.0) and scale.verdict == "no difference"  # same .text size
    assert scale.outputs == "differ" and scale.status == "outputs changed" and result.exit_code == 1
    itself = check(Baseline.from_recording(changed, store), changed, store, PLAN, worker=interpreted,
                   time_identical=True)
    assert [(k.outputs, k.status) for k in itself.kernels] == [("bitwise", "passed")] and itself.exit_code == 0


def test_a_bad_baseline_is_one_line(runs, tmp_path, capsys):
    _, _, store, grown, _, baseline_file = runs
    broken = tmp_path / "broken.json"
    for text, expected in (("not json", "cannot read it as a baseline file"),
                           (json.dumps({"format": "other"}), "not a tritonhook baseline file"),
                           (json.dumps({"format": "tritonhook-baseline", "version": 1, "builds": []}),
                            f"baseline file version 1, this tritonhook reads version {VERSION}"),
                           (json.dumps({"format": "tritonhook-baseline", "version": VERSION, "builds": [{}]}),
                            "malformed baseline file"),
                           (json.dumps({"format": "tritonhook-baseline", "version": VERSION, "builds": [],
                                        "arch": "sm_90a", "triton_version": "3.6.0", "picks": [{"key": 5}],
                                        "unpinned": []}), r"picks\[0\]")):
        broken.write_text(text)
        with pytest.raises(TritonhookError, match=expected) as raised:
            Baseline.load(broken)
        assert "\n" not in str(raised.value) and str(broken) in str(raised.value)
    no_code = json.loads(baseline_file.read_text())
    no_code["builds"][0]["code"] = 5
    broken.write_text(json.dumps(no_code))
    with pytest.raises(TritonhookError, match="malformed baseline file"):
        Baseline.load(broken)
    assert main(["check", "--store", str(store.path), "--baseline", str(broken), "--current", str(grown.id)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "malformed baseline file" in err
    with pytest.raises(TritonhookError, match="no such baseline file, nor a recording"):
        load_baseline("999", store)


def test_the_cli_exits_1_on_a_regression_0_on_an_a_a_and_writes_junit(runs, tmp_path, monkeypatch, capsys):
    _, _, store, grown, _, baseline_file = runs
    monkeypatch.setattr(gate, "check", functools.partial(check, worker=BY_TEXT))  # the fake worker: no GPU here
    junit = tmp_path / "out.xml"
    common = ["check", "--store", str(store.path), "--current", str(grown.id), "--rounds", str(ROUNDS)]
    assert main([*common, "--baseline", str(baseline_file), "--junit", str(junit), "--json"]) == 1
    printed = json.loads(capsys.readouterr().out)
    assert printed["exit_code"] == 1 and [k["kernel"] for k in printed["kernels"] if k["status"] == "regressed"] \
        == ["scale_kernel"]
    assert "scale_kernel" in junit.read_text()
    saved = tmp_path / "aa.json"
    assert main(["check", "--store", str(store.path), "--current", str(grown.id), "--save-baseline", str(saved)]) == 0
    assert main([*common, "--baseline", str(saved)]) == 0
    assert main([*common, "--baseline", str(grown.id), "--threshold", "2"]) == 2
    assert "--threshold 2.0: a fraction" in capsys.readouterr().err
    assert main(["check", "--store", str(store.path), "--baseline", str(saved)]) == 2
    assert "give the current run as --current RECORDING or as a command" in capsys.readouterr().err


# ----- the rule on recorded timings -----------------------------------------------------------------------------
TIMINGS = Path(__file__).parent.parent / "benchmarks/results/hopper_attention_d128_h200.json"
"""Real per-call timings on an H200: 10 attention shapes x 8 kernels, each timed in 3 runs of 20 calls (the only
results file holding per-round samples; the sweep's results keep medians only)."""


def _recorded_kernels() -> list[list[list[float]]]:
    """Per kernel (shape x implementation, every fourth one: 20, 98 µs to 6.7 ms), its runs' timings in ms."""
    rows = json.loads(TIMINGS.read_text())["rows"]
    kernels = [[run[arm] for run in row["runs"]] for row in rows for arm in sorted(row["runs"][0])]
    return kernels[::4]


def _gate_calls_regressed(base_round, current_round) -> bool:
    """Does the gate's rule call the current build regressed? Rounds are drawn one at a time (`base_round()`,
    `current_round()`: a round's figure in ms) and stop as the replay stops a row under the gate's plan (the
    adaptive rule at the threshold, the row precision, the default cap); the verdict is on the always-valid
    interval, at the threshold and the µs floor."""
    plan = gate_plan()
    rule = StopRule(plan.min_effect, config.sweep.ROW_PRECISION, plan.rounds)
    samples: dict[str, list[float]] = {"baseline": [], "current": []}
    while rounds_stop(samples, list(samples), rule) is None:
        samples["baseline"].append(base_round())
        samples["current"].append(current_round())
    found = ratio_sequence(samples["baseline"], samples["current"])
    return verdict(found.ratio, found.low, found.high, plan.min_effect,
                   baseline_ms=median(samples["baseline"])) == "slower"


def _gate_runs(kernels, slowdown: float, runs: int) -> list[list[bool]]:
    """Per resampled run, per kernel: does the gate call the current build regressed? A resampled run replays as
    the gate does: each round's figure per build the interquartile mean of as many calls as the replay's timer
    makes (`config.sweep.REPLAY_REP_MS` worth, at least `MIN_REPS`), the calls drawn with replacement from one recorded run of the
    kernel (one process, as the gate's single replay), the current build's multiplied by `slowdown`."""
    rng = random.Random(40)
    flagged = []
    for _ in range(runs):
        row = []
        for recorded in kernels:
            calls = rng.choice(recorded)
            per_round = max(MIN_REPS, round(config.sweep.REPLAY_REP_MS.default / median(calls)))
            figure = lambda: interquartile_mean([rng.choice(calls) for _ in range(per_round)])  # noqa: E731
            row.append(_gate_calls_regressed(figure, lambda: figure() * slowdown))
        flagged.append(row)
    return flagged


def test_the_rule_has_at_most_1pct_false_positives_over_20_a_a_runs_of_recorded_timings():
    kernels = _recorded_kernels()
    assert len(kernels) == 20 and min(min(min(run) for run in k) for k in kernels) >= 0.020  # >= 20 µs
    flagged = _gate_runs(kernels, 1.0, runs=20)
    false_positives = sum(map(sum, flagged))
    assert false_positives <= 0.01 * 20 * len(kernels), false_positives
    assert sum(any(run) for run in flagged) <= 0.01 * 20  # not one of the 20 A/A runs fails the gate


def test_the_rule_catches_a_seeded_3_8pct_slowdown_in_95pct_of_runs_of_recorded_timings():
    caught = _gate_runs(_recorded_kernels(), 1.038, runs=20)
    rate = sum(map(sum, caught)) / (20 * len(caught[0]))
    assert rate >= 0.95, rate


TICK = 32e-6
"""The CUDA event timer's quantum on Hopper, ms (`benchmarks/event_tick.py` measures it)."""


def _short_kernel_runs(ticks: float, offset_ticks: list[int], runs: int) -> list[bool]:
    """Per simulated gate run of a kernel of `ticks` event ticks: each run's current build lands `offset` ticks
    from the baseline's in every round (drawn per run from `offset_ticks`: two loads of one build differ steadily
    by a few ticks, docs/check.md#the-us-floor), each round's figure within a tenth of a tick of it."""
    rng = random.Random(7)
    called = []
    for _ in range(runs):
        offset = rng.choice(offset_ticks)
        base = lambda: (ticks + rng.gauss(0, 0.1)) * TICK  # noqa: E731
        called.append(_gate_calls_regressed(base, lambda: (ticks + offset + rng.gauss(0, 0.1)) * TICK))
    return called


def test_a_short_kernel_a_few_ticks_apart_is_no_regression_and_one_a_third_of_a_us_slower_is():
    """The gate's H200 A/A: kernels of 5-6 µs whose identical builds landed 6-7 ticks (0.19-0.23 µs) apart read
    3.8-4.2% slower with intervals above 1. A 5.6 µs kernel (175 ticks) so far apart passes the µs floor in every
    run, as does a 0.9 µs kernel (28 ticks) a tick or three apart (3.6-11%); eleven ticks (0.35 µs) slower is caught."""
    assert not any(_short_kernel_runs(175, [6, 7], runs=40))
    assert verdict(*_ratio_of(175, 7), config.check.THRESHOLD) == "slower"  # the interval alone would
    assert not any(_short_kernel_runs(28, [-1, 0, 1, 3], runs=60))
    assert all(_short_kernel_runs(175, [11], runs=20)) and all(_short_kernel_runs(28, [11], runs=20))


def _ratio_of(ticks: int, offset: int) -> tuple[float, float, float]:
    """The always-valid ratio interval of 21 rounds of a kernel of `ticks` ticks whose current build is `offset`
    ticks slower in every round (a tenth of a tick of noise)."""
    rng = random.Random(ticks + offset)
    base = [(ticks + rng.gauss(0, 0.1)) * TICK for _ in range(21)]
    current = [(ticks + offset + rng.gauss(0, 0.1)) * TICK for _ in range(21)]
    found = ratio_sequence(base, current)
    return found.ratio, found.low, found.high


def test_the_floor_is_a_quarter_of_a_us_of_the_baselines_time_and_the_effect_above_it():
    from tritonhook.measure.stats import min_effect_at

    assert min_effect_at(0.004, 0.03) == pytest.approx(0.0625) and min_effect_at(0.1, 0.03) == 0.03
    assert min_effect_at(None, 0.03) == 0.03 and min_effect_at(0.0, 0.005) == 0.005
    assert verdict(1.05, 1.04, 1.06, 0.03, baseline_ms=0.004) == "no difference"  # 0.2 µs of 4 µs
    assert verdict(1.07, 1.065, 1.08, 0.03, baseline_ms=0.004) == "slower"


# ----- the pytest plugin ------------------------------------------------------------------------------------------
pytest_plugins = ["pytester"]
PLUGIN_ARGS = [] if any(ep.value == "tritonhook.pytest_plugin" for ep in entry_points(group="pytest11")) else \
    ["-p", "tritonhook.pytest_plugin"]  # a checkout whose installed metadata predates the entry point
CONFTEST = '''
import contextlib, sys, types
sys.path.insert(0, {tests!r})
import torch
import tritonhook.pytest_plugin as plugin
from check_kernels import compile_scale
from sample_recording import save_recording
from tritonhook.samples import compile_sample

LAUNCHED = []


@contextlib.contextmanager
def record(store, label):
    """The in-process recording, on a machine with no GPU: what a test "launched" (compiled, captured by the
    plugin's capture session, and its arguments) as one recording."""
    recorder = types.SimpleNamespace(recording=None)
    LAUNCHED.clear()
    yield recorder
    if LAUNCHED:
        recorder.recording = save_recording(store, list(LAUNCHED), None)


plugin.Gate.record = staticmethod(record)
plugin.Gate.worker = [{fake!r}, "--time-with-text"]


def launch(name):
    size = 4096
    if name == "add":
        args = (torch.randn(size), torch.randn(size), torch.empty(size), size, 1024)
        LAUNCHED.append((compile_sample("add", 90), args))
    else:
        LAUNCHED.append((compile_scale(name), (torch.randn(size), torch.empty(size), size, 1024)))
'''
TESTS = '''
from conftest import launch


def test_add():
    launch("add")


def test_scale():
    launch("grown")


def test_without_kernels():
    pass
'''


def test_the_pytest_plugin_fails_exactly_the_test_whose_kernel_regressed(runs, pytester, tmp_path):
    _, _, _, _, _, baseline_file = runs
    pytester.makeconftest(CONFTEST.format(tests=str(Path(__file__).parent), fake=FAKE))
    pytester.makepyfile(test_kernels=TESTS)
    junit, gate_junit = tmp_path / "pytest.xml", tmp_path / "gate.xml"
    result = pytester.runpytest_subprocess(
        *PLUGIN_ARGS, f"--tritonhook-baseline={baseline_file}", f"--tritonhook-store={tmp_path / 'store'}",
        f"--tritonhook-rounds={ROUNDS}", f"--junitxml={junit}", f"--tritonhook-junit={gate_junit}",
        "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*tritonhook check: scale_kernel*beyond the 3.0% threshold*",
                                 "FAILED test_kernels.py::test_scale*"])
    cases = {case.get("name"): case for case in ElementTree.parse(junit).getroot().iter("testcase")}
    assert set(cases) == {"test_add", "test_scale", "test_without_kernels"}  # each test once
    assert [name for name, case in cases.items() if case.find("failure") is not None] == ["test_scale"]
    assert "scale_kernel" in cases["test_scale"].find("failure").text
    assert [c.get("classname") for c in ElementTree.parse(gate_junit).getroot().iter("testcase")
            if c.find("failure") is not None] == ["scale_kernel"]
    # without --tritonhook-baseline the plugin is inert: the same tests pass, nothing is recorded or replayed
    inert = pytester.runpytest_subprocess(*PLUGIN_ARGS, "-p", "no:cacheprovider")
    inert.assert_outcomes(passed=3)
    assert "tritonhook check" not in inert.stdout.str()


SCALE_AND_ADD = '''
from conftest import launch


def test_add():
    launch("add")


def test_scale():
    launch("changed")
'''


def test_the_pytest_plugin_fails_the_session_that_left_too_much_unchecked(runs, pytester, tmp_path):
    """Against a baseline of the scale kernel alone, the add kernel's half of the GPU time is not checked: both
    tests pass, the session fails with the line that says so; allowed that much, it passes."""
    _, _, store, _, changed, _ = runs
    baseline_file = Baseline.from_recording(changed, store).save(tmp_path / "scale.json")
    pytester.makeconftest(CONFTEST.format(tests=str(Path(__file__).parent), fake=FAKE))
    pytester.makepyfile(test_kernels=SCALE_AND_ADD)
    common = [*PLUGIN_ARGS, f"--tritonhook-baseline={baseline_file}", f"--tritonhook-store={tmp_path / 'store'}",
              f"--tritonhook-rounds={ROUNDS}", "-p", "no:cacheprovider"]
    result = pytester.runpytest_subprocess(*common)
    result.assert_outcomes(passed=2)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["FAILED 50.0% of the current run's GPU time was not checked (1 signature(s) "
                                 "unmatched or not replayed), beyond --tritonhook-max-unchecked 0.1"])
    allowed = pytester.runpytest_subprocess(*common, "--tritonhook-max-unchecked=0.5")
    allowed.assert_outcomes(passed=2)
    assert allowed.ret == 0 and "FAILED" not in allowed.stdout.str()


def test_the_pytest_plugin_refuses_a_bad_baseline_in_one_line(pytester, tmp_path):
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    (tmp_path / "bad.json").write_text("{}")
    result = pytester.runpytest_subprocess(*PLUGIN_ARGS, f"--tritonhook-baseline={tmp_path / 'bad.json'}",
                                           f"--tritonhook-store={tmp_path / 'store'}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: tritonhook: *bad.json: not a tritonhook baseline file*"])


def test_the_pytest_plugin_refuses_a_junit_path_it_cannot_write_before_any_test_runs(pytester, tmp_path):
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess(*PLUGIN_ARGS, f"--tritonhook-baseline={tmp_path / 'any.json'}",
                                           f"--tritonhook-store={tmp_path / 'store'}", "-p", "no:cacheprovider",
                                           "--tritonhook-junit=/proc/tritonhook/gate.xml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: tritonhook: /proc/tritonhook/gate.xml: cannot write the JUnit XML (No such "
                                 "file or directory)"])


@pytest.mark.parametrize("option, why", [
    ("--tritonhook-rounds=5", "--tritonhook-rounds 5: adaptive rounds decide nothing before 7 (the always-valid "
                              "interval); give at least 7, or --tritonhook-fixed-rounds"),
    ("--tritonhook-threshold=2", "--tritonhook-threshold 2.0: a fraction in (0, 1), e.g. 0.03")])
def test_the_pytest_plugin_names_its_own_option_when_it_refuses_one(pytester, tmp_path, option, why):
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess(*PLUGIN_ARGS, f"--tritonhook-baseline={tmp_path / 'any.json'}",
                                           f"--tritonhook-store={tmp_path / 'store'}", "-p", "no:cacheprovider",
                                           option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0] == f"ERROR: tritonhook: {why}"
