"""The L2 model of a recording (`sweep.l2state`): what part of each tensor a launch found in L2, estimated from the
traffic recorded before it, and how a replay turns it into the part of each buffer it reads into L2 first. The
model is pure (addresses and byte counts); the recorder's use of it runs on Triton's real `launch_metadata` with
torch CPU tensors, as the other recorder tests do (tests/test_sweep.py)."""

from __future__ import annotations

import pytest

from tritonhook.sweep import recording as rec
from tritonhook.sweep.l2state import L2Traffic, median_fractions, tensor_regions
from tritonhook.sweep.worker import _l2_parts

torch = pytest.importorskip("torch")

MiB = 1 << 20
L2 = 8 * MiB


def test_what_the_previous_launch_touched_is_resident_until_an_l2_of_other_traffic_passes():
    l2 = L2Traffic(L2)
    produced, other = (0x1000_0000, 2 * MiB, "p"), (0x2000_0000, 3 * MiB, "o")
    l2.touch([produced])
    assert l2.resident([produced, other]) == [1.0, 0.0]
    l2.touch([other])
    assert l2.resident([produced]) == [1.0]  # 3 MiB since: still inside 8 MiB
    l2.touch([(0x3000_0000, 4 * MiB, "x")])  # the last 8 MiB touched: these 4, other's 3, produced's last 1
    assert l2.resident([produced, other]) == [0.5, 1.0]
    l2.touch([(0x4000_0000, MiB, "y")])
    assert l2.resident([produced, other]) == [0.0, 1.0]


def test_of_a_region_larger_than_l2_only_its_last_l2_bytes_are_resident():
    l2 = L2Traffic(L2)
    big = (0x1000_0000, 32 * MiB, "b")
    l2.touch([big])
    assert l2.resident([big])[0] == pytest.approx(L2 / big[1], abs=0.02)
    assert l2.resident([(big[0] + 31 * MiB, MiB, "b"), (big[0], MiB, "b")]) == [1.0, 0.0]  # its tail, its head


def test_launches_passed_over_count_on_the_clock_with_their_signatures_bytes():
    l2 = L2Traffic(L2)
    weights, activations = (0x1000_0000, MiB, "w"), (0x2000_0000, 2 * MiB, "a")
    l2.touch([weights])
    l2.touch([activations], launches=3)  # 6 MiB: weights still resident
    assert l2.resident([weights]) == [1.0]
    l2.touch([activations], launches=2)  # 4 MiB more
    assert l2.resident([weights]) == [0.0]


def test_a_small_tensor_puts_its_own_bytes_on_the_clock_not_a_chunks():
    l2 = L2Traffic(L2)
    kept, scalar = (0x1000_0000, MiB, "k"), (0x2000_0000, 4, "s")
    l2.touch([kept])
    for _ in range(10_000):  # 40 KB of traffic; chunks are 32 KiB here
        l2.touch([scalar])
    assert l2.resident([kept, scalar]) == [1.0, 1.0]


def test_a_buffer_allocated_again_since_it_was_touched_is_not_resident():
    """Its content now is what a kernel the recorder did not see wrote (or nothing yet)."""
    l2 = L2Traffic(L2)
    l2.touch([(0x1000_0000, MiB, "old")])
    assert l2.resident([(0x1000_0000, MiB, "old"), (0x1000_0000, MiB, "new")]) == [1.0, 0.0]


def test_views_of_one_live_storage_share_an_owner_and_a_new_storage_never_takes_it():
    a = torch.empty(1024)
    (_, _, whole), (_, _, half) = tensor_regions([a, a[512:]])
    assert whole == half
    kept = whole
    del a, whole, half
    for _ in range(100):  # new storages, some at the freed address: none equals the reference still held
        (_, _, fresh), = tensor_regions([torch.empty(1024)])
        assert fresh != kept


def test_median_fractions_per_argument():
    assert median_fractions([[0.0, 1.0], [1.0, 1.0], [1.0, 0.5]]) == [1.0, 1.0]
    assert median_fractions([]) is None


def test_regions_follow_the_order_recordings_list_tensors_in():
    a, b = torch.empty(100), torch.empty(10, 10).t()
    assert [region[:2] for region in tensor_regions([a, 3, None, b])] == [(a.data_ptr(), 400), (b.data_ptr(), 400)]
    described = rec.describe_args((a, 3, b), ["a", "n", "b"], {"a": "*fp32", "n": "i32", "b": "*fp32"}, {})
    assert len(rec.tensors_of(described)) == len(tensor_regions([a, 3, b]))


def test_a_replay_reads_what_the_recording_estimated_per_buffer_aliases_included():
    """Buffers are numbered by first appearance; an alias shares its owner's estimate; `inputs` reads all of each
    buffer the kernel does not write; a recording without estimates replays cold (nothing read)."""
    x = torch.empty(64)
    args = rec.describe_args((x, x, torch.empty(64), torch.empty(64)), ["x", "y", "out", "z"], {}, {})
    signature = {"args": args, "l2_resident": [[1.0, 1.0, 0.0, 0.25], [0.5, 0.5, 0.0, 0.25], [1.0, 1.0, 0.0, 0.75]]}
    assert _l2_parts("recorded", [0, 1, 2], set(), signature) == {0: 1.0, 2: 0.25}
    assert _l2_parts("inputs", [0, 1, 2], {1}, signature) == {0: 1.0, 2: 1.0}
    assert _l2_parts("recorded", [0, 1, 2], set(), {"args": args}) is None
    assert _l2_parts("cold", [0, 1, 2], set(), signature) is None


def test_the_recorder_notes_what_each_timed_launch_found_in_l2(captured_add, tmp_path):
    """Real `launch_metadata` calls of the sm_90a add kernel in a loop: one signature writes `c`, the next reads
    it, a third streams 48 MiB. At the reader's timed launches `c` is resident and its other tensors are not; the
    first signature finds nothing (the stream ran since); the first launches are not timed and carry nothing."""
    from test_sweep import _launch_without_gpu, _recording_tracer

    store, kernel = captured_add
    a, b, c, d, e = (torch.empty(1 << 16) for _ in range(5))  # 256 KiB each
    big = torch.empty(4 << 20)  # 16 MiB, three times per launch
    loop = [((1,), (a, b, c, 64, 1024)), ((2,), (c, d, e, 64, 1024)), ((3,), (big, big, big, 64, 1024))]
    recorder, tracer, _ = _recording_tracer(store, dict(timed_first=3, time_every=64, l2_bytes=L2), {})
    tracer.install()
    try:
        _launch_without_gpu(kernel, loop * 6)
    finally:
        tracer.uninstall()
    estimates = {p.signature.grid[0]: p.signature.l2_resident for p in recorder.pending}
    assert len(estimates[1]) == len(estimates[2]) == 3  # launches 2, 3 and 4
    for writer, reader in zip(estimates[1], estimates[2]):
        assert max(writer) < 0.1
        assert reader[0] > 0.9 and max(reader[1:]) < 0.2  # a chunk at the edge may hold a neighbour
    recording = rec.Recording([p.signature for p in recorder.pending], arch="sm_90a", device=None,
                              triton_version="3.6.0", torch_version=None, pid=1, l2_bytes=recorder.l2.l2_bytes)
    again = rec.Recording.from_json(recording.to_json())
    assert again.l2_bytes == L2 and again.signatures[1].l2_resident == estimates[2]


def test_the_replay_job_carries_each_signatures_estimates_to_the_worker(tmp_path):
    from tritonhook.store import Store
    from tritonhook.sweep.replay import _write_job

    args = rec.describe_args((torch.empty(8),), ["x"], {}, {})
    signature = rec.Signature(id=0, kernel="k", triton_hash="h", capture_id=1, arch="sm_90a", grid=[1, 1, 1],
                              args=args, arg_names=["x"], signature={"x": "*fp32"}, constexprs={}, launches=2,
                              times_ms=[0.01], l2_resident=[[0.5]])
    recording = rec.Recording([signature], arch="sm_90a", device=None, triton_version="3.6.0", torch_version=None,
                              pid=1, l2_bytes=L2)
    job = _write_job(tmp_path, recording, Store(tmp_path / "store"), [signature], {0: {}}, rounds=3)
    assert _l2_parts("recorded", [0], set(), job["signatures"][0]) == {0: 0.5}


def test_a_version_2_recording_loads_without_l2_estimates():
    data = {"format": rec.FORMAT, "version": 2, "signatures": [], "arch": "sm_90a", "device": None,
            "triton_version": "3.6.0", "torch_version": None, "pid": 1}
    loaded = rec.Recording.from_json(data)
    assert loaded.l2_bytes is None and loaded.signatures == []


@pytest.fixture(scope="module")
def captured_add(tmp_path_factory):
    """A store with a real capture of the sm_90a add kernel, and the compiled kernel."""
    import tritonhook
    from tritonhook.samples import compile_sample
    from tritonhook.store import Store

    store_dir = tmp_path_factory.mktemp("l2-store")
    with pytest.MonkeyPatch.context() as patch, tritonhook.session(store_dir):
        patch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.mktemp("l2-cache")))
        kernel = compile_sample("add", 90)
    return Store(store_dir), kernel
