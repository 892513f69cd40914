"""`ab` honours the whole variant grammar (docs/variants.md): each arm's children compile through Triton's own
pipeline with the variant's ptxas, options and control file, in a Triton cache of their own, and every capture
records what built it. Real Triton, real ptxas, fresh child processes; no GPU: the children report their compile
wall time (as in tests/test_ab.py). What an arm's child is given reaches Triton's compile under every release (3.6
and 3.9 pick different ptxas binaries for sm_90).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest

from tritonhook import _triton, ab, launcher, preflight

from tritonhook import binaries as tools
from tritonhook.ab.runner import kernel_summaries
from tritonhook.errors import TritonhookError
from tritonhook.measure.variants import parse_variants
from tritonhook.store import Store

OPTIONS = "+opt:--maxrregcount=128+opt:--override-directive-values"
BENCH = textwrap.dedent("""
    import os, sys, time
    if "OWN_PTXAS_OPTIONS" in os.environ:  # a command that sets Triton's options itself
        os.environ["PTXAS_OPTIONS"] = os.environ["OWN_PTXAS_OPTIONS"]
    from tritonhook import ab
    from tritonhook.samples import compile_sample
    start = time.perf_counter()
    compile_sample(sys.argv[1], 90)
    ab.record("compile", (time.perf_counter() - start) * 1e3)
""")


@pytest.fixture
def bench(tmp_path, monkeypatch):
    """The benchmark script, run with a Triton cache and GPU setting of the test's own."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    monkeypatch.delenv("TRITONHOOK_GPU", raising=False)
    monkeypatch.delenv("PTXAS_OPTIONS", raising=False)
    script = tmp_path / "bench.py"
    script.write_text(BENCH)
    return script


@pytest.fixture
def acf(tmp_path):
    """Not a valid control file (CompileIQ's are encrypted): ptxas 13.4 reads it and refuses it."""
    path = tmp_path / "tiny.acf"
    path.write_bytes(b"not an encrypted ACF\n")
    return path


def run(store_path, bench, spec: str, sample: str = "matmul_fp32_ieee") -> ab.ABReport:
    return ab.run_interleaved([sys.executable, str(bench), sample], parse_variants(spec), rounds=5,
                              store=Store(store_path), select=None, check=None, progress=False)


def other_ptxas():
    """The newest ptxas found of another version than Triton's own for sm_90 (under 3.6 the cu13 wheel's 13.4.92
    against Triton's 12.8.93, under 3.9 the same against Triton's ptxas-blackwell 13.4.59), or None."""
    own = tools.ptxas_version(_triton.triton_ptxas("sm_90a"))
    others = [b for b in tools.find_ptxas() if b.version != own]
    return max(others, key=lambda b: tuple(map(int, b.version.split(".")))) if others else None


@pytest.mark.every_release  # Triton's ptxas knobs and compile options (_triton.check_ptxas_arm) differ by release
@pytest.mark.parametrize("arm", ["options", "another ptxas"])
def test_an_arms_child_builds_with_its_ptxas_and_options_through_tritons_own_compile(arm, store_path, tmp_path):
    """What `ab` gives each arm's child (`launcher.Ptxas`) reaches Triton's own compile there: the fp32 matmul for
    sm_90a at 128 registers under --maxrregcount=128 (255 plain: the A/B test below), assembled by the arm's ptxas,
    and its capture says what built it. One child an arm, under every release's knobs."""
    ptxas = None
    if arm == "another ptxas":
        other = other_ptxas()
        if other is None:
            pytest.skip("no ptxas of another version than Triton's own for sm_90 found")
        ptxas = other.path
    args = ("--maxrregcount=128", "--override-directive-values")
    _triton.check_ptxas_arm(arm, ptxas, args)
    settings = launcher.ChildSettings(capture=launcher.Capture.of(store_path),
                                      ptxas=launcher.Ptxas(ptxas, ptxas, args, cache_dir=str(tmp_path / "cache")))
    done = launcher.run([sys.executable, "-c", "from tritonhook.samples import compile_sample; "
                         "compile_sample('matmul_fp32_ieee', 90)"], settings, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    store = Store(store_path, create=False)
    [row] = kernel_summaries(store, [c.id for c in store.captures()])
    assert (row["registers"], tuple(row["ptxas_options"])) == (128, args), row
    assert row["ptxas"] == (ptxas or _triton.triton_ptxas("sm_90a"))


def test_an_arm_with_ptxas_options_builds_with_them_and_plain_keeps_its_build_in_the_same_run(store_path, bench):
    """docs/variants.md#ptxas-options: the fp32 matmul for sm_90a keeps 255 registers plain and gets 128 with
    --maxrregcount=128 and --override-directive-values; the two arms' builds never meet in a cache."""
    report = run(store_path, bench, f"plain,plain{OPTIONS}")
    plain, limited = report.variants
    assert limited.label == f"plain{OPTIONS}" and limited.assembles
    assert [k["registers"] for k in report.kernels[plain.label]] == [255]
    assert [k["registers"] for k in report.kernels[limited.label]] == [128]
    assert report.why[limited.label][0]["resources"]["registers"] == {"base": 255, "variant": 128}
    store = Store(store_path, create=False)
    [saved] = ab.saved_results(store).results
    assert saved.report.variants == report.variants  # read back as run, nothing resolved again
    expected = {plain.label: (), limited.label: ("--maxrregcount=128", "--override-directive-values")}
    for label, ids in saved.captures.items():
        captures = store.captures(ids=ids)
        assert len(captures) == 5  # one build per round: a compile, then hits of the arm's own cache
        assert {c.event for c in captures[1:]} == {"cache_hit"}
        assert {_triton.ptxas_args_of(c.options) for c in captures} == {expected[label]}
        assert {c.ptxas_path for c in captures} == {_triton.triton_ptxas("sm_90a")}  # Triton's own ptxas


def test_an_arm_with_another_ptxas_records_that_ptxas_in_its_captures(store_path, bench):
    """An arm of another ptxas (`other_ptxas`) records that ptxas in each of its captures and its report's rows."""
    own, other = _triton.triton_ptxas("sm_90a"), other_ptxas()
    if other is None:
        pytest.skip("no ptxas of another version than Triton's own for sm_90 found")
    report = run(store_path, bench, f"plain,plain@{other.path}", sample="add")
    assert report.variants[1].label == f"plain@{other.version}"
    store = Store(store_path, create=False)
    [saved] = ab.saved_results(store).results
    for label, ptxas in (("plain", own), (f"plain@{other.version}", other.path)):
        captures = store.captures(ids=saved.captures[label])
        assert {c.ptxas_path for c in captures} == {ptxas}
        [version] = {c.ptxas_version for c in captures}  # Triton's "13.4" for 13.4.92
        assert tools.ptxas_version(ptxas).startswith(version)
        [row] = report.kernels[label]
        assert (row["ptxas"], row["ptxas_version"]) == (ptxas, version)


def test_a_command_that_sets_its_own_ptxas_options_is_refused_not_timed_as_the_variant(store_path, bench,
                                                                                       monkeypatch):
    monkeypatch.setenv("OWN_PTXAS_OPTIONS", "")
    with pytest.raises(TritonhookError, match=r"variant plain\+opt:-O2: capture \d+ \(add_kernel\) was built by "
                                              r"ptxas .* with options \(none\), not as the variant says"):
        run(store_path, bench, "plain,plain+opt:-O2", sample="add")


WITH_CONTROLS = [b for b in tools.find_ptxas() if tools.supports_controls(b.path)]
WITHOUT_CONTROLS = [b for b in tools.find_ptxas() if not tools.supports_controls(b.path)]


@pytest.mark.every_release  # Triton's ptxas knobs and compile options (_triton.check_ptxas_arm) differ by release
@pytest.mark.skipif(not WITH_CONTROLS, reason="no ptxas with --apply-controls (CUDA >= 13.3) found")
def test_an_arm_hands_its_control_file_to_ptxas_through_triton(store_path, bench, acf):
    """The file reaches ptxas (which refuses this one): the child's failure is ptxas's own line."""
    new = WITH_CONTROLS[0]
    with pytest.raises(TritonhookError) as info:
        run(store_path, bench, f"plain,plain@{new.path}+acf:{acf}", sample="add")
    message = str(info.value)  # ptxas names itself: "ptxas-blackwell fatal" for Triton 3.9's
    assert re.search(rf"\(round 1, variant plain@{re.escape(new.version)}\+acf:{re.escape(str(acf))}\): "
                     rf"ptxas\S* fatal +: Invalid compiler controls file$", message) and "\n" not in message


def tritonhook_ab(store_path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tritonhook", "ab", "--store", str(store_path), *map(str, args)],
                          capture_output=True, text=True)


@pytest.mark.every_release  # Triton's ptxas knobs and compile options (_triton.check_ptxas_arm) differ by release
@pytest.mark.skipif(not WITHOUT_CONTROLS, reason="no ptxas without --apply-controls (< 13.3) found")
def test_a_control_file_for_a_ptxas_that_cannot_read_it_is_one_line(store_path, bench, acf):
    old = WITHOUT_CONTROLS[0]
    done = tritonhook_ab(store_path, "--variants", f"plain,plain@{old.path}+acf:{acf}", "--", sys.executable, bench,
                         "add")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.rstrip().endswith(f"ptxas {old.version} at {old.path} cannot read it")
    # no @: Triton's own ptxas for this GPU builds it; with no GPU seen, every one Triton may run must read it
    gpu = preflight.visible_gpu()
    triton_own = [p for p in _triton.ptxases_for(gpu and gpu.capability) if not tools.supports_controls(p)]
    if triton_own:
        done = tritonhook_ab(store_path, "--variants", f"plain,plain+acf:{acf}", "--", sys.executable, bench, "add")
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert f"variant plain+acf:{acf}: acf:{acf} needs a ptxas with --apply-controls" in done.stderr
        assert f"at {triton_own[0]} cannot read it; it is Triton " in done.stderr


def test_the_cli_runs_an_options_arm_and_its_json_says_what_built_each_kernel(store_path, bench):
    done = tritonhook_ab(store_path, "--variants", f"plain,plain{OPTIONS}", "--rounds", "5", "--json", "--",
                         sys.executable, bench, "matmul_fp32_ieee")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [v["options"] for v in result["variants"]] == [[], ["--maxrregcount=128", "--override-directive-values"]]
    [plain], [limited] = result["kernels"].values()
    assert (plain["registers"], plain["ptxas_options"]) == (255, [])
    assert (limited["registers"], limited["ptxas_options"]) == (128, ["--maxrregcount=128",
                                                                      "--override-directive-values"])


def test_compare_in_one_process_refuses_an_arm_it_cannot_build():
    with pytest.raises(TritonhookError, match=r"ab.compare\(\): variant plain\+opt:-O2 names a ptxas, ptxas "
                                              r"options or a control file"):
        ab.compare(lambda: None, "plain,plain+opt:-O2")
