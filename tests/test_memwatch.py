"""memwatch: the attribution arithmetic on recorded figures (CPU), the hook and allocator plumbing against real
Triton (CPU), and the whole thing on a real GPU (`-m gpu`, run on the H200)."""

from __future__ import annotations

import contextvars
import dataclasses
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from tritonhook import _triton, cli
from tritonhook.errors import TritonhookError
from tritonhook.memwatch import (DeviceInfo, KernelStats, MemwatchResult, Sample, Snapshot, attribute,
                                 compare_rows, load_result, stack_growths, wrap_python_command)
from tritonhook.mem.attribution import StackStart, stack_start
from tritonhook.mem.scratch import ScratchRecorder
from tritonhook.mem.watch import tail_seconds

pytestmark = pytest.mark.every_release  # reaches what differs between Triton releases (scripts/test-matrix.sh)

EXAMPLE = Path(__file__).parents[1] / "examples" / "stack_reservation.py"
MIB = 2**20
H200 = DeviceInfo(ordinal=0, name="NVIDIA H200", pci_bus_id="00000000:19:00.0", total=150_754_820_096, sms=132,
                  max_threads_per_sm=2048, driver_version="580")
# Figures recorded on the H200 (docs/tma_stack.md#the-stack-reservation): a kernel with a 16 KiB .local array took the stack limit from 1024 to
# 16384 and NVML used grew by 4,152,360,960 B while torch's reserved bytes did not move.
H200_USED_BEFORE = 1_069_547_520
H200_GROWTH = 4_152_360_960


def snap(t, event, kernel=None, *, used, stack=1024, context=True, torch_reserved=2 * MIB, scratch_live=0,
         fifo=1_048_576, heap=8_388_608):
    return Snapshot(t=t, event=event, kernel=kernel, used=used, reserved=0, context=context,
                    stack=stack if context else None, printf_fifo=fifo if context else None,
                    malloc_heap=heap if context else None, torch_reserved=torch_reserved if context else None,
                    torch_allocated=0 if context else None, scratch_live=scratch_live, scratch_requested=scratch_live)


def recorded_h200_run() -> list[Snapshot]:
    before, after = H200_USED_BEFORE, H200_USED_BEFORE + H200_GROWTH
    return [snap(0.0, "before", used=before), snap(0.1, "launch_enter", "local_array_kernel", used=before),
            snap(0.2, "launch_exit", "local_array_kernel", used=after, stack=16384), snap(0.3, "after", used=after,
                                                                                         stack=16384)]


def parts_by_name(snapshots):
    return {part.name: part for part in attribute(snapshots, H200)}


# ----- attribution (pure) ---------------------------------------------------------------------------------------
def test_recorded_h200_growth_is_all_stack_reservation_of_that_launch():
    parts = parts_by_name(recorded_h200_run())
    stack = parts["stack (local memory) reservation"]
    assert stack.bytes == H200_GROWTH
    assert parts["residual"].bytes == 0 and parts["torch allocator"].bytes == 0
    assert "launch of local_array_kernel" in stack.detail and "1024 -> 16384" in stack.detail


def test_growth_between_launches_is_not_pinned_on_a_kernel():
    used = H200_USED_BEFORE
    snapshots = [snap(0, "before", used=used), snap(1, "launch_enter", "k", used=used),
                 snap(2, "launch_exit", "k", used=used), snap(3, "after", used=used + H200_GROWTH, stack=16384)]
    (growth,) = stack_growths(snapshots)
    assert growth.kernel is None and "outside a Triton launch" in growth.where and "launch_exit k" in growth.where


def test_context_created_inside_the_region_is_the_baseline_not_the_stack():
    """No context at 'before'; the context appears with its default 1024 B stack and 2 MiB of torch blocks."""
    baseline = 500 * MIB
    snapshots = [snap(0, "before", used=H200_USED_BEFORE, context=False),
                 snap(1, "launch_enter", "k", used=H200_USED_BEFORE + baseline + 2 * MIB),
                 snap(2, "launch_exit", "k", used=H200_USED_BEFORE + baseline + 2 * MIB),
                 snap(3, "after", used=H200_USED_BEFORE + baseline + 2 * MIB + 64 * MIB, torch_reserved=66 * MIB)]
    parts = parts_by_name(snapshots)
    assert parts["context baseline"].bytes == baseline
    assert parts["torch allocator"].bytes == 66 * MIB
    assert parts["stack (local memory) reservation"].bytes == 0
    assert parts["residual"].bytes == 0


def test_scratch_outside_torch_and_heap_limits_are_their_own_lines():
    snapshots = [snap(0, "before", used=H200_USED_BEFORE),
                 snap(1, "after", used=H200_USED_BEFORE + 4 * MIB + 64 * MIB, scratch_live=4 * MIB,
                      heap=8_388_608 + 64 * MIB)]
    parts = parts_by_name(snapshots)
    assert parts["Triton scratch outside torch"].bytes == 4 * MIB
    assert parts["printf FIFO + malloc heap"].bytes == 64 * MIB
    assert parts["residual"].bytes == 0


def result_of(snapshots) -> MemwatchResult:
    samples = [Sample(s.t, s.used, 0, None) for s in snapshots]
    return MemwatchResult(device=H200, interval_ms=2.0, snapshots=snapshots, samples=samples,
                          kernels={"local_array_kernel": KernelStats(launches=1, loads=1)}, warnings=[])


def test_json_round_trip_keeps_the_attribution():
    result = result_of(recorded_h200_run())
    again = MemwatchResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again.attribution() == result.attribution() and again.summary() == result.summary()
    with pytest.raises(TritonhookError, match="not a memwatch result"):
        MemwatchResult.from_json({"version": 0})


def test_a_result_saved_in_a_store_is_found_by_its_label_and_id_typed_and_whole(tmp_path):
    """The recorded H200 run, saved as `tritonhook memwatch --store` saves it: read back as a MemwatchResult."""
    from tritonhook.mem.result import RESULT_KIND
    from tritonhook.store import Store

    result = result_of(recorded_h200_run())
    result.label = "python stack.py --kernel local"
    store = Store(tmp_path / "store")
    assert result.save(tmp_path / "store") == result.id == 1  # a path is opened as a store
    result_of(demo_h200_run()).save(store)
    (again,) = store.results(RESULT_KIND, label="python stack.py --kernel local")
    assert again == result == store.result(result.id) and again.attribution() == result.attribution()
    assert again.summary() == result.summary() and again.to_json() == result.to_json()


def test_report_and_comparison_show_the_kernel_and_the_stack_line(capsys):
    result = result_of(recorded_h200_run())
    result.report()
    out = capsys.readouterr().out
    assert "local_array_kernel" in out and "stack (local memory) reservation" in out
    plain = result_of([snap(0, "before", used=H200_USED_BEFORE), snap(1, "after", used=H200_USED_BEFORE)])
    rows = {row[0]: row[1:] for row in compare_rows({"plain": plain, "local": result})}
    assert rows["used after vs plain"][1].startswith("3.9 GiB") and rows["stack limit after"] == ("1,024", "16,384")


# `tritonhook demo` on the H200 watches examples/stack_reservation.py from before the script creates its CUDA
# context (the region's first snapshot reads no limits); the same 16 KiB frame, the same growth.
DEMO_USED_BEFORE, DEMO_CONTEXT_USED, DEMO_TORCH_RESERVED = 3_407_872, 671_940_608, 23_068_672
DEMO_CONTEXT_AT, DEMO_LAUNCH_AT, DEMO_AFTER_AT = 6.2, 7.7949, 7.8544


def demo_h200_run(*, hooks: bool = True) -> list[Snapshot]:
    """The demo's snapshots; without Triton's hooks (`triton_hooks=False`, or kernels launched past them) the
    `after` snapshot is the context's first reading."""
    grown, kernel = DEMO_CONTEXT_USED + H200_GROWTH, "local_array_kernel"
    context = dict(used=DEMO_CONTEXT_USED, torch_reserved=DEMO_TORCH_RESERVED)
    launch = [snap(7.7944, "load_start", kernel, **context), snap(7.7947, "load_end", kernel, **context),
              snap(DEMO_LAUNCH_AT, "launch_enter", kernel, **context),
              snap(7.7957, "launch_exit", kernel, used=grown, stack=16384, torch_reserved=DEMO_TORCH_RESERVED)]
    return [snap(0.3571, "before", used=DEMO_USED_BEFORE, context=False), *(launch if hooks else []),
            snap(DEMO_AFTER_AT, "after", used=grown, stack=16384, torch_reserved=DEMO_TORCH_RESERVED)]


def test_a_region_opened_before_the_context_starts_from_the_first_limit_read_or_the_driver_default(capsys):
    """The demo's page read "stack limit None -> 16384": its region opens before the context exists. The start is
    the first limit read (1024, at the kernel's load); with no reading before the region's end, the limit a new
    context starts with, said as such, and the rise from it is the stack line's (it was all "context baseline")."""
    baseline = DEMO_CONTEXT_USED - DEMO_USED_BEFORE - DEMO_TORCH_RESERVED
    for hooks, start in ((True, StackStart(1024, read=True)), (False, StackStart(1024, read=False))):
        snapshots = demo_h200_run(hooks=hooks)
        assert stack_start(snapshots) == start
        parts = parts_by_name(snapshots)
        stack = parts["stack (local memory) reservation"]
        assert (stack.bytes, parts["context baseline"].bytes, parts["residual"].bytes) == (H200_GROWTH, baseline, 0)
        assert "1024 -> 16384 B/thread at " in stack.detail
        (growth,) = stack_growths(snapshots)
        assert (growth.old, growth.new, growth.kernel) == (1024, 16384, "local_array_kernel" if hooks else None)
        assert result_of(snapshots).summary()["stack_limit_before"] == 1024
    assert start.describe() == "1024 (driver default, no context yet)"
    assert growth.where == "a point between the creation of the context and the after snapshot (its first reading)"
    result_of(snapshots).report()
    assert "1,024 (driver default, no context yet)" in capsys.readouterr().out
    # the region that already has its context reads its limit there, and one that never has one has no start
    assert stack_start(recorded_h200_run()) == StackStart(1024, read=True)
    assert stack_start([snap(0, "before", used=1, context=False), snap(1, "after", used=1, context=False)]) is None


def demo_h200_timeline(snapshots: list[Snapshot]) -> list[Sample]:
    """The sampler's readings of that run: every 2 ms from its start (1.345 s) to the `after` snapshot and on for
    the watch's tail (`tail_seconds`), NVML used at each level as the snapshots read it."""
    end = DEMO_AFTER_AT + tail_seconds(DEMO_AFTER_AT, 2.0)
    times = [1.345 + 0.002 * i for i in range(int((end - 1.345) / 0.002) + 1)]
    levels = [(0.0, DEMO_USED_BEFORE), (DEMO_CONTEXT_AT, DEMO_CONTEXT_USED), (7.7955, DEMO_CONTEXT_USED + H200_GROWTH)]
    return [Sample(t, [used for at, used in levels if at <= t][-1], 644_939_776, None) for t in times]


@pytest.mark.release_independent  # matplotlib drawing given snapshots: no Triton
def test_the_timeline_shows_the_level_a_rise_at_the_regions_end_reached(tmp_path):
    """The demo's timeline ended at the stack jump, its last launch: 3.9 GiB of growth was a vertical line at the
    right edge. The watch samples on after the region and the plot runs a margin past its last reading."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    snapshots = demo_h200_run()
    result = dataclasses.replace(result_of(snapshots), samples=demo_h200_timeline(snapshots))
    (growth,) = stack_growths(snapshots)
    figure = result.figure()
    try:
        figure.canvas.draw()
        axes = figure.axes[0]
        used = next(line for line in axes.lines if line.get_label() == "NVML used")
        later = [(t, gib) for t, gib in zip(*used.get_data()) if t > growth.t]
        assert len(later) >= 100 and {gib for _, gib in later} == {(DEMO_CONTEXT_USED + H200_GROWTH) / 2**30}
        box = axes.get_window_extent()
        x_jump, x_last = (axes.transData.transform((t, 0))[0] for t in (growth.t, later[-1][0]))
        assert x_last - x_jump >= 0.04 * box.width  # the level after the jump, not a vertical line
        assert box.x1 - x_last >= 0.02 * box.width  # and a margin past the last reading
        assert not axes.get_legend().get_window_extent().overlaps(box)
    finally:
        plt.close(figure)
    assert result.plot(tmp_path / "mem.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.release_independent  # matplotlib drawing a recorded run: no Triton
def test_plot_writes_an_image(tmp_path):
    pytest.importorskip("matplotlib")
    path = result_of(recorded_h200_run()).plot(tmp_path / "mem.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ----- running commands -----------------------------------------------------------------------------------------
def test_wrap_python_command(tmp_path):
    out = tmp_path / "r.json"
    assert wrap_python_command(["python3", "-u", "x.py", "--k", "tma"], out, 2) == [
        "python3", "-u", "-m", "tritonhook.mem", "--out", str(out), "--interval-ms", "2", "--", "x.py", "--k",
        "tma"]
    with pytest.raises(TritonhookError, match="Python commands only"):
        wrap_python_command(["ls", "-l"], out, 2)
    with pytest.raises(TritonhookError, match="give a script"):
        wrap_python_command(["python", "-X", "dev", "x.py"], out, 2)


@pytest.mark.nogpu
def test_cli_memwatch_without_a_gpu_says_only_why_it_could_not_start(capfd, tmp_path):
    """No GPU (or no NVML bindings) here: memwatch cannot start, the command never runs, and no exit status of a
    command that never ran is quoted."""
    marker = tmp_path / "script-ran"
    assert cli.main(["memwatch", "--", sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]) == 2
    (line,) = capfd.readouterr().err.strip().splitlines()
    assert line.startswith("tritonhook: error: memwatch could not start, so ") and "exited with status" not in line
    assert "CUDA" in line or "NVML" in line  # what is missing
    assert not marker.exists()


# ----- Triton plumbing (real Triton, no GPU) --------------------------------------------------------------------
def test_runtime_hooks_are_chained_and_removed_leaving_triton_as_found():
    from triton import knobs

    def someone_elses_hook(*args):  # e.g. Proton's, already in the chain
        pass

    knobs.runtime.launch_enter_hook.add(someone_elses_hook)
    try:
        before = {name: list(getattr(knobs.runtime, name).calls) for name in _triton.RUNTIME_HOOK_CHAINS}
        ours = {name: (lambda *args: None) for name in _triton.RUNTIME_HOOK_CHAINS}
        chains = _triton.add_runtime_hooks(ours)
        for name in _triton.RUNTIME_HOOK_CHAINS:
            assert getattr(knobs.runtime, name).calls == before[name] + [ours[name]]
        _triton.remove_runtime_hooks(chains, ours)
        assert {name: getattr(knobs.runtime, name).calls for name in _triton.RUNTIME_HOOK_CHAINS} == before
    finally:
        knobs.runtime.launch_enter_hook.remove(someone_elses_hook)


def attached(watch):
    """memwatch's Triton side alone (what `__enter__` installs after its first GPU reading), with no GPU."""
    watch._new_recording()
    watch._install_triton_hooks()
    return watch


def test_memwatch_sees_launches_through_the_tracer_with_inductor_static_launcher_off_and_leaves_all_as_found(
        monkeypatch):
    """Inductor's static CUDA launcher (torch's default) launches past Triton's hooks: memwatch switches it off in
    torch's real config and in the environment for its region, and catches launches with the LaunchTracer."""
    inductor_config = pytest.importorskip("torch._inductor.config")
    from triton import knobs
    from triton.compiler.compiler import CompiledKernel

    from tritonhook.memwatch import MemWatch

    monkeypatch.delenv("TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER", raising=False)
    method = CompiledKernel.__dict__["launch_metadata"]
    chains = {name: list(getattr(knobs.runtime, name).calls) for name in _triton.RUNTIME_HOOK_CHAINS}

    def run():
        watch = attached(MemWatch())
        try:
            assert not watch._warnings
            assert CompiledKernel.__dict__["launch_metadata"] is not method  # the tracer's wrapper
            for name in _triton.RUNTIME_HOOK_CHAINS:
                assert getattr(knobs.runtime, name).calls[:-1] == chains[name]
            # torch 2.13 reads the launcher choice under an alias: both names see it
            assert inductor_config.use_static_cuda_launcher is False
            assert getattr(inductor_config, "use_static_triton_launcher", False) is False
            assert os.environ["TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER"] == "0"
        finally:
            watch._uninstall_triton_hooks()

    with inductor_config.patch(use_static_cuda_launcher=True):  # torch's default, whatever ran before
        contextvars.copy_context().run(run)
        assert inductor_config.use_static_cuda_launcher is True
    assert CompiledKernel.__dict__["launch_metadata"] is method
    assert {name: getattr(knobs.runtime, name).calls for name in _triton.RUNTIME_HOOK_CHAINS} == chains
    assert "TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER" not in os.environ


def test_memwatch_without_triton_hooks_leaves_inductor_alone():
    inductor_config = pytest.importorskip("torch._inductor.config")
    from triton.compiler.compiler import CompiledKernel

    from tritonhook.memwatch import MemWatch

    before = inductor_config.use_static_cuda_launcher, CompiledKernel.__dict__["launch_metadata"]
    watch = attached(MemWatch(triton_hooks=False))
    assert (inductor_config.use_static_cuda_launcher, CompiledKernel.__dict__["launch_metadata"]) == before
    watch._uninstall_triton_hooks()


class Buffer:
    """A non-torch scratch buffer, as a cupy- or ctypes-based allocator would return."""

    def __init__(self, size):
        self.size = size

    def data_ptr(self):
        return 0


def buffer_allocator():
    """A distinct user allocator (the tests check which one is installed by identity)."""
    def allocator(size, alignment, stream):
        return Buffer(size)

    return allocator


def recorder_over(allocator) -> ScratchRecorder:
    """`allocator` set with triton.set_allocator, then a recorder installed over it."""
    import triton

    triton.set_allocator(allocator)
    recorder = ScratchRecorder()
    recorder.install()
    return recorder


def test_scratch_allocator_is_wrapped_recorded_and_put_back():
    users_allocator = buffer_allocator()

    def run():
        recorder = recorder_over(users_allocator)
        buffer = _triton.allocator_var().get()(4096, 128, None)  # what Triton's launcher does before a launch
        assert (recorder.total, recorder.live, recorder.take_pending()) == (4096, 4096, [(4096, False)])
        del buffer
        assert recorder.live == 0
        recorder.uninstall()
        assert _triton.allocator_var().get() is users_allocator

    contextvars.copy_context().run(run)


def test_allocator_set_inside_the_region_is_recorded_and_kept():
    import triton

    first, second = buffer_allocator(), buffer_allocator()

    def run():
        recorder = recorder_over(first)
        triton.set_allocator(second)  # the user's program, inside the watched region
        recorder.rewrap_if_replaced()
        _triton.allocator_var().get()(256, 128, None)
        assert recorder.total == 256
        recorder.uninstall()
        assert _triton.allocator_var().get() is second

    contextvars.copy_context().run(run)


def test_unset_allocator_is_unset_again():
    def run():
        var = _triton.allocator_var()
        default = var.get()
        recorder = ScratchRecorder()
        recorder.install()
        recorder.uninstall()
        assert var.get() is default

    contextvars.Context().run(run)


@pytest.mark.nogpu
def test_reset_stack_limit_without_a_gpu_is_a_clear_error():
    import tritonhook

    with pytest.raises(TritonhookError, match="NVML|CUDA|cuda-bindings"):
        tritonhook.memwatch.reset_stack_limit()
    with pytest.raises(TritonhookError, match="positive"):
        tritonhook.memwatch.reset_stack_limit(0, 0)


# ----- on a GPU (the lead runs these on the H200) ---------------------------------------------------------------
@pytest.fixture
def gpu_stack():
    """torch on device 0 with the context's stack limit back at the default 1024, and put back after."""
    torch = pytest.importorskip("torch")
    import tritonhook

    torch.ones(1, device="cuda")

    def set_stack(value):
        tritonhook.memwatch.reset_stack_limit(0, value)
        torch.cuda.synchronize()

    set_stack(1024)
    yield torch, set_stack
    set_stack(1024)


def example():
    return runpy.run_path(str(EXAMPLE), run_name="stack_reservation")


@pytest.mark.gpu
def test_gpu_stack_reservation_is_measured_and_pinned_on_the_launch(gpu_stack, tmp_path):
    import tritonhook
    from tritonhook.store import Store

    torch, set_stack = gpu_stack
    kernels = example()
    x = torch.arange(1 << 20, dtype=torch.int32, device="cuda")
    out = torch.empty_like(x)
    with tritonhook.memwatch.watch(device=0, interval_ms=2, store=tmp_path / "store", label="16 KiB frame") as watch:
        kernels["local_array_kernel"][((1 << 20) // 128,)](x, out, BLOCK=128, ASM=kernels["local_array_asm"](16384))
        torch.cuda.synchronize()
    result = watch.result
    result.report()
    (saved,) = Store(tmp_path / "store").results("memwatch", label="16 KiB frame")  # saved as the region ended
    assert saved.id == result.id and saved.to_json() == result.to_json()
    assert (result.before.stack, result.after.stack) == (1024, 16384)
    growth = result.summary()["growth"]
    expected = (16384 - 1024) * result.device.sms * result.device.max_threads_per_sm
    assert abs(growth - expected) <= 32 * MIB, f"NVML used grew {growth:,} B, stack formula says {expected:,}"
    assert result.after.torch_reserved == result.before.torch_reserved
    assert [g.kernel for g in stack_growths(result.snapshots)] == ["local_array_kernel"]
    parts = {p.name: p.bytes for p in result.attribution()}
    assert abs(parts["residual"]) <= 32 * MIB
    assert len(result.samples) > 10 and max(s.used for s in result.samples) - result.before.used >= expected - 32 * MIB
    # the timeline goes on past the region (the launch is its last event): the grown level, not a last point
    (growth,) = stack_growths(result.snapshots)
    later = [s for s in result.samples if s.t > growth.t]
    assert result.samples[-1].t >= result.after.t + tail_seconds(result.after.t, 2)
    assert len(later) >= 5 and all(s.used - result.before.used >= expected - 32 * MIB for s in later)
    # reset_stack_limit() gives the memory back (docs/tma_stack.md#the-stack-reservation) ...
    with tritonhook.memwatch.watch(device=0) as release:
        assert tritonhook.memwatch.reset_stack_limit() == (16384, 1024)
    assert abs(release.result.summary()["growth"] + expected) <= 32 * MIB
    # ... and the next launch of such a kernel takes it again
    with tritonhook.memwatch.watch(device=0) as again:
        kernels["local_array_kernel"][((1 << 20) // 128,)](x, out, BLOCK=128, ASM=kernels["local_array_asm"](16384))
        torch.cuda.synchronize()
    assert (again.result.before.stack, again.result.after.stack) == (1024, 16384)
    assert abs(again.result.summary()["growth"] - expected) <= 32 * MIB
    print(f"stack line {expected:,} B; reset: NVML used {release.result.summary()['growth']:+,} B; "
          f"next launch: {again.result.summary()['growth']:+,} B")


@pytest.mark.gpu
def test_gpu_measured_limit_falls_in_the_preflight_range(gpu_stack):
    """A 12,000 B frame (neither a power of two nor a multiple of 1 KiB) tells the driver's rounding apart."""
    import tritonhook
    from tritonhook import preflight
    from tritonhook.cubin import Cubin

    torch, _ = gpu_stack
    kernels = example()
    x = torch.arange(1 << 16, dtype=torch.int32, device="cuda")
    with tritonhook.memwatch.watch(device=0) as watch:
        compiled = kernels["local_array_kernel"][((1 << 16) // 128,)](x, torch.empty_like(x), BLOCK=128,
                                                                      ASM=kernels["local_array_asm"](12000))
        torch.cuda.synchronize()
    device = watch.result.device
    gpu = preflight.GpuSpec(device.name, 0, device.sms, device.max_threads_per_sm, "measured")
    (prediction,) = preflight.predict_cubin(Cubin.from_bytes(compiled.asm["cubin"]), [gpu])
    measured = watch.result.after.stack
    print(f"frame {prediction.ptxas_stack} B -> driver stack limit {measured} B")
    assert prediction.stack_low <= measured <= prediction.stack_high, (prediction.ptxas_stack, measured)


@pytest.mark.gpu
def test_gpu_tma_scratch_is_recorded_per_launch_and_hooks_are_left_as_found(gpu_stack):
    import triton
    from triton import knobs

    import tritonhook
    from tritonhook.samples import tma_copy_kernel

    torch, _ = gpu_stack

    def allocator(size, alignment, stream):
        return torch.empty(size, dtype=torch.int8, device="cuda")

    triton.set_allocator(allocator)
    chains_before = {name: list(getattr(knobs.runtime, name).calls) for name in _triton.RUNTIME_HOOK_CHAINS}
    a = torch.randn(1024, 1024, dtype=torch.float16, device="cuda")
    grid = (1024 // 64, 1024 // 64)
    with tritonhook.memwatch.watch(device=0) as watch:
        for _ in range(2):
            compiled = tma_copy_kernel[grid](a, torch.empty_like(a), 1024, 1024, BLOCK_M=64, BLOCK_N=64)
        torch.cuda.synchronize()
    stats = watch.result.kernels["tma_copy_kernel"]
    per_launch = grid[0] * grid[1] * compiled.metadata.num_ctas * compiled.metadata.global_scratch_size
    assert per_launch > 0
    assert (stats.launches, stats.scratch_requests, stats.scratch_bytes_total) == (2, 2, 2 * per_launch)
    assert stats.scratch_in_torch is True
    assert watch.result.after.stack == watch.result.before.stack  # sm_90a TMA makes no driver call
    assert {name: getattr(knobs.runtime, name).calls for name in _triton.RUNTIME_HOOK_CHAINS} == chains_before
    assert _triton.allocator_var().get() is allocator


@pytest.mark.gpu
def test_gpu_cli_compare_runs_each_command_in_a_fresh_process(tmp_path):
    pytest.importorskip("torch")
    command = f"{sys.executable} {EXAMPLE} --no-watch --kernel"
    paths = [str(EXAMPLE.parents[1]), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    completed = subprocess.run([sys.executable, "-m", "tritonhook", "memwatch", "--json", "--compare",
                                f"local={command} local", f"plain={command} plain"], capture_output=True, text=True,
                               timeout=170, env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)})
    assert completed.returncode == 0, completed.stderr
    results = {name: MemwatchResult.from_json(data) for name, data in json.loads(completed.stdout).items()}
    assert results["local"].after.stack == 16384 and results["plain"].after.stack == 1024
    local_stack = next(p for p in results["local"].attribution() if p.name.startswith("stack"))
    device = results["local"].device
    assert local_stack.bytes == (16384 - 1024) * device.sms * device.max_threads_per_sm
    assert [g.kernel for g in stack_growths(results["local"].snapshots)] == ["local_array_kernel"]


@pytest.mark.gpu
def test_gpu_cli_memwatch_stopped_by_sigterm_still_reports_what_it_saw(tmp_path):
    """`timeout` stops a job with SIGTERM: the command's process keeps its timeline as the signal ends it, and
    `tritonhook memwatch` shows that report (JSON here) before it exits with the command's status, 143."""
    import signal

    pytest.importorskip("torch")
    script = tmp_path / "then_sleep.py"
    script.write_text("import time, torch\n"
                      "x = torch.empty(64 << 20, dtype=torch.uint8, device='cuda')\n"
                      "torch.cuda.synchronize()\n"
                      "print('allocated', flush=True)\n"
                      "time.sleep(600)\n")
    running = subprocess.Popen([sys.executable, "-m", "tritonhook", "memwatch", "--json", "--", sys.executable,
                                str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert running.stdout.readline().strip() == "allocated"
    running.send_signal(signal.SIGTERM)
    out, err = running.communicate(timeout=120)
    assert running.returncode == 128 + signal.SIGTERM, err[-2000:]
    result = MemwatchResult.from_json(json.loads(out))
    assert result.after.used - result.before.used >= 64 << 20, result.attribution()


INDUCTOR_PROGRAM = """
import torch

def scaled_softmax_sum(x):
    return torch.softmax(x * 2.0 + 1.0, dim=-1).sum(dim=0)  # pointwise + reductions: Inductor emits Triton kernels

x = torch.randn(512, 1024, device="cuda")
out = torch.compile(scaled_softmax_sum)(x)
torch.cuda.synchronize()
assert torch.allclose(out, scaled_softmax_sum(x), rtol=1e-4, atol=1e-4)
"""


def inductor_kernels(result: MemwatchResult) -> dict[str, KernelStats]:
    return {name: stats for name, stats in result.kernels.items() if name.startswith("triton_")}


@pytest.mark.gpu
def test_gpu_memwatch_sees_the_kernels_inductor_launches():
    """torch's default static CUDA launcher bypasses Triton's launch hooks; memwatch switches it off for its region,
    so a torch.compile'd function's kernels are in its launch list (they were missing before)."""
    torch = pytest.importorskip("torch")
    import torch._inductor.config as inductor_config

    import tritonhook

    default = inductor_config.use_static_cuda_launcher
    torch.ones(1, device="cuda")
    with tritonhook.memwatch.watch(device=0) as watch:
        exec(compile(INDUCTOR_PROGRAM, "<inductor program>", "exec"), {})
    kernels = inductor_kernels(watch.result)
    print({name: stats.launches for name, stats in kernels.items()})
    assert kernels and all(stats.launches >= 1 for stats in kernels.values()), watch.result.kernels
    assert inductor_config.use_static_cuda_launcher is default


@pytest.mark.gpu
def test_gpu_cli_memwatch_sees_the_kernels_inductor_launches_in_the_command(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "inductor_program.py"
    script.write_text(INDUCTOR_PROGRAM)
    paths = [str(EXAMPLE.parents[1]), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    store, out = tmp_path / "store", tmp_path / "memwatch.json"
    completed = subprocess.run([sys.executable, "-m", "tritonhook", "memwatch", "--json", "--store", str(store),
                                "--out", str(out), "--", sys.executable, str(script)], capture_output=True, text=True,
                               timeout=300, env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)})
    assert completed.returncode == 0, completed.stderr
    printed = MemwatchResult.from_json(json.loads(completed.stdout))
    # the same result three ways: printed, written to --out, saved in --store under the command that ran
    from tritonhook.mem.result import RESULT_KIND
    from tritonhook.store import Store

    (saved,) = Store(store, readonly=True).results(RESULT_KIND, label=f"{sys.executable} {script}")
    assert printed == load_result(out) and dataclasses.replace(saved, id=None) == printed and saved.id == 1
    kernels = inductor_kernels(printed)
    print({name: stats.launches for name, stats in kernels.items()})
    assert kernels, completed.stdout
