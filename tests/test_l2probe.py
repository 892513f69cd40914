"""The L2 probe of a recording (`tritonhook.sweep.l2probe`) on a CPU: its PTX assembled by real ptxas for every
target with the timed load kept between the clock reads, the pure functions that turn probe cycles into what a
`--l2 measured` replay reads into L2, and the recording format that carries them. The GPU half (the probe finds
what a producer wrote and a replay reproduces it) is in tests/test_sweep_gpu.py."""

from __future__ import annotations

import json

import pytest

from tritonhook import _triton
from tritonhook.cubin import disassemble
from tritonhook.samples import compile_sample
from tritonhook.sweep import l2probe
from tritonhook.sweep import recording as rec
from tritonhook.sweep.worker import _measured_ranges
from tritonhook.binaries import assemble

pytestmark = pytest.mark.every_release  # reaches what differs between Triton releases (scripts/test-matrix.sh)

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("gpu_name", ["sm_90a", "sm_100a", "sm_120a"])
def test_the_probe_assembles_for_every_target_and_times_each_load_between_two_clock_reads(gpu_name):
    """ptxas drops a load whose value nothing keeps (the first version of the probe lost every load that way):
    each tensor's block must read the clock, load, store the loaded word, and read the clock again."""
    cubin = assemble(l2probe._ptx(), _triton.triton_ptxas(gpu_name), gpu_name, label="l2probe.ptx").cubin
    (sass,) = disassemble(cubin).values()
    steps = ["clock" if "SR_CLOCK" in i.operands else i.base_opcode for i in sass]  # sm_120: CS2UR, else CS2R
    timed = [step for step in steps if step in ("clock", "LDG", "STG")]
    assert timed == ["clock", "LDG", "STG", "clock", "STG"] * l2probe.MAX_TENSORS, timed


@pytest.mark.parametrize("gpu_name", ["sm_90a", "sm_100a", "sm_120a"])
def test_the_dirt_probes_read_assembles_keeps_its_loads_and_times_them_between_two_clock_reads(gpu_name):
    """Its XOR is stored only where a parameter asks: ptxas must keep the 16-byte loads that feed it, between the
    block's two clock reads."""
    cubin = assemble(l2probe._read_ptx(), _triton.triton_ptxas(gpu_name), gpu_name, label="l2read.ptx").cubin
    (sass,) = disassemble(cubin).values()
    steps = ["clock" if "SR_CLOCK" in i.operands else i.base_opcode for i in sass]
    loads = [i for i in sass if i.base_opcode == "LDG"]
    assert loads and all(".128" in i.opcode for i in loads) and steps.count("STG") == 2
    first_clock, last_clock = steps.index("clock"), len(steps) - 1 - steps[::-1].index("clock")
    assert first_clock < steps.index("LDG") and last_clock > len(steps) - 1 - steps[::-1].index("LDG")


def test_warm_ranges_are_the_chunks_most_probes_found_in_l2_merged():
    fractions = [1.0, 0.5, 0.25] + [0.0] * 28 + [0.75]
    assert l2probe.warm_ranges(fractions, 3200) == [(0, 200), (3100, 3200)]
    assert l2probe.warm_ranges([1.0] * l2probe.LINES, 10) == [(0, 10)]  # chunks of 0 bytes add nothing
    assert l2probe.warm_ranges([0.0] * l2probe.LINES, 1 << 20) == []


def test_cycles_become_per_line_fractions_over_the_probes():
    calibration = l2probe.Calibration(hot=500.0, cold=1250.0)
    assert calibration.usable and 700 < calibration.threshold < 800
    assert not l2probe.Calibration(hot=500.0, cold=600.0).usable
    probes = [l2probe.resident([[400] * 16 + [1500] * 16], calibration)[0],
              l2probe.resident([[400] * 8 + [1500] * 24], calibration)[0]]
    assert l2probe.line_fractions(probes) == [1.0] * 8 + [0.5] * 8 + [0.0] * 16


def test_a_replay_reads_each_probed_tensor_into_its_buffer_aliases_included():
    """x passed twice (its alias shares a buffer) and out: out's ranges land on its own buffer, both of x's on x's."""
    kernel = compile_sample("add", 90)
    spec = _triton.launch_spec(kernel)
    x, out = torch.randn(1024), torch.empty(1024)
    args = rec.describe_args((x, x, out, 1024, 1024), spec.arg_names, spec.signature, spec.constexprs)
    first_half, last_line = [1.0] * 16 + [0.0] * 16, [0.0] * 31 + [1.0]
    signature = {"args": args, "l2_resident": [first_half, last_line, None]}
    buffers = {0: x, 1: out}
    assert _measured_ranges(signature, buffers) == [(0, [(0, 2048), (3968, 4096)])]
    signature["l2_resident"] = [None, None, first_half]
    assert _measured_ranges(signature, buffers) == [(1, [(0, 2048)])]
    assert _measured_ranges({"args": args}, buffers) == []  # recorded without the probe: nothing read (cold)


def test_residency_round_trips_and_older_recordings_load_without_it():
    signature = rec.Signature(id=0, kernel="k", triton_hash="h", capture_id=1, arch="sm_90a", grid=[1, 1, 1], args=[],
                              arg_names=[], signature={}, constexprs={}, launches=3, times_ms=[0.01],
                              l2_resident=[[0.5] * l2probe.LINES, None])
    recording = rec.Recording([signature], arch="sm_90a", device=None, triton_version="3.6.0", torch_version=None,
                              pid=1, l2_calibration={"hot": 515.0, "cold": 1270.0})
    data = json.loads(json.dumps(recording.to_json()))
    assert data["version"] == rec.VERSION >= 3 and rec.Recording.from_json(data) == recording
    for key in ("l2_calibration",):
        data.pop(key)
    for entry in data["signatures"]:
        entry.pop("l2_resident")
    older = rec.Recording.from_json({**data, "version": 2})
    assert older.l2_calibration is None and older.signatures[0].l2_resident is None


def test_the_dirt_probe_reads_where_its_times_lie_from_clean_to_dirty():
    calibration = l2probe.DirtCalibration(clean=10000.0, dirty=11000.0)
    assert calibration.usable and not l2probe.DirtCalibration(clean=10000.0, dirty=10400.0).usable
    assert calibration.dirt([10000, 10200, 11000]) == pytest.approx(0.2)  # the median, not the mean
    assert calibration.dirt([12000]) == pytest.approx(2.0) and calibration.dirt([9200]) == pytest.approx(-0.8)


def test_a_half_dirty_l2_writes_every_other_piece_from_the_one_after_it_and_only_those():
    """Run on the CPU: which bytes the half dirt writes (its effect on the L2 is the GPU test's). A flood that is not
    a whole number of piece pairs leaves its tail alone."""
    chunk = l2probe.HALF_DIRT_CHUNK
    flood = torch.randint(0, 256, (6 * chunk + 24,), dtype=torch.uint8)
    before = flood.clone()
    l2probe.dirty_half_of_l2(torch, flood)
    pieces, was = flood[:6 * chunk].view(3, 2, chunk), before[:6 * chunk].view(3, 2, chunk)
    assert torch.equal(pieces[:, 1], was[:, 1]) and torch.equal(pieces[:, 0], was[:, 1])
    assert not torch.equal(pieces[:, 0], was[:, 0]) and torch.equal(flood[6 * chunk:], before[6 * chunk:])


def test_a_measured_replay_dirties_only_where_the_probe_read_the_l2_dirty_or_did_not_read_it():
    assert [l2probe.replayed_dirt("measured", dirt) for dirt in (None, 0.2, 0.35, 1.7, 0.13, 0.0, -0.3)] == [
        "dirty", "dirty", "dirty", "dirty", "clean", "clean", "clean"]
    assert [l2probe.replayed_dirt(rule, 0.0) for rule in ("dirty", "half", "clean", "none")] == [
        "dirty", "half", "clean", "none"]


def test_dirt_round_trips_and_version_4_recordings_load_without_it():
    signature = rec.Signature(id=0, kernel="k", triton_hash="h", capture_id=1, arch="sm_90a", grid=[1, 1, 1], args=[],
                              arg_names=[], signature={}, constexprs={}, launches=3, times_ms=[0.01], l2_dirt=0.125)
    recording = rec.Recording([signature], arch="sm_90a", device=None, triton_version="3.6.0", torch_version=None,
                              pid=1, dirt_calibration={"clean": 13100.0, "dirty": 15900.0})
    data = json.loads(json.dumps(recording.to_json()))
    assert data["version"] == rec.VERSION >= 5 and rec.Recording.from_json(data) == recording
    data.pop("dirt_calibration")
    data["signatures"][0].pop("l2_dirt")
    older = rec.Recording.from_json({**data, "version": 4})
    assert older.dirt_calibration is None and older.signatures[0].l2_dirt is None


def test_an_autotune_config_the_workload_never_ran_is_replayed_on_the_l2_its_decisions_pick_found():
    from tritonhook.sweep.replay import _dirt_of_groups, _probed_dirt

    def signature(id, group, dirt, launches):
        return rec.Signature(id=id, kernel="k", triton_hash=f"h{id}", capture_id=1, arch="sm_90a", grid=[1, 1, 1],
                             args=[], arg_names=[], signature={}, constexprs={}, launches=launches, times_ms=[],
                             autotune={"group": group, "config": {"BLOCK": id}}, l2_dirt=dirt)

    picked, other, unprobed_group = signature(0, 0, 0.1, 5), signature(1, 0, None, 0), signature(2, 1, None, 0)
    recording = rec.Recording([picked, other, unprobed_group], arch="sm_90a", device=None, triton_version="3.6.0",
                              torch_version=None, pid=1)
    groups = _dirt_of_groups(recording)
    assert [_probed_dirt(s, groups) for s in recording.signatures] == [0.1, 0.1, None]
