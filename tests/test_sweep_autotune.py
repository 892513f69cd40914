"""Autotuned kernels in `tritonhook sweep`, on a CPU: the autotune tracer on Triton's real `Autotuner` (its public
`do_bench` argument stands in for the GPU timer, so no kernel runs) and on Inductor's real `CachingAutotuner`
(configs that spill, which it skips unlaunched), the grouping of signatures built from real sm_90 captures of every
candidate config, the winner / changed / ratio analysis from given samples, rendering, JSON, and the recording
format's versions. The GPU half is in tests/test_sweep_gpu.py."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import triton

import tritonhook
from tritonhook import _triton
from tritonhook.errors import TritonhookError
from tritonhook.measure.variants import parse_variants
from tritonhook.samples import add_kernel
from tritonhook.sweep import recording as rec
from tritonhook.sweep.autotune import analyze_group, autotune_groups, config_text
from tritonhook.sweep.recorder import link_compile_time_picks as rec_link
from tritonhook.sweep.recorder import untuned_held_picks
from tritonhook.sweep.replay import ReplayPlan, select_signatures
from tritonhook.sweep.result import TRITON_CACHE, VariantTiming, SweepResult, SweepRow, analyze_row
from tritonhook.sweep.builds import build_variants

torch = pytest.importorskip("torch")
from sample_recording import autotune_signatures, compile_configs  # noqa: E402 - tests/sample_recording.py, after torch

pytestmark = pytest.mark.every_release  # reaches what differs between Triton releases (scripts/test-matrix.sh)

CONFIGS = [triton.Config({"BLOCK": 256}, num_warps=2), triton.Config({"BLOCK": 512}, num_warps=4),
           triton.Config({"BLOCK": 1024}, num_warps=8)]
ADD_TYPES = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
BENCH_MS = [0.030, 0.020, 0.025]  # what the autotuner measured per config: BLOCK 512 wins


# ----- the tracer on Triton's real Autotuner -----------------------------------------------------------------------
def test_the_autotune_tracer_tags_each_benchmarked_config_and_records_one_decision_per_tuning_key():
    from triton.runtime.autotuner import Autotuner

    seen = []

    def do_bench(kernel_call, quantiles):  # Triton's public hook for the timer: says which candidate is on
        candidate = tracer.current()
        seen.append(candidate)
        return [BENCH_MS[[c.kwargs["BLOCK"] for c in CONFIGS].index(candidate.config["BLOCK"])]] * 3

    autotuned = triton.autotune(CONFIGS, key=["n"], do_bench=do_bench)(add_kernel)
    decisions = []
    run, bench, disk = Autotuner.run, Autotuner._bench, Autotuner.check_disk_cache
    tracer = _triton.AutotuneTracer(decisions.append)
    tracer.install()
    try:
        for n in (4096, 4096, 8192):  # the second call is cached: no benchmark, no decision
            x = torch.zeros(n)
            with contextlib.suppress(Exception):  # no GPU: the launch after the decision fails; that is fine
                autotuned[(1,)](x, x, x, n)
            assert tracer.current() is None  # outside a benchmark launches are the workload's
    finally:
        tracer.uninstall()
    assert Autotuner.run is run and Autotuner._bench is bench and Autotuner.check_disk_cache is disk
    assert [(c.group, c.config["BLOCK"], c.config["num_warps"]) for c in seen] == \
        [(0, 256, 2), (0, 512, 4), (0, 1024, 8), (1, 256, 2), (1, 512, 4), (1, 1024, 8)]
    assert [(d.group, d.kernel, d.key[0], d.chosen["BLOCK"]) for d in decisions] == \
        [(0, "add_kernel", "4096", 512), (1, "add_kernel", "8192", 512)]
    assert [times[0] for _, times in decisions[0].timings] == BENCH_MS


def _autotune_call(autotuned, n: int) -> None:
    x = torch.zeros(n)
    with contextlib.suppress(Exception):  # no GPU: the launch after the autotuner's choice fails; that is fine
        autotuned[(1,)](x, x, x, n)


class OwnPicks(triton.runtime.Autotuner):
    """An autotuner of a library's own making, as trifast 0.1.13's is: its own `run` keeps each pick under a key
    text of its own (where trifast also loads the picks its file holds), benchmarks each config with the inherited
    `_bench`, then launches the pick; defined before any tracer is installed."""

    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        key = "_".join(str(self.nargs[name]) for name in self.keys)
        if len(self.configs) > 1 and key not in self.cache:
            timings = {config: self._bench(*args, config=config, **kwargs) for config in self.prune_configs(kwargs)}
            self.cache[key] = min(timings, key=timings.get)
            self.configs_timings = timings
        config = self.cache[key] if len(self.configs) > 1 else self.configs[0]
        self.best_config, self.nargs = config, None
        return self.fn.run(*args, **kwargs, **config.all_kwargs())


def _own_picks(kind, do_bench, held=None):
    """`add_kernel` under an autotuner of class `kind` (Triton's constructor, 3.6-3.9), its picks `held` (key text ->
    config) as if read from its file."""
    autotuner = kind(add_kernel, add_kernel.arg_names, CONFIGS, ["n"], None, None, do_bench=do_bench)
    autotuner.cache.update(held or {})
    return autotuner


def _timed_by_block(seen, tracer):
    def do_bench(kernel_call, quantiles):  # Triton's public hook for the timer: says which candidate is on
        candidate = tracer.current()
        seen.append(candidate)
        return [BENCH_MS[[c.kwargs["BLOCK"] for c in CONFIGS].index(candidate.config["BLOCK"])]] * 3
    return do_bench


def test_an_autotuner_subclass_with_its_own_run_is_traced_whether_defined_before_or_after_the_tracer():
    """trifast's autotuner (a subclass of Triton's whose `run` never calls `Autotuner.run`) bypassed the tracer: its
    benchmark's launches counted as the workload's and no decision was recorded. Its `run` is wrapped now, and a
    subclass whose `run` calls `Autotuner.run` makes one decision, not two; each class's own `run` is its own
    again after uninstall."""
    seen, decisions = [], []
    tracer = _triton.AutotuneTracer(decisions.append)
    own_run = OwnPicks.__dict__["run"]
    tracer.install()
    try:
        class CallsTritons(triton.runtime.Autotuner):  # defined while the tracer is installed
            def run(self, *args, **kwargs):
                return super().run(*args, **kwargs)

        calls_run = CallsTritons.__dict__["run"]  # wrapped when its first autotuner is made
        for kind, n in ((OwnPicks, 4096), (CallsTritons, 8192)):
            autotuner = _own_picks(kind, _timed_by_block(seen, tracer))
            _autotune_call(autotuner, n)
            _autotune_call(autotuner, n)  # its pick is held now: nothing benchmarked
            assert tracer.current() is None
    finally:
        tracer.uninstall()
    assert OwnPicks.__dict__["run"] is own_run and CallsTritons.__dict__["run"] is calls_run
    assert [(c.group, c.config["BLOCK"]) for c in seen] == [(group, block) for group in (0, 1)
                                                             for block in (256, 512, 1024)]
    assert [(d.group, d.kernel, tuple(d.key), d.chosen["BLOCK"]) for d in decisions] == \
        [(group, "add_kernel", (n,) + ("torch.float32",) * 3, 512) for group, n in ((0, "4096"), (1, "8192"))]


def test_a_pick_an_autotuner_subclass_held_from_its_own_cache_is_named_and_a_pin_overrides_it():
    """trifast keeps its picks in a file that its next run reads: that run benchmarks nothing, which the recording
    names (`on_held_pick`, the autotuner's class) rather than passing it off as untuned; a pin for that tuning key
    runs the pinned config without benchmarking, the held pick notwithstanding."""
    held, benchmarked = [], []
    tracer = _triton.AutotuneTracer(lambda decision: pytest.fail("nothing is benchmarked"),
                                    lambda kernel, holder: held.append((kernel, holder)))
    tracer.install()
    try:
        autotuner = _own_picks(OwnPicks, lambda call, quantiles: pytest.fail("held"), {"4096": CONFIGS[0]})
        _autotune_call(autotuner, 4096)
        _autotune_call(autotuner, 4096)
    finally:
        tracer.uninstall()
    assert held == [("add_kernel", f"{__name__}.OwnPicks")]
    pinner = _triton.AutotunePinner({("add_kernel", ("4096",) + ("torch.float32",) * 3): {"BLOCK": 1024}})
    autotuner = _own_picks(OwnPicks, lambda call, quantiles: benchmarked.append(call) or [0.01] * 3,
                           {"4096": CONFIGS[0]})
    pinner.install()
    try:
        _autotune_call(autotuner, 4096)
        assert benchmarked == [] and autotuner.best_config.kwargs == {"BLOCK": 1024}
        _autotune_call(autotuner, 8192)  # no pin for this key: tuned as usual
        assert len(benchmarked) == len(CONFIGS) and autotuner.configs == CONFIGS
    finally:
        pinner.uninstall()
    assert pinner.applied == {("add_kernel", ("4096",) + ("torch.float32",) * 3): 1}


def test_a_call_at_new_input_shapes_under_a_decided_tuning_key_is_benchmarked_there_and_runs_the_held_pick(
        monkeypatch):
    """trifast keys its autotuners by the length rounded up to a power of two: 384 and 512 tokens share a key, the
    pick made at 384 runs at 512 untimed there, and the sweep had no candidates for the 512 rows (60% of that
    workload's GPU time). A call at new shapes under a decided key is benchmarked at them now (its candidates
    tagged with a decision of their own whose pick is the one the workload runs, `made_at` naming the decision
    that made it, `cached` the timings it was made on), the autotuner's zeroing run after it as after its own
    benchmark, up to `RECORD_SHAPES_PER_KEY` shapes per key; the same shapes again are not benchmarked twice."""
    from tritonhook import config

    monkeypatch.setattr(config.sweep, "RECORD_SHAPES_PER_KEY", 1)
    seen, decisions, zeroed = [], [], []
    tracer = _triton.AutotuneTracer(decisions.append)
    autotuner = triton.autotune(CONFIGS, key=["n"], do_bench=_timed_by_block(seen, tracer),
                                reset_to_zero=["out_ptr"])(add_kernel)
    tracer.install()
    try:
        for rows in (4, 8, 8, 16):  # the key is n alone: every call at n=4096, the inputs' shape differs
            x = torch.ones(rows, 4096 // rows)
            with contextlib.suppress(Exception):  # no GPU: the launch after the autotuner's choice fails
                autotuner[(1,)](x, x, x, 4096)
            zeroed.append(bool((x == 0).all()))
    finally:
        tracer.uninstall()
    assert [d.group for d in decisions] == [0, 1] and [c.group for c in seen] == [0] * 3 + [1] * 3
    first, at_eight = decisions
    assert at_eight.key == first.key and at_eight.chosen == first.chosen
    assert (first.made_at, first.cached, at_eight.made_at) == (None, None, 0)
    assert at_eight.cached == first.timings and [t[0] for _, t in at_eight.timings] == BENCH_MS
    # zeroed after each benchmark (Triton's `reset_to_zero`, as its own benchmark leaves them), untouched where none ran
    assert zeroed == [True, True, False, False]


def test_a_calls_shape_tells_tensors_of_other_shapes_apart_and_not_scalars_of_other_values():
    """`call_shape` keys the shapes a recording has benchmarked a decision at: tensors and host tensor descriptors
    by shape, any other argument by its type, so that a scalar that changes at every call (a seed) does not make
    every call a new shape, and the key is always hashable (a descriptor's shape is a list)."""
    from tritonhook._triton.autotune import call_shape

    small, large = torch.zeros(4, 8), torch.zeros(8, 8)
    assert call_shape((small, 3)) == call_shape((torch.ones(4, 8), 3)) != call_shape((large, 3))
    assert call_shape((small, 3, 0.5)) == call_shape((small, 1234567, 0.25)) != call_shape((small, None, 0.5))
    descriptor = type("Descriptor", (), {"shape": [4, 8]})()
    hash(call_shape((small, descriptor, None)))
    assert call_shape((small, descriptor, None))[1:] == ((4, 8), "NoneType")


def test_a_pinned_config_is_run_without_benchmarking_for_its_tuning_key_only():
    """Triton's real Autotuner: for the pinned tuning key the autotuner benchmarks nothing and runs the pinned
    config; another tuning key is tuned as usual. The pin's key is the one the recording's tracer writes down."""
    from triton.runtime.autotuner import Autotuner

    benchmarked, decisions = [], []

    def do_bench(kernel_call, quantiles):  # one call per config benchmarked
        benchmarked.append(kernel_call)
        return [0.01, 0.009, 0.011]

    autotuned = triton.autotune(CONFIGS, key=["n"], do_bench=do_bench)(add_kernel)
    tracer = _triton.AutotuneTracer(decisions.append)
    tracer.install()
    try:
        _autotune_call(autotuned, 2048)  # recorded: what a decision's key is made from
    finally:
        tracer.uninstall()
    recorded_key = tuple(decisions[0].key)
    assert recorded_key == _triton.tuning_key(autotuned, (torch.zeros(2048),) * 3 + (2048,), {})
    run = Autotuner.run
    pinner = _triton.AutotunePinner({("add_kernel", ("4096", "torch.float32", "torch.float32", "torch.float32")):
                                     {"BLOCK": 1024, "num_warps": 8}})
    pinner.install()
    try:
        benchmarked.clear()
        _autotune_call(autotuned, 4096)
        assert benchmarked == [] and autotuned.best_config.kwargs == {"BLOCK": 1024}
        assert autotuned.configs == CONFIGS  # its configs are its own again after the call
        _autotune_call(autotuned, 8192)  # no pin for this key: tuned as usual
        assert len(benchmarked) == len(CONFIGS)
    finally:
        pinner.uninstall()
    assert Autotuner.run is run and pinner.applied == {("add_kernel", ("4096",) + ("torch.float32",) * 3): 1}


def test_a_pin_that_ran_is_the_recordings_decision_at_its_key():
    """A pinned run benchmarks nothing at a pinned key, so a recording of it had no decision there and a pinned
    job's divergence could not show its processes agreeing. Under a recording (an installed tracer) a pin that runs
    is a decision of its own (`PINNED`: the pinned config, no timings), once per key; a key tuned as usual is the
    autotuner's decision as before."""
    decisions = []
    autotuned = triton.autotune(CONFIGS, key=["n"], do_bench=lambda kernel_call, quantiles: [0.01] * 3)(add_kernel)
    key = ("4096",) + ("torch.float32",) * 3
    tracer = _triton.AutotuneTracer(decisions.append)
    pinner = _triton.AutotunePinner({("add_kernel", key): {"BLOCK": 1024, "num_warps": 8}})
    tracer.install()
    pinner.install()
    try:
        _autotune_call(autotuned, 4096)
        _autotune_call(autotuned, 4096)
        _autotune_call(autotuned, 8192)
    finally:
        pinner.uninstall()
        tracer.uninstall()
    assert [(d.tuner, d.key[0], d.chosen.get("BLOCK"), d.timings == []) for d in decisions] == [
        (_triton.PINNED, "4096", 1024, True), (_triton.TRITON_AUTOTUNE, "8192", CONFIGS[0].kwargs["BLOCK"], False)]
    assert decisions[0].chosen == {"BLOCK": 1024, "num_warps": 8}


def test_a_kernel_no_pin_names_runs_as_usual_and_is_named_beside_a_pin_at_a_key_it_tuned():
    """Under a pinner, a kernel that no pin names runs as usual, its tuning key worked out only at a call that tuned
    (not at every call, a cost every autotuned launch would pay under `enable(apply=)`); a pin at a key it tuned,
    for another kernel name (a renamed kernel, say), is reported with it when nothing applied that pin."""
    autotuned = triton.autotune(CONFIGS, key=["n"], do_bench=lambda kernel_call, quantiles: [0.01] * 3)(add_kernel)
    key = ("4096",) + ("torch.float32",) * 3
    pinner = _triton.AutotunePinner({("renamed_add_kernel", key): {"BLOCK": 1024}})
    pinner.install()
    try:
        _autotune_call(autotuned, 4096)
        _autotune_call(autotuned, 4096)
    finally:
        with pytest.warns(RuntimeWarning) as caught:
            pinner.uninstall()
    (line,) = [str(w.message) for w in caught]
    assert "renamed_add_kernel" in line and "not applied" in line and "tuned here: add_kernel at 4096" in line
    assert pinner.applied == {} and len(autotuned.cache) == 1


def test_a_pin_matching_no_config_warns_and_the_kernel_is_tuned_as_usual():
    autotuned = triton.autotune(CONFIGS, key=["n"], do_bench=lambda kernel_call, quantiles: [0.01] * 3)(add_kernel)
    pinner = _triton.AutotunePinner({("add_kernel", ("4096",) + ("torch.float32",) * 3): {"BLOCK": 64}})
    pinner.install()
    try:
        with pytest.warns(RuntimeWarning, match=r"pins \{'BLOCK': 64\} for add_kernel .*autotuned as usual"):
            _autotune_call(autotuned, 4096)
    finally:
        pinner.uninstall()
    assert pinner.applied == {} and autotuned.best_config.kwargs["BLOCK"] in (256, 512, 1024)


def test_a_tool_wrapping_over_the_autotune_tracer_keeps_working_after_uninstall():
    from triton.runtime.autotuner import Autotuner

    original = Autotuner.__dict__["run"]
    tracer = _triton.AutotuneTracer(lambda decision: pytest.fail("called after uninstall"))
    tracer.install()
    ours = Autotuner.__dict__["run"]

    def other_tool(self, *args, **kwargs):
        return ours(self, *args, **kwargs)

    Autotuner.run = other_tool
    try:
        tracer.uninstall()
        assert Autotuner.run is other_tool and not tracer.active
    finally:
        Autotuner.run = original


# ----- the tracer on Inductor's real CachingAutotuner ----------------------------------------------------------------
class _SpillingLauncher:
    """A compiled config as Inductor's autotuner sees it, with more spills than it accepts: its `bench` gives it inf
    without launching anything, so Inductor's own benchmark loop runs on a CPU (and its pick is marked by the
    compiled kernel's hash, `cache_hash`, for Inductor's kernel bundle)."""

    def __init__(self, config):
        self.config, self.n_spills, self.n_regs, self.shared = config, 1000, 255, 0
        self.cache_hash = f"spilling {config}"


def inductor_tuner(heuristics, autotune_cache_info=None, kernel=add_kernel, name="triton_poi_fused_add_0"):
    """Inductor's real `CachingAutotuner` over `kernel` (the add kernel) with CONFIGS, as a pointwise kernel named
    `name` on an H100, its launchers ones that spill (so its benchmark runs on a CPU, each config timed inf);
    `autotune_cache_info` as Inductor's `check_autotune_cache` gives it."""
    from torch._inductor.runtime.hints import DeviceProperties, HeuristicType

    h100 = DeviceProperties(type="cuda", index=0, multi_processor_count=132, cc=90, major=9,
                            regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048,
                            max_threads_per_block=1024, warp_size=32)
    tuner = heuristics.CachingAutotuner(kernel, {"device": h100, "signature": {}, "constants": {}}, CONFIGS, None,
                                        [], False, HeuristicType.POINTWISE, inductor_meta={"kernel_name": name},
                                        autotune_cache_info=autotune_cache_info)
    tuner.launchers = [_SpillingLauncher(config) for config in CONFIGS]
    return tuner


def test_the_autotune_tracer_tags_inductors_benchmarked_configs_and_records_its_choice():
    heuristics = pytest.importorskip(_triton.INDUCTOR_AUTOTUNER_MODULE)
    tuner_class = heuristics.CachingAutotuner
    originals = {name: tuner_class.__dict__[name] for name in ("benchmark_all_configs", "bench", "__init__")}
    decisions, seen = [], []

    class SeeingReasons(dict):  # Inductor notes why it skipped a config while it benchmarks that config
        def __setitem__(self, launcher, reason):
            seen.append(tracer.current())
            super().__setitem__(launcher, reason)

    tracer = _triton.AutotuneTracer(decisions.append)
    tracer.install()
    try:
        tuner = inductor_tuner(heuristics)
        tuner.benchmark_failure_reasons = SeeingReasons()
        tuner.benchmark_all_configs()
        assert tracer.current() is None and tracer.benchmarking == 0
    finally:
        tracer.uninstall()
    assert {name: tuner_class.__dict__[name] for name in originals} == originals
    assert [(c.group, c.config["BLOCK"], c.config["num_warps"]) for c in seen] == \
        [(0, 256, 2), (0, 512, 4), (0, 1024, 8)]
    (decision,) = decisions
    assert (decision.group, decision.kernel, decision.key, decision.chosen) == \
        (0, "triton_poi_fused_add_0", list(_triton.inductor_tuning_key(tuner)),  # the key the pinner looks up
         _triton.autotune_config(CONFIGS[0]))  # all inf: Inductor keeps the first
    assert [config["BLOCK"] for config, _ in decision.timings] == [256, 512, 1024]
    assert all(times == [None] for _, times in decision.timings)


def test_the_autotune_tracer_names_inductor_kernels_built_with_their_cached_pick():
    """Inductor's real `CachingAutotuner` as its autotune cache builds it on a hit (`autotune_cache_state` "hit": the
    cached config alone, nothing to benchmark) is named to the recording; a miss is not; `__init__` is Inductor's
    own again after uninstall."""
    heuristics = pytest.importorskip(_triton.INDUCTOR_AUTOTUNER_MODULE)
    init = heuristics.CachingAutotuner.__dict__["__init__"]
    cached = []
    tracer = _triton.AutotuneTracer(lambda decision: None, lambda kernel, holder: cached.append((kernel, holder)))
    tracer.install()
    try:
        inductor_tuner(heuristics, {"autotune_cache_state": "hit", "best_config": {"BLOCK": 512}})
        inductor_tuner(heuristics, {"autotune_cache_state": "miss", "num_configs": 3})
        inductor_tuner(heuristics)
    finally:
        tracer.uninstall()
    inductor_tuner(heuristics, {"autotune_cache_state": "hit"})  # after uninstall: not seen
    assert cached == [("triton_poi_fused_add_0", _triton.INDUCTOR_CACHE)]
    assert heuristics.CachingAutotuner.__dict__["__init__"] is init


def test_the_autotune_tracer_waits_for_inductor_without_importing_it(tmp_path):
    """A recording starts before torch is imported (sitecustomize): the tracer must wrap Inductor's autotuner when
    torch imports it, not import it itself, and a `find_spec` probe must not end the wait. One started after torch
    imported Inductor (`tritonhook.enable()` in a script that imported it first) wraps it at once, and puts it back
    when it stops."""
    program = f"""
import importlib.util, sys
from tritonhook import _triton
from tritonhook._imports import waiting_for
module = {_triton.INDUCTOR_AUTOTUNER_MODULE!r}
tracer = _triton.AutotuneTracer(lambda decision: None)
tracer.install()
assert module not in sys.modules and waiting_for(module)
importlib.util.find_spec(module)
assert module not in sys.modules and waiting_for(module)
from torch._inductor.runtime.triton_heuristics import CachingAutotuner
assert not waiting_for(module)
ours = CachingAutotuner.__dict__["bench"]
assert ours.__wrapped__ is not ours
tracer.uninstall()
assert CachingAutotuner.__dict__["bench"] is ours.__wrapped__
import torch._inductor.compile_fx, torch._inductor.select_algorithm
from torch._inductor.scheduler import Scheduler
from torch._inductor.ir import MultiTemplateBuffer
scheduler = ("finalize_multi_template_buffers", "speedup_by_fusion", "benchmark_fused_nodes",
             "benchmark_codegened_module")  # the template's end, and what the scheduler times to weigh its fusion
found = [Scheduler.__dict__[name] for name in scheduler] + [MultiTemplateBuffer.__dict__["swap_as_triton_caller"]]
def now():
    return [Scheduler.__dict__[name] for name in scheduler] + [MultiTemplateBuffer.__dict__["swap_as_triton_caller"]]
later = _triton.AutotuneTracer(lambda decision: None)
later.install()  # the modules are imported now: wrapped at once
assert CachingAutotuner.__dict__["bench"] is not ours.__wrapped__ and not waiting_for(module)
assert all(wrapper is not original for wrapper, original in zip(now(), found))
later.uninstall()
assert CachingAutotuner.__dict__["bench"] is ours.__wrapped__
assert now() == found
print("waited")
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(Path(tritonhook.__file__).parent.parent)})
    assert done.returncode == 0 and done.stdout.strip() == "waited", done.stderr[-3000:]


# ----- grouping, from real captures of every candidate ------------------------------------------------------------
@pytest.fixture(scope="module")
def candidates(tmp_path_factory):
    """Each config of the autotuned add kernel compiled for sm_90a (captured), as recorded signatures: every
    candidate benchmarked, the winner (BLOCK 512) also launched 50 times by the workload."""
    autotuned = triton.autotune(CONFIGS, key=["n"])(add_kernel)
    store, compiled = compile_configs(tmp_path_factory.mktemp("autotune"), autotuned, ADD_TYPES)
    signatures, decision = autotune_signatures(store, autotuned, compiled, BENCH_MS, ["4096", "torch.float32"])
    other = dataclasses.replace(signatures[0], id=3, autotune=None, launches=10, times_ms=[0.01],
                                tuning_launches=0, grid=[64, 1, 1])
    recording = rec.Recording(signatures + [other], arch="sm_90a", device=None, triton_version=triton.__version__,
                              torch_version=torch.__version__, pid=1, autotune=[decision])
    return store, recording


def test_candidates_of_one_decision_form_one_group_ordered_by_the_autotuners_benchmark(candidates):
    store, recording = candidates
    (group,) = autotune_groups(recording)
    assert [s.autotune["config"]["BLOCK"] for s in group.candidates] == [512, 1024, 256]
    assert group.workload_winner.autotune["config"]["BLOCK"] == 512 and group.kernel == "add_kernel"
    assert group.gpu_ms == pytest.approx(0.0205 * 50)  # the benchmark's 120 launches per config are not in it
    assert recording.share(group.workload_winner) == pytest.approx(group.gpu_ms / (group.gpu_ms + 0.01 * 10))
    for signature in group.candidates:  # each candidate is its own capture, and builds its variants
        built = build_variants(store, store.get(signature.capture_id), parse_variants("plain,cutlass_"))
        assert [b.entry for b in built] == ["add_kernel", "cutlass_add_kernel"]
    assert len({s.capture_id for s in group.candidates}) == 3


def test_selection_counts_a_group_as_one_kernel_and_autotune_top_keeps_the_fastest(candidates):
    _, recording = candidates
    assert [s.id for s in select_signatures(recording, top=1)] == [1, 2, 0]  # the group outweighs signature 3
    assert [s.id for s in select_signatures(recording, autotune_top=1)] == [1, 3]
    assert [s.id for s in select_signatures(recording, kernel="nothing")] == []


def test_a_recording_with_groups_round_trips_and_merging_renumbers_its_groups(candidates):
    _, recording = candidates
    again = rec.Recording.from_json(json.loads(json.dumps(recording.to_json())))
    assert again == recording
    merged = rec.Recording.merged([recording, again])
    assert [d["group"] for d in merged.autotune] == [0, 1]
    assert [s.autotune["group"] for s in merged.signatures if s.autotune] == [0, 0, 0, 1, 1, 1]
    assert [len(g.candidates) for g in autotune_groups(merged)] == [3, 3]
    # a decision made at another input shape names its decision's group: renumbered with it
    at_new_shape = dataclasses.replace(again, autotune=[{**again.autotune[0], "made_at": 0, "cached": []}])
    assert [d.get("made_at") for d in rec.Recording.merged([recording, at_new_shape]).autotune] == [None, 1]


def test_an_older_recording_loads_without_autotune_and_a_newer_one_is_refused(candidates):
    _, recording = candidates
    old = recording.to_json()
    old["version"] = 1
    for signature in old["signatures"]:
        del signature["autotune"], signature["tuning_launches"]
    del old["autotune"]
    loaded = rec.Recording.from_json(old, source="old.json")
    assert autotune_groups(loaded) == [] and loaded.signatures[1].launches == 50
    newer, reads = rec.VERSION + 1, ", ".join(map(str, rec.READS))
    with pytest.raises(TritonhookError, match=f"new.json: recording format version {newer}, this tritonhook reads "
                                              f"versions {reads}; upgrade tritonhook"):
        rec.Recording.from_json({**recording.to_json(), "version": newer}, source="new.json")


# ----- the analysis: each variant's winner, whether it changed, the ratio of the winners ----------------------------
def _noisy(center: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [center * (1 + rng.gauss(0, 0.002)) for _ in range(9)]


FACTS = {"plain": {"registers": 20}, "cutlass_": {"registers": 22}}


def _candidate_rows(candidates, centers: dict[int, tuple[float, float]], identical=()):
    """Candidate rows as the replay leaves them, from per-round samples around `centers` (plain, cutlass_)."""
    _, recording = candidates
    rows, samples = [], {}
    for signature in autotune_groups(recording)[0].candidates:
        plain, renamed = centers[signature.autotune["config"]["BLOCK"]]
        own = {"plain": _noisy(plain, signature.id)}
        if signature.id not in identical:
            own["cutlass_"] = _noisy(renamed, 10 + signature.id)
        facts = {**FACTS, "cutlass_": {**FACTS["cutlass_"], "same_text_as": "plain" if signature.id in identical
                                       else None}}
        row = SweepRow(signature.id, signature.kernel, signature.label(), 0.0, signature.launches, None, "snapshot",
                       "ok", "bitwise", autotune={"group": 0, "config": config_text(signature.autotune["config"])})
        rows.append(analyze_row(row, own, facts, {"cutlass_": "plain"} if signature.id in identical else {}))
        samples[signature.id] = own
    group = autotune_groups(recording)[0]
    return group, rows, samples


def test_each_variant_gets_its_own_fastest_config_and_the_ratio_is_of_the_winners(candidates):
    group, rows, samples = _candidate_rows(candidates, {256: (0.030, 0.018), 512: (0.020, 0.024), 1024: (0.025, 0.026)})
    row = analyze_group(SweepRow(1, "add_kernel", "add_kernel", 0.9, 50, 0.02, "snapshot", "ok"), group, rows,
                        samples, ["plain", "cutlass_"])
    assert row.autotune["winners"] == {"plain": "BLOCK=512, num_warps=4, num_ctas=1, num_stages=3",
                                       "cutlass_": "BLOCK=256, num_warps=2, num_ctas=1, num_stages=3"}
    assert row.autotune["changed"] and row.autotune["winner_signatures"] == {"plain": 1, "cutlass_": 0}
    plain, renamed = row.variants
    assert plain.median_ms == pytest.approx(0.020, rel=0.01) and renamed.ratio == pytest.approx(0.9, rel=0.01)
    assert renamed.low < renamed.ratio < renamed.high < 1 and renamed.verdict == "faster"
    assert row.fidelity == pytest.approx(1.0, rel=0.01)


def test_the_baseline_stays_at_the_workloads_config_and_a_faster_one_is_the_autotune_regret(candidates):
    """Plain runs 25% faster at BLOCK 256 than at the workload's BLOCK 512, and so does the renamed build: the row
    still answers for BLOCK 512 (its time, fidelity, the renamed build's ratio at it), and the faster config is the
    regret, with why the autotuner missed it from its own timings (it timed BLOCK 256 at 1.5x its pick, last of
    three). Unconfirmed until pinned."""
    group, rows, samples = _candidate_rows(candidates, {256: (0.015, 0.015), 512: (0.020, 0.020),
                                                        1024: (0.025, 0.026)})
    row = analyze_group(SweepRow(1, "add_kernel", "add_kernel", 0.9, 50, 0.02, "snapshot", "ok"), group, rows,
                        samples, ["plain", "cutlass_"])
    workload = "BLOCK=512, num_warps=4, num_ctas=1, num_stages=3"
    faster = "BLOCK=256, num_warps=2, num_ctas=1, num_stages=3"
    assert row.autotune["winners"]["plain"] == workload
    assert row.variants[0].median_ms == pytest.approx(0.020, rel=0.01)
    assert row.fidelity == pytest.approx(1.0, rel=0.01)  # the same config on both sides
    # the renamed build ranks the configs as plain does: BLOCK 256 is the regret both share, not a difference
    assert row.autotune["winners"]["cutlass_"] == workload and row.variants[1].verdict == "no difference"
    regret = row.autotune["regret"]
    assert (regret["config"], regret["workload_config"], regret["verdict"], regret["confirmed"]) == \
        (faster, workload, "faster", None)
    assert regret["low"] < regret["ratio"] < regret["high"] < 1 and regret["ratio"] == pytest.approx(0.75, rel=0.01)
    assert regret["why"] == ["the autotuner timed it 1.500x its pick (ranked 3 of 3)"]


def test_a_variant_pinning_a_config_is_timed_at_that_candidate_against_the_workloads_config(candidates):
    """`plain+config:BLOCK=256` builds plain's SASS at every candidate (not timed again: plain's rounds stand for
    it) and runs at the BLOCK 256 candidate: its ratio is that config against the workload's BLOCK 512, which is
    what pinning it in the workload would change. A config no candidate has is named, not guessed."""
    _, recording = candidates
    group = autotune_groups(recording)[0]
    pinned, absent = "plain+config:BLOCK=256", "plain+config:BLOCK=64"
    centers = {256: 0.015, 512: 0.020, 1024: 0.025}
    rows, samples = [], {}
    for signature in group.candidates:
        own = {"plain": _noisy(centers[signature.autotune["config"]["BLOCK"]], signature.id)}
        facts = {"plain": {}, pinned: {"same_text_as": "plain"}, absent: {"same_text_as": "plain"}}
        row = SweepRow(signature.id, signature.kernel, signature.label(), 0.0, signature.launches, None, "snapshot",
                       "ok", "bitwise", autotune={"group": 0, "config": config_text(signature.autotune["config"])})
        rows.append(analyze_row(row, own, facts, {pinned: "plain", absent: "plain"}))
        samples[signature.id] = own
    row = analyze_group(SweepRow(1, "add_kernel", "add_kernel", 0.9, 50, 0.02, "snapshot", "ok"), group, rows,
                        samples, ["plain", pinned, absent])
    assert row.autotune["winner_signatures"] == {"plain": 1, pinned: 0}
    timing = row.variants[1]
    assert timing.verdict == "faster" and timing.ratio == pytest.approx(0.75, rel=0.01)
    assert row.variants[2].verdict == "config not replayed" and row.variants[2].median_ms is None


def test_an_aa_of_a_kernel_with_regret_reads_no_difference(candidates):
    """Two identical builds over a group whose BLOCK 256 beats the workload's BLOCK 512 by 25%: both builds rank it
    first, so the second stays at the workload's config (what H200 A/As of torchao's split-K GEMV read "faster" at
    0.887 before), and the regret is the row's, once."""
    group, rows, samples = _candidate_rows(candidates, {256: (0.015, 0.0151), 512: (0.020, 0.0200),
                                                        1024: (0.025, 0.0251)})
    for row in rows:
        row.variants[1].label = "plain#2"
    samples = {sid: {"plain": own["plain"], "plain#2": own["cutlass_"]} for sid, own in samples.items()}
    row = analyze_group(SweepRow(1, "add_kernel", "add_kernel", 0.9, 50, 0.02, "snapshot", "ok"), group, rows,
                        samples, ["plain", "plain#2"])
    assert not row.autotune["changed"] and row.variants[1].verdict == "no difference"
    assert row.autotune["regret"]["verdict"] == "faster"


def test_why_the_autotuner_missed_is_read_from_its_spread_and_its_pre_hooks(candidates):
    """An autotuner whose benchmark zeroes and restores buffers with every config: its times are 3x the kernel's,
    its p20-p80 ranges overlap; each is said, from the recording's figures."""
    from tritonhook.sweep.autotune import AutotuneGroup, autotune_regret

    _, recording = candidates
    (group,) = autotune_groups(recording)
    spread = {0: [0.061, 0.058, 0.064], 1: [0.060, 0.057, 0.063], 2: [0.075, 0.070, 0.080]}
    hooked = dataclasses.replace(group, bench_ms={sid: times[0] for sid, times in spread.items()},
                                 bench_spread=spread, hooks={"reset_to_zero": ["c"], "restore_value": ["a", "b"],
                                                             "pre_hook": False, "config_pre_hooks": 0})
    assert isinstance(hooked, AutotuneGroup)
    regret = autotune_regret(hooked, {0: _noisy(0.015, 1), 1: _noisy(0.020, 2), 2: _noisy(0.025, 3)}, 1,
                             {0: "BLOCK=256", 1: "BLOCK=512", 2: "BLOCK=1024"})
    assert regret["verdict"] == "faster" and regret["why"] == [
        "the autotuner timed it 1.017x its pick (ranked 2 of 3)",
        "the two are within the autotuner's own spread (their p20-p80 ranges overlap): a draw",
        "its benchmark timed 3.0x the kernel's replayed time: it times zeroing c and cloning and restoring a, b "
        "with each config"]


def test_a_pick_from_tritons_autotune_cache_is_named_as_the_reason_with_the_caches_own_ranking(candidates):
    """A decision whose pick Triton's autotune cache held (`cached`: an earlier run's timings, in which BLOCK=256
    ranked behind BLOCK=512): the regret's first reason says so with the cache's ratio, and the ranking beside it is
    the recording's own benchmark, not the autotuner's."""
    from tritonhook.sweep.autotune import autotune_regret

    store, recording = candidates
    decision = dict(recording.autotune[0])
    held_ms = [0.022, 0.020, 0.030]  # BLOCK 256, 512, 1024, each 1.1x: 256 ranked second there
    decision["cached"] = [[config, [ms * 1.1] * 3] for (config, _), ms in zip(decision["timings"], held_ms)]
    cached = dataclasses.replace(recording, autotune=[decision])
    (group,) = autotune_groups(cached)
    assert sorted(group.cached_ms.values()) == pytest.approx([0.022, 0.0242, 0.033])
    regret = autotune_regret(group, {0: _noisy(0.015, 1), 1: _noisy(0.020, 2), 2: _noisy(0.025, 3)}, 1,
                             {0: "BLOCK=256", 1: "BLOCK=512", 2: "BLOCK=1024"})
    assert regret["verdict"] == "faster" and regret["why"][:2] == [
        "the workload ran the pick of Triton's autotune cache (an earlier run's benchmark), which timed that config "
        "1.100x its pick",
        "the recording's own benchmark timed it 1.500x the workload's config (ranked 3 of 3)"]
    (plain,) = autotune_groups(recording)
    assert plain.cached_ms is None and not any("cache" in line for line in autotune_regret(
        plain, {0: _noisy(0.015, 1), 1: _noisy(0.020, 2), 2: _noisy(0.025, 3)}, 1,
        {0: "BLOCK=256", 1: "BLOCK=512", 2: "BLOCK=1024"})["why"])


def test_a_row_run_at_a_cached_pick_says_whether_the_recordings_own_benchmark_picks_it_too(candidates):
    """The workload ran BLOCK=1024, the pick Triton's autotune cache held; the recording's own benchmark of the same
    configs picks BLOCK=512 (BENCH_MS). The row answers for BLOCK=1024, and says, in `--json` and in the table's
    lines, that another run's autotuner picked otherwise; the plain decision's row says nothing of a cache."""
    store, recording = candidates
    decision = dict(recording.autotune[0])
    decision["chosen"] = _triton.autotune_config(CONFIGS[2])
    decision["cached"] = [[config, [0.030, 0.029, 0.031]] for config, _ in decision["timings"]]
    cached = (store, dataclasses.replace(recording, autotune=[decision]))
    centers = {256: (0.030, 0.030), 512: (0.020, 0.020), 1024: (0.025, 0.025)}
    rows = []
    for pair in (cached, candidates):
        group, candidate_rows, samples = _candidate_rows(pair, centers)
        rows.append(analyze_group(SweepRow(1, "add_kernel", "add_kernel [4096]", 0.9, 50, 0.02, "snapshot", "ok"),
                                  group, candidate_rows, samples, ["plain", "cutlass_"]))
    at_cached, benchmarked = rows
    assert at_cached.autotune["workload"] == "BLOCK=1024, num_warps=8, num_ctas=1, num_stages=3"
    assert at_cached.autotune["cached_pick"] == {
        "benchmark_pick": "BLOCK=512, num_warps=4, num_ctas=1, num_stages=3", "agrees": False,
        "held": TRITON_CACHE}
    assert benchmarked.autotune["cached_pick"] is None
    from rich.console import Console

    console = Console(width=500, record=True)
    console.print(SweepResult([at_cached], ["plain", "cutlass_"], 9, 7, ["python", "train.py"], {"replay": 3.0},
                              candidates=[]).finish())
    text = console.export_text()
    assert ("(in the workload: BLOCK=1024, num_warps=8, num_ctas=1, num_stages=3, the pick of Triton's autotune cache "
            "(an earlier run's benchmark); the recording's own benchmark picks BLOCK=512, num_warps=4, num_ctas=1, "
            "num_stages=3)") in text
    assert ("autotune: 1 row(s) ran a pick not made at their own call (Triton's autotune cache; the autotuner's "
            "decision at another input shape); the recording's own benchmark there picks another config for 1 of "
            "them") in text


def test_the_autotune_tracer_records_the_hooks_its_benchmark_runs():
    """Triton's real Autotuner with reset_to_zero and restore_value: the decision says what each timed call ran."""
    decisions = []

    def do_bench(kernel_call, quantiles):
        return [0.01, 0.009, 0.011]

    autotuned = triton.autotune(CONFIGS, key=["n"], reset_to_zero=["out_ptr"], restore_value=["x_ptr"],
                                do_bench=do_bench)(add_kernel)
    tracer = _triton.AutotuneTracer(decisions.append)
    tracer.install()
    try:
        x = torch.zeros(4096)
        with contextlib.suppress(Exception):  # no GPU: the launch after the decision fails
            autotuned[(1,)](x, x, x, 4096)
    finally:
        tracer.uninstall()
    (decision,) = decisions
    assert decision.hooks == {"reset_to_zero": ["out_ptr"], "restore_value": ["x_ptr"], "pre_hook": False,
                              "config_pre_hooks": 0}


def test_one_config_winning_both_keeps_its_interleaved_comparison_and_identical_sass_uses_plains_rounds(candidates):
    group, rows, samples = _candidate_rows(candidates, {256: (0.030, 0.031), 512: (0.020, 0.020), 1024: (0.025, 0.026)},
                                           identical={1})
    row = analyze_group(SweepRow(1, "add_kernel", "add_kernel", 0.9, 50, 0.02, "snapshot", "ok"), group, rows,
                        samples, ["plain", "cutlass_"])
    assert not row.autotune["changed"] and row.variants[1].verdict == "SASS identical"
    assert row.variants[1].ratio == 1.0 and row.variants[1].facts["same_text_as"] == "plain"


def test_a_winner_flip_within_noise_keeps_the_workloads_config_and_is_named(candidates):
    """An A/A's two identical builds: cutlass_'s fastest candidate is another config by 0.1%, well inside the
    noise. No verdict may come from that: both run at the workload's config, whose own interleaved comparison says
    "no difference", and the faster config not taken is named."""
    group, rows, samples = _candidate_rows(candidates, {256: (0.0201, 0.01999), 512: (0.0200, 0.0200),
                                                        1024: (0.025, 0.026)})
    row = analyze_group(SweepRow(1, "add_kernel", "add_kernel", 0.9, 50, 0.02, "snapshot", "ok"), group, rows,
                        samples, ["plain", "cutlass_"])
    workload = "BLOCK=512, num_warps=4, num_ctas=1, num_stages=3"
    fastest = min(rows, key=lambda r: statistics.median(samples[r.signature]["cutlass_"]))
    assert fastest.autotune["config"] != workload  # the trap is set: the renamed build's best is another config
    assert row.autotune["winners"] == {"plain": workload, "cutlass_": workload} and not row.autotune["changed"]
    assert row.autotune["flips"] == {"cutlass_": {"fastest": fastest.autotune["config"], "kept": workload}}
    assert row.variants[1].verdict == "no difference"


def test_an_aa_sweep_gives_no_workload_estimate():
    rows = [analyze_row(SweepRow(0, "k", "k [1]", 0.9, 10, 0.02, "snapshot", "ok", "bitwise"),
                        {"plain": _noisy(0.020, 1), "plain#2": _noisy(0.019, 2)}, {"plain": {}, "plain#2": {}}, {})]
    assert rows[0].variants[1].verdict == "faster"  # noise an A/A can show
    assert SweepResult(rows, ["plain", "plain#2"], 9, 1, None, {}).finish().estimates == []


def test_a_variant_whose_build_failed_at_every_config_keeps_its_verdict_and_the_group_its_row(candidates):
    """A third variant that no candidate could build (a control file its ptxas refused, say) has no samples
    anywhere: the group is still compared on the others, and the failed one says why (found by `tune` on the H200,
    where such variants made every autotuned kernel's row disappear)."""
    group, rows, samples = _candidate_rows(candidates, {256: (0.030, 0.018), 512: (0.020, 0.024), 1024: (0.025, 0.026)})
    for row in rows:
        row.variants.append(VariantTiming("plain+acf:x.acf", None, verdict="build unsupported",
                                          facts={"build_failed": "unsupported"}))
    row = analyze_group(SweepRow(1, "add_kernel", "add_kernel", 0.9, 50, 0.02, "snapshot", "ok"), group, rows,
                        samples, ["plain", "cutlass_", "plain+acf:x.acf"])
    assert row.status == "ok" and [v.label for v in row.variants] == ["plain", "cutlass_", "plain+acf:x.acf"]
    assert row.variants[1].verdict == "faster" and row.variants[1].ratio == pytest.approx(0.9, rel=0.01)
    assert row.variants[2].verdict == "build unsupported" and row.variants[2].median_ms is None
    assert set(row.autotune["winners"]) == {"plain", "cutlass_"}


def test_a_group_with_no_timed_candidate_says_why(candidates):
    group, rows, samples = _candidate_rows(candidates, {256: (1, 1), 512: (1, 1), 1024: (1, 1)})
    for row in rows:
        row.status = "fault: worker exited with status -11"
    row = analyze_group(SweepRow(1, "add_kernel", "add_kernel", 0.9, 50, 0.02, "snapshot", "ok"), group, rows, {},
                        ["plain", "cutlass_"])
    assert row.status == ("the workload's config (BLOCK=512, num_warps=4, num_ctas=1, num_stages=3) was not timed: "
                          "fault: worker exited with status -11") and not row.variants


def test_a_group_row_renders_as_one_row_feeds_the_estimate_and_round_trips(candidates):
    group, rows, samples = _candidate_rows(candidates, {256: (0.030, 0.018), 512: (0.020, 0.024), 1024: (0.025, 0.026)})
    folded = analyze_group(SweepRow(1, "add_kernel", "add_kernel [4096]", 0.9, 50, 0.02, "snapshot", "ok"), group,
                           rows, samples, ["plain", "cutlass_"])
    result = SweepResult([folded], ["plain", "cutlass_"], 9, 7, ["python", "train.py"], {"replay": 3.0},
                         candidates=rows).finish()
    (est,) = result.estimates
    assert est.kernels == ["add_kernel"] and est.ratio == pytest.approx(1 - 0.9 * (1 - folded.variants[1].ratio))
    again = SweepResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again.to_json() == result.to_json() and len(again.candidates) == 3
    from rich.console import Console

    console = Console(width=400, record=True)
    console.print(result)
    text = console.export_text()
    assert text.count("add_kernel [4096] (autotuned: 3 configs)") == 1 and "faster" in text
    assert ("add_kernel [4096]: autotuned, the config changed; config per variant: plain: BLOCK=512, num_warps=4, "
            "num_ctas=1, num_stages=3; cutlass_: BLOCK=256, num_warps=2, num_ctas=1, num_stages=3 (in the workload: "
            "BLOCK=512, num_warps=4, num_ctas=1, num_stages=3); cutlass_ at BLOCK=512, num_warps=4, num_ctas=1, "
            "num_stages=3 (the same config as the baseline): 1.200 [") in text


@pytest.mark.release_independent  # Inductor's select_algorithm: torch's, whatever the Triton release
def test_the_autotune_tracer_records_inductors_compile_time_choice_as_inductor_timed_it(select_algorithm_cpu):
    """Inductor's `select_algorithm` choosing a GEMM kernel while it compiles (max-autotune; on a CPU its CPP
    template against MKL's extern kernel): one decision by "select_algorithm", each choice with the time Inductor's
    own AUTOTUNE table printed for it and the pick its fastest; uninstalling leaves Inductor's functions as found."""
    import json
    import re

    done = select_algorithm_cpu
    assert done.returncode == 0, done.stderr[-3000:]
    printed = {name: float(ms) for name, ms in re.findall(r"^\s+(\S+) (\d+\.\d+) ms", done.stderr, re.M)}
    assert len(printed) >= 2, done.stderr[-3000:]  # Inductor's own table: both choices timed
    result = json.loads(done.stdout)
    (decision,) = result["decisions"]
    assert decision["tuner"] == "select_algorithm" and decision["key"][0] == "float32 [128, 512]"
    timed = {config["choice"]: ms[0] for config, ms in decision["timings"]}
    assert timed.keys() == printed.keys()
    assert all(abs(timed[name] - printed[name]) < 5e-5 for name in printed), (timed, printed)
    assert decision["chosen"]["choice"] == min(printed, key=printed.get)
    assert result["wrapped"] == [True, True] and result["after_uninstall"] == [False, False]


def test_a_sweep_replays_a_decisions_four_fastest_candidates_unless_told_all(tmp_path):
    """Coordinate descent and `select_algorithm` try tens of configs a decision: by default the replay takes the
    autotuner's 4 fastest (`config.sweep.AUTOTUNE_TOP`) and the config the workload ran; `--autotune-top all` every
    one. Six real configs, captured."""
    configs = [triton.Config({"BLOCK": block}, num_warps=warps) for block, warps in
               ((128, 1), (256, 2), (512, 4), (1024, 4), (2048, 8), (4096, 8))]
    autotuned = triton.autotune(configs, key=["n"])(add_kernel)
    store, compiled = compile_configs(tmp_path, autotuned, ADD_TYPES)
    bench_ms = [0.031, 0.024, 0.020, 0.022, 0.027, 0.035]
    signatures, decision = autotune_signatures(store, autotuned, compiled, bench_ms, ["4096", "torch.float32"])
    recording = rec.Recording(signatures, arch="sm_90a", device=None, triton_version=triton.__version__,
                              torch_version=torch.__version__, pid=1, autotune=[decision])
    default = ReplayPlan().autotune_top
    assert [s.autotune["config"]["BLOCK"] for s in select_signatures(recording, autotune_top=default)] == [
        512, 1024, 256, 2048]
    assert len(select_signatures(recording, autotune_top=None)) == 6
    for given, refused in (("0", True), ("-1", True), ("four", True), ("all", False), ("2", False)):
        done = subprocess.run([sys.executable, "-m", "tritonhook", "replay", "--store", str(tmp_path / "none"),
                               "--autotune-top", given], capture_output=True, text=True, timeout=120)
        assert (f"--autotune-top {given}: at least 1, or all" in done.stderr) == refused, done.stderr
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr  # refused, or no such store


def test_a_pick_inductor_made_while_compiling_makes_the_workloads_kernel_that_decisions_row(candidates):
    """Inductor's coordinate descent tunes a kernel while it compiles (its fusion benchmarks: launches of no
    workload) and caches the pick; the workload's kernel, compiled later from the same source, runs it untuned. The
    recording makes that workload signature the decision's winner, so the group has a workload member, is replayed,
    and its other configs are the candidates; the compile's benchmark of the pick itself is not replayed (other
    inputs). Real captures of the add kernel's three configs."""
    _, recording = candidates
    compiled_only = [dataclasses.replace(s, launches=0, times_ms=[]) for s in recording.signatures if s.autotune]
    workload = dataclasses.replace(compiled_only[0], id=3, autotune=None, launches=30, times_ms=[0.02],
                                   tuning_launches=0)
    decision = {**recording.autotune[0], "tuner": _triton.COORDINATE_DESCENT}
    chosen = decision["chosen"]
    signatures = [*compiled_only, workload]
    other_kernel = dataclasses.replace(workload, id=4, kernel="other")
    assert rec_link(signatures + [other_kernel], [decision], held={"add_kernel", "other"}) == ["add_kernel"]
    assert workload.autotune == {"group": 0, "config": chosen} and other_kernel.autotune is None
    assert rec_link([dataclasses.replace(workload, autotune=None)], [{**decision, "tuner": "select_algorithm"}],
                    held={"add_kernel"}) == []  # its candidates are other kernels
    linked = dataclasses.replace(recording, signatures=signatures, autotune=[decision])
    (group,) = autotune_groups(linked)
    assert group.workload_winner is workload
    replayed = group.to_replay(4)
    assert workload in replayed and len(replayed) == 3
    assert [s.autotune["config"] == chosen for s in replayed].count(True) == 1  # the compile's pick: left out
    assert {s.id for s in select_signatures(linked)} == {s.id for s in replayed}


def test_a_cache_hit_on_a_pick_made_in_this_run_is_not_named_held_before_recording(candidates):
    """A recompiled graph's kernel finds in Inductor's autotune cache the pick this run's own benchmark of the same
    kernel made (a FlexAttention step on an H200 warned of 14 such kernels with cold caches): its launches belong to
    that decision, so it is no pick held before recording. A kernel that ran a held pick with no decision here is
    still named, per holder."""
    _, recording = candidates
    tuned = next(s for s in recording.signatures if s.autotune)
    tuned = dataclasses.replace(tuned, launches=12)
    untuned = dataclasses.replace(tuned, id=9, kernel="other", autotune=None, launches=3)
    never_ran = dataclasses.replace(untuned, id=10, kernel="idle", launches=0)
    held = {_triton.INDUCTOR_CACHE: {tuned.kernel, "other", "idle"}, "trifast": {tuned.kernel}}
    assert untuned_held_picks([tuned, untuned, never_ran], held) == {_triton.INDUCTOR_CACHE: ["other"]}
