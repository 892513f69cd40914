"""`tritonhook sweep` / `record` / `replay` on a CPU: variants built from real captures with real ptxas, the
recording format (round trip, snapshot budget, synthetic marking, aliases, versions) with real launch specs and
torch CPU tensors, the launch tracer's install/uninstall against Triton's real classes, the result type, and the
CLI's bad input. The GPU half (recording and replaying) is in tests/test_sweep_gpu.py."""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
import subprocess
import sys

import pytest

import tritonhook
from tritonhook import _triton
from tritonhook import binaries as tools
from tritonhook.cubin import Cubin
from tritonhook.errors import TritonhookError
from tritonhook.measure.variants import parse_variants
from tritonhook.samples import compile_sample
from tritonhook.store import Store
from tritonhook.sweep import recording as rec
from tritonhook.sweep.replay import synthetic_warning, unprobed_warning
from tritonhook.sweep.result import SweepResult, SweepRow, VariantTiming, analyze_row, estimate
from tritonhook.sweep.builds import build_variants, captured_ptxas

pytestmark = pytest.mark.every_release  # reaches what differs between Triton releases (scripts/test-matrix.sh)

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tl = triton.language


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """A store with real captures of three sample kernels for sm_90a, and their compiled kernels."""
    store_dir = tmp_path_factory.mktemp("sweep-store")
    kernels = {}
    # a module fixture runs before the per-test cache fixture: its own cache, or a user cache's entries leak in
    with pytest.MonkeyPatch.context() as patch, tritonhook.session(store_dir) as session:
        patch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.mktemp("sweep-cache")))
        for name in ("add", "matmul_fp32_ieee", "matmul_fp8"):
            kernels[name] = compile_sample(name, 90)
    store = Store(store_dir)
    by_hash = {c.triton_hash: c for c in store.captures(ids=session.capture_ids)}
    return store, {name: (kernel, by_hash[kernel.hash]) for name, kernel in kernels.items()}


# ----- variants -----------------------------------------------------------------------------------------------------
def test_plain_assembled_from_the_captured_ptx_with_tritons_flags_is_the_captured_cubin(captured):
    store, kernels = captured
    for name, (_, capture) in kernels.items():
        flags = tools.triton_ptxas_args(capture.options, _triton.parse_version(capture.frontend_version))
        rebuilt = tools.assemble(store.read(capture, "ptx"), captured_ptxas(capture), capture.arch, flags).cubin
        assert rebuilt == store.read(capture, "cubin"), name


def test_renamed_variant_changes_the_ffma_matmul_and_leaves_the_wgmma_fp8_matmul_identical(captured):
    store, kernels = captured
    variants = parse_variants("plain,cutlass_")
    ffma = build_variants(store, kernels["matmul_fp32_ieee"][1], variants)
    assert [b.entry for b in ffma] == ["matmul_kernel", "cutlass_matmul_kernel"]
    renamed = Cubin.from_bytes(ffma[1].cubin)
    assert list(renamed.kernels) == ["cutlass_matmul_kernel"]
    assert ffma[0].cubin == store.read(kernels["matmul_fp32_ieee"][1], "cubin")
    assert ffma[1].same_text_as is None and ffma[1].summary["text_sha256"] != ffma[0].summary["text_sha256"]
    fp8 = build_variants(store, kernels["matmul_fp8"][1], variants)
    assert fp8[1].same_text_as == "plain"  # docs/ptxas_cutlass.md#the-cutlass-name-path: wgmma matmuls compile to identical .text


def test_a_repeated_plain_is_timed_and_another_ptxas_is_a_variant_of_its_own(captured):
    store, kernels = captured
    import os

    captured_tool = os.path.realpath(captured_ptxas(kernels["add"][1]))
    other = next((path for tool in ("ptxas", "ptxas-blackwell") if (path := tools.triton_bundled(tool))
                  and os.path.realpath(path) != captured_tool), None)
    if other is None:
        pytest.skip("Triton bundles no second ptxas")
    built = build_variants(store, kernels["add"][1], parse_variants("plain,plain"), [other])
    if built[2].failed:  # Triton 3.9's PTX ISA 9.4 is newer than its ptxas 12.9 reads: said so, the others built
        assert built[2].failed == "error" and not built[2].cubin and built[0].cubin
        assert "Unsupported .version" in built[2].error and "plain@" in built[2].error
        pytest.skip(f"the other bundled ptxas is older than this Triton's PTX: {built[2].error}")
    version = tools.ptxas_version(other)
    assert [b.label for b in built] == ["plain", "plain#2", f"plain@{version}", f"plain#2@{version}"]
    assert built[1].same_text_as is None and built[1].cubin == built[0].cubin
    assert built[2].ptxas == other and built[2].ptxas_version == version
    assert built[2].cubin != built[0].cubin  # another ptxas wrote it
    same_text = built[2].summary["text_sha256"] == built[0].summary["text_sha256"]
    assert built[2].same_text_as == ("plain" if same_text else None)  # identical .text: marked, not timed twice


def test_a_variant_loads_as_a_triton_kernel_under_its_new_name(captured, tmp_path):
    store, kernels = captured
    kernel, capture = kernels["add"]
    built = build_variants(store, capture, parse_variants("plain,cutlass_"))[1]
    loaded = _triton.load_kernel(tmp_path, _triton.launch_spec(kernel), built.metadata_json, built.cubin, built.entry)
    assert loaded.name == loaded.metadata.name == "cutlass_add_kernel"
    assert loaded.asm["cubin"] == built.cubin
    assert loaded.src.signature == kernel.src.signature and loaded.src.constants == kernel.src.constants


# ----- a kernel's source -------------------------------------------------------------------------------------------
def fused_6(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 2, mask=offsets < n)


SCALE_BY_TWO = fused_6


def fused_6(x_ptr, n, BLOCK: tl.constexpr):  # noqa: F811 (a second kernel of the name, as in another graph)
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 3, mask=offsets < n)


SCALE_BY_THREE = fused_6


def _compiled(function, block: int):
    """`function` compiled for sm_90a at BLOCK `block`."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    source = ASTSource(triton.jit(function), {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": block})
    return triton.compile(source, target=GPUTarget("cuda", 90, 32))


def test_a_kernels_source_tells_two_kernels_of_one_name_apart_and_is_one_over_its_configs(tmp_path, monkeypatch):
    """Two graphs compiled by Inductor can each have a `triton_poi_fused_..._6` of other code: on the H200, a pin's
    confirmation read both as the pinned kernel (PyG's GAT and GraphSAGE). `LaunchSpec.source` is what tells them
    apart; a recording keeps it per signature, and every config of one autotuned kernel has the same one."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    twice_64, twice_128 = (_triton.launch_spec(_compiled(SCALE_BY_TWO, block)) for block in (64, 128))
    thrice = _triton.launch_spec(_compiled(SCALE_BY_THREE, 64))
    assert twice_64.name == thrice.name == "fused_6" and twice_64.triton_hash != twice_128.triton_hash
    assert twice_64.source and twice_64.source == twice_128.source != thrice.source


# ----- the recording format -----------------------------------------------------------------------------------------
def _signature(kernel, capture, args, **overrides) -> rec.Signature:
    spec = _triton.launch_spec(kernel)
    values = dict(id=0, kernel=spec.name, triton_hash=spec.triton_hash, capture_id=capture.id, arch=capture.arch,
                  grid=[4, 1, 1], args=args, arg_names=spec.arg_names, signature=spec.signature,
                  constexprs=spec.to_json()["constexprs"], launches=100, times_ms=[0.01, 0.012, 0.011])
    return rec.Signature(**{**values, **overrides})


def test_snapshots_round_trip_and_the_budget_marks_the_rest_synthetic(captured):
    store, kernels = captured
    kernel, capture = kernels["add"]
    spec = _triton.launch_spec(kernel)
    base = torch.arange(64, dtype=torch.float32)
    x = base[8:40:2]                     # strided, with a storage offset
    y = torch.randn(16)
    out = torch.empty(16)
    args = (x, y, out, 16, 1024)
    budget = rec.SnapshotBudget(per_signature=x.numel() * 4 + y.numel() * 4, total=10**9)
    described = rec.describe_args(args, spec.arg_names, spec.signature, spec.constexprs, blobs=store,
                                  budget=budget)
    assert [a["kind"] for a in described] == ["tensor", "tensor", "tensor", "scalar", "constexpr"]
    assert described[0]["strides"] == [2] and described[0]["storage_offset"] == 8 and described[0]["span"] == 31
    snapshot = torch.frombuffer(bytearray(store.read_blob(described[0]["blob"])), dtype=torch.float32)
    assert torch.equal(snapshot.as_strided((16,), (2,)), x)
    assert described[2]["synthetic"] and described[2]["blob"] is None  # over the per-signature budget
    assert rec.inputs_status(described) == rec.PARTLY_SYNTHETIC
    recording = rec.Recording([_signature(kernel, capture, described)], arch="sm_90a", device=None,
                              triton_version="3.6.0", torch_version=torch.__version__, pid=1)
    again = rec.Recording.from_json(json.loads(json.dumps(recording.to_json())))
    assert again == recording and again.signatures[0].label() == "add_kernel [16, 16, 16]"


def test_a_recording_from_before_the_lag_loads_without_it_and_a_new_one_keeps_it(captured):
    """Format 3 had no `behind_ms`: such a recording loads with None; format 4 keeps it through JSON."""
    kernel, capture = captured[1]["add"]
    recording = rec.Recording([_signature(kernel, capture, [], behind_ms=4.25)], arch="sm_90a", device=None,
                              triton_version="3.6.0", torch_version=torch.__version__, pid=1)
    data = json.loads(json.dumps(recording.to_json()))
    assert rec.Recording.from_json(data).signatures[0].behind_ms == 4.25
    del data["signatures"][0]["behind_ms"]
    data["version"] = 3
    assert rec.Recording.from_json(data).signatures[0].behind_ms is None


def test_measured_l2_says_why_a_signature_is_replayed_cold(captured):
    """A probed recording: of four signatures one was probed, one only the autotuner launched (a losing config), one
    ran once (never timed), one was timed but not probed. A recording without the probe says so instead."""
    kernel, capture = captured[1]["add"]
    signatures = [_signature(kernel, capture, [], id=0, l2_resident=[[1.0]]),
                  _signature(kernel, capture, [], id=1, launches=0, tuning_launches=40),
                  _signature(kernel, capture, [], id=2, launches=1), _signature(kernel, capture, [], id=3)]
    recording = rec.Recording(signatures, arch="sm_90a", device=None, triton_version="3.6.0",
                              torch_version=torch.__version__, pid=1, l2_calibration={"hot": 520, "cold": 1100})
    assert unprobed_warning(recording, signatures) == (
        "--l2 measured: 3 signature(s) never probed inside the workload, replayed cold: 1 launched only by an "
        "autotuner, 1 launched once, 1 not probed")
    assert unprobed_warning(recording, signatures[:1]) is None
    recording.l2_calibration = None
    assert unprobed_warning(recording, signatures[1:3]).endswith(
        "or its calibration failed): 2 signature(s) replayed cold")


def test_the_configs_of_one_autotune_decision_share_one_snapshot_taken_before_the_first_wrote(captured):
    """265 configs of one library each snapshotted its 8 MiB arguments and spent the per-process budget, so later
    signatures replayed on synthetic data. Configs of one decision launch with the same tensors: one snapshot,
    from before the first config wrote its output, serves them all and costs the budget once."""
    store, kernels = captured
    spec = _triton.launch_spec(kernels["add"][0])
    x, y, out = torch.randn(256), torch.randn(256), torch.zeros(256)
    budget = rec.SnapshotBudget(per_signature=10**9, total=3 * 256 * 4)  # room for one config's three tensors
    shared: dict = {}
    first = rec.describe_args((x, y, out, 256, 128), spec.arg_names, spec.signature, spec.constexprs, blobs=store,
                              budget=budget, shared=shared)
    out.copy_(x + y)  # what the first config wrote
    others = [rec.describe_args((x, y, out, 256, block), spec.arg_names, spec.signature, spec.constexprs, blobs=store,
                                budget=budget, shared=shared) for block in (256, 512, 1024)]
    assert all(rec.inputs_status(d) == rec.SNAPSHOT for d in [first, *others])
    assert {d[2]["blob"] for d in [first, *others]} == {first[2]["blob"]}
    assert torch.equal(torch.frombuffer(bytearray(store.read_blob(others[-1][2]["blob"])), dtype=torch.float32),
                       torch.zeros(256))  # the output as it was before any config ran
    unshared = rec.describe_args((x, y, out, 256, 2048), spec.arg_names, spec.signature, spec.constexprs,
                                 blobs=store, budget=budget)
    assert rec.inputs_status(unshared) == rec.SYNTHETIC  # without sharing, the budget was spent
    assert budget.to_json()["refused"] == {"per_signature": [0, 0], "total": [3, 3 * 256 * 4]}


def test_a_replay_on_synthetic_inputs_says_how_many_and_which_budget_refused_them(captured):
    kernel, capture = captured[1]["add"]
    synthetic = [{"kind": "tensor", "alias": None, "span": 16, "synthetic": True, "blob": None}]
    signatures = [_signature(kernel, capture, synthetic, id=0), _signature(kernel, capture, [], id=1)]
    recording = rec.Recording(signatures, arch="sm_90a", device=None, triton_version="3.6.0",
                              torch_version=torch.__version__, pid=1,
                              budget={"refused": {"per_signature": [0, 0], "total": [265, 3 * 2**30]}})
    assert synthetic_warning(recording, signatures) == (
        "1 signature(s) replayed on synthetic inputs and 0 partly, marked in the inputs column: 265 tensor(s), "
        "3.0 GiB, over the per-process budget; raise the budgets with --budget (per signature) and "
        "--snapshot-budget (per process)")
    assert synthetic_warning(recording, signatures[1:]) is None


def test_aliased_arguments_share_one_buffer_and_nothing_over_budget_is_snapshotted(captured):
    store, kernels = captured
    spec = _triton.launch_spec(kernels["add"][0])
    x = torch.randn(32)
    described = rec.describe_args((x, x, x, 32, 1024), spec.arg_names, spec.signature, spec.constexprs, blobs=store,
                                  budget=rec.SnapshotBudget(per_signature=0, total=0))
    assert [a["alias"] for a in described[:3]] == [None, 0, 0]
    assert rec.inputs_status(described) == rec.SYNTHETIC
    assert rec.argument_key((x, x, x, 32, 1024)) == rec.argument_key((x.clone(), x, x, 32, 1024))
    assert rec.argument_key((x, x, x, 32, 1024)) != rec.argument_key((x, x, x, 33, 1024))


def test_recordings_of_another_version_or_shape_are_refused_clearly():
    newer, reads = rec.VERSION + 1, ", ".join(map(str, rec.READS))
    with pytest.raises(TritonhookError, match=f"version {newer}, this tritonhook reads versions {reads}; upgrade"):
        rec.Recording.from_json({"format": rec.FORMAT, "version": newer}, source="r.json")
    with pytest.raises(TritonhookError, match="r.json: not a tritonhook recording"):
        rec.Recording.from_json({"signatures": []}, source="r.json")
    with pytest.raises(TritonhookError, match="r.json: malformed recording"):
        rec.Recording.from_json({"format": rec.FORMAT, "version": rec.VERSION, "signatures": [{}]}, source="r.json")


def test_a_recording_replays_only_on_its_architecture():
    rec.check_arch("sm_90a", "sm_90", source="recording 3")
    with pytest.raises(TritonhookError, match="recording 3: recorded on sm_90a, this GPU is sm_100"):
        rec.check_arch("sm_90a", "sm_100", source="recording 3")


def recorded_descriptor(descriptor) -> dict:
    """A host TMA descriptor argument as a recording keeps it: described, then through the recording's JSON."""
    (arg,) = rec.describe_args((descriptor,), ["desc"], {"desc": "tensordesc"}, {},
                               descriptor_fields=_triton.tensor_descriptor_fields)
    return json.loads(json.dumps(arg))


def rebuilt_descriptor(arg: dict, base):
    """What the replay worker builds from a recorded descriptor argument."""
    return _triton.make_tensor_descriptor(base, {k: v for k, v in arg.items() if k not in ("kind", "name", "base")})


def descriptor_data(descriptor) -> tuple:
    return (type(descriptor), [list(descriptor.shape), list(descriptor.strides), list(descriptor.block_shape)],
            descriptor.padding, getattr(descriptor, "layout", None))


def test_a_gluon_host_descriptor_round_trips_through_the_recording_with_its_shared_layout():
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    base = torch.arange(128 * 256, dtype=torch.float16).reshape(128, 256)  # Gluon's constructor takes a CPU base
    swizzled_128 = gl.NVMMASharedLayout.get_default_for([64, 64], gl.float16)
    swizzled_64 = gl.NVMMASharedLayout(swizzle_byte_width=64, element_bitwidth=16)
    descriptor = TensorDescriptor.from_tensor(base[:, 64:], [64, 64], swizzled_128)
    arg = recorded_descriptor(descriptor)
    assert (arg["kind"], arg["descriptor"], arg["base"]["shape"]) == ("tensordesc", "gluon", [128, 192])
    assert arg["layout"]["class"] == "NVMMASharedLayout" and arg["layout"]["swizzle_byte_width"] == 128
    rebuilt = rebuilt_descriptor(arg, base[:, 64:])
    assert descriptor_data(rebuilt) == descriptor_data(descriptor)
    other_layout = TensorDescriptor.from_tensor(base[:, 64:], [64, 64], swizzled_64)
    assert rec.argument_key((descriptor,)) != rec.argument_key((other_layout,))
    assert rec.argument_key((descriptor,)) == rec.argument_key((rebuilt,))


def test_a_triton_host_descriptor_still_round_trips_also_from_a_recording_without_the_descriptor_field():
    from triton.tools.tensor_descriptor import TensorDescriptor

    base = torch.zeros(64, 128, dtype=torch.float16)
    descriptor = TensorDescriptor.from_tensor(base, [32, 64])
    arg = recorded_descriptor(descriptor)
    assert arg["descriptor"] == "triton"
    assert descriptor_data(rebuilt_descriptor(arg, base)) == descriptor_data(descriptor)
    del arg["descriptor"]  # recorded before Gluon descriptors were
    assert descriptor_data(rebuilt_descriptor(arg, base)) == descriptor_data(descriptor)
    with pytest.raises(TritonhookError, match="gluon host TMA descriptor .* cannot rebuild it"):
        _triton.make_tensor_descriptor(base, {"descriptor": "gluon", "shape": [64, 128], "strides": [128, 1],
                                              "block_shape": [32, 64], "no_such_field": 1})


# ----- the launch tracer against Triton's real classes -------------------------------------------------------------
def test_the_launch_tracer_puts_back_exactly_what_it_found():
    from triton import knobs
    from triton.compiler.compiler import CompiledKernel

    method, enter, exit_ = CompiledKernel.launch_metadata, knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
    calls = list(exit_.calls)
    tracer = _triton.LaunchTracer(lambda *launch: None)
    tracer.install()
    assert CompiledKernel.launch_metadata is not method
    tracer.uninstall()
    assert CompiledKernel.launch_metadata is method
    assert knobs.runtime.launch_enter_hook is enter and knobs.runtime.launch_exit_hook is exit_
    assert exit_.calls == calls


@pytest.mark.parametrize("sample_every", [1, 8])
def test_a_sampling_tracer_looks_at_about_one_launch_in_k_and_keeps_each_kernels_total(captured, sample_every):
    """Triton's real `CompiledKernel.launch_metadata` (an sm_90a build) called 2,000 times as a launcher does, two
    argument shapes alternating. The enter slot is emptied meanwhile so that Triton's own method returns before it
    would load the module (no GPU here); the tracer's wrapper runs as on every launch."""
    from triton import knobs

    kernel, _ = captured[1]["add"]
    x = torch.randn(128)
    seen = []
    tracer = _triton.LaunchTracer(lambda spec, grid, args, weight, signature: seen.append((args[3], weight)),
                                  sample_every=sample_every, exact_first=16)
    tracer.install()
    enter, knobs.runtime.launch_enter_hook = knobs.runtime.launch_enter_hook, None
    try:
        for i in range(2000):
            kernel.launch_metadata((1, 1, 1), 0, x, x, x, 64 if i % 2 else 128, 1024)
    finally:
        knobs.runtime.launch_enter_hook = enter
        tracer.uninstall()
    assert sum(weight for _, weight in seen) + sum(tracer.passed_over().values()) == 2000
    per_shape = {n: sum(weight for m, weight in seen if m == n) for n in (64, 128)}
    if sample_every == 1:
        assert len(seen) == 2000 and per_shape == {64: 1000, 128: 1000}
    else:  # the first 16 in full, then about 1984 / 8; each shape's estimate near its true 1,000
        assert 16 + 0.8 * 1984 / 8 < len(seen) < 16 + 1.25 * 1984 / 8
        assert all(abs(count - 1000) < 150 for count in per_shape.values()), per_shape


class _TimingRecorder(importlib.import_module("tritonhook.sweep.recorder").Recorder):
    """The recorder with its CUDA-event timing replaced by a note of which launch of which signature it would
    time (this machine has no GPU); everything else is the recorder's own."""

    def _prepare_timing(self):
        pass

    def _start_timing(self, pending, probed):
        self.timed.append((pending.signature.id, pending.signature.launches))
        if probed is not None:
            self.probed.append((pending.signature.id, pending.signature.launches))
        return None


def _launch_without_gpu(kernel, launches):
    """Call Triton's real `CompiledKernel.launch_metadata` as a launcher does for each (grid, args) of `launches`,
    with the enter slot emptied so that Triton's own method returns before it would load the module."""
    from triton import knobs

    enter, knobs.runtime.launch_enter_hook = knobs.runtime.launch_enter_hook, None
    try:
        for grid, args in launches:
            kernel.launch_metadata(grid, 0, *args)
    finally:
        knobs.runtime.launch_enter_hook = enter


def _recording_tracer(store, recorder_options: dict, tracer_options: dict):
    """A `_TimingRecorder` fed by a signature-keyed tracer (as `sweep.record` wires them), and the list of the
    grids of the launches the tracer handed over in full."""
    recorder = _TimingRecorder(store, rec.SnapshotBudget(1 << 20, 1 << 24), **recorder_options)
    recorder.timed, recorder.probed = [], []
    tracer = _triton.LaunchTracer(recorder.on_launch, signature_key=rec.signature_key, **tracer_options)
    recorder.launch_tracer = tracer
    full, on_launch = [], recorder.on_launch
    tracer.on_launch = lambda *launch: full.append(launch[1]) or on_launch(*launch)
    return recorder, tracer, full


def _recorded(store, kernel, launches, recorder_options: dict, tracer_options: dict | None = None):
    """`launches` of `kernel` through a `_recording_tracer` installed for them (no GPU: `_launch_without_gpu`)."""
    recorder, tracer, full = _recording_tracer(store, recorder_options, tracer_options or {})
    tracer.install()
    try:
        _launch_without_gpu(kernel, launches)
    finally:
        tracer.uninstall()
    return recorder, tracer, full


def test_an_exact_recording_counts_every_launch_per_signature_and_sees_in_full_only_those_it_times(captured, tmp_path):
    """2,000 real launch-metadata calls of the sm_90a add kernel: n alternating 64/128 on grid (1,), tensors of two
    lengths with the same n (one signature: the kernel sees pointers and n), and 100 on another grid. The tracer
    passes over what the recorder does not time, and every launch is counted in its signature."""
    store, kernels = captured
    kernel, _ = kernels["add"]
    short, long = torch.randn(128), torch.randn(4096)
    launches = [((1,), (x, x, x, 64 if i % 2 else 128, 1024)) for i in range(1900) for x in [short if i % 3 else long]]
    launches += [((2,), (short, short, short, 128, 1024))] * 100
    recorder, tracer, full = _recorded(store, kernel, launches, dict(timed_first=3, time_every=64))
    counts = {(tuple(p.signature.grid), p.signature.args[3]["value"]): p.signature.launches + p.seen.passed
              for p in recorder.pending}
    assert counts == {((1, 1, 1), 128): 950, ((1, 1, 1), 64): 950, ((2, 1, 1), 128): 100}
    expected_timed = {count: [2, 3, 4] + list(range(64, count + 1, 64)) for count in (950, 100)}
    for pending in recorder.pending:
        timed = [calls for signature_id, calls in recorder.timed if signature_id == pending.signature.id]
        assert timed == expected_timed[pending.signature.launches + pending.seen.passed]
        # the L2 probe (on by default) goes with the first timed launches only: none in the steady state
        assert [calls for signature_id, calls in recorder.probed if signature_id == pending.signature.id] == [2, 3, 4]
    assert len(full) == 3 + len(recorder.timed)  # the tracer shows a signature's first launch and its timed ones


def test_a_scalar_new_at_every_launch_stops_splitting_the_kernel_into_untimed_signatures(captured, capsys):
    """flash-attn-triton passes a fresh dropout seed at every step: keyed by it, every launch of its forward and
    backward was a signature of its own, launched once, never timed, and the recording gave those kernels (all of
    the GPU time in `torch.profiler`) no share. Real launch-metadata calls of the sm_90a add kernel on the C path:
    n cycling through four sizes (a model's layers) on grid (2,) stays four signatures; then n new at each of 40
    launches on grid (1,) becomes one signature after `RECORD_FRESH_SCALARS` launches, timed from its second launch,
    counting all 40 (the ones before folded in, the recording says so)."""
    from tritonhook import config

    store, kernels = captured
    kernel, _ = kernels["add"]
    x = torch.randn(128)
    fresh = config.sweep.RECORD_FRESH_SCALARS
    launches = [((2,), (x, x, x, (64, 128, 256, 512)[i % 4], 1024)) for i in range(40)]
    launches += [((1,), (x, x, x, 1000 + i, 1024)) for i in range(40)]
    recorder, tracer, full = _recorded(store, kernel, launches, dict(timed_first=3, time_every=64))
    for pending in recorder.pending:
        pending.signature.launches += pending.seen.passed
    merged_id = next(p.signature.id for p in recorder.pending if p.signature.args[3]["value"] == 1000 + fresh - 1)
    recorder._fold_fresh_scalars()
    by_grid = {}
    for pending in recorder.pending:
        by_grid.setdefault(pending.signature.grid[0], []).append(pending.signature)
    (seeded,) = by_grid[1]
    assert (seeded.launches, seeded.args[3]["value"]) == (40, 1000 + fresh - 1)
    assert [calls for signature_id, calls in recorder.timed if signature_id == merged_id] == [2, 3, 4]
    assert sorted((s.args[3]["value"], s.launches) for s in by_grid[2]) == [(64, 10), (128, 10), (256, 10),
                                                                             (512, 10)]
    assert [p.signature.id for p in recorder.pending] == list(range(5))  # numbered again after the fold
    assert f"add_kernel: n took a new value at each of {fresh} launches in a row" in capsys.readouterr().err


def test_a_sampling_recording_still_counts_each_kernels_launches_exactly(captured):
    """Sampling (kernel gaps) and signatures passed over (up to the next timed launch) together, in the C path:
    3,000 launches of two signatures; the kernel's total stays exact and each signature's estimate near 1,500."""
    store, kernels = captured
    kernel, _ = kernels["add"]
    x = torch.randn(128)
    launches = [((1,), (x, x, x, 64 if i % 2 else 128, 1024)) for i in range(3000)]
    recorder, tracer, full = _recorded(store, kernel, launches, dict(timed_first=3, time_every=64, sample_every=8),
                                       dict(sample_every=8, exact_first=16))
    counts = {p.signature.args[3]["value"]: p.signature.launches + p.seen.passed for p in recorder.pending}
    assert sum(counts.values()) + sum(tracer.passed_over().values()) == 3000
    assert all(abs(count - 1500) < 250 for count in counts.values()), counts
    assert len(full) < 300  # most launches never reached Python


def test_while_autotune_benchmarks_every_launch_reaches_the_recorder(captured):
    """A launch inside `triton.autotune`'s benchmark of a config must be seen (the recorder counts it as tuning, not
    as the workload), even for a signature the recorder lets the tracer pass over."""
    store, kernels = captured
    kernel, _ = kernels["add"]
    x = torch.randn(128)
    autotune = _triton.AutotuneTracer(lambda decision: None)
    recorder, tracer, full = _recording_tracer(store, dict(timed_first=0, time_every=10**9),
                                               dict(autotune=autotune))
    launches = [((1,), (x, x, x, 128, 1024))] * 10
    tracer.install()
    try:
        _launch_without_gpu(kernel, launches)
        assert len(full) == 1  # the first launch; the other 9 passed over
        autotune.benchmarking += 1  # what `_bench` does around a candidate's benchmark
        _launch_without_gpu(kernel, launches)
        assert len(full) == 11
        autotune.benchmarking -= 1
        _launch_without_gpu(kernel, launches)
        assert len(full) == 11
    finally:
        tracer.uninstall()


def test_signature_keys_see_scalars_and_descriptors_but_not_tensor_shapes():
    short, long = torch.randn(16), torch.randn(64, 2)
    positions = rec.signature_key((short, short, 16, 1.5, None))
    assert positions == (2, 3, 4)
    key = functools.partial(_triton.signature_key_of, positions)
    assert key((short, short, 16, 1.5, None)) == key((long, long.t(), 16, 1.5, None))
    assert key((short, short, 16, 1.5, None)) != key((short, short, 17, 1.5, None))
    assert rec.signature_key((short,)) == ()
    assert rec.signature_key((short, object())) is rec.argument_key


def test_a_tool_wrapping_over_the_tracer_keeps_working_after_uninstall():
    from triton.compiler.compiler import CompiledKernel

    original = CompiledKernel.launch_metadata
    tracer = _triton.LaunchTracer(lambda *launch: pytest.fail("called after uninstall"))
    tracer.install()
    theirs = CompiledKernel.launch_metadata

    def other_tool(self, grid, stream, *args):
        return theirs(self, grid, stream, *args)

    CompiledKernel.launch_metadata = other_tool
    try:
        tracer.uninstall()
        assert CompiledKernel.launch_metadata is other_tool  # not taken out from under the other tool
        assert not tracer.active
    finally:
        CompiledKernel.launch_metadata = original


# ----- the result -----------------------------------------------------------------------------------------------------
def _noisy(center: float, seed: int) -> list[float]:
    import random

    rng = random.Random(seed)
    return [center * (1 + rng.gauss(0, 0.003)) for _ in range(9)]


def _result() -> SweepResult:
    facts = {"plain": {"registers": 40, "spill_stores": 0, "spill_loads": 0, "frame_size": 0, "capmerc_size": 0},
             "cutlass_": {"registers": 38, "spill_stores": 0, "spill_loads": 0, "frame_size": 0, "capmerc_size": 0}}
    rows = [analyze_row(SweepRow(0, "k_fast", "k_fast [4096]", 0.6, 10, 0.100, "snapshot", "ok", "bitwise"),
                        {"plain": _noisy(0.1, 1), "cutlass_": _noisy(0.09, 2)}, facts, {}),
            analyze_row(SweepRow(1, "k_slow", "k_slow [64]", 0.3, 10, 0.050, "synthetic", "ok", "allclose",
                                 behind_ms=8.0),
                        {"plain": _noisy(0.05, 3), "cutlass_": _noisy(0.06, 4)}, facts, {}),
            analyze_row(SweepRow(2, "k_same", "k_same [8]", 0.1, 5, 0.020, "snapshot", "ok", "bitwise"),
                        {"plain": _noisy(0.02, 5)}, facts, {"cutlass_": "plain"}),
            SweepRow(3, "k_bad", "k_bad [1]", 0.0, 1, None, "none", "fault: worker exited with status -11")]
    return SweepResult(rows, ["plain", "cutlass_"], 9, 7, ["python", "train.py"], {"record": 1.0, "build": 2.0,
                                                                                       "replay": 3.0}).finish()


def test_verdicts_estimate_and_select_come_from_the_measured_rows():
    result = _result()
    assert [r.variants[1].verdict for r in result.rows[:3]] == ["faster", "slower", "SASS identical"]
    (est,) = result.estimates
    assert est.kernels == ["k_fast"] and est.select == "^(?:k_fast)$"
    assert est.command == "tritonhook run --rename cutlass_ --select '^(?:k_fast)$' -- python train.py"
    assert result.rows[0].fidelity == pytest.approx(result.rows[0].variants[0].median_ms / 0.100)
    assert estimate(result.rows, "cutlass_", None).command.endswith("-- CMD")


def test_the_estimate_is_the_recorded_time_the_kernels_faster_everywhere_save_worked_by_hand():
    """Six signatures timed at fixed figures (every round alike, so each ratio is exact), shares of the recorded
    Triton GPU time as given. Worked by hand:
      k_a [0]      share 0.40, 0.100 -> 0.080 ms: 0.8, saves 0.40 x 0.20 = 0.080
      k_a [1]      share 0.10, 0.050 -> 0.050 ms: no difference, saves 0 (in: k_a is faster elsewhere, slower nowhere)
      k_b [2]      share 0.20, 0.100 -> 0.090 ms: 0.9, saves 0.20 x 0.10 = 0.020
      k_slow [3]   share 0.15, slower (1.1): out
      k_differ [4] share 0.05, twice as fast but its outputs differ: out
      k_missed [5] share 0.10, twice as fast, but replayed at 0.100 ms where the workload ran it at 0.150 (0.67 of
                   it, outside the ±10% bar): out, listed as unconfirmed
    so the workload's Triton GPU time becomes 1 - (0.080 + 0.020) = 0.900 of itself, k_a and k_b renamed."""
    facts = {"plain": {}, "cutlass_": {}}

    def row(at, kernel, share, recorded_ms, plain_ms, renamed_ms, outputs="bitwise"):
        return analyze_row(SweepRow(at, kernel, f"{kernel} [{at}]", share, 10, recorded_ms, "snapshot", "ok", outputs),
                           {"plain": [plain_ms] * 9, "cutlass_": [renamed_ms] * 9}, facts, {})

    rows = [row(0, "k_a", 0.40, 0.100, 0.100, 0.080), row(1, "k_a", 0.10, 0.050, 0.050, 0.050),
            row(2, "k_b", 0.20, 0.100, 0.100, 0.090), row(3, "k_slow", 0.15, 0.100, 0.100, 0.110),
            row(4, "k_differ", 0.05, 0.100, 0.100, 0.050, outputs="differ"),
            row(5, "k_missed", 0.10, 0.150, 0.100, 0.050)]
    est = estimate(rows, "cutlass_", None)
    assert est.kernels == ["k_a", "k_b"] and est.ratio == pytest.approx(0.900)
    assert [entry["kernel"] for entry in est.unconfirmed] == ["k_missed"]


def test_a_row_outside_the_fidelity_bar_is_left_out_of_the_estimate_and_listed_with_its_confirmation():
    """Two kernels read ~10% faster renamed; one replays as it ran inside the workload, the other 13% faster than
    there (a linear-attention backward did, and the workload itself then showed no difference): only the first is
    in the estimate and the `run` line; the second is listed apart with its replay/workload ratio and the `ab` line
    that measures it in the workload."""
    facts = {"plain": {}, "cutlass_": {}}
    rows = [analyze_row(SweepRow(0, "k_held", "k_held [4096]", 0.2, 10, 0.100, "snapshot", "ok", "bitwise"),
                        {"plain": _noisy(0.1, 1), "cutlass_": _noisy(0.09, 2)}, facts, {}),
            analyze_row(SweepRow(1, "k_missed", "k_missed [64]", 0.8, 10, 0.115, "snapshot", "ok", "bitwise"),
                        {"plain": _noisy(0.1, 3), "cutlass_": _noisy(0.09, 4)}, facts, {})]
    assert [row.variants[1].verdict for row in rows] == ["faster", "faster"]
    held_only = estimate(rows, "cutlass_", ["python", "train.py"])
    assert held_only.kernels == ["k_held"] and held_only.select == "^(?:k_held)$"
    assert held_only.ratio == pytest.approx(estimate(rows[:1], "cutlass_", None).ratio)  # k_missed adds nothing
    assert held_only.ratio > 1 - 0.2 * 0.11  # bounded by k_held's share alone: the missed row's 0.8 is not in it
    (missed,) = held_only.unconfirmed
    assert missed["kernel"] == "k_missed" and missed["rows"][0]["replay_workload"] == pytest.approx(0.87, abs=0.01)
    assert missed["confirm"] == "tritonhook ab --variants plain,cutlass_ --select '^(?:k_missed)$' -- python train.py"
    result = SweepResult(rows, ["plain", "cutlass_"], 9, 7, ["python", "train.py"], {}).finish()
    from rich.console import Console

    console = Console(width=400, record=True)
    console.print(result)
    text = console.export_text()
    assert "k_missed not recommended: faster only in a replay that missed the fidelity bar" in text
    assert SweepResult.from_json(result.to_json()).estimates[0].unconfirmed == result.estimates[0].unconfirmed


def test_a_variant_with_the_sass_of_another_variant_takes_that_ones_ratio_not_the_baselines():
    """`plain@13.4` 10% faster than plain and `cutlass_@13.4` the same SASS as it (not timed): the latter is 10%
    faster too, not "1.0" as a twin of the baseline would be (an upgrade's upgraded cell twin of its new-PTX cell
    read 1.000 on every kernel of an H200 run before)."""
    facts = {label: {} for label in ("plain", "plain@13.4", "cutlass_@13.4")}
    base, faster = _noisy(0.1, 11), _noisy(0.09, 12)
    row = analyze_row(SweepRow(0, "k", "k [8]", 1.0, 10, 0.1, "snapshot", "ok", "bitwise"),
                      {"plain": base, "plain@13.4": faster}, facts, {"cutlass_@13.4": "plain@13.4"})
    timed, twin = row.variants[1], row.variants[2]
    assert twin.verdict == "SASS identical" and twin.samples == faster
    assert (twin.ratio, twin.low, twin.high) == (timed.ratio, timed.low, timed.high)
    assert twin.ratio == pytest.approx(0.9, abs=0.01)


def test_fidelity_counts_the_rows_making_90_percent_of_the_gpu_time_largest_first():
    """Shares 50/30/15/5%: the first three make 95%; the 5% row (replayed at 2x) is left out. Replayed/workload
    1.05, 1.2, 0.95: two within ±10%, making 65% of the GPU time, median 1.05."""
    def row(at, share, replayed_ms):
        return SweepRow(at, f"k{at}", f"k{at}", share, 10, 0.100, "snapshot", "ok",
                        variants=[VariantTiming("plain", replayed_ms)])

    result = SweepResult([row(0, 0.3, 0.120), row(1, 0.5, 0.105), row(2, 0.05, 0.200), row(3, 0.15, 0.095)],
                         ["plain"], 9, 1, None, {})
    fidelity = result.fidelity
    assert (fidelity.signatures, fidelity.within) == (3, 2)
    assert fidelity.share == pytest.approx(0.95) and fidelity.median_ratio == pytest.approx(1.05)
    assert fidelity.within_share == pytest.approx(0.65)
    assert fidelity.line() == ("replay/workload: 2 of the 3 signatures making 95% of the GPU time replay within ±10% "
                               "of their time inside the workload (65% of the GPU time); median replay/workload "
                               "1.050")
    assert result.to_json()["fidelity"]["within"] == 2


def test_a_row_reports_the_launch_lead_difference_and_its_fidelity_net_of_it_beside_the_plain_ratio():
    """A 3.00 µs kernel inside the workload replays at 3.75 µs; the empty kernel after it read 2.75 µs there and
    3.40 µs after each replayed call. The row reports the 0.65 µs of longer launch lead beside replay/workload
    1.25, and (3.75 - 0.65) / 3.00 = 1.033 net of it; a row from an older recording has neither."""
    def row(at, recorded_empty_ms):
        return SweepRow(at, "k", "k", 0.5, 10, 0.00300, "snapshot", "ok", variants=[VariantTiming("plain", 0.00375)],
                        recorded_empty_ms=recorded_empty_ms, empty_ms=0.00340)

    measured, old = row(0, 0.00275), row(1, None)
    assert measured.lead_ms == pytest.approx(0.00065) and old.lead_ms is None
    assert measured.fidelity == old.fidelity == pytest.approx(1.25)
    assert measured.net_fidelity == pytest.approx(1.0333, abs=1e-4) and old.net_fidelity is None
    result = SweepResult([measured, old], ["plain"], 9, 1, None, {})
    fidelity = result.fidelity
    assert (fidelity.within, fidelity.within_net, fidelity.median_lead_ms) == (0, 1, pytest.approx(0.00065))
    assert fidelity.line().endswith("; launch lead (an empty kernel after each) +0.65 µs in the replay, "
                                    "1 within ±10% net of it")
    assert SweepResult([old], ["plain"], 9, 1, None, {}).fidelity.within_net is None
    data = json.loads(json.dumps(result.to_json()))
    assert data["rows"][0]["lead_ms"] == pytest.approx(0.00065)
    assert data["rows"][0]["net_fidelity"] == pytest.approx(measured.net_fidelity)
    assert SweepResult.from_json(data).rows[0].lead_ms == pytest.approx(measured.lead_ms)


def test_a_signatures_share_is_of_its_time_net_of_the_launch_lead():
    """Shaped on a max-autotune BERT step on an H200: a copy that `torch.profiler` timed at 1.0 µs a launch (44
    launches) read 5.1 µs a sample between the recorder's events, a GEMM template 30.4 µs against 34.0 (4 launches):
    every sample ~4 µs over, the launch lead that the empty kernel after each reads (4.1 µs here). Gross, the copy
    had over twice its profiler share of the pair; net of the lead, within 2 points of it (the issue's bar). An older
    recording (no lead) stays gross."""
    def recording(lead_ms):
        pair = [rec.Signature(id=at, kernel=name, triton_hash=name, capture_id=None, arch="sm_90a", grid=[1, 1, 1],
                              args=[], arg_names=[], signature={}, constexprs={}, launches=launches,
                              times_ms=[sample * 0.98, sample * 1.02], empty_ms=lead_ms)
                for at, (name, launches, sample) in enumerate([("copy", 44, 0.0051), ("gemm", 4, 0.0340)])]
        return rec.Recording(pair, "sm_90a", "NVIDIA H200", "3.6.0", None, 1)

    profiler = {"copy": 44 * 0.0010, "gemm": 4 * 0.0304}
    truth = profiler["copy"] / sum(profiler.values())
    net, gross = recording(0.0041), recording(None)
    assert net.share(net.signatures[0]) == pytest.approx(truth, abs=0.02)
    assert gross.share(gross.signatures[0]) > 2 * truth
    assert net.signatures[1].gpu_ms == pytest.approx(4 * (0.0340 - 0.0041))
    assert recording(0.0400).signatures[0].gpu_ms == 0.0  # a lead longer than the samples leaves no time, not less


def test_the_result_renders_and_round_trips_through_json():
    result = _result()
    again = SweepResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again.to_json() == result.to_json()
    from rich.console import Console

    console = Console(width=300, record=True)
    console.print(result)
    text = console.export_text()
    for expected in ("k_fast [4096]", "60.0%", "faster", "slower", "SASS identical", "fault: worker exited",
                     "record 1.0 s, build 2.0 s, replay 3.0 s; L2 cold", "--select '^(?:k_fast)$'",
                     "replay/workload: 2 of the 2 signatures making 90% of the GPU time"):
        assert expected in text, expected


@pytest.mark.parametrize("places, shown", [(["vm/gpu0", "", "vm/gpu0"], False), (["a/gpu0", "b/gpu1", ""], True)])
def test_the_replayed_on_column_shows_only_when_rows_ran_on_more_than_one_gpu(places, shown):
    """An autotune group's row was replayed by no worker of its own (its candidates were): its empty place does
    not count as a second GPU."""
    rows = [SweepRow(at, f"k{at}", f"k{at}", 0.3, 10, 0.003, "snapshot", "ok", variants=[VariantTiming("plain", 0.003)],
                     replayed_on=place) for at, place in enumerate(places)]
    from rich.console import Console

    console = Console(width=300, record=True)
    console.print(SweepResult(rows, ["plain"], 9, 1, None, {}))
    assert ("replayed on" in console.export_text()) is shown


# ----- CLI and bad input -------------------------------------------------------------------------------------------
def _cli(*args, cwd=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tritonhook", *args], capture_output=True, text=True, cwd=cwd,
                          env=None if env is None else {**os.environ, **env})


@pytest.mark.gpu  # without one the workload is not started (below)
def test_record_reports_a_failing_workload_with_its_status_and_last_stderr_lines(tmp_path):
    script = "import sys; sys.stderr.write('loading weights\\nValueError: bad shape\\n'); sys.exit(3)"
    done = _cli("record", "--store", str(tmp_path / "s"), "--", sys.executable, "-c", script)
    assert done.returncode == 3
    assert "exited with status 3 (nothing was recorded)" in done.stderr
    assert "| ValueError: bad shape" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.release_independent  # the GPU check before the workload starts
@pytest.mark.nogpu
@pytest.mark.parametrize("command", ["record", "sweep"])
def test_without_a_gpu_record_and_sweep_say_so_in_one_line_and_never_start_the_workload(tmp_path, command):
    """torch is here (CPU), a CUDA GPU is not: said before the workload starts, which would record nothing."""
    ran = tmp_path / "workload-ran"
    done = _cli(command, "--store", str(tmp_path / "s"), "--", sys.executable, "-c", f"open({str(ran)!r}, 'w')")
    assert done.returncode == 2 and not ran.exists()
    assert not (tmp_path / "s").exists()  # nor a store made for nothing
    assert done.stderr.splitlines() == [
        "tritonhook: error: recording needs a CUDA GPU, and there is none here (torch.cuda.is_available() is False), "
        f"so {sys.executable} -c open({str(ran)!r}, 'w') was not run"]


@pytest.mark.release_independent  # a setting checked before the workload starts
@pytest.mark.parametrize("command", ["record", "sweep", "check"])
@pytest.mark.parametrize("threads", ["four", "-2", "1.5", "nan"])
def test_a_compile_thread_count_that_is_no_number_is_one_line_before_the_workload_starts(tmp_path, command, threads):
    """$TRITONHOOK_RECORD_COMPILE_THREADS is read by every recording process: a value none could use is said once,
    naming it, before the workload starts (GPU or not), not as a recording failure in each process."""
    ran = tmp_path / "workload-ran"
    saves = ["--save-baseline", str(tmp_path / "baseline.json")] if command == "check" else []
    done = _cli(command, "--store", str(tmp_path / "s"), *saves, "--", sys.executable, "-c",
                f"open({str(ran)!r}, 'w')", env={"TRITONHOOK_RECORD_COMPILE_THREADS": threads})
    assert done.returncode == 2 and not ran.exists() and not (tmp_path / "s").exists()
    assert done.stderr.splitlines() == [f"tritonhook: error: $TRITONHOOK_RECORD_COMPILE_THREADS={threads!r}: not a "
                                        f"whole number of threads, 0 or more"]


@pytest.mark.nogpu
def test_a_recording_failing_at_launches_inside_a_workload_never_breaks_it(tmp_path):
    """A workload started with the recording environment (as `record` starts one) whose recorder fails for real
    at its launches and at exit (CPU torch: no CUDA for the timing events): the workload runs to its end with its
    own exit status, and tritonhook says once how many times it failed and the first, with no traceback."""
    from tritonhook.launcher import run
    from tritonhook.sweep.recorder import recording_settings

    script = tmp_path / "workload.py"
    script.write_text(
        "import sys, torch\n"
        "from tritonhook.samples import compile_sample\n"
        "from triton import knobs\n"
        "kernel, x = compile_sample('add', 90), torch.randn(128)\n"
        "knobs.runtime.launch_enter_hook = None  # Triton's launch path stops before it would load the module\n"
        "for _ in range(5):\n"
        "    kernel.launch_metadata((1,), 0, x, x, x, 128, 1024)\n"
        "print('workload done')\n"
        "sys.exit(7)\n")
    done = run([sys.executable, str(script)], recording_settings(tmp_path / "s", "guarded"), capture_output=True,
               text=True)
    assert (done.returncode, done.stdout) == (7, "workload done\n"), done.stderr
    lines = [line for line in done.stderr.splitlines() if "tritonhook" in line]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert re.fullmatch(r"tritonhook: recording in process \d+ failed [2-9] time\(s\) \(the first at a launch: "
                        r"AssertionError: .*\); the workload itself was not affected", lines[0]), lines[0]


@pytest.mark.release_independent  # argument checks
@pytest.mark.parametrize("args, message", [
    (["replay"], "no recording in this store; run tritonhook record -- CMD first"),
    (["replay", "--recording", "42"], "no recording with id 42"),
    (["replay", "--rounds", "2"], "--rounds 2: at least 5"),
    (["replay", "--autotune-top", "0"], "--autotune-top 0: at least 1"),
    (["replay", "--l2", "hot"], "invalid choice: 'hot'"),
    (["sweep", "--variants", "plain"], "give at least two"),
    (["sweep", "--select", "("], "not a valid regular expression"),
    (["sweep"], "give the command to run after '--'"),
])
def test_bad_input_is_one_line(tmp_path, args, message):
    Store(tmp_path / "s")
    done = _cli(*args[:1], "--store", str(tmp_path / "s"), *args[1:])
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.release_independent  # the recording format
def test_a_recording_file_of_another_version_is_refused(tmp_path):
    Store(tmp_path / "s")
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"format": rec.FORMAT, "version": 0, "signatures": []}))
    done = _cli("replay", "--store", str(tmp_path / "s"), "--recording", str(path))
    assert done.returncode == 2 and f"{path}: recording format version 0" in done.stderr
    assert "record the workload again" in done.stderr


def test_a_replay_worker_that_cannot_start_is_one_error_not_a_hang(tmp_path):
    from tritonhook.sweep.job import ReplayJob
    from tritonhook.sweep.schedule import run_workers

    if torch.cuda.is_available():
        pytest.skip("checks the message given when there is no GPU")
    job = ReplayJob(str(tmp_path), "sm_90a", "recording 1", ({"id": 0},), 5, "cold", False, 5.0, 20.0, 10)
    Store(tmp_path)
    with pytest.raises(TritonhookError, match=r"replay worker failed before replaying anything \(worker exited "
                                              r"with status 1 \| "):
        run_workers(tmp_path, job, ["0", "1"])


def test_a_kernel_compiled_before_recording_is_captured_late_from_its_cache_files(tmp_path):
    """A workload may compile (warm up) before recording starts: its kernels still get a capture to replay from,
    the same record a compile would have written."""
    from tritonhook import _triton
    from tritonhook.samples import compile_sample
    from tritonhook.ptx_capture import session
    from tritonhook.store import Store

    with session(tmp_path / "compiled") as compiled_session:
        kernel = compile_sample("matmul_fp32_ieee", 90)
        (compiled,) = compiled_session.captures()
    store = Store(tmp_path / "late")
    late = store.get(store.add(_triton.loaded_event(kernel)))
    assert late.event == "loaded"
    assert (late.entry, late.arch, late.triton_hash, late.specialization) == \
        (compiled.entry, compiled.arch, compiled.triton_hash, compiled.specialization)
    for stage in ("ptx", "cubin"):
        assert store.read(late, stage) == Store(tmp_path / "compiled").read(compiled, stage)


def test_a_kernel_whose_cache_files_are_gone_is_captured_late_from_what_it_holds(tmp_path, monkeypatch):
    """A kernel compiled before recording into a cache directory removed since (a test's temporary one, on the
    H200: the late capture had no PTX, so its row could not be built): the late capture takes the stage outputs the
    kernel read when it was loaded, and its metadata JSON (on the H200 a replay of it failed for want of one: "no
    'json' artifact") is Triton's again."""
    import json
    import shutil

    from tritonhook import _triton
    from tritonhook.ptx_capture import session
    from tritonhook.samples import compile_sample
    from tritonhook.store import Store

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "gone"))
    with session(tmp_path / "compiled") as compiled_session:
        kernel = compile_sample("matmul_fp32_ieee", 90)
        (compiled,) = compiled_session.captures()
    shutil.rmtree(tmp_path / "gone")
    store = Store(tmp_path / "late")
    late = store.get(store.add(_triton.loaded_event(kernel)))
    assert (late.entry, late.arch, late.triton_hash) == (compiled.entry, compiled.arch, compiled.triton_hash)
    for stage in ("ttir", "ttgir", "llir", "ptx", "cubin"):
        assert store.read(late, stage) == Store(tmp_path / "compiled").read(compiled, stage)
    assert json.loads(store.read(late, "json")) == json.loads(Store(tmp_path / "compiled").read(compiled, "json"))


@pytest.mark.gpu  # without one the workload is not started
def test_record_json_keeps_the_workloads_output_off_stdout(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "tritonhook", "record", "--json", "--store", str(tmp_path / "s"),
                           "--", sys.executable, "-c", "print('workload says hello')"],
                          capture_output=True, text=True)
    assert "workload says hello" not in done.stdout and "workload says hello" in done.stderr


def test_signatures_link_to_this_runs_capture_else_an_older_one_else_a_late_one(tmp_path):
    """One store query by Triton hash: a capture this run wrote wins over an older one of the same build, and a
    kernel the store never saw (compiled before recording) is captured from its cache files."""
    from tritonhook.samples import compile_sample
    from tritonhook.ptx_capture import session
    from tritonhook.store import Store
    from tritonhook.sweep.recorder import _link_captures

    store = Store(tmp_path / "store")
    with session(store):
        add = compile_sample("add", 90)
    with session(store):
        compile_sample("add", 90)  # a cache hit of the same build, written "during this run"
    older, this_run = store.captures()
    matmul = compile_sample("matmul_fp16", 90)  # never captured
    signatures = [_signature(add, older, [], capture_id=None, arch=None),
                  _signature(matmul, older, [], id=1, capture_id=None, arch=None)]
    _link_captures(store, signatures, older.id, {matmul.hash: lambda: _triton.loaded_event(matmul)})
    late = store.get(signatures[1].capture_id)
    assert signatures[0].capture_id == this_run.id
    assert (late.event, late.entry, late.triton_hash) == ("loaded", "matmul_kernel", matmul.hash)


@pytest.fixture(scope="module")
def damaged_recording(tmp_path_factory):
    """A real recording (tests/sample_recording.py) as a file and as a store row, each with the `alias` field of
    its first signature's first tensor argument removed."""
    from sample_recording import sample_recording

    folder = tmp_path_factory.mktemp("damaged")
    store, recording = sample_recording(folder / "store", 2)
    data = recording.to_json()
    tensor = data["signatures"][0]["args"][0]
    assert tensor["kind"] == "tensor" and tensor["alias"] is None  # what the test removes is there to remove
    del tensor["alias"]
    path = folder / "recording.json"
    path.write_text(json.dumps(data))
    import sqlite3

    with sqlite3.connect(store.path / "index.sqlite") as conn:
        conn.execute("UPDATE results SET data = ? WHERE id = ?", (json.dumps(data), recording.id))
    return store.path, path, recording.id, tensor["name"]


RECORDING_READERS = {"replay": ["replay"], "tune": ["tune"], "upgrade": ["upgrade", "--to", "3.9.0"],
                     "export-trace": ["export-trace", "-o", "trace.json"]}


@pytest.mark.release_independent  # the recording format; the recording is an input
@pytest.mark.parametrize("as_row", [False, True], ids=["file", "store row"])
@pytest.mark.parametrize("command", RECORDING_READERS)
def test_a_recording_missing_a_field_is_one_line_naming_it_and_the_field(damaged_recording, tmp_path, command,
                                                                         as_row):
    store, path, recording_id, name = damaged_recording
    which = str(recording_id) if as_row else str(path)
    done = _cli(*RECORDING_READERS[command], "--store", str(store), "--recording", which, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    (line,) = done.stderr.splitlines()
    where = f"{store} result {recording_id} (recording)" if as_row else str(path)
    assert line == f"tritonhook: error: {where}: signature 0 argument 0 ({name!r}): no field 'alias'", line


@pytest.mark.release_independent  # the recording format
@pytest.mark.parametrize("change, message", [
    (lambda t: t.update(alias=7), "alias 7 names no buffer of an earlier argument"),
    (lambda t: t.update(shape="64"), "field 'shape' is str, not list"),
    (lambda t: t.update(strides=[1, 1]), "shape and strides must be lists of whole numbers of one length"),
    (lambda t: t.update(kind="pointer"), "not an argument of a kind the replay knows"),
    (lambda t: t.pop("buffer"), "no field 'buffer'"),
])
def test_a_recording_argument_of_the_wrong_shape_is_refused_whole_when_read(change, message):
    from sample_recording import sample_recording  # noqa: F401 (torch and Triton present: the fixture's needs)

    tensor = {"kind": "tensor", "name": "x", "dtype": "float32", "shape": [64], "strides": [1], "storage_offset": 0,
              "span": 64, "element_size": 4, "alias": None, "blob": None, "synthetic": True, "buffer": 0}
    rec.Recording.from_json(_one_signature(dict(tensor)), source="r.json")  # the whole argument reads
    change(tensor)
    with pytest.raises(TritonhookError) as raised:
        rec.Recording.from_json(_one_signature(tensor), source="r.json")
    assert str(raised.value).startswith("r.json: signature 0 argument 0") and message in str(raised.value)


def _one_signature(tensor: dict) -> dict:
    signature = rec.Signature(id=0, kernel="k", triton_hash="h", capture_id=None, arch="sm_90a", grid=[1, 1, 1],
                              args=[tensor], arg_names=["x"], signature={"x": "*fp32"}, constexprs={}, launches=1,
                              times_ms=[0.01])
    return rec.Recording([signature], arch="sm_90a", device=None, triton_version="3.6.0", torch_version=None,
                         pid=1).to_json()
