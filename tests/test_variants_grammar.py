"""The variant grammar (docs/variants.md) and the ptxas runs behind it, on a CPU with real ptxas binaries: specs
good and bad (one-line errors), a codegen option changing a real Triton cubin, the --apply-controls check against a
ptxas without it (< 13.3) and one with it (13.4), a hung ptxas killed and a crashed one reported (wrapper scripts
around a real ptxas), and a sweep build where one failing variant leaves the others.

Where each runs: CI's fresh machine has Triton 3.6's ptxas 12.8 and 12.9 (ptxas-blackwell), the test extra's
nvidia cu13 wheel (cuda-tile[tileiras]) ptxas 13.4, and under the 3.9 venv that wheel's 12.9 and 13.4: every test
here runs in both venvs. A test needing a ptxas without --apply-controls, or one with it, skips where none is found.
"""

from __future__ import annotations

import hashlib
import json
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tritonhook
from tritonhook import cli, config
from tritonhook import binaries as tools
from tritonhook.cubin import Cubin
from tritonhook.errors import TritonhookError
from tritonhook._triton import config_matches
from tritonhook.measure.variants import Variant, build_options, config_of_label, parse_variants
from tritonhook.samples import compile_sample
from tritonhook.store import Store
from tritonhook.sweep.replay import failed_builds_warning
from tritonhook.sweep.builds import build_variants, captured_ptxas

DATA = Path(__file__).parent / "data"
FOUND = tools.one_per_version(tools.find_ptxas())
WITH_CONTROLS = [b for b in FOUND if tools.supports_controls(b.path)]
WITHOUT_CONTROLS = [b for b in FOUND if not tools.supports_controls(b.path)]


def _needs(binaries: list, what: str):
    return pytest.mark.skipif(not binaries, reason=f"no {what} found")


@pytest.fixture
def acf(tmp_path) -> Path:
    """Not a valid control file: CompileIQ's ACFs are encrypted (its wheel merges them through a native library),
    so no tiny valid one can be written here; ptxas 13.4 reads this one and refuses it."""
    path = tmp_path / "tiny.acf"
    path.write_bytes(b"not an encrypted ACF\n")
    return path


def _wrapper(tmp_path: Path, name: str, real: str, body: str) -> str:
    """A script standing in for ptxas: answers --version and --help as `real` does, runs `body` otherwise."""
    path = tmp_path / name
    path.write_text(f'#!/bin/bash\ncase "$*" in *--version*|*--help*) exec "{real}" "$@";; esac\n{body}\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


# ----- the grammar --------------------------------------------------------------------------------------------------
def test_names_keep_their_labels_and_repeats_are_numbered():
    parsed = parse_variants("plain,cutlass_,strip,plain")
    assert [v.label for v in parsed] == ["plain", "cutlass_", "strip", "plain#2"]
    assert not any(v.assembles for v in parsed)


def test_a_spec_names_ptxas_options_and_a_control_file(acf):
    newest = max(FOUND, key=lambda b: tuple(map(int, b.version.split("."))))
    major = newest.version.split(".")[0]
    spec = f"@{major},cutlass_@{newest.path}+opt:--maxrregcount=128+opt:-O2,strip+opt:-maxrregcount=64,acf:{acf}"
    at_major, at_path, stripped, controlled = parse_variants(spec)
    assert at_major.label == f"plain@{newest.version}" and at_major.rename is None
    assert tools.ptxas_version(at_major.ptxas) == newest.version  # @13: the newest 13.x
    assert at_path.ptxas == newest.path and at_path.options == ("--maxrregcount=128", "-O2")
    assert at_path.label == f"cutlass_@{newest.version}+opt:--maxrregcount=128+opt:-O2"
    assert stripped.label == "strip+opt:--maxrregcount=64"  # the short spelling, canonical
    assert controlled.label == f"plain+acf:{acf}" and controlled.ptxas is None
    assert controlled.controls.sha256 == hashlib.sha256(acf.read_bytes()).hexdigest()
    assert controlled.to_json()["controls"] == {"path": str(acf), "sha256": controlled.controls.sha256}


def test_an_exact_version_wins_over_a_newer_one_with_that_prefix():
    binary = FOUND[0]
    assert parse_variants(f"plain,@{binary.version}")[1].ptxas == binary.path


@pytest.mark.parametrize("spec, message", [
    ("plain", "at least two"),
    ("plain,a-b", "rename prefix 'a-b'"),
    ("plain,@99.1", "no ptxas 99.1 found (found: "),
    ("plain,@latest", "give a ptxas version (@13.4) or a path"),
    ("plain,@/bin/true", "not a ptxas that answers --version"),
    ("plain,cutlass_+foo:bar", "'foo:bar' is not a part"),
    ("plain,opt:-o", "--output-file names the output"),
    ("plain,opt:--output-file=x.cubin", "--output-file names the output"),
    ("plain,opt:--apply-controls=x.acf", "give it as acf:FILE"),
    ("plain,opt:-arch=sm_90a", "--gpu-name picks the target"),
    ("plain,opt:kernel.ptx", "give one ptxas option"),
    ("plain,opt:--maxrregcount 32", "give one ptxas option"),
    ("plain,opt:--device-debug", "not a ptxas codegen option"),
    ("plain,opt:-O7", "--opt-level takes 0|1|2|3"),
    ("plain,opt:--fmad=maybe", "--fmad takes true|false"),
    ("plain,acf:/nonexistent/x.acf", "acf:/nonexistent/x.acf: cannot read the control file"),
    ("plain,plain+config:", "give 1 to 32 NAME=VALUE items"),
    ("plain,plain+config:BLOCK", "'BLOCK' is not NAME=VALUE"),
    ("plain,plain+config:BLOCK=1,BLOCK=2", "BLOCK given twice"),
    ("plain,plain+config:A=1+config:B=2", "at most one config: part"),
])
def test_a_bad_spec_is_one_line_naming_what_is_wrong(spec, message):
    with pytest.raises(TritonhookError) as info:
        parse_variants(spec)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_config_part_keeps_its_commas_and_names_values_as_data():
    """`config:` holds NAME=VALUE items separated by commas, which would otherwise separate variants: a piece with
    `=` continues the config before it. Values are numbers, booleans or bare words, never evaluated."""
    plain, pinned, renamed = parse_variants("plain,plain+config:BLOCK_SIZE_K=128,SPLIT_K=4,num_warps=4,"
                                            "kind=__import__('os'),cutlass_+opt:-O2")
    assert pinned.label == "plain+config:BLOCK_SIZE_K=128,SPLIT_K=4,num_warps=4,kind=__import__('os')"
    assert pinned.config == (("BLOCK_SIZE_K", 128), ("SPLIT_K", 4), ("num_warps", 4), ("kind", "__import__('os')"))
    assert pinned.rename is None and not pinned.assembles and renamed.label == "cutlass_+opt:-O2"
    assert config_of_label(pinned.label + "#2") == dict(pinned.config)
    assert config_of_label("cutlass_+opt:-O2") is None
    assert config_matches({"SPLIT_K": 4}, {"BLOCK_SIZE_K": 128, "SPLIT_K": 4})
    assert not config_matches({"SPLIT_K": 4, "num_stages": 3}, {"SPLIT_K": 4})
    assert Variant.from_json(pinned.to_json()).config == pinned.config


@pytest.mark.parametrize("command", [["diff", "a.ptx", "b.ptx", "--variants", "plain,plain+config:BLOCK=64"],
                                     ["ptxas-matrix", "a.ptx", "--options", "config:BLOCK=64"]])
def test_commands_that_build_one_kernel_refuse_a_config_in_one_line(command):
    result = subprocess.run([sys.executable, "-m", "tritonhook", *command], capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr and result.stderr.count("\n") == 1
    assert "config" in result.stderr, result.stderr


def test_one_control_file_per_variant(acf):
    with pytest.raises(TritonhookError, match="at most one acf: part"):
        parse_variants(f"plain,acf:{acf}+acf:{acf}")


def test_matrix_options_take_opt_and_acf_parts_only(acf):
    assert build_options(f"opt:-O2+acf:{acf}", "--options")[0] == ("-O2",)
    with pytest.raises(TritonhookError, match="give only opt: and acf: parts"):
        build_options("cutlass_+opt:-O2", "--options")


# ----- control files: which ptxas reads them -----------------------------------------------------------------------
@_needs(WITHOUT_CONTROLS, "ptxas without --apply-controls (< 13.3)")
def test_a_control_file_for_a_ptxas_without_apply_controls_is_one_line_naming_the_version_it_needs(acf):
    old = WITHOUT_CONTROLS[0]
    with pytest.raises(TritonhookError) as info:
        parse_variants(f"plain,@{old.path}+acf:{acf}")
    assert str(info.value).endswith(f"acf:{acf} needs a ptxas with --apply-controls (CUDA >= 13.3); "
                                    f"ptxas {old.version} at {old.path} cannot read it")
    with pytest.raises(tools.AssembleError) as info:  # the captured ptxas is only known at build time
        tools.assemble((DATA / "ffma_loop.ptx").read_text(), old.path, "sm_80",
                       controls=tools.read_control_file(acf))
    assert info.value.cause == "unsupported" and "cannot read it" in str(info.value)


@_needs(WITH_CONTROLS, "ptxas with --apply-controls (CUDA >= 13.3)")
def test_a_ptxas_with_apply_controls_reads_the_file_and_refuses_an_invalid_one(acf):
    new = WITH_CONTROLS[0]
    assert tools.supports_controls(new.path) and not any(tools.supports_controls(b.path) for b in WITHOUT_CONTROLS)
    (variant,) = parse_variants(f"plain,@{new.path}+acf:{acf}")[1:]
    with pytest.raises(tools.AssembleError) as info:
        tools.assemble((DATA / "ffma_loop.ptx").read_text(), variant.ptxas, "sm_80", controls=variant.controls)
    assert info.value.cause == "error" and "\n" not in str(info.value)
    assert "(exit status 255): " in str(info.value) and "fatal   : Invalid compiler controls file" in str(info.value)


# ----- a real cubin, a hang, a crash -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """A store with a real capture of the fp32 matmul sample for sm_90a (more than 32 registers)."""
    store_dir = tmp_path_factory.mktemp("grammar-store")
    with pytest.MonkeyPatch.context() as patch, tritonhook.session(store_dir) as session:
        patch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.mktemp("grammar-cache")))
        kernel = compile_sample("matmul_fp32_ieee", 90)
    store = Store(store_dir)
    (capture,) = [c for c in store.captures(ids=session.capture_ids) if c.triton_hash == kernel.hash]
    return store, capture


def test_maxrregcount_lowers_the_register_count_of_a_real_triton_cubin_with_override_directive_values(captured):
    """Triton writes `.reqntid` into its PTX, and ptxas then ignores --maxrregcount unless
    --override-directive-values is given too (docs/variants.md#ptxas-options)."""
    store, capture = captured
    plain, ignored, capped = build_variants(store, capture, parse_variants(
        "plain,opt:--maxrregcount=128,opt:--maxrregcount=128+opt:--override-directive-values"))
    assert plain.cubin == store.read(capture, "cubin")  # plain, captured ptxas, no options: the captured cubin
    before, same, after = (Cubin.from_bytes(b.cubin).kernels[capture.entry].registers
                           for b in (plain, ignored, capped))
    assert before == same > 128 >= after, (before, same, after)
    assert capped.facts()["ptxas_options"] == ["--maxrregcount=128", "--override-directive-values"]
    assert capped.facts()["ptxas"] == captured_ptxas(capture) and capped.facts()["registers"] == after


def test_a_hung_ptxas_is_killed_and_reported_hung(captured, tmp_path, monkeypatch):
    store, capture = captured
    real = captured_ptxas(capture)
    slow = _wrapper(tmp_path, "slow-ptxas", real, f'sleep 60\nexec "{real}" "$@"')
    monkeypatch.setenv(config.ptxas.PTXAS_TIMEOUT_S.name, "1.5")  # the one setting
    began = time.monotonic()
    with pytest.raises(tools.AssembleError) as info:
        tools.assemble(store.read(capture, "ptx"), slow, capture.arch, label="matmul")
    assert time.monotonic() - began < 15  # the sleeping child was killed with it, not waited for
    assert info.value.cause == "hung" and "ran past 1.5 s" in str(info.value) and "\n" not in str(info.value)


def test_a_crashed_ptxas_is_reported_with_its_signal(captured, tmp_path):
    store, capture = captured
    real = captured_ptxas(capture)
    crashing = _wrapper(tmp_path, "crashing-ptxas", real, f'ulimit -c 0\n"{real}" "$@"\nkill -s SEGV $$')
    with pytest.raises(tools.AssembleError) as info:
        tools.assemble(store.read(capture, "ptx"), crashing, capture.arch, label="matmul")
    assert info.value.cause == "crashed" and "crashed (SIGSEGV)" in str(info.value)


def test_a_failing_variant_is_marked_and_the_others_are_built(captured, tmp_path):
    store, capture = captured
    real = captured_ptxas(capture)
    crashing = _wrapper(tmp_path, "crashing-ptxas", real, f'ulimit -c 0\n"{real}" "$@"\nkill -s SEGV $$')
    built = build_variants(store, capture, parse_variants(f"plain,cutlass_,plain@{crashing}+opt:-O2"))
    assert [b.failed for b in built] == [None, None, "crashed"]
    assert built[1].cubin and Cubin.from_bytes(built[1].cubin).kernels  # the renamed one was built
    facts = built[2].facts()
    assert facts["build_failed"] == "crashed" and facts["ptxas"] == crashing and facts["ptxas_options"] == ["-O2"]
    warning = failed_builds_warning({1: {b.label: b for b in built}})
    assert warning.startswith("1 variant build(s) failed and were not timed: 1 crashed; first: capture ")
    with pytest.raises(tools.AssembleError):  # a baseline that fails loses the signature, as before
        build_variants(store, capture, parse_variants(f"plain@{crashing},cutlass_"))


def test_diff_builds_each_side_as_its_variant(capsys):
    ptx = str(DATA / "ffma_loop.ptx")
    assert cli.main(["diff", ptx, ptx, "--gpu-name", "sm_90a", "--json",
                     "--variants", "plain,cutlass_+opt:--maxrregcount=32"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["origin_b"].endswith("--maxrregcount=32") and "--maxrregcount" not in out["origin_a"]
    assert cli.main(["diff", ptx, ptx, "--variants", "plain,plain,plain"]) == 2
    assert "give two" in capsys.readouterr().err
