"""Capture of real compiles: every sample kernel, for sm_90a, sm_100a and sm_120a, under Triton 3.6 and 3.9."""

from __future__ import annotations

import io
import json
import re

import pytest
import triton
from elftools.elf.elffile import ELFFile

import tritonhook
from tritonhook import _triton
from tritonhook.samples import SAMPLES, compile_sample

from compile_warning import compile_warning

pytestmark = pytest.mark.every_release  # reaches what differs between Triton releases (scripts/test-matrix.sh)

TARGETS = {90: "sm_90a", 100: "sm_100a", 120: "sm_120a"}
CASES = [(name, cap) for cap in TARGETS for name in SAMPLES if cap >= SAMPLES[name].min_capability]


@pytest.mark.filterwarnings("ignore:tritonhook preflight")  # sm_120a TMA on 3.6: tested in test_preflight.py
@pytest.mark.parametrize("name,capability", CASES, ids=[f"{n}-sm{c}" for n, c in CASES])
def test_capture_holds_every_stage_of_a_real_compile(name, capability, capture_session):
    compiled = compile_sample(name, capability)

    (capture,) = capture_session.captures()
    store = capture_session.store
    ptx = store.read(capture, "ptx").decode()
    cubin = store.read(capture, "cubin")

    # What Triton itself returned is what we stored (independent source: the CompiledKernel).
    assert ptx == compiled.asm["ptx"]
    assert cubin == compiled.asm["cubin"]
    expected_stages = {"ttgir", "llir", "ptx", "cubin", "json"} | (set() if SAMPLES[name].gluon else {"ttir"})
    assert expected_stages <= set(capture.artifacts)  # Gluon starts at ttgir: no ttir
    # The PTX targets the right architecture and the cubin is an ELF holding the entry's SASS section.
    assert re.search(rf"^\.target {TARGETS[capability]}\b", ptx, re.MULTILINE)
    assert capture.arch == TARGETS[capability]
    elf = ELFFile(io.BytesIO(cubin))
    assert elf["e_machine"] in ("EM_CUDA", 190)
    assert elf.get_section_by_name(f".text.{compiled.metadata.name}") is not None
    # Record fields agree with Triton's metadata file.
    on_disk = json.loads(store.read(capture, "json"))
    assert capture.entry == on_disk["name"] == compiled.metadata.name
    assert capture.kernel == capture.original_entry == capture.entry  # Triton names the entry after the function
    assert capture.triton_hash == on_disk["hash"]
    assert capture.frontend_version == triton.__version__
    assert capture.event == "compile"
    assert capture.frontend == ("gluon" if SAMPLES[name].gluon else "triton")
    assert capture.options["num_warps"] == on_disk["num_warps"]
    assert capture.src_file and capture.src_file.endswith("samples.py") and capture.src_line > 0
    assert set(capture.times) >= {"ttgir", "ptx", "cubin"} and all(t >= 0 for t in capture.times.values())
    assert capture.ptxas_path and capture.ptxas_version


def test_cache_hit_is_an_event_pointing_at_the_same_blobs(capture_session):
    compile_sample("add", 90)
    compile_sample("add", 90)  # same key: served from Triton's disk cache
    first, second = capture_session.captures()
    assert (first.event, second.event) == ("compile", "cache_hit")
    assert {s: a.sha256 for s, a in first.artifacts.items()} == {s: a.sha256 for s, a in second.artifacts.items()}
    blob_files = [p for p in (capture_session.store.blobs_dir).rglob("*") if p.is_file()]
    assert len(blob_files) == len(first.artifacts)  # content-addressed: stored once


def test_disable_restores_the_very_same_hook_objects(store_path):
    from triton import knobs

    def users_listener(**event):
        pass

    def users_stage_hook(*args):
        return ("", "") if not args else None

    knobs.compilation.listener = users_listener
    knobs.runtime.add_stages_inspection_hook = users_stage_hook
    try:
        before = _triton.current_hooks()
        tritonhook.enable(store_path)
        assert _triton.current_hooks() != before
        tritonhook.disable()
        after = _triton.current_hooks()
        assert all(after[k] is before[k] for k in before)
    finally:
        knobs.compilation.listener = None
        knobs.runtime.add_stages_inspection_hook = None


def test_disable_with_nothing_installed_leaves_none(store_path):
    from triton import knobs

    tritonhook.enable(store_path)
    tritonhook.disable()
    assert knobs.compilation.listener is None and knobs.runtime.add_stages_inspection_hook is None


def test_hooks_installed_before_us_keep_receiving_every_event(store_path):
    from triton import knobs

    listened, staged = [], []

    def users_listener(*, src, metadata, metadata_group, times, cache_hit):
        listened.append((metadata["name"], cache_hit))

    def users_stage_hook(*args):
        if not args:
            return "", ""
        staged.append(sorted(args[1]))

    knobs.compilation.listener = users_listener
    knobs.runtime.add_stages_inspection_hook = users_stage_hook
    try:
        with tritonhook.session(store_path) as session:
            compile_sample("add", 90)
            compile_sample("add", 90)
            compile_sample("matmul_fp16", 100)
        assert listened == [("add_kernel", False), ("add_kernel", True), ("matmul_kernel", False)]
        assert len(staged) == 2 and all("ptx" in stages for stages in staged)
        assert [c.entry for c in session.captures()] == ["add_kernel", "add_kernel", "matmul_kernel"]
    finally:
        knobs.compilation.listener = None
        knobs.runtime.add_stages_inspection_hook = None


def test_a_failing_capture_warns_once_and_never_breaks_the_compile(store_path):
    with tritonhook.session(store_path) as session:
        def broken_record(event):
            raise OSError("disk on fire")

        session.hooks.on_compile = broken_record
        with pytest.warns(RuntimeWarning, match="disk on fire"):
            first = compile_sample("add", 90)
        second = compile_sample("matmul_fp16", 90)  # second failure: silent, compile still fine
    assert first.asm["cubin"][:4] == b"\x7fELF" and second.asm["cubin"][:4] == b"\x7fELF"


def test_enable_twice_is_the_same_session_and_another_store_is_refused(store_path, tmp_path):
    with tritonhook.session(store_path) as session:
        assert tritonhook.enable() is session
        with pytest.raises(tritonhook.TritonhookError, match="already capturing"):
            tritonhook.enable(tmp_path / "other")


def test_unsupported_triton_version_is_a_clear_error():
    with pytest.raises(tritonhook.TritonhookError, match="cannot read"):
        _triton.parse_version("nightly")
    assert _triton.parse_version("3.7.0+git1234") == (3, 7)


def test_enable_exports_the_environment_for_child_processes_and_disable_restores_it(store_path, monkeypatch):
    import os

    monkeypatch.delenv("TRITONHOOK_STORE", raising=False)
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    with tritonhook.session(store_path):
        assert os.environ["TRITONHOOK_STORE"] == str(store_path.resolve())
        assert os.environ["PYTHONPATH"].split(os.pathsep)[1] == "/somewhere"
    assert "TRITONHOOK_STORE" not in os.environ and os.environ["PYTHONPATH"] == "/somewhere"


def test_run_captures_a_script_that_probes_for_triton_before_importing_it(tmp_path):
    """torch's `has_triton()` calls `importlib.util.find_spec("triton")` before it imports Triton; the start-up
    hook must still catch the import that follows (a torch.compile'd script was captured not at all)."""
    import subprocess
    import sys

    script = ("import importlib.util\n"
              "assert importlib.util.find_spec('triton') is not None\n"
              "from tritonhook.samples import compile_sample\n"
              "compile_sample('add', 90)\n")
    store = tmp_path / "store"
    done = subprocess.run([sys.executable, "-m", "tritonhook", "run", "--store", str(store), "--", sys.executable,
                           "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert [c.entry for c in tritonhook.Store(store).captures()] == ["add_kernel"]


def test_a_capture_names_the_ptxas_triton_uses_at_that_compile(capture_session, monkeypatch):
    """Importing torch's Inductor points TRITON_PTXAS_PATH at torch's own ptxas in the middle of a process; a
    capture must name the ptxas of its own compile (a stale answer made a rename build fail: the PTX's ISA was too
    new for the ptxas it named)."""
    from tritonhook.binaries import find_ptxas

    compile_sample("add", 90)
    other = next((p for p in find_ptxas() if p.path != capture_session.captures()[0].ptxas_path), None)
    if other is None:
        pytest.skip("a second ptxas is needed (the nvidia-cuda-nvcc wheel's comes with the test extra)")
    for variable in ("TRITON_PTXAS_PATH", "TRITON_PTXAS_BLACKWELL_PATH"):  # 3.9 assembles sm_90 with the latter
        monkeypatch.setenv(variable, other.path)
    compile_sample("add", 90, num_warps=2)  # not a cache hit: another build
    before, after = capture_session.captures()
    assert before.ptxas_path != other.path and after.ptxas_path == other.path
    assert other.version.startswith(after.ptxas_version)  # Triton says "12.9" where ptxas says 12.9.86


def test_a_capture_keeps_the_kernel_module_and_what_a_rebuild_needs(capture_session):
    """`tritonhook upgrade` rebuilds a kernel under another release from the capture alone: the module text as it
    was at compile time and the specialization (docs/upgrade.md). Checked against the file and the compile's own
    arguments; the rebuild itself is tests/test_upgrade.py's."""
    from tritonhook import samples

    compile_sample("matmul_fp16", 90, num_warps=4)
    (capture,) = capture_session.captures()
    store = capture_session.store
    assert store.read(capture, _triton.PYTHON_STAGE) == open(samples.__file__, "rb").read()
    record = json.loads(store.read(capture, _triton.REBUILD_STAGE))
    sample = SAMPLES["matmul_fp16"]
    assert (record["module"], record["function"], record["file"]) == ("tritonhook.samples", "matmul_kernel",
                                                                      samples.__file__)
    assert record["signature"] == sample.signature
    arg_names = samples.matmul_kernel.arg_names
    assert {arg_names[path[0]]: value for path, value in record["constexprs"]} == sample.constexprs
    assert record["options"]["num_warps"] == 4 and record["options"]["num_stages"] == sample.options["num_stages"]
    assert record["target"] == {"backend": "cuda", "arch": 90, "warp_size": 32}
    assert not set(record["options"]) & {"extern_libs", "arch", "ptx_version"}  # facts of the release, not choices


def test_a_failed_capture_is_warned_at_the_line_that_compiled_the_kernel(capture_session):
    """The capture runs in Triton's compile listener, frames deep inside Triton: the warning names the user's line
    (here the helper's call of `triton.compile`), not Triton's `compiler.py` nor tritonhook's. The capture fails for
    real: the store's blob folder is replaced by a file, so no blob can be written."""
    import shutil

    from triton.compiler import ASTSource

    from tritonhook.samples import SAMPLES, add_kernel

    blobs = capture_session.store.blobs_dir
    shutil.rmtree(blobs)
    blobs.write_text("a file where the blobs directory was")
    source = ASTSource(add_kernel, SAMPLES["add"].signature, SAMPLES["add"].constexprs)
    warning, compiled_at = compile_warning(source, 90, "capture failed")
    assert (warning.filename, warning.lineno, warning.category) == (*compiled_at, RuntimeWarning)
