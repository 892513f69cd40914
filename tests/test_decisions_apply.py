"""Decisions applied at compile time (issue 40, bullet 2), with real Triton compiles on a CPU (sm_90a): an exact
key applies the choice (the rename shows in the cubin's entry, the options in a build of its own), a changed PTX
or another GPU applies nothing, an unresolvable choice builds plain with one warning, and applied and plain builds
never share a Triton cache entry."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import json
import subprocess
import sys
import warnings

import pytest
from elftools.elf.elffile import ELFFile
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import triton
import tritonhook
from tritonhook import ptx as _ptx
from tritonhook import binaries as tools
from tritonhook.decisions.apply import APPLIED_KEY
from tritonhook.decisions.keep import capture_key
from tritonhook.samples import SAMPLES, compile_sample

GPU = "NVIDIA H200"

# the applier builds its decisions through a stage of Triton's compile it replaces (tritonhook._triton.compile)
pytestmark = pytest.mark.every_release  # reaches what differs between Triton releases (scripts/test-matrix.sh)


def elf_functions(cubin: bytes) -> list[str]:
    elf = ELFFile(io.BytesIO(cubin))
    return [s.name for s in elf.get_section_by_name(".symtab").iter_symbols() if s["st_info"]["type"] == "STT_FUNC"]


def compile_add(block: int = 1024):
    """The `add` sample, optionally with another BLOCK: the same kernel, another PTX."""
    sample = SAMPLES["add"]
    return triton.compile(ASTSource(sample.kernel(), sample.signature, {"BLOCK": block}),
                          target=GPUTarget("cuda", 90, 32))


@pytest.fixture
def plain_add(tmp_path):
    """The key of the `add` sample's sm_90a build, from a plain capture."""
    with tritonhook.session(tmp_path / "plain-store") as session:
        compile_sample("add", 90)
    [capture] = session.captures()
    ptx = _ptx.as_text(session.store.read(capture, "ptx"))
    return {"ptx_sha256": _ptx.code_sha256(ptx), "arch": capture.arch, "ptxas_version": capture.ptxas_version,
            "gpu": GPU}


def decisions_file(path, key: dict, kernel: str = "add_kernel", **choice) -> str:
    entry = {"key": key, "choice": {"name": "cutlass_", "ptxas_version": None, "options": [], "controls": None,
                                    **choice},
             "evidence": {"kernel": kernel, "ratio": 0.97, "low": 0.96, "high": 0.98, "outputs": "bitwise",
                          "date": "2026-11-24", "tritonhook_version": "0.1.0", "source_kind": "sweep",
                          "source_id": 1}}
    path.write_text(json.dumps({"format": "tritonhook-decisions", "version": 1, "decisions": [entry]}))
    return str(path)


def test_an_exact_key_renames_the_kernel_and_a_changed_ptx_applies_nothing(plain_add, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONHOOK_DECISIONS_GPU", GPU)
    applied = decisions_file(tmp_path / "d.json", plain_add)
    with tritonhook.session(tmp_path / "store", apply=applied) as session:
        kernel = compile_sample("add", 90)
        other = compile_add(512)  # the same kernel with another constexpr: another PTX, no decision
    assert elf_functions(kernel.asm["cubin"]) == [kernel.metadata.name] == ["cutlass_add_kernel"]
    assert elf_functions(other.asm["cubin"]) == ["add_kernel"]
    first, second = session.captures()
    assert (first.entry, first.original_entry) == ("cutlass_add_kernel", "add_kernel")
    assert first.metadata[APPLIED_KEY] == {"decision": "0", "choice": "cutlass_", "cubin": "triton",
                                           "ptx_sha256": plain_add["ptx_sha256"]}
    assert second.entry == "add_kernel" and APPLIED_KEY not in second.metadata  # 0 wrong applications
    # the plain build after the session is Triton's own, not the applied one from the cache
    assert elf_functions(compile_sample("add", 90).asm["cubin"]) == ["add_kernel"]
    # and the applied one again comes from the cache with its record
    with tritonhook.session(tmp_path / "store", apply=applied) as session:
        again = compile_sample("add", 90)
    [hit] = session.captures()
    assert (hit.event, again.metadata.name, hit.metadata[APPLIED_KEY]["choice"]) == ("cache_hit", "cutlass_add_kernel",
                                                                                     "cutlass_")


COPY_KERNEL = """
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offsets, tl.load(src + offsets, mask=offsets < n), mask=offsets < n)
"""


def compile_copy_from(path):
    """`copy_kernel` written to and imported from the file `path`, compiled for sm_90a: its PTX names that file
    (Inductor writes each kernel under its cache directory, in a module named by the hash of its whole text, so a
    cold run builds one kernel from another path)."""
    path.parent.mkdir(parents=True)
    path.write_text(COPY_KERNEL)
    spec = importlib.util.spec_from_file_location(f"copy_kernel_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    signature = {"src": "*fp32", "dst": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    return triton.compile(ASTSource(module.copy_kernel, signature, {"BLOCK": 256}), target=GPUTarget("cuda", 90, 32))


def test_a_decision_applies_to_its_kernels_code_wherever_its_source_file_lives(tmp_path, monkeypatch):
    """A cold run with another Inductor cache directory (`decisions confirm`'s runs) built a kernel measured in a
    first run as other PTX text: Triton writes the source's path into the PTX, and its file name into every `.loc`
    comment (on an H200 a pinned run's GEMM template differed from its recording's in those alone). The key is of
    the code: a decision made on the build from one file applies to the build from another, and to nothing else."""
    monkeypatch.setenv("TRITONHOOK_DECISIONS_GPU", GPU)
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    with tritonhook.session(tmp_path / "first-store") as session:
        compile_copy_from(tmp_path / "first-cache" / "cdnu2qp7.py")
    [first] = session.captures()
    first_ptx = _ptx.as_text(session.store.read(first, "ptx"))
    key = capture_key(session.store, first, GPU)
    applied = decisions_file(tmp_path / "d.json", {"ptx_sha256": key.ptx_sha256, "arch": key.arch,
                                                   "ptxas_version": key.ptxas_version, "gpu": GPU},
                             kernel="copy_kernel")
    with tritonhook.session(tmp_path / "store", apply=applied) as session:
        kernel = compile_copy_from(tmp_path / "another-cache" / "csdodw6v.py")
        compile_add()  # another kernel: nothing applied
    second, other = session.captures()
    second_ptx = _ptx.as_text(session.store.read(second, "ptx"))
    assert f'"{tmp_path}/first-cache/cdnu2qp7.py"' in first_ptx and "// cdnu2qp7.py:" in first_ptx
    assert f'"{tmp_path}/another-cache/csdodw6v.py"' in second_ptx and "// csdodw6v.py:" in second_ptx
    assert elf_functions(kernel.asm["cubin"]) == ["cutlass_copy_kernel"]
    assert second.metadata[APPLIED_KEY]["choice"] == "cutlass_" and APPLIED_KEY not in other.metadata


def test_another_gpu_or_ptxas_version_in_the_key_applies_nothing(plain_add, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONHOOK_DECISIONS_GPU", "NVIDIA B200")
    applied = decisions_file(tmp_path / "d.json", plain_add)
    with tritonhook.session(tmp_path / "store", apply=applied):
        assert compile_sample("add", 90).metadata.name == "add_kernel"
    monkeypatch.setenv("TRITONHOOK_DECISIONS_GPU", GPU)
    applied = decisions_file(tmp_path / "d2.json", {**plain_add, "ptxas_version": "11.0.1"})
    with tritonhook.session(tmp_path / "store2", apply=applied):
        assert compile_sample("add", 90).metadata.name == "add_kernel"


def test_options_are_applied_by_a_build_of_their_own(plain_add, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONHOOK_DECISIONS_GPU", GPU)
    applied = decisions_file(tmp_path / "d.json", plain_add, name="plain", options=["-O0"])
    with tritonhook.session(tmp_path / "store", apply=applied) as session:
        kernel = compile_sample("add", 90)
    [capture] = session.captures()
    assert capture.metadata[APPLIED_KEY]["cubin"].startswith(f"ptxas {plain_add['ptxas_version']}")
    assert kernel.metadata.name == "add_kernel"
    assert kernel.asm["cubin"] != compile_sample("add", 90).asm["cubin"]  # -O0 is not Triton's build


def test_a_missing_ptxas_builds_plain_with_one_warning(plain_add, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONHOOK_DECISIONS_GPU", GPU)
    applied = decisions_file(tmp_path / "d.json", plain_add, ptxas_version="99.9.9")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tritonhook.session(tmp_path / "store", apply=applied) as session:
            compile_sample("add", 90)
            compile_add(512)
    ours = [str(w.message) for w in caught if "tritonhook" in str(w.message)]
    assert len(ours) == 1 and "no ptxas 99.9.9 found" in ours[0] and "builds plain" in ours[0]
    assert [c.entry for c in session.captures()] == ["add_kernel", "add_kernel"]


def test_an_unreadable_file_applies_nothing_and_capture_goes_on(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "tritonhook-decisions", "version": 1, "decisions": [')
    with pytest.warns(RuntimeWarning, match="no decision applied: .*broken.json: not a decisions file"):
        with tritonhook.session(tmp_path / "store", apply=broken) as session:
            compile_sample("add", 90)
    assert [c.entry for c in session.captures()] == ["add_kernel"]


def test_run_apply_reaches_the_commands_python_processes(plain_add, tmp_path):
    applied = decisions_file(tmp_path / "d.json", plain_add)
    script = "from tritonhook.samples import compile_sample; print(compile_sample('add', 90).metadata.name)"
    env = {**__import__("os").environ, "TRITONHOOK_DECISIONS_GPU": GPU}
    done = subprocess.run([sys.executable, "-m", "tritonhook", "run", "--store", str(tmp_path / "store"),
                           "--apply", applied, "--", sys.executable, "-c", script],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cutlass_add_kernel"
    refused = subprocess.run([sys.executable, "-m", "tritonhook", "run", "--apply", str(tmp_path / "nope.json"),
                              "--", sys.executable, "-c", "pass"], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "nope.json: cannot read the decisions (No such file" in refused.stderr


OTHER_PTXAS = [b for b in tools.one_per_version(tools.find_ptxas()) if b.release >= (13,)]
WITH_CONTROLS = [b for b in OTHER_PTXAS if tools.supports_controls(b.path)]


@pytest.mark.skipif(not OTHER_PTXAS, reason="needs a ptxas 13.x besides Triton's (tritonhook ptxas list)")
def test_another_ptxas_is_applied_in_process_by_its_version(plain_add, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONHOOK_DECISIONS_GPU", GPU)
    other = OTHER_PTXAS[0]
    applied = decisions_file(tmp_path / "d.json", plain_add, ptxas_version=other.version)
    with tritonhook.session(tmp_path / "store", apply=applied) as session:
        kernel = compile_sample("add", 90)
    [capture] = session.captures()
    assert capture.metadata[APPLIED_KEY]["cubin"] == f"ptxas {other.version}"
    assert elf_functions(kernel.asm["cubin"]) == ["cutlass_add_kernel"]


@pytest.mark.skipif(not WITH_CONTROLS, reason="needs a ptxas with --apply-controls (CUDA >= 13.3)")
def test_a_control_file_ptxas_refuses_falls_back_to_tritons_build_with_one_warning(plain_add, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONHOOK_DECISIONS_GPU", GPU)
    acf = b"not a control file"  # CompileIQ's are encrypted: ptxas reads this one and refuses it
    controls = {"sha256": hashlib.sha256(acf).hexdigest(), "base64": base64.b64encode(acf).decode()}
    applied = decisions_file(tmp_path / "d.json", plain_add, ptxas_version=WITH_CONTROLS[0].version,
                             controls=controls)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tritonhook.session(tmp_path / "store", apply=applied) as session:
            kernel = compile_sample("add", 90)
    ours = [str(w.message) for w in caught if "tritonhook" in str(w.message)]
    assert len(ours) == 1 and "built by Triton's own ptxas instead" in ours[0]
    [capture] = session.captures()
    assert capture.metadata[APPLIED_KEY]["cubin"].startswith("triton (the decision's build failed")
    assert kernel.metadata.name == "cutlass_add_kernel"  # the rename, already in the PTX, stays
