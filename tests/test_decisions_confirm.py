"""`tritonhook decisions confirm` for every kind of decision: its two arms are the workload run with the decisions
applied and as it is, each in fresh processes. On a CPU, with real Triton compiles for sm_90a in real processes
(`tritonhook run --apply` with the arm's decisions file, as `confirm` hands it to each recorded run): the arm with a
build decision (a name, a ptxas, options, a control file) builds the kernel with it and the arm as it is does not,
as their captures say (`confirm.BuiltKernel`); a pinned config runs without the autotuner in the applied arm only.
What `confirm` reads from the arms' recordings is then measured on those real captures with set times (a
comparison whose applied arm did not build the decision judges nothing). The timing itself is the GPU test at the
end (`-m gpu`)."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import subprocess
import sys

import pytest
import rich.console

from tritonhook import _triton, config, decisions
from tritonhook.decisions.confirm import (APPLIED, AS_IS, BuiltKernel, Made, _measure_build, arm_files, built_text,
                                         kept, runs_cold)
from tritonhook.decisions.confirmation import (ARMS, BUILD_STANDINGS, RESULT_KIND, BuildConfirmation, Confirmation,
                                               decision_text, newest_confirmations)
from tritonhook.decisions.keep import BASELINE_PICK_KIND, capture_key, held_picks
from tritonhook.decisions.model import read_file
from tritonhook import binaries as tools
from tritonhook.store import Store
from tritonhook.sweep import recording as rec
from tritonhook.sweep.replay import mixed_ptxas_warning
from tritonhook.sweep.result import RESULT_KIND as SWEEP_KIND, SweepResult

GPU = "NVIDIA H200"
COMPILE_ADD = "from tritonhook.samples import compile_sample; print(compile_sample('add', 90).metadata.name)"
OTHER_PTXAS = [b for b in tools.one_per_version(tools.find_ptxas()) if b.release >= (13,)]
READS_CONTROLS = [b for b in OTHER_PTXAS if tools.supports_controls(b.path)]


def _tritonhook(*args: str, gpu: str | None = GPU, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m tritonhook ARGS`, its decisions' keys matched against `gpu` (None: the visible one), with `env`
    besides this process's environment."""
    env = {**os.environ, **(env or {}), **({"TRITONHOOK_DECISIONS_GPU": gpu} if gpu else {})}
    done = subprocess.run([sys.executable, "-m", "tritonhook", *args], capture_output=True, text=True, timeout=600,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _run_arm(store_path, applied: str | None, script: str = COMPILE_ADD, env: dict | None = None
             ) -> tuple[list, str, str]:
    """One arm's run in a fresh process, as `confirm` runs it (`run --apply` its file): the captures it made, what
    it printed and what it warned."""
    before = Store.of(store_path).last_id()
    done = _tritonhook("run", "--store", str(store_path), *(["--apply", applied] if applied else []), "--",
                       sys.executable, "-c", script, env=env)
    return Store.of(store_path).captures(after=before), done.stdout.strip(), done.stderr


@pytest.fixture(scope="module")
def add_key(tmp_path_factory):
    """The key of the `add` sample's sm_90a build on `GPU`, from a plain capture made in a process of its own."""
    path = tmp_path_factory.mktemp("plain")
    (capture,), _, _ = _run_arm(path, None)
    return capture_key(Store.of(path), capture, GPU)


def _decision(key, **choice) -> decisions.Decision:
    return decisions.Decision(key, decisions.Choice(**choice), decisions.Evidence(
        "add_kernel", 0.97, 0.96, 0.98, "bitwise", "2026-11-27", "0.1.0", "sweep", 1))


def _valid_control_file() -> tuple[str, bytes] | None:
    """(the ptxas version, a control file it reads) where CompileIQ's ptxas 13.3 search space and a ptxas 13.3 are
    here (as tests/test_tune_space.py finds them), else None."""
    sys.path.insert(0, os.path.dirname(__file__))
    from test_tune_space import _ptxas_13_3, _ptxas_13_3_space

    from tritonhook.ptxas.tune_space import ControlFileSearch

    ptxas, space = _ptxas_13_3(), _ptxas_13_3_space()
    if ptxas is None or space is None:
        return None
    with ControlFileSearch(space, pool_size=6, generations=1) as search:
        return ptxas.version, search.ask()[0]


def _kind(kind: str, key) -> tuple[decisions.Decision, dict[str, bytes]]:
    """A decision of `kind` for the add kernel's key, with its control file's bytes by sha256."""
    import hashlib

    if kind == "name":
        return _decision(key, name="cutlass_"), {}
    if kind == "options":
        return _decision(key, options=("-O0",)), {}
    if kind == "ptxas":
        own = tools.ptxas_version(_triton.triton_ptxas("sm_90a"))  # what Triton builds with (3.9: its 13.4 for sm_90)
        other = [binary for binary in OTHER_PTXAS if binary.version not in (key.ptxas_version, own)]
        if not other:
            pytest.skip("needs a ptxas 13.x besides the one Triton builds with (tritonhook ptxas list)")
        newest = max(other, key=lambda binary: binary.release)  # reads the newest PTX ISA (3.9's 9.4: not 13.0)
        return _decision(key, ptxas_version=newest.version), {}
    found = _valid_control_file()
    if found is None:
        pytest.skip("needs a control file a ptxas here reads: CompileIQ's ptxas 13.3 search space "
                    "($CIQ_SEARCH_SPACES_DIR) and a ptxas 13.3 (`tritonhook ptxas list` shows none); the ptxas 13.4 "
                    "here reads control files but none of 13.3's, see the refusal test below")
    version, acf = found
    sha = hashlib.sha256(acf).hexdigest()
    return _decision(key, ptxas_version=version, controls_sha256=sha), {sha: acf}


@pytest.mark.parametrize("kind", ["name", "ptxas", "options", "control file"])
def test_the_applied_arm_builds_the_kernel_with_its_decision_and_the_arm_as_it_is_does_not(kind, add_key, tmp_path):
    decision, controls = _kind(kind, add_key)
    files = arm_files(tmp_path / "arms", [decision], controls)
    assert files[AS_IS] is None and decisions.read_file(files[APPLIED]).decisions[0][0].choice == decision.choice
    built, cubins = {}, {}
    for arm in ARMS:
        captures, printed, _ = _run_arm(tmp_path / "store", files[arm])
        store = Store.of(tmp_path / "store")
        kernel = BuiltKernel(store, decision)
        (capture,) = [c for c in captures if kernel.of_kernel(c, GPU)]  # found by its key in either arm
        cubins[arm] = store.read(capture, "cubin")
        assert kernel.as_arm(capture, arm) and not kernel.as_arm(capture, ARMS[1 - ARMS.index(arm)])
        built[arm] = (built_text(capture), printed)
    assert built[AS_IS] == ("add_kernel by triton", "add_kernel")
    if kind == "name":
        assert built[APPLIED] == ("cutlass_add_kernel by triton", "cutlass_add_kernel")
    else:
        version = decision.choice.ptxas_version or add_key.ptxas_version
        assert built[APPLIED][0].startswith(f"add_kernel by ptxas {version}") and cubins[APPLIED] != cubins[AS_IS]


def _recording(capture_ids: list[int], ms: float) -> rec.Recording:
    """A recorded run whose launches of the add kernel (10 a signature, `ms` each) were built as `capture_ids`."""
    signatures = [rec.Signature(id=i, kernel="add_kernel", triton_hash="h", capture_id=capture_id, arch="sm_90a",
                                grid=[4, 1, 1], args=[], arg_names=[], signature={}, constexprs={}, launches=10,
                                times_ms=[ms] * 3) for i, capture_id in enumerate(capture_ids)]
    return rec.Recording(signatures, arch="sm_90a", device=GPU, triton_version="3.6.0", torch_version=None, pid=1)


STEADY = [0.020, 0.02001, 0.02002]


def _arms_measured(store_path, decision, capture_ids: dict[str, int], applied_ms: list[float],
                   plain_ms: list[float] = STEADY) -> BuildConfirmation:
    """`confirm`'s reading of a run per time given, per arm, whose kernel launches are the arms' real captures."""
    runs = {AS_IS: [_recording([capture_ids[AS_IS]], ms) for ms in plain_ms],
            APPLIED: [_recording([capture_ids[APPLIED]], ms) for ms in applied_ms]}
    return _measure_build(BuiltKernel(Store.of(store_path), decision), runs, 0.01)


@pytest.fixture(scope="module")
def renamed_arms(add_key, tmp_path_factory):
    """A `cutlass_` decision and the capture of each of its arms' real runs, in one store."""
    path = tmp_path_factory.mktemp("renamed")
    decision = _decision(add_key, name="cutlass_")
    files = arm_files(path / "arms", [decision], {})
    return path, decision, {arm: _run_arm(path / "store", files[arm])[0][0].id for arm in ARMS}


@pytest.mark.parametrize("applied_ms, plain_ms, standing", [
    ([0.018, 0.01801, 0.01802], STEADY, "confirmed"),
    ([0.022, 0.02201, 0.02202], STEADY, "not confirmed"),  # above the 0.97 estimate
    ([0.0195, 0.0190, 0.0200], [0.020, 0.021, 0.019], "undecided"),  # holds 0.97 and 1
    ([0.0199, 0.01991, 0.01992], STEADY, "not confirmed")],  # no difference, by an interval that excludes 0.97
    ids=["faster", "slower", "too noisy", "no difference"])
def test_a_build_decision_is_judged_on_its_kernels_time_per_launch_in_each_arm(renamed_arms, applied_ms, plain_ms,
                                                                               standing):
    path, decision, captures = renamed_arms
    found = _arms_measured(path / "store", decision, captures, applied_ms, plain_ms)
    assert (found.applied_ran, found.plain_ran) == (True, True)
    assert found.ms == {APPLIED: pytest.approx(applied_ms), AS_IS: pytest.approx(plain_ms)}
    assert found.low <= found.ratio <= found.high and found.standing == standing and BUILD_STANDINGS[standing]
    assert found.confirmed == {"confirmed": True, "not confirmed": False}.get(standing)
    assert found.built == {APPLIED: ["cutlass_add_kernel by triton"], AS_IS: ["add_kernel by triton"]}


def test_a_comparison_whose_arms_did_not_build_as_asked_judges_nothing(renamed_arms):
    """The arms swapped (the run with the decision launched the plain build): however fast, not applied; and a run
    that did not launch the kernel at all is no comparison either."""
    path, decision, captures = renamed_arms
    swapped = _arms_measured(path / "store", decision, {APPLIED: captures[AS_IS], AS_IS: captures[APPLIED]},
                             [0.010, 0.01001, 0.01002])
    assert swapped.verdict == "faster" and not swapped.applied_ran and not swapped.plain_ran
    assert (swapped.standing, swapped.confirmed) == ("not applied", None)
    missing = _measure_build(BuiltKernel(Store.of(path / "store"), decision),
                             {AS_IS: [_recording([captures[AS_IS]], 0.02)] * 2, APPLIED: [_recording([], 0.01)] * 2},
                             0.01)
    assert missing.standing == "not applied" and missing.ratio is None and missing.built[APPLIED] == []


def test_a_kernel_the_runs_build_with_another_ptxas_is_named_not_applied_and_not_judged(add_key, tmp_path):
    """What torch's Inductor does between a cold run and a warm one (it points Triton at torch's own ptxas, through
    TRITON_PTXAS_PATH, once it compiles asynchronously): the arms' runs build the decision's kernel with another
    ptxas than its key's, so Triton writes other PTX too and the decision cannot apply. Each run that compiles it
    says so in one line, naming the ptxas; confirm's reading says which build the runs launched instead, and its
    standing is "other build", not a bare "not applied". The sweep's warning names the two ptxas of a recording
    that launched both builds. Real compiles in real processes, a real second ptxas (through both of Triton's ptxas
    variables: Triton 3.9 assembles sm_90a with the one for Blackwell)."""
    def release(binary) -> str:  # as Triton names a ptxas's version: its release
        return ".".join(map(str, binary.release[:2]))

    other = [b for b in OTHER_PTXAS if release(b) != add_key.ptxas_version]
    if not other:
        pytest.skip("needs a ptxas 13.x besides the one Triton builds with (tritonhook ptxas list)")
    ptxas = max(other, key=lambda binary: binary.release)
    decision = _decision(add_key, name="cutlass_")
    files = arm_files(tmp_path / "arms", [decision], {})
    pointed = {var.name: ptxas.path for var in (config.ptxas.TRITON_PTXAS_PATH,
                                                config.ptxas.TRITON_PTXAS_BLACKWELL_PATH)}  # 3.9 reads the second
    ran = {arm: _run_arm(tmp_path / "store", files[arm], env=pointed) for arm in ARMS}
    assert ran[APPLIED][1] == "add_kernel"  # built, and not renamed
    unlike = f"ptxas {release(ptxas)}, not {add_key.ptxas_version}"
    assert f"(add_kernel, cutlass_) not applied: this process builds the kernel with {unlike}" in ran[APPLIED][2]
    assert "not applied" not in ran[AS_IS][2]
    store = Store.of(tmp_path / "store")
    ids = {arm: ran[arm][0][0].id for arm in ARMS}
    found = _arms_measured(tmp_path / "store", decision, ids, [0.010, 0.01001, 0.01002])
    assert (found.standing, found.confirmed, found.built) == ("other build", None, {APPLIED: [], AS_IS: []})
    assert found.built_unlike[APPLIED] == [f"add_kernel by triton, ptxas {release(ptxas)} ({ptxas.path}): {unlike}; "
                                           f"other PTX"]
    assert "other build: add_kernel by triton" in found_text(found)
    plain_build, = _run_arm(tmp_path / "store", None)[0]
    warning = mixed_ptxas_warning(_recording([plain_build.id, ids[AS_IS]], 0.02), store)
    assert f"sm_90a by ptxas {release(ptxas)} ({ptxas.path}): 1 kernel(s), add_kernel" in warning
    assert f"sm_90a by ptxas {add_key.ptxas_version} (" in warning
    assert mixed_ptxas_warning(_recording([ids[APPLIED], ids[AS_IS]], 0.02), store) is None


@pytest.mark.release_independent  # which decisions ask for cold runs: no compile
def test_every_run_is_cold_where_the_decisions_were_measured_on_a_first_runs_builds_or_a_pin_turns_caches_off(
        add_key, tmp_path):
    """`confirm` runs both arms with Inductor's caches off where its decisions come from a recording that compiled
    as a first run does (it holds Inductor's compile-time decisions), a result's or, for decisions kept in the
    store, the one their evidence was measured on (through its sweep result, or itself), or where a pin of an
    Inductor kernel or of a compile-time choice turns them off in the applied arm; a build decision from a warm
    recording or from none the store holds, or a pin of a `triton.autotune` kernel, runs as the workload usually
    does. (On an H200 a kept `cutlass_` decision of a max-autotune template ran warm in both arms before.)"""
    build = _decision(add_key, name="cutlass_")
    triton_pin = decisions.Decision(decisions.AutotuneKey("add_kernel", ("4096",), GPU),
                                    decisions.Choice(config=(("BLOCK", 1024),)), build.evidence)
    choice_pin = dataclasses.replace(  # a pick of Inductor's select_algorithm: its config names the choice
        triton_pin, choice=decisions.Choice(config=(("choice", "triton_mm"),)))
    cold_compile = _recording([], 0.02)
    cold_compile.autotune = [{"tuner": _triton.SELECT_ALGORITHM, "kernel": "mm"}]

    def made(*kept, recording=None):
        return Made(list(kept), {}, recording, {})

    assert runs_cold(made(build)) is None and runs_cold(made(build, triton_pin)) is None
    assert runs_cold(made(build, recording=_recording([], 0.02))) is None
    assert "compiled as a first run does" in runs_cold(made(build, recording=cold_compile)._replace(
        measured_on=(cold_compile,)))
    assert "turns them off in the applied arm" in runs_cold(made(build, choice_pin))

    store = Store(tmp_path / "store")
    cold_compile.id, warm = store.add_result(rec.RESULT_KIND, cold_compile.to_json()), _recording([], 0.02)
    warm.id = store.add_result(rec.RESULT_KIND, warm.to_json())
    swept = SweepResult([], ["plain", "cutlass_"], 9, cold_compile.id, None, {})
    swept_id = store.add_result(SWEEP_KIND, swept.to_json())

    def kept_from(kind: str, source_id: int | None) -> str | None:
        evidence = dataclasses.replace(build.evidence, source_kind=kind, source_id=source_id)
        (saved,) = decisions.save(store, [(dataclasses.replace(build, evidence=evidence), None)])
        return runs_cold(kept(store, [saved.id]))

    assert f"recording {cold_compile.id} compiled as a first run does" in kept_from(SWEEP_KIND, swept_id)
    assert f"recording {cold_compile.id} compiled as a first run does" in kept_from(BASELINE_PICK_KIND,
                                                                                     cold_compile.id)
    assert kept_from(BASELINE_PICK_KIND, warm.id) is None
    assert kept_from(SWEEP_KIND, cold_compile.id) is None  # a sweep's id from another store: a recording here
    assert kept_from(SWEEP_KIND, 999) is None and kept_from(SWEEP_KIND, None) is None


@pytest.mark.release_independent  # which picks each arm holds: files only, no compile
def test_both_arms_hold_the_first_runs_picks_but_where_a_decision_pins_the_key_or_a_fusion_under_it(add_key,
                                                                                                     tmp_path):
    """Where the decisions were measured on a first run's builds, both arms hold that recording's autotune picks
    (compile-time choices, template fusions, tuned configs), so each run builds the kernels the decisions were
    measured on and benchmarks nothing while it compiles; a key a decision pins, and a template fusion under it
    (its GEMM's choice key and the graph node), is left to the autotuner in the arm as it is and pinned by the
    decision in the other. The confirmation says how many picks were held."""
    pinned_key, held_key = ["torch.float16", "[4096, 2048]"], ["torch.float16", "[256, 2048]"]
    recorded = [{"tuner": _triton.SELECT_ALGORITHM, "kernel": "mm", "key": key, "group": group,
                 "chosen": {"choice": f"triton_mm_{group}"}, "timings": []}
                for group, key in ((1, pinned_key), (2, held_key))]
    recorded += [{"tuner": "template fusion", "kernel": "mm", "key": [*key, "at mm_default (forward)"],
                  "group": group, "chosen": {"choice": f"triton_mm_{group - 2}", "fused": True}, "timings": []}
                 for group, key in ((3, pinned_key), (4, held_key))]
    first_run = _recording([], 0.02)
    first_run.autotune, first_run.id = recorded, 7
    choice_pin = decisions.Decision(decisions.AutotuneKey("mm", tuple(pinned_key), GPU),
                                    decisions.Choice(config=(("choice", "triton_mm_9"),)),
                                    _decision(add_key).evidence)
    build = _decision(add_key, name="cutlass_")
    held, unpinned = held_picks(first_run, [choice_pin, build])
    assert sorted(list(pick.key.tuning_key) for pick in held) == [held_key, [*held_key, "at mm_default (forward)"]]
    assert unpinned == []
    files = arm_files(tmp_path / "arms", [choice_pin, build], {}, held=held)
    in_file = {arm: [d.key.tuning_key if isinstance(d.key, decisions.AutotuneKey) else d.choice.name
                     for d, _ in read_file(files[arm]).decisions] for arm in ARMS}
    held_keys = [tuple(held_key), (*held_key, "at mm_default (forward)")]
    assert in_file[AS_IS] == held_keys
    assert in_file[APPLIED] == [tuple(pinned_key), "cutlass_", *held_keys]
    made = Confirmation(None, ["python", "w.py"], 2, [], {}, {}, inductor_cold=True, held_picks=len(held))
    assert made.source == "kept decisions, Inductor's caches off in every run, its recording's 2 autotune picks " \
                          "held in both arms"
    assert Confirmation.from_json(made.to_json()).held_picks == 2


def found_text(found: BuildConfirmation) -> str:
    """A confirmation of `found` alone, rendered as a terminal shows it."""
    console = rich.console.Console(width=400, record=True, file=io.StringIO())
    console.print(Confirmation(None, ["python", "w.py"], 3, [], {}, {}, builds=[found]))
    return console.export_text()


@pytest.mark.skipif(not READS_CONTROLS, reason="needs a ptxas that reads control files (CUDA >= 13.3)")
def test_a_control_file_its_ptxas_refuses_builds_plain_and_the_comparison_is_not_applied(add_key, tmp_path):
    """The applied arm asked for a control file ptxas refuses (CompileIQ's files are made for one ptxas release):
    its build falls back to Triton's own, so the arms ran one build and no timing may confirm the decision."""
    import hashlib

    acf = b"not a control file"
    sha = hashlib.sha256(acf).hexdigest()
    decision = _decision(add_key, ptxas_version=READS_CONTROLS[0].version, controls_sha256=sha)
    files = arm_files(tmp_path / "arms", [decision], {sha: acf})
    ids = {arm: _run_arm(tmp_path / "store", files[arm])[0][0].id for arm in ARMS}
    found = _arms_measured(tmp_path / "store", decision, ids, [0.010, 0.01001, 0.01002])
    assert found.plain_ran and not found.applied_ran and found.standing == "not applied"
    assert found.built[APPLIED][0].startswith("add_kernel by triton (the decision's build failed")


AUTOTUNED = """
import contextlib, torch, triton
from tritonhook.samples import add_kernel
configs = [triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((256, 2), (512, 4), (1024, 4))]
benchmarked = []
def do_bench(kernel_call, quantiles):
    benchmarked.append(1)
    return [0.01, 0.009, 0.011]
autotuned = triton.autotune(configs, key=["n"], do_bench=do_bench)(add_kernel)
x = torch.zeros(4096)
with contextlib.suppress(Exception):  # no GPU: the launch after the autotuner's choice fails
    autotuned[(1,)](x, x, x, 4096)
print(len(benchmarked), autotuned.best_config.kwargs["BLOCK"])
"""


def test_a_pinned_config_runs_in_the_applied_arm_only(tmp_path):
    """The config kind: the applied arm's autotuner runs the pinned config and benchmarks nothing; the arm as it is
    benchmarks its configs. Real processes, Triton's real Autotuner (its launch fails with no GPU, after the pick)."""
    pytest.importorskip("torch")
    pin = decisions.Decision(decisions.AutotuneKey("add_kernel", ("4096",) + ("torch.float32",) * 3, GPU),
                             decisions.Choice(config=tuple(_triton.autotune_config(
                                 __import__("triton").Config({"BLOCK": 1024}, num_warps=4)).items())),
                             decisions.Evidence("add_kernel", 0.9, 0.89, 0.91, "bitwise", "2026-11-27", "0.1.0",
                                                "sweep", 1))
    files = arm_files(tmp_path / "arms", [pin], {})
    printed = {arm: _run_arm(tmp_path / "store", files[arm], AUTOTUNED)[1] for arm in ARMS}
    assert printed[APPLIED] == "0 1024"
    assert printed[AS_IS].startswith("3 ")  # tuned: every config benchmarked


def test_a_decision_carries_its_newest_confirmation_in_ls_and_show(add_key, tmp_path):
    """`decisions ls/show` (and their --json) print beside a kept decision what the newest confirmation of it
    says, found by its key and choice whatever result it was made from."""
    decision = _decision(add_key, name="cutlass_")
    store = Store.of(tmp_path / "store")
    (kept,) = decisions.save(store, [(decision, None)])
    measured = BuildConfirmation("add_kernel", "cutlass_", {"key": kept.to_json()["key"],
                                                             "choice": kept.to_json()["choice"]},
                                 {"ratio": 0.97, "low": 0.96, "high": 0.98}, {AS_IS: [0.02] * 2, APPLIED: [0.021] * 2},
                                 1.05, 1.04, 1.06, "slower", applied_ran=True, plain_ran=True)
    for ran in (False, True):  # the older one not applied, the newer one judged
        measured.applied_ran = ran
        newest = store.add_result(RESULT_KIND, Confirmation(None, ["python", "w.py"], 2, [], {}, {},
                                                            builds=[measured]).to_json())
    assert store.result(newest).builds[0].standing == "not confirmed"  # read back through its result kind
    assert newest_confirmations(store)[decision_text(kept.to_json())]["id"] == newest
    listed = json.loads(_tritonhook("decisions", "ls", "--store", str(tmp_path / "store"), "--json").stdout)
    (entry,) = listed["decisions"]
    assert entry["confirmation"]["id"] == newest and entry["confirmation"]["standing"] == "not confirmed"
    shown = _tritonhook("decisions", "show", str(kept.id), "--store", str(tmp_path / "store")).stdout
    assert f"in the workload: not confirmed x1.050 [1.040, 1.060] (confirmation {newest})" in shown


GPU_WORKLOAD = """
import torch, triton, triton.language as tl

@triton.jit
def fma_loop(x_ptr, out_ptr, n, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    acc = x
    for _ in range(STEPS):
        acc = acc * 1.0001 + x
    tl.store(out_ptr + offsets, acc, mask=mask)

x = torch.randn(1 << 22, device="cuda")
out = torch.empty_like(x)
for _ in range(200):
    for steps in (256, 64):  # two builds of one kernel: two keys
        fma_loop[(x.numel() // 1024,)](x, out, x.numel(), STEPS=steps, BLOCK=1024)
torch.cuda.synchronize()
"""


@pytest.mark.gpu
def test_confirm_times_build_decisions_inside_the_workload_on_a_gpu(tmp_path):
    """On a GPU, end to end: a recorded run of a compute-bound kernel at two constexprs gives its two keys; two kept
    decisions, `-O0` (far slower) for one build and `cutlass_` for the other, are confirmed in the workload, 3 runs
    per arm, ABBA in fresh processes: both arms built as asked (the captures say so), `-O0` measured slower, so NOT
    confirmed against its 0.97 estimate, and `decisions ls --json` carries each decision's confirmation."""
    store_path = tmp_path / "store"
    workload = tmp_path / "w.py"
    workload.write_text(GPU_WORKLOAD)
    _tritonhook("record", "--store", str(store_path), "--", sys.executable, str(workload), gpu=None)
    store = Store.of(store_path)
    recording = store.results(rec.RESULT_KIND, limit=1)[0]
    keys = {s.constexprs["STEPS"]: capture_key(store, store.get(s.capture_id), recording.device)
            for s in recording.signatures if s.kernel == "fma_loop"}
    kept = decisions.save(store, [(_decision(keys[256], options=("-O0",)), None),
                                  (_decision(keys[64], name="cutlass_"), None)])
    done = _tritonhook("decisions", "confirm", "--store", str(store_path), "--runs", "3", "--json",
                       *[arg for d in kept for arg in ("--decision", str(d.id))], "--", sys.executable, str(workload),
                       gpu=None)
    found = {b["choice"]: b for b in json.loads(done.stdout)["builds"]}
    slow, renamed = found["plain+opt:-O0"], found["cutlass_"]
    for build in (slow, renamed):
        assert build["applied_ran"] and build["plain_ran"] and all(len(v) == 3 for v in build["ms"].values()), build
    assert slow["verdict"] == "slower" and slow["ratio"] > 1.1 and slow["standing"] == "not confirmed", slow
    assert renamed["standing"] in ("confirmed", "not confirmed", "undecided") and renamed["low"] <= renamed["high"]
    assert renamed["built"][APPLIED] == ["cutlass_fma_loop by triton"], renamed
    listed = json.loads(_tritonhook("decisions", "ls", "--store", str(store_path), "--json", gpu=None).stdout)
    assert {d["choice"]["name"]: d["confirmation"]["standing"] for d in listed["decisions"]}["plain"] == \
        "not confirmed"


MAX_AUTOTUNE_WORKLOAD = """
import torch
import torch._inductor.config as inductor_config

inductor_config.max_autotune_gemm_backends = "TRITON"
model = torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.ReLU()).cuda().half()
compiled = torch.compile(model, mode="max-autotune-no-cudagraphs")
x = torch.randn(4096, 2048, device="cuda", dtype=torch.half)
with torch.inference_mode():
    for _ in range(100):
        compiled(x)
torch.cuda.synchronize()
"""


@pytest.mark.gpu
def test_a_max_autotune_workloads_decision_is_confirmed_with_every_run_compiling_cold_on_a_gpu(tmp_path):
    """On a GPU: a GEMM + ReLU compiled with max-autotune (Inductor's Triton GEMM templates, chosen by benchmarking
    while compiling), recorded cold, and a `cutlass_` decision kept for its template kernel, measured on that
    recording. It holds Inductor's compile-time decisions, so `confirm` runs every run of both arms with Inductor's
    caches off (`runs_cold`) and the recording's picks held (`held_picks`): each of the four runs compiled the
    recorded template choice without benchmarking any (its recording holds the pin, no choice of its own), the
    applied arm built the renamed template and the arm as it is the plain one, and the kernel's time per launch
    came from every run. On an H200 (before `runs_cold` read a kept decision's recording) the four runs reused the
    recording's Inductor cache; then (its key the PTX text, which names the source file Inductor wrote under a cold
    run's own cache directory) neither arm built the decision's kernel."""
    store_path = tmp_path / "store"
    workload = tmp_path / "w.py"
    workload.write_text(MAX_AUTOTUNE_WORKLOAD)
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    _tritonhook("record", "--store", str(store_path), "--", sys.executable, str(workload), gpu=None, env=env)
    store = Store.of(store_path)
    recording = store.results(rec.RESULT_KIND, limit=1)[0]
    assert any(d["tuner"] == "select_algorithm" for d in recording.inductor_tuning), recording.autotune
    template = max((s for s in recording.signatures if s.kernel.startswith("triton_tem_") and s.launches),
                   key=lambda s: s.gpu_ms)
    key = capture_key(store, store.get(template.capture_id), recording.device)
    renamed = _decision(key, name="cutlass_")
    measured_there = dataclasses.replace(renamed.evidence, kernel=template.kernel, source_kind=rec.RESULT_KIND,
                                         source_id=recording.id)
    (kept_rename,) = decisions.save(store, [(dataclasses.replace(renamed, evidence=measured_there), None)])
    done = _tritonhook("decisions", "confirm", "--store", str(store_path), "--runs", "2", "--json", "--decision",
                       str(kept_rename.id), "--", sys.executable, str(workload), gpu=None, env=env)
    assert "Inductor's caches off" in done.stderr, done.stderr[-2000:]
    confirmation = json.loads(done.stdout)
    assert confirmation["inductor_cold"] and confirmation["held_picks"] >= 1, confirmation
    (build,) = confirmation["builds"]
    assert build["applied_ran"] and build["plain_ran"] and all(len(v) == 2 for v in build["ms"].values()), build
    assert build["built"][APPLIED] == [f"cutlass_{template.kernel} by triton"], build["built"]
    runs = store.results(rec.RESULT_KIND, limit=4)
    tuners = [{d["tuner"] for d in run.autotune} for run in runs]
    assert len(runs) == 4 and all("pinned" in found and "select_algorithm" not in found for found in tuners), tuners
