"""Pinning an autotuned kernel's config (issue 53): the sweep's autotune regret becomes a decision keyed by the
kernel and its tuning key, the portable file carries it as data, and `enable(apply=)` runs Triton's real Autotuner
with the pinned config and no benchmark for that tuning key only. On a CPU: the launch after the autotuner's
choice fails (no driver), which is where these tests stop looking."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import triton

import tritonhook
from tritonhook import _triton, decisions
from tritonhook.samples import add_kernel
from tritonhook.sweep import recording as rec
from tritonhook.sweep.autotune import analyze_group
from tritonhook.sweep.result import SweepResult, SweepRow

sys.path.insert(0, os.path.dirname(__file__))
from test_sweep_autotune import CONFIGS, _candidate_rows, candidates  # noqa: E402,F401 - the fixture
from release_subjects import load_module  # noqa: E402 - tests/release_subjects.py

pytestmark = pytest.mark.every_release  # reaches what differs between Triton releases (scripts/test-matrix.sh)

torch = pytest.importorskip("torch")
GPU = "NVIDIA H200"


def _autotuned(benchmarked: list):
    def do_bench(kernel_call, quantiles):  # one call per config benchmarked
        benchmarked.append(kernel_call)
        return [0.01, 0.009, 0.011]

    return triton.autotune(CONFIGS, key=["n"], do_bench=do_bench)(add_kernel)


def _call(autotuned, n: int) -> None:
    x = torch.zeros(n)
    with contextlib.suppress(Exception):  # no GPU: the launch after the autotuner's choice fails
        autotuned[(1,)](x, x, x, n)


def _real_tuning_key(n: int) -> list[str]:
    """The tuning key the recording's tracer writes for a call of the autotuned add kernel with `n` elements."""
    decisions_seen = []
    tracer = _triton.AutotuneTracer(decisions_seen.append)
    tracer.install()
    try:
        _call(_autotuned([]), n)
    finally:
        tracer.uninstall()
    return decisions_seen[0].key


REGRET = {256: (0.015, 0.015), 512: (0.020, 0.020), 1024: (0.025, 0.026)}
"""Per config, the plain and cutlass_ rounds' centers: BLOCK 256 is 25% faster than the workload's BLOCK 512."""


def _swept_with_regret(candidates, tuning_key: list[str], centers: dict = REGRET):
    """(store, a saved sweep result) whose autotuned row was replayed with rounds around `centers` (by default
    finding BLOCK 256 25% faster than the workload's BLOCK 512: the regret), over a recording on `GPU` whose
    autotune decision carries `tuning_key`."""
    store, recording = candidates
    recording = dataclasses.replace(recording, device=GPU, autotune=[{**recording.autotune[0], "key": tuning_key}],
                                    id=None)
    recording.id = store.add_result(rec.RESULT_KIND, recording.to_json())
    group, rows, samples = _candidate_rows((store, recording), centers)
    row = analyze_group(SweepRow(1, "add_kernel", "add_kernel", 0.9, 50, 0.02, "snapshot", "ok"), group, rows,
                        samples, ["plain", "cutlass_"])
    result = SweepResult([row], ["plain", "cutlass_"], 9, recording.id, None, {}, candidates=rows).finish()
    result.id = store.add_result("sweep", result.to_json())
    return store, result


@pytest.fixture
def regret_sweep(candidates):
    """The regret sweep over the real tuning key of a 4096-element call; its decisions removed after."""
    store, result = _swept_with_regret(candidates, _real_tuning_key(4096))
    yield store, result
    for made in decisions.listing(store).decisions:
        decisions.remove(store, made.id)


def test_the_autotune_regret_becomes_a_decision_pinning_its_config(regret_sweep, tmp_path):
    store, result = regret_sweep
    made = decisions.from_result(store, result.id)
    (decision,) = [d for d in made.decisions if isinstance(d.key, decisions.AutotuneKey)]
    assert decision.key == decisions.AutotuneKey("add_kernel", ("4096",) + ("torch.float32",) * 3, GPU)
    assert dict(decision.choice.config) == _triton.autotune_config(CONFIGS[0])  # BLOCK 256, num_warps 2
    assert decision.choice.label == "plain+config:BLOCK=256,num_ctas=1,num_stages=3,num_warps=2"  # kept sorted
    assert decision.evidence.ratio == pytest.approx(0.75, rel=0.01)
    decisions.export(store, tmp_path / "pins.json")
    again = decisions.read_file(tmp_path / "pins.json")
    assert not again.refused and [d.key for d, _ in again.decisions if d.choice.config] == [decision.key]


def test_enable_apply_runs_the_pinned_config_without_benchmarking_for_that_tuning_key(regret_sweep, monkeypatch):
    from triton.runtime.autotuner import Autotuner

    store, result = regret_sweep
    decisions.from_result(store, result.id)
    monkeypatch.setenv("TRITONHOOK_DECISIONS_GPU", GPU)
    benchmarked = []
    autotuned = _autotuned(benchmarked)
    run = Autotuner.run
    with tritonhook.session(store.path, apply=store.path, subprocesses=False):
        _call(autotuned, 4096)
        assert benchmarked == [] and autotuned.best_config.kwargs == {"BLOCK": 256}
        _call(autotuned, 8192)  # another tuning key: tuned as usual
        assert len(benchmarked) == len(CONFIGS)
    assert Autotuner.run is run


def test_a_kept_pin_the_workload_refuted_is_not_applied_and_says_why(regret_sweep, monkeypatch):
    """A kept decision carries its confirmation: a pin the newest confirmation found slower inside the workload
    (a divergence pin chosen by the autotuners' µs timings was, at 5 of 32 keys of a DDP job) is not applied by
    `--apply STORE`, in every process alike, with one warning naming that confirmation; the autotuner tunes that
    key as it would unpinned. A newer confirmation that does not refute it applies it again."""
    from triton.runtime.autotuner import Autotuner

    from tritonhook.decisions.confirmation import RESULT_KIND, Confirmation, PinConfirmation

    store, result = regret_sweep
    (pin,) = [d for d in decisions.from_result(store, result.id).decisions if isinstance(d.key, decisions.AutotuneKey)]
    pinned = pin.choice.label.split("+config:")[1]

    def confirmed(unpinned_ms: float) -> int:
        found = PinConfirmation("add_kernel", ["4096"], pinned, {"ratio": 0.75, "low": 0.74, "high": 0.76},
                                {"unpinned": [unpinned_ms] * 3, "pinned": [0.02] * 3}, 0.02 / unpinned_ms,
                                0.02 / unpinned_ms * 0.99, 0.02 / unpinned_ms * 1.01,
                                "slower" if unpinned_ms < 0.02 else "no difference", True, ["BLOCK=512"] * 3,
                                "BLOCK=1024", None, decision=pin.to_json())
        return store.add_result(RESULT_KIND, Confirmation(result.id, ["python", "w.py"], 3, [found], {}, {}).to_json())

    def tuned_at_4096() -> list:
        benchmarked = []
        autotuned = _autotuned(benchmarked)
        with tritonhook.session(store.path, apply=store.path, subprocesses=False):
            _call(autotuned, 4096)
        assert Autotuner.run is run
        return benchmarked

    monkeypatch.setenv("TRITONHOOK_DECISIONS_GPU", GPU)
    run = Autotuner.run
    refuted = confirmed(0.015)  # the pinned config ran a third slower than the unpinned runs' picks
    with pytest.warns(RuntimeWarning) as warned:
        assert len(tuned_at_4096()) == len(CONFIGS)  # not pinned: tuned as usual
    assert any(f"decision {pin.id} (add_kernel, {pin.choice.label}) not applied: refuted in the workload by "
               f"confirmation {refuted}: NOT confirmed inside the workload: slower" in str(w.message) for w in warned)
    confirmed(0.02)  # a newer confirmation: no difference (not judged), so the pin applies again
    assert tuned_at_4096() == []


def _pruned_into_own_configs(stages_added: int, zeroed: list, benchmarked: list):
    """The add kernel autotuned with a pruner that returns configs of its own making, as GemLite's does (it adds
    constexprs and a `pre_hook` zeroing a split-K output): each config again with `stages_added` more stages and a
    pre-hook that notes the BLOCK it ran for. Its benchmark is a stub noting each config it times."""
    def own_configs(configs, nargs, **kwargs):
        return [triton.Config(dict(config.kwargs), num_warps=config.num_warps,
                              num_stages=config.num_stages + stages_added,
                              pre_hook=lambda args, block=config.kwargs["BLOCK"]: zeroed.append(block))
                for config in configs]

    def do_bench(kernel_call, quantiles):
        benchmarked.append(kernel_call)
        return [0.01, 0.009, 0.011]

    return triton.autotune(CONFIGS, key=["n"], prune_configs_by={"early_config_prune": own_configs},
                           do_bench=do_bench)(add_kernel)


@pytest.mark.parametrize("stages_added", [1, 0], ids=["other values", "same values, a pre-hook of its own"])
def test_a_pin_runs_the_config_a_pruner_made_with_its_pre_hook(stages_added):
    """A pin is the autotuner's pick, and an autotuner whose pruner makes its own configs picks one of those: the
    pinned run launches that config, its pre-hook included, without benchmarking. Found on the H200: GemLite's pins
    matched none of its declared configs (the pick has the constexprs its pruner adds), so no confirmation run was
    pinned; and where the values are the same, the declared twin would have run without the pruned one's zeroing."""
    zeroed, benchmarked, decisions_seen = [], [], []
    tracer = _triton.AutotuneTracer(decisions_seen.append)
    tracer.install()
    try:
        _call(_pruned_into_own_configs(stages_added, zeroed, benchmarked), 4096)
    finally:
        tracer.uninstall()
    (decided,) = decisions_seen
    pinned = {**decided.chosen, "BLOCK": 1024, "num_warps": 8}  # another of the pruned configs than its pick
    key = ("add_kernel", tuple(decided.key))
    assert len(benchmarked) == len(CONFIGS)  # the recording's autotuner did benchmark
    zeroed.clear(), benchmarked.clear()
    pinner = _triton.AutotunePinner({key: pinned})
    pinner.install()
    try:
        autotuned = _pruned_into_own_configs(stages_added, zeroed, benchmarked)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # "none of its configs has those values" would fail here
            _call(autotuned, 4096)
            _call(autotuned, 4096)
    finally:
        pinner.uninstall()
    assert benchmarked == [] and zeroed == [1024, 1024]  # the pruned config's pre-hook ran before each launch
    assert autotuned.best_config.num_stages == CONFIGS[2].num_stages + stages_added
    assert pinner.applied == {key: 2}


def test_an_inductor_kernels_regret_becomes_a_decision_its_file_carries_and_the_pinner_reads(candidates, tmp_path):
    """Inductor's decisions are keyed by the kernel's source hash (`source:` and 64 digits: 71 characters, the
    tuning key of the real `CachingAutotuner`): made from a sweep, exported, read back and handed to the pinner
    whole. (A file reader that refused tuning keys over 64 characters once left every Inductor pin unapplied.)"""
    heuristics = pytest.importorskip(_triton.INDUCTOR_AUTOTUNER_MODULE)
    from test_sweep_autotune import inductor_tuner

    source_key = list(_triton.inductor_tuning_key(inductor_tuner(heuristics)))
    assert len(source_key[0]) == 71
    store, result = _swept_with_regret(candidates, source_key)
    try:
        made = decisions.from_result(store, result.id)
        assert not made.warnings
        (decision,) = [d for d in made.decisions if isinstance(d.key, decisions.AutotuneKey)]
        assert decision.key.tuning_key == tuple(source_key)
        decisions.export(store, tmp_path / "pins.json")
        again = decisions.read_file(tmp_path / "pins.json")
        assert not again.refused and [d.key for d, _ in again.decisions if d.choice.config] == [decision.key]
    finally:
        for kept in decisions.listing(store).decisions:
            decisions.remove(store, kept.id)


def test_a_decision_no_reader_would_take_is_a_warning_when_made_not_a_pin_that_never_applies(candidates):
    store, result = _swept_with_regret(candidates, ["x" * 300])  # a tuning key part beyond any reader's limit
    made = decisions.from_result(store, result.id)
    assert not [d for d in made.decisions if isinstance(d.key, decisions.AutotuneKey)]
    assert any("key.tuning_key[0]: 300 characters, at most 256" in w for w in made.warnings), made.warnings


@pytest.mark.parametrize("change, message", [
    ({"choice": {"config": None}}, "goes with a choice.config, and only with one"),
    ({"choice": {"config": {"BLOCK": [1, 2]}}}, "choice.config.BLOCK: a list where a number"),
    ({"choice": {"name": "cutlass_"}}, "chooses nothing else"),
    ({"key": {"tuning_key": [4096]}}, "key.tuning_key[0]: a number where a string expected"),
    ({"key": {"kernel": "os.system('x')"}}, "key.kernel"),
])
def test_a_pin_that_is_not_plain_data_is_refused_in_one_line(change, message, tmp_path):
    entry = {"key": {"kernel": "add_kernel", "tuning_key": ["4096"], "gpu": GPU},
             "choice": {"name": "plain", "ptxas_version": None, "options": [], "controls": None,
                        "config": {"BLOCK": 256, "num_warps": 2}},
             "evidence": {"kernel": "add_kernel", "ratio": 0.75, "low": 0.74, "high": 0.76, "outputs": "bitwise",
                          "date": "2026-11-25", "tritonhook_version": "0.1.0", "source_kind": "sweep",
                          "source_id": 1}}
    for part, fields in change.items():
        entry[part] = {**entry[part], **fields}
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"format": "tritonhook-decisions", "version": 1, "decisions": [entry]}))
    contents = decisions.read_file(path)
    assert contents.decisions == [] and len(contents.refused) == 1
    assert message in contents.refused[0] and "\n" not in contents.refused[0], contents.refused


def test_a_decision_recorded_without_a_tuning_key_makes_no_pin_and_says_why(candidates):
    """A recording made before Inductor's decisions carried their source hash has no tuning key: no pin, one line."""
    store, result = _swept_with_regret(candidates, [])
    made = decisions.from_result(store, result.id)
    assert not any(isinstance(d.key, decisions.AutotuneKey) for d in made.decisions)
    assert any("no tuning key" in line for line in made.warnings)
    for decision in made.decisions:
        decisions.remove(store, decision.id)


def test_inductors_autotuner_keeps_the_pinned_launcher_without_benchmarking():
    """Inductor's real `CachingAutotuner` (its configs spill, so its own benchmark runs on a CPU and keeps the first):
    pinned by the kernel's name and source hash, it keeps BLOCK 1024's launcher and benchmarks nothing; uninstalled,
    it is Triton's and torch's own again."""
    heuristics = pytest.importorskip(_triton.INDUCTOR_AUTOTUNER_MODULE)
    from test_sweep_autotune import inductor_tuner

    original = heuristics.CachingAutotuner.__dict__["autotune_to_one_config"]
    timings = inductor_tuner(heuristics).benchmark_all_configs()  # what it would tune to: all inf, so the first
    assert min(timings, key=timings.get).config.kwargs["BLOCK"] == 256
    tuner = inductor_tuner(heuristics)
    key = ("triton_poi_fused_add_0", _triton.inductor_tuning_key(tuner))
    pinner = _triton.AutotunePinner({key: {"BLOCK": 1024, "num_warps": 8}})
    pinner.install()
    try:
        tuner.benchmark_failure_reasons = {}
        tuner.autotune_to_one_config()
        assert [launcher.config.kwargs["BLOCK"] for launcher in tuner.launchers] == [1024]
        assert tuner.benchmark_failure_reasons == {}  # nothing was benchmarked
    finally:
        pinner.uninstall()
    assert heuristics.CachingAutotuner.__dict__["autotune_to_one_config"] is original and pinner.applied == {key: 1}


def test_a_warm_inductor_cache_does_not_keep_a_pinned_kernel_from_its_pin(tmp_path, monkeypatch):
    """Inductor's real autotune cache, holding a best config for the kernel (as a workload run before left it): it
    keeps that config alone, never tunes, and the pin could not apply (MaxViT's confirmation on the H200: "pinned
    ran: False"). A pinner with an Inductor pin turns Inductor's caches off while installed (what Inductor puts in
    a kernel's `inductor_meta`), so every config stays for the pin; uninstalled, the switch is as it was. A pinner
    with `triton.autotune` pins alone leaves it."""
    heuristics = pytest.importorskip(_triton.INDUCTOR_AUTOTUNER_MODULE)
    import torch._inductor.config as inductor_config
    from test_sweep_autotune import CONFIGS, inductor_tuner

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    source = tmp_path / "inductor" / "ab" / "cabtriton.py"  # Inductor's kernel file: the cache key's base
    source.parent.mkdir(parents=True)
    source.write_text("# a kernel\n")
    meta = lambda: {"kernel_name": "triton_poi_fused_add_0", "autotune_local_cache": True,
                    "force_disable_caches": inductor_config.force_disable_caches}
    heuristics.AutotuneCache.create(meta(), str(source), heuristics.hash_configs(CONFIGS)).save(CONFIGS[0], 10**6)
    cached = lambda: heuristics.check_autotune_cache(CONFIGS, str(source), meta())[0]
    before = inductor_config.force_disable_caches
    assert cached() == [CONFIGS[0]]  # the warm cache: one config, nothing to pin
    triton_only = _triton.AutotunePinner({("add_kernel", ("4096", "torch.float32")): {"BLOCK": 1024}})
    triton_only.install()
    try:
        assert cached() == [CONFIGS[0]] and inductor_config.force_disable_caches == before
    finally:
        with pytest.warns(RuntimeWarning, match="not applied"):  # nothing was tuned here
            triton_only.uninstall()
    key = ("triton_poi_fused_add_0", _triton.inductor_tuning_key(inductor_tuner(heuristics)))
    pinner = _triton.AutotunePinner({key: {"BLOCK": 1024, "num_warps": 8}})
    pinner.install()
    try:
        assert inductor_config.force_disable_caches and cached() == CONFIGS
    finally:
        with pytest.warns(RuntimeWarning, match="not applied"):
            pinner.uninstall()
    assert inductor_config.force_disable_caches == before and cached() == [CONFIGS[0]]


def _run_of(kernel_ms: dict[int, float], block_at_4096: int, *, picked: int | None) -> rec.Recording:
    """A recording of one workload run: the add kernel at n=4096 (config BLOCK `block_at_4096`, `kernel_ms[4096]`
    per launch) and at n=8192 (BLOCK 512), 100 launches each; `picked`: the config the run's autotuner chose at
    4096 (None: it did not tune there, the config was pinned)."""
    signatures = []
    for index, (n, block) in enumerate(((4096, block_at_4096), (8192, 512))):
        args = [{"kind": "scalar", "name": "n", "value": n}, {"kind": "constexpr", "name": "BLOCK", "value": block}]
        signatures.append(rec.Signature(id=index, kernel="add_kernel", triton_hash=f"h{block}", capture_id=None,
                                        arch="sm_90a", grid=[n // block, 1, 1], args=args, arg_names=["n", "BLOCK"],
                                        signature={"n": "i32"}, constexprs={"BLOCK": block}, launches=100,
                                        times_ms=[kernel_ms[n]] * 3))
    autotune = [] if picked is None else [{"group": 0, "kernel": "add_kernel", "key": ["4096", "torch.float32"],
                                           "chosen": {"BLOCK": picked, "num_warps": 4}, "timings": [],
                                           "bench_s": 0.1, "hooks": {}, "key_names": ["n"]}]
    return rec.Recording(signatures, arch="sm_90a", device=GPU, triton_version="3.6.0", torch_version=None, pid=1,
                         autotune=autotune)


def _block_256_pin(num_warps: int):
    """The decision pinning the add kernel at n=4096 to BLOCK 256, as a sweep's regret (0.75 of BLOCK 512) makes it."""
    return decisions.Decision(decisions.AutotuneKey("add_kernel", ("4096", "torch.float32"), GPU),
                              decisions.Choice(config=(("BLOCK", 256), ("num_warps", num_warps))),
                              decisions.Evidence("add_kernel", 0.75, 0.74, 0.76, "bitwise", "2026-11-25", "0.1.0",
                                                 "sweep", 1))


def test_confirmation_compares_the_kernel_at_its_tuning_key_between_the_arms_and_counts_the_autotuners_picks():
    """What `decisions confirm` reads from its recordings: the pinned kernel's time per launch at the pinned tuning
    key only (the 8192 signature is another key), whether the pinned runs launched the pinned config, and the
    configs the unpinned runs' autotuner picked (two of three cold runs picked BLOCK 512, one BLOCK 256)."""
    from tritonhook.decisions.confirm import _PinnedKernel, _measure_pin

    pin = _block_256_pin(num_warps=2)
    runs = {"unpinned": [_run_of({4096: 0.020 + i * 1e-4, 8192: 0.05}, 512, picked=512) for i in range(2)]
            + [_run_of({4096: 0.0151, 8192: 0.05}, 256, picked=256)],
            "pinned": [_run_of({4096: 0.015 + i * 1e-4, 8192: 0.07}, 256, picked=None) for i in range(3)]}
    found = _measure_pin(_PinnedKernel(pin, ["n"]), runs, 0.01, 0, "BLOCK=512, num_warps=4")
    assert found.ms["unpinned"] == pytest.approx([0.020, 0.0201, 0.0151])
    assert found.ms["pinned"] == pytest.approx([0.015, 0.0151, 0.0152])
    assert found.pinned_ran and found.picks == ["BLOCK=512, num_warps=4"] * 2 + ["BLOCK=256, num_warps=4"]
    assert found.ratio < 1 and found.config == "BLOCK=256, num_warps=2" and found.picks_text() == \
        "2 config(s) in 3 runs (the sweep's 2, the pinned 0)"
    untuned = [_run_of({4096: 0.02, 8192: 0.05}, 512, picked=None)] * 2
    cached = _measure_pin(_PinnedKernel(pin, ["n"]), {**runs, "unpinned": untuned}, 0.01)
    assert cached.picks_text() == "not tuned in any of the 2 unpinned runs (a cache gave its pick)"
    runs["pinned"][0].signatures[0].constexprs["BLOCK"] = 512  # a pinned run that did not launch the pin
    assert not _measure_pin(_PinnedKernel(pin, ["n"]), runs, 0.01).confirmed


SWEPT, PINNED, OTHER = "BLOCK=512, num_warps=4", "BLOCK=256, num_warps=4", "BLOCK=1024, num_warps=4"


def test_a_pick_benchmarked_again_at_another_shape_counts_once_among_the_autotuners_picks():
    """A run whose recording benchmarked its pick again at new input shapes (a decision with `made_at`: the same
    kernel, tuning key and pick) still picked once: the unpinned arm's picks count runs, not decisions."""
    from tritonhook.decisions.confirm import _PinnedKernel, _measure_pin

    unpinned = [_run_of({4096: 0.020, 8192: 0.05}, 512, picked=512) for _ in range(2)]
    for run in unpinned:
        run.autotune.append({**run.autotune[0], "group": 1, "made_at": 0, "cached": []})
    runs = {"unpinned": unpinned, "pinned": [_run_of({4096: 0.015, 8192: 0.07}, 256, picked=None) for _ in range(2)]}
    found = _measure_pin(_PinnedKernel(_block_256_pin(num_warps=2), ["n"]), runs, 0.01, 0, SWEPT)
    assert found.picks == [SWEPT] * 2 and found.picks_text() == "1 config(s) in 2 runs (the sweep's 2, the pinned 0)"


@pytest.mark.parametrize("unpinned_picks, pinned_ms, standing, confirmed", [
    ([512, 512, 512], 0.015, "confirmed", True),
    ([512, 512, 512], 0.020, "replay bias", False),
    ([256, 256, 256], 0.020, "picked itself", None),
    ([512, 1024, 512], 0.020, "other picks", None),
    ([512, 1024, 512], 0.025, "slower pinned", False),
    ([None, None, None], 0.020, "picks unseen", None),
    ([None, None, None], 0.025, "slower pinned", False),
], ids=["faster", "refuted", "both arms one config", "other configs", "slower than other configs", "a cache's pick",
        "slower than a cache's pick"])
def test_a_confirmation_refutes_a_regret_only_where_the_unpinned_runs_ran_the_sweeps_config(
        unpinned_picks, pinned_ms, standing, confirmed):
    """A regret is measured against the config the sweep's run picked, but the unpinned arm tunes again each run.
    Found on an H100 with GemLite: every unpinned run picked the pinned config itself, both arms ran one config, and
    "no difference" was reported as a replay bias. Only where every unpinned run ran the sweep's config does a
    pinned config that is not faster refute the replay; otherwise the regret is not judged, and says why."""
    from tritonhook.decisions.confirm import _PinnedKernel, _measure_pin
    from tritonhook.decisions.confirmation import STANDINGS

    pin = _block_256_pin(num_warps=4)
    runs = {"unpinned": [_run_of({4096: 0.020 + i * 1e-5, 8192: 0.05}, picked or 512, picked=picked)
                         for i, picked in enumerate(unpinned_picks)],
            "pinned": [_run_of({4096: pinned_ms + i * 1e-5, 8192: 0.05}, 256, picked=None) for i in range(3)]}
    found = _measure_pin(_PinnedKernel(pin, ["n"]), runs, 0.01, 0, SWEPT)
    assert (found.standing, found.confirmed) == (standing, confirmed)
    assert (found.verdict == "faster") == (standing == "confirmed") and STANDINGS[standing]


@pytest.mark.parametrize("unpinned_block, standing", [(512, "replay bias"), (256, "picks unseen")],
                         ids=["launched the sweep's config", "launched the pinned config"])
def test_where_the_unpinned_runs_tuned_nothing_their_launches_say_which_config_they_ran(unpinned_block, standing):
    """Inductor's warm caches (or Triton's autotune cache) give the unpinned runs their config without tuning, so
    no pick is recorded; their launches' constexprs still tell the sweep's config (BLOCK 512) from the pinned one
    (BLOCK 256): a pinned config not faster than the sweep's, launched, is a replay bias."""
    from tritonhook.decisions.confirm import _PinnedKernel, _measure_pin

    pin = _block_256_pin(num_warps=4)
    runs = {"unpinned": [_run_of({4096: 0.020 + i * 1e-5, 8192: 0.05}, unpinned_block, picked=None)
                         for i in range(3)],
            "pinned": [_run_of({4096: 0.020 + i * 1e-5, 8192: 0.05}, 256, picked=None) for i in range(3)]}
    found = _measure_pin(_PinnedKernel(pin, ["n"]), runs, 0.01, 0, SWEPT, swept_config={"BLOCK": 512, "num_warps": 4})
    assert found.picks == [] and found.standing == standing


@pytest.mark.parametrize("baseline_block, pinned_ms, standing", [
    (512, 0.015, "confirmed"), (512, 0.020, "replay bias"), (1024, 0.020, "not pinned")],
    ids=["faster", "refuted", "the baseline did not run the sweep's config"])
def test_against_the_sweeps_config_pinned_a_regret_is_judged_whatever_the_autotuner_would_pick(
        baseline_block, pinned_ms, standing):
    """`--against sweep`: the unpinned arm runs the sweep's config pinned (no tuning, so no picks), so the replay's
    figure is measured as it is; refuted wherever the pinned config is not faster, provided every baseline run
    launched the sweep's config."""
    from tritonhook.decisions.confirm import _PinnedKernel, _measure_pin

    pin = _block_256_pin(num_warps=4)
    runs = {"unpinned": [_run_of({4096: 0.020 + i * 1e-5, 8192: 0.05}, baseline_block, picked=None)
                         for i in range(3)],
            "pinned": [_run_of({4096: pinned_ms + i * 1e-5, 8192: 0.05}, 256, picked=None) for i in range(3)]}
    found = _measure_pin(_PinnedKernel(pin, ["n"]), runs, 0.01, 0, SWEPT, swept_config={"BLOCK": 512, "num_warps": 4},
                         against_sweep=True)
    assert found.against == "sweep" and found.standing == standing
    assert found.baseline_ran is (baseline_block == 512) and found.picks_text() == "not tuned: the sweep's config pinned"


def test_a_pinned_kernel_is_found_in_a_run_by_its_source_beside_another_kernel_of_its_name():
    """Found on the H200 (PyG's GraphSAGE and GAT under torch.compile): two graphs each had a
    `triton_poi_fused_..._6`, of other code, and the confirmation read both as the pinned kernel: their times
    averaged, and "pinned ran: False" from the other one's config. The sweep's recording knows the pinned kernel's
    source (`Signature.source`); only launches of that source count."""
    from tritonhook.decisions.confirm import _PinnedKernel, _measure_pin

    def run(ms: float, block: int) -> rec.Recording:
        recording = _run_of({4096: ms, 8192: 0.05}, block, picked=None)
        for signature in recording.signatures:
            signature.source = "pinned-source"
        recording.signatures.append(dataclasses.replace(recording.signatures[0], id=2, triton_hash="other",
                                                        constexprs={"BLOCK": 1024}, times_ms=[0.4] * 3,
                                                        source="another-graphs-source"))
        return recording

    pin = _block_256_pin(num_warps=4)
    runs = {"unpinned": [run(0.020 + i * 1e-5, 512) for i in range(3)],
            "pinned": [run(0.015 + i * 1e-5, 256) for i in range(3)]}
    swept = dict(swept_config={"BLOCK": 512, "num_warps": 4}, against_sweep=True)
    found = _measure_pin(_PinnedKernel(pin, ["n"], frozenset({"pinned-source"})), runs, 0.01, 0, SWEPT, **swept)
    assert found.ms["pinned"] == pytest.approx([0.015, 0.01501, 0.01502]) and found.pinned_ran and found.baseline_ran
    assert found.standing == "confirmed"
    by_name = _measure_pin(_PinnedKernel(pin, ["n"]), runs, 0.01, 0, SWEPT, **swept)
    assert not by_name.pinned_ran and by_name.standing == "not pinned"


def _bucketed_run(ms_at: dict[int, float], block: int) -> rec.Recording:
    """A run of FBGEMM's fp8 GEMM as it keys its autotuning (H200, `benchmarks/workloads/fbgemm_fp8_rowwise.py`):
    batches M = 512 and 768 both at tuning key m_key 256, so one config runs at both; `ms_at`: per M, the kernel's
    time per launch; `block`: the config both launches ran."""
    signatures = []
    for index, m in enumerate(sorted(ms_at)):
        args = [{"kind": "tensor", "name": "a", "shape": [m, 4096], "dtype": "float8_e4m3fn"},
                {"kind": "scalar", "name": "m_key", "value": 256},
                {"kind": "constexpr", "name": "BLOCK", "value": block}]
        signatures.append(rec.Signature(id=index, kernel="add_kernel", triton_hash=f"h{block}-{m}", capture_id=None,
                                        arch="sm_90a", grid=[m, 1, 1], args=args, arg_names=["a", "m_key", "BLOCK"],
                                        signature={"m_key": "i32"}, constexprs={"BLOCK": block}, launches=100,
                                        times_ms=[ms_at[m]] * 3))
    return rec.Recording(signatures, arch="sm_90a", device=GPU, triton_version="3.6.0", torch_version=None, pid=1)


def test_a_pin_whose_tuning_key_runs_at_several_shapes_is_judged_at_its_rows_shape_and_shown_at_each():
    """Found on the H200 (FBGEMM's fp8 GEMM): the replay's regret at M = 768 (0.836: the workload ran the pick
    made at M = 512, which shares its tuning key) read 1.047 [1.020, 1.074] over the key's launches, "a replay
    bias", because the pin also ran at M = 512, where it is slower. The regret is judged at its row's shape; the
    other shapes and the key's launches together are shown beside it."""
    from tritonhook.decisions.confirm import _PinnedKernel, _measure_pin
    from tritonhook.decisions.confirmation import _in_workload

    pin = decisions.Decision(decisions.AutotuneKey("add_kernel", ("256",), GPU),
                             decisions.Choice(config=(("BLOCK", 256), ("num_warps", 4))),
                             decisions.Evidence("add_kernel", 0.836, 0.835, 0.840, "bitwise", "2026-11-27", "0.1.0",
                                                "sweep", 1))
    runs = {"unpinned": [_bucketed_run({512: 0.0600 + i * 1e-5, 768: 0.090 + i * 1e-5}, 512) for i in range(3)],
            "pinned": [_bucketed_run({512: 0.0800 + i * 1e-5, 768: 0.075 + i * 1e-5}, 256) for i in range(3)]}
    found = _measure_pin(_PinnedKernel(pin, ["m_key"]), runs, 0.01, 0, SWEPT,
                         swept_config={"BLOCK": 512, "num_warps": 4}, against_sweep=True,
                         row_shapes=((768, 4096),))
    assert found.verdict == "slower"  # over the key's launches: what the pin does to the workload at that key
    assert [(s["shapes"], s["row"], s["verdict"]) for s in found.shapes] == [
        ("512x4096", False, "slower"), ("768x4096", True, "faster")]
    assert found.at_row["ratio"] == pytest.approx(0.075 / 0.090, rel=1e-3)
    assert found.standing == "confirmed"
    assert _in_workload(found).startswith("0.833 [") and "at 768x4096 (its row); " in _in_workload(found)
    again = type(found)(**{k: v for k, v in dataclasses.asdict(found).items()})
    assert again.standing == "confirmed" and again.shapes == found.shapes
    one_shape = {arm: [_bucketed_run({768: r.signatures[1].times_ms[0]}, r.signatures[1].constexprs["BLOCK"])
                       for r in recordings] for arm, recordings in runs.items()}
    alone = _measure_pin(_PinnedKernel(pin, ["m_key"]), one_shape, 0.01, 0, SWEPT,
                         swept_config={"BLOCK": 512, "num_warps": 4}, against_sweep=True, row_shapes=((768, 4096),))
    assert alone.shapes == [] and alone.at_row["ratio"] == alone.ratio


BUCKET_CONFIGS = {block: {"BLOCK": block, "num_warps": 4} for block in (256, 512)}


def _bucket_sweep(at_512: dict, shares: tuple[float, float] = (0.5, 0.5)):
    """(recording, [row at M = 768, row at M = 512]): two autotuned rows of one tuning key (m_key 256), as FBGEMM's
    fp8 GEMM made them on the H200. The workload ran BLOCK 512 at both (picked at 512); at 768 BLOCK 256 is the
    replay's regret (0.836). `at_512`: what was timed of BLOCK 256 at 512, {"benchmark": [median, p20, p80]} (the
    recording's autotuner) and/or {"replay": (ratio, verdict)} (a replayed candidate there). `shares`: the two rows'
    shares of the workload's GPU time (768, 512)."""
    members = [(0, 512), (0, 256), (1, 512), (1, 256)]
    signatures = [rec.Signature(id=i, kernel="add_kernel", triton_hash=f"h{i}", capture_id=None, arch="sm_90a",
                                grid=[1, 1, 1], args=[], arg_names=[], signature={}, constexprs={}, launches=0,
                                times_ms=[], autotune={"group": group, "config": BUCKET_CONFIGS[block]})
                  for i, (group, block) in enumerate(members)]
    timed_512 = [[BUCKET_CONFIGS[512], [1.0, 0.99, 1.01]]] + (
        [[BUCKET_CONFIGS[256], at_512["benchmark"]]] if "benchmark" in at_512 else [])
    timed_768 = [[BUCKET_CONFIGS[512], [1.0, 0.99, 1.01]], [BUCKET_CONFIGS[256], [0.8, 0.79, 0.81]]]
    recording = rec.Recording(signatures, arch="sm_90a", device=GPU, triton_version="3.6.0", torch_version=None,
                              pid=1, autotune=[
                                  {"group": group, "kernel": "add_kernel", "key": ["256"], "key_names": ["m_key"],
                                   "chosen": BUCKET_CONFIGS[512], "timings": timings, "bench_s": 0.1, "hooks": {},
                                   "made_at": made_at}
                                  for group, timings, made_at in ((0, timed_512, None), (1, timed_768, 0))])
    regret = {"config": "BLOCK=256, num_warps=4", "signature": 3, "workload_config": "BLOCK=512, num_warps=4",
              "ratio": 0.836, "low": 0.835, "high": 0.840, "verdict": "faster", "why": [], "confirmed": None}

    def row(signature, label, group, replayed, checked, regret, share):
        return SweepRow(signature, "add_kernel", label, share, 100, 0.09, "snapshot", "ok", autotune={
            "group": group, "configs": replayed, "replayed": replayed, "against_workload": checked,
            "regret": regret, "winner_signatures": {}, "workload": "BLOCK=512, num_warps=4"})

    replay_512 = {"1": {"ratio": at_512["replay"][0], "verdict": at_512["replay"][1], "outputs": "bitwise"}} \
        if "replay" in at_512 else {}
    return recording, [row(3, "add_kernel [768x4096]", 1, [2, 3], {"3": {"outputs": "bitwise", "ratio": 0.836,
                                                                          "low": 0.833, "high": 0.840,
                                                                          "verdict": "faster"}}, regret,
                           shares[0]),
                       row(1, "add_kernel [512x4096]", 0, [0, 1] if replay_512 else [0], replay_512,
                           {**regret, "ratio": 1.0, "verdict": "none", "signature": 0}, shares[1])]


@pytest.mark.parametrize("at_512,shares,pinned,said", [
    ({"benchmark": [1.4, 1.39, 1.41]}, (0.5, 0.5), False,
     "1.400x at add_kernel [512x4096] (the autotuner's benchmark there), which shares its tuning key (a pin holds "
     "at every input shape of its key); over the key's timed rows by their GPU time 1.118x, so it is not pinned"),
    ({"replay": (1.3, "slower"), "benchmark": [0.9, 0.89, 0.91]}, (0.5, 0.5), False,
     "1.300x at add_kernel [512x4096] (the replay)"),
    ({"benchmark": [1.4, 1.39, 1.41]}, (0.8, 0.2), True, "by their GPU time 0.949x, so it is pinned"),
    ({"benchmark": [1.0, 0.98, 1.02]}, (0.5, 0.5), True, None),
    ({}, (0.5, 0.5), True, "also holds at add_kernel [512x4096] (its tuning key's other input shapes), where nothing "
                           "timed it"),
])
def test_a_config_is_pinned_for_a_tuning_key_only_where_it_pays_over_the_keys_shapes(
        at_512, shares, pinned, said, tmp_path):
    """A pin holds for its tuning key, so at every input shape the key buckets. FBGEMM's fp8 GEMM on the H200:
    BLOCK 256 at M = 768 was the replay's regret (0.836), but its autotuner had timed it 1.42x its pick at M = 512,
    the same key; pinned, the key's launches ran 1.047x. Where another shape timed it slower (the replay's figure
    there first, else the autotuner's benchmark), it is pinned only where the key's timed rows, weighed by their
    share of the GPU time, still run it faster; one nothing timed there is pinned, with a warning."""
    from tritonhook.decisions.keep import _Maker
    from tritonhook.store import Store

    recording, rows = _bucket_sweep(at_512, shares)
    made = _Maker(Store(tmp_path / "store"), recording, "sweep", 1)
    made.pin_all_configs(rows)
    assert bool(made.decisions) is pinned
    if pinned:
        (key,) = made.decisions
        assert dict(made.decisions[key].choice.config) == BUCKET_CONFIGS[256] and made.rows[key] is rows[0]
    assert (said is None) == (not made.warnings) and (said is None or said in made.warnings[0])


@pytest.mark.parametrize("at_512,said", [
    ({"benchmark": [1.4, 1.39, 1.41]}, "add_kernel [512x4096]: 1.400x the workload's config there (the autotuner's "
                                       "benchmark there)"),
    ({}, "add_kernel [512x4096]: not timed there"),
])
def test_a_regrets_row_says_where_else_its_tuning_key_runs_and_how_its_config_ran_there(at_512, said):
    """The sweep's own line for a regret at a key that buckets shapes (FBGEMM's batch 768 on the H200) names the
    key's other rows and how the regret's config ran at each, since a pin of it holds there too."""
    from tritonhook.sweep.autotune import regrets_at_shared_keys
    from tritonhook.sweep.result import SweepResult

    recording, rows = _bucket_sweep(at_512)
    regrets_at_shared_keys(rows, recording)
    assert [mate["row"] for mate in rows[0].autotune["regret"]["shared_key"]] == ["add_kernel [512x4096]"]
    assert "shared_key" not in rows[1].autotune["regret"]  # its regret is none
    text = SweepResult._regret_text(rows[0].autotune)
    assert f"; its tuning key also runs at {said}, where a pin of it holds too" in text


def test_runs_whose_interval_holds_the_replays_ratio_and_no_difference_neither_confirm_nor_refute_it():
    """Found on the H200 (the transformer's `_to_copy_9`, `--against sweep --runs 2`): the replay's 0.952 inside
    the workload read 0.945 [0.824, 1.083], "no difference", and was reported a replay bias. An interval that holds
    the replay's ratio too decides nothing; one wholly above it refutes it."""
    from tritonhook.decisions.confirm import _PinnedKernel, _measure_pin

    pin = _block_256_pin(num_warps=4)  # the replay's ratio: 0.75
    noisy = [0.020, 0.012, 0.024]
    runs = {"unpinned": [_run_of({4096: ms, 8192: 0.05}, 512, picked=None) for ms in noisy],
            "pinned": [_run_of({4096: ms * 0.8, 8192: 0.05}, 256, picked=None) for ms in reversed(noisy)]}
    found = _measure_pin(_PinnedKernel(pin, ["n"]), runs, 0.01, 0, SWEPT, swept_config={"BLOCK": 512, "num_warps": 4},
                         against_sweep=True)
    assert found.verdict == "no difference" and found.low < 0.75 < 1.0 < found.high
    assert (found.standing, found.confirmed) == ("undecided", None)


def test_a_saved_sweep_reads_its_regret_as_the_newest_confirmation_of_it_says(regret_sweep):
    """`decisions from` and the report read a saved sweep with its confirmations: a regret the workload refuted is
    a replay bias in the row's text and pins nothing; one no run could judge stays the replay's figure."""
    from tritonhook.decisions.confirmation import RESULT_KIND, Confirmation, PinConfirmation, with_confirmations

    store, result = regret_sweep
    (row,) = [r for r in result.rows if (r.autotune or {}).get("regret")]
    regret = row.autotune["regret"]

    def confirmation_of(picks: list[str]) -> int:
        pin = PinConfirmation("add_kernel", ["4096"], regret["config"], {"ratio": 0.75, "low": 0.74, "high": 0.76},
                              {"unpinned": [0.02] * 2, "pinned": [0.02] * 2}, 1.0, 0.99, 1.01, "no difference",
                              True, picks, regret["workload_config"], row.autotune["group"])
        found = Confirmation(result.id, ["python", "w.py"], 2, [pin], {"unpinned": [1, 1], "pinned": [1, 1]}, {})
        return store.add_result(RESULT_KIND, found.to_json())

    def read_regret():
        read = with_confirmations(store, store.result(result.id))
        (row,) = [r for r in read.rows if (r.autotune or {}).get("regret")]
        return read, row

    confirmation_of([regret["config"]] * 2)  # the older one: the unpinned runs picked the pinned config
    assert read_regret()[1].autotune["regret"]["confirmed"] is None
    refuted = confirmation_of([regret["workload_config"]] * 2)
    read, row = read_regret()
    assert row.autotune["regret"]["confirmed"] is False and row.autotune["regret"]["confirmation"]["id"] == refuted
    assert "a replay bias" in read._regret_text(row.autotune)
    made = decisions.from_result(store, result.id)
    assert not [d for d in made.decisions if isinstance(d.key, decisions.AutotuneKey)]


def test_confirm_says_in_one_line_when_a_sweep_has_nothing_to_confirm(candidates, tmp_path):
    """`decisions confirm` of a sweep whose autotuned rows found no regret, and of a store with no sweep at all:
    one line each, before any workload runs."""
    import subprocess

    from tritonhook.store import Store

    store, result = _swept_with_regret(candidates, candidates[1].autotune[0]["key"],
                                       {256: (0.030, 0.030), 512: (0.020, 0.020), 1024: (0.025, 0.026)})
    empty = tmp_path / "empty"
    Store(empty).close()
    for where, sweep, message in ((store.path, str(result.id), f"sweep result {result.id}: no autotune regret"),
                                  (empty, None, "no sweep result to confirm")):
        confirm = subprocess.run([sys.executable, "-m", "tritonhook", "decisions", "confirm", "--store", str(where),
                                  *(["--sweep", sweep] if sweep else []), "--", sys.executable, "-c", "pass"],
                                 capture_output=True, text=True, timeout=120)
        assert confirm.returncode == 2 and message in confirm.stderr, confirm.stderr
        assert confirm.stderr.count("\n") == 1 and "Traceback" not in confirm.stderr


def test_a_pin_no_autotune_took_is_named_when_the_pinner_is_uninstalled():
    """A pin whose kernel never tuned at its key in the run (here Inductor's kernel tuned under another source
    hash) is reported once the pinner is uninstalled, with what was tuned under that kernel name instead; a pin that
    applied is not."""
    heuristics = pytest.importorskip(_triton.INDUCTOR_AUTOTUNER_MODULE)
    from test_sweep_autotune import inductor_tuner

    tuner = inductor_tuner(heuristics)
    key = _triton.inductor_tuning_key(tuner)
    stale = ("triton_poi_fused_add_0", ("source:0000",))
    pinner = _triton.AutotunePinner({stale: {"BLOCK": 1024}, ("triton_poi_fused_add_0", key): {"BLOCK": 512}})
    pinner.install()
    try:
        tuner.autotune_to_one_config()
        assert [launcher.config.kwargs["BLOCK"] for launcher in tuner.launchers] == [512]
    finally:
        with pytest.warns(RuntimeWarning) as caught:
            pinner.uninstall()
    (line,) = [str(w.message) for w in caught]
    assert "source:0000" in line and "not applied" in line and f"tuned here: triton_poi_fused_add_0 at {key[0]}" in line


INDUCTOR_KERNEL = """
@triton.jit
def {name}(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) {op} tl.load(y_ptr + offsets, mask=mask), mask=mask)
"""


def _inductor_kernels(folder: Path, kernels: dict[str, str]):
    """A module of Triton kernels (name -> the operator of its body) as Inductor writes them, one file of code, each
    kernel its own JIT function: kernels of the same operator differ in their names alone, as one compile's
    `triton_poi_fused_add_36` and the next compile's `triton_poi_fused_add_35`."""
    source = "import triton\nimport triton.language as tl\n" + "".join(
        INDUCTOR_KERNEL.format(name=name, op=op) for name, op in kernels.items())
    path = folder / "inductor_kernels.py"
    path.write_text(source)
    return load_module(path)


def test_an_inductor_kernel_renumbered_by_another_compile_takes_the_pin_of_its_code(tmp_path):
    """A pin made in one run (a gate's baseline) names an Inductor kernel by the number that compile gave it; the
    next compile numbers the same code otherwise. The kernel takes the pin of its code (its key: the source without
    its name), nothing benchmarked, and the pin is not reported as not applied; a kernel of other code is not
    pinned by it. (On an H200 a BERT gate left 30 coordinate-descent pins unapplied, 14% of its GPU time unchecked.)"""
    heuristics = pytest.importorskip(_triton.INDUCTOR_AUTOTUNER_MODULE)
    from test_sweep_autotune import inductor_tuner

    kernels = _inductor_kernels(tmp_path, {"triton_poi_fused_add_35": "+", "triton_poi_fused_add_36": "+",
                                           "triton_poi_fused_mul_36": "*"})
    renumbered = inductor_tuner(heuristics, kernel=kernels.triton_poi_fused_add_35, name="triton_poi_fused_add_35")
    baseline_key = _triton.inductor_tuning_key(inductor_tuner(heuristics, kernel=kernels.triton_poi_fused_add_36))
    other_code = inductor_tuner(heuristics, kernel=kernels.triton_poi_fused_mul_36, name="triton_poi_fused_mul_36")
    assert _triton.inductor_tuning_key(other_code) != baseline_key
    pinner = _triton.AutotunePinner({("triton_poi_fused_add_36", baseline_key): {"BLOCK": 1024}})
    pinner.install()
    try:
        renumbered.autotune_to_one_config()
        other_code.autotune_to_one_config()
    finally:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pinner.uninstall()
    assert [launcher.config.kwargs["BLOCK"] for launcher in renumbered.launchers] == [1024]
    assert pinner.applied == {("triton_poi_fused_add_35", baseline_key): 1}
    assert len(other_code.launchers) == 1 and not [w for w in caught if "not applied" in str(w.message)]


def test_code_pinned_at_two_configs_under_two_names_pins_neither_on_a_third_and_both_are_reported(tmp_path):
    """Where pins of one code (its shapes not fixed by it) hold two configs, a kernel of that code under a third
    name cannot tell which is its own: it is autotuned as usual, and both pins are named as not applied, with the
    kernel tuned at their key instead."""
    heuristics = pytest.importorskip(_triton.INDUCTOR_AUTOTUNER_MODULE)
    from test_sweep_autotune import inductor_tuner

    kernels = _inductor_kernels(tmp_path, {name: "+" for name in ("triton_poi_fused_add_35", "triton_poi_fused_add_36",
                                                                   "triton_poi_fused_add_37")})
    third = inductor_tuner(heuristics, kernel=kernels.triton_poi_fused_add_35, name="triton_poi_fused_add_35")
    key = _triton.inductor_tuning_key(third)
    pinner = _triton.AutotunePinner({("triton_poi_fused_add_36", key): {"BLOCK": 1024},
                                     ("triton_poi_fused_add_37", key): {"BLOCK": 512}})
    pinner.install()
    try:
        third.autotune_to_one_config()
    finally:
        with pytest.warns(RuntimeWarning) as caught:
            pinner.uninstall()
    assert pinner.applied == {} and len(third.launchers) == 1
    lines = [str(w.message) for w in caught if "not applied" in str(w.message)]
    assert sorted(line.split(" for ")[1].split(" ")[0] for line in lines) == ["triton_poi_fused_add_36",
                                                                              "triton_poi_fused_add_37"]
    assert all(f"tuned here: triton_poi_fused_add_35 at {key[0]}" in line for line in lines)


def test_the_pinner_and_a_recordings_tracer_both_take_inductors_autotuner_imported_after_them():
    """A process under `record --apply` installs the pinner (`enable`) and then the recording's tracer before torch is
    imported, both waiting for Inductor's runtime autotuner: once it is imported both wrap it, and the pinned kernel
    keeps the pinned launcher with nothing benchmarked, the pin the recording's decision. (While each wait was a finder of its own, the import found
    the tracer's alone: on the H200 a pinned recording benchmarked the kernel and ran the autotuner's pick, silently.)
    A pin no autotune took is named at exit, though the process never uninstalls the pinner."""
    pytest.importorskip(_triton.INDUCTOR_AUTOTUNER_MODULE)
    program = f"""
import importlib, sys, types
sys.path.insert(0, {str(Path(__file__).parent)!r})
from tritonhook import _triton
from tritonhook.samples import add_kernel
module = {_triton.INDUCTOR_AUTOTUNER_MODULE!r}
assert module not in sys.modules
key = _triton.inductor_tuning_key(types.SimpleNamespace(fn=add_kernel))  # what Inductor's tuner of add_kernel gives
pinner = _triton.AutotunePinner({{("triton_poi_fused_add_0", key): {{"BLOCK": 1024}},
                                  ("triton_poi_fused_add_0", ("source:0000",)): {{"BLOCK": 512}}}})
pinner.install()
decided = []
_triton.AutotuneTracer(decided.append).install()
heuristics = importlib.import_module(module)
from test_sweep_autotune import inductor_tuner
tuner = inductor_tuner(heuristics)
tuner.autotune_to_one_config()
print([launcher.config.kwargs["BLOCK"] for launcher in tuner.launchers], [d.tuner for d in decided])
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(Path(tritonhook.__file__).parent.parent)})
    # nothing benchmarked: the recording's one decision is the pin that ran
    assert done.returncode == 0 and done.stdout.strip() == f"[1024] ['{_triton.PINNED}']", (done.stdout,
                                                                                           done.stderr[-3000:])
    (line,) = [line for line in done.stderr.splitlines() if "not applied" in line]
    assert "source:0000" in line and "BLOCK" in line
