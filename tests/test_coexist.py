"""Capture next to other tools that use Triton's hook slots: the real TritonParse 0.6, and listeners that save and
restore or chain the slot, on real AOT compiles (no GPU)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import triton
import triton.language as tl
from triton import knobs

import tritonhook
from tritonhook import _triton
from tritonhook.samples import compile_sample
from tritonhook.store import Store

pytestmark = pytest.mark.every_release  # reaches what differs between Triton releases (scripts/test-matrix.sh)

def tritonparse_events(folder: Path, event_type: str) -> list[dict]:
    """The events of one type in TritonParse's own NDJSON trace files."""
    records = [json.loads(line) for path in sorted(folder.glob("*.ndjson")) for line in path.read_text().splitlines()]
    return [r for r in records if r["event_type"] == event_type]


def compiled_names(folder: Path) -> list[tuple[str, bool]]:
    return [(e["payload"]["metadata"]["name"], e["payload"]["metadata"]["cache_hit"])
            for e in tritonparse_events(folder, "compilation")]


@pytest.mark.parametrize("first", ["tritonhook", "tritonparse"])
def test_both_tools_get_every_compile_in_either_order_and_tritonparse_outlives_disable(
        first, tritonparse, store_path, tmp_path):
    trace = tmp_path / "tritonparse"
    if first == "tritonhook":
        session = tritonhook.enable(store_path)
        tritonparse.init(str(trace))  # assigns knobs.compilation.listener outright
    else:
        tritonparse.init(str(trace))
        session = tritonhook.enable(store_path)
    compile_sample("add", 90)
    compile_sample("add", 90)  # a disk-cache hit
    compile_sample("matmul_fp16", 90)
    expected = [("add_kernel", False), ("add_kernel", True), ("matmul_kernel", False)]
    assert [(c.entry, c.event == "cache_hit") for c in session.captures()] == expected
    assert all(c.arch == "sm_90a" for c in session.captures())
    assert compiled_names(trace) == expected

    tritonhook.disable()
    assert knobs.compilation.listener is tritonparse.maybe_trace_triton
    compile_sample("gluon_scale", 90)
    assert compiled_names(trace)[3:] == [("gluon_scale_kernel", False)]  # TritonParse still logs
    assert len(Store(store_path).captures()) == 3  # and we no longer do


def test_tritonhook_run_captures_a_script_that_starts_tritonparse(store_path, tmp_path):
    pytest.importorskip("tritonparse", reason="tritonparse is not installed (pip install 'tritonhook[test]')")
    trace = tmp_path / "tritonparse"
    script = tmp_path / "traced.py"
    script.write_text("import sys\nimport tritonparse.structured_logging as tp\n"
                      "from tritonhook.samples import compile_sample\n"
                      "tp.init(sys.argv[1])\ncompile_sample('add', 90)\n")
    result = subprocess.run([sys.executable, "-m", "tritonhook", "run", "--store", str(store_path), "--",
                             sys.executable, str(script), str(trace)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert [c.entry for c in Store(store_path, create=False).captures()] == ["add_kernel"]
    assert compiled_names(trace) == [("add_kernel", False)]


def test_runtime_hooks_chain_into_tritonparse_launch_tracing_and_give_its_hook_back(tritonparse, tmp_path):
    from triton.compiler.compiler import LazyDict

    trace = tmp_path / "tritonparse"
    tritonparse.init(str(trace), enable_trace_launch=True)
    tritonparse_hook = knobs.runtime.launch_enter_hook  # its own callable: the HookChain is gone
    seen = []
    ours = {"launch_enter_hook": seen.append, "launch_exit_hook": seen.append}
    added = _triton.add_runtime_hooks(ours)

    # What Triton's launcher does at a launch: call the slot with the launch metadata.
    launch = LazyDict({"name": "add_kernel", "function": None, "stream": 0})
    knobs.runtime.launch_enter_hook(launch)
    knobs.runtime.launch_exit_hook(launch)
    assert seen == [launch, launch]
    assert [e["name"] for e in tritonparse_events(trace, "launch")] == ["add_kernel"]

    _triton.remove_runtime_hooks(added, ours)
    assert knobs.runtime.launch_enter_hook is tritonparse_hook
    tritonparse.clear_logging_config()  # leaves None in the slot
    added = _triton.add_runtime_hooks(ours)
    knobs.runtime.launch_enter_hook(launch)
    assert len(seen) == 3
    _triton.remove_runtime_hooks(added, ours)
    assert knobs.runtime.launch_enter_hook is None


def test_memwatch_launch_tracer_chains_into_tritonparse_launch_tracing_and_gives_its_hook_back(tritonparse, tmp_path):
    from tritonhook.memwatch import MemWatch

    tritonparse.init(str(tmp_path / "tritonparse"), enable_trace_launch=True)
    tritonparse_hook = knobs.runtime.launch_enter_hook
    watch = MemWatch()
    watch._new_recording()  # memwatch's Triton side alone, as __enter__ installs it (no GPU here)
    watch._install_triton_hooks()
    try:
        chain = knobs.runtime.launch_enter_hook
        assert isinstance(chain, knobs.HookChain) and chain.calls[0] is tritonparse_hook and len(chain.calls) == 2
    finally:
        watch._uninstall_triton_hooks()
    assert knobs.runtime.launch_enter_hook is tritonparse_hook


def test_a_listener_saved_and_restored_around_ours_gets_its_events_and_then_none(store_path):
    """Triton 3.9's compile warm-up idiom: `old = listener; listener = mine; ...; listener = old`."""
    theirs = []

    def their_listener(*, src, metadata, metadata_group, times, cache_hit):
        theirs.append(metadata["name"])

    with tritonhook.session(store_path) as session:
        old = knobs.compilation.listener
        knobs.compilation.listener = their_listener
        compile_sample("add", 90)
        knobs.compilation.listener = old
        compile_sample("matmul_fp16", 90)
    assert theirs == ["add_kernel"]
    assert [c.entry for c in session.captures()] == ["add_kernel", "matmul_kernel"]
    assert knobs.compilation.listener is None and type(knobs.compilation) is knobs.compilation_knobs


def test_a_listener_chained_over_ours_gets_each_event_once_and_keeps_working_after_disable(store_path):
    theirs = []
    with tritonhook.session(store_path) as session:
        chained_to = knobs.compilation.listener

        def their_listener(**event):
            chained_to(**event)
            theirs.append(event["metadata"]["name"])

        knobs.compilation.listener = their_listener
        compile_sample("add", 90)
    try:
        assert knobs.compilation.listener is their_listener
        compile_sample("matmul_fp16", 90)  # our listener, left in their chain, passes through
        assert theirs == ["add_kernel", "matmul_kernel"]
        assert [c.entry for c in session.captures()] == ["add_kernel"]
    finally:
        knobs.compilation.listener = None


def test_a_replaced_compilation_knobs_object_is_reported_once(store_path, monkeypatch):
    with tritonhook.session(store_path) as session:
        monkeypatch.setattr(knobs, "compilation", knobs.compilation_knobs())
        with pytest.warns(RuntimeWarning, match="no longer captured"):
            compile_sample("add", 90)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no second warning
            compile_sample("matmul_fp16", 90)
        assert session.captures() == []


@triton.jit
def coexist_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """This module's own kernel: launching the shared `add_kernel` here would fill its in-memory JIT cache and
    rob later GPU tests (test_rename_gpu) of the compile they capture."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


@pytest.mark.gpu
def test_gpu_memwatch_and_tritonparse_launch_tracing_both_see_the_launch(tritonparse, tmp_path):
    torch = pytest.importorskip("torch")

    trace = tmp_path / "tritonparse"
    tritonparse.init(str(trace), enable_trace_launch=True)
    tritonparse_hook = knobs.runtime.launch_enter_hook
    x = torch.arange(4096, dtype=torch.float32, device="cuda")
    out = torch.empty_like(x)
    with tritonhook.memwatch.watch(device=0) as watch:
        coexist_add_kernel[(4,)](x, x, out, x.numel(), BLOCK=1024)
        torch.cuda.synchronize()
    assert torch.equal(out, x + x)
    assert watch.result.kernels["coexist_add_kernel"].launches == 1, watch.result.warnings
    assert [e["name"] for e in tritonparse_events(trace, "launch")] == ["coexist_add_kernel"]
    assert knobs.runtime.launch_enter_hook is tritonparse_hook
