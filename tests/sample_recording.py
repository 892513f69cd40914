"""A recording made without a GPU, for tests of what runs after a recording (the sweep's scheduling, `tune`):
real captures of two sample kernels for sm_90a and launch signatures of them with real input snapshots."""

from __future__ import annotations

import torch

import tritonhook
from tritonhook import _triton
from tritonhook.samples import compile_sample
from tritonhook.store import Store
from tritonhook.sweep import recording as rec


def sample_recording(store_dir, signatures: int) -> tuple[Store, rec.Recording]:
    """A store at `store_dir` holding captures of the `add` and `matmul_fp32_ieee` samples and a recording of
    `signatures` launch signatures alternating between them (different grids and sizes; signature i has 10(i+1)
    launches of 0.01(i+1) ms), each input snapshotted as a blob."""
    with tritonhook.session(store_dir) as session:
        kernels = [compile_sample(name, 90) for name in ("add", "matmul_fp32_ieee")]
    store = Store(store_dir)
    launches = []
    for index in range(signatures):
        kernel = kernels[index % 2]
        size = 64 * (index + 1)
        if _triton.launch_spec(kernel).name == "add_kernel":
            args = (torch.randn(size), torch.randn(size), torch.empty(size), size, 1024)
        else:
            a, b, c = torch.randn(size, size), torch.randn(size, size), torch.empty(size, size)
            args = (a, b, c, size, size, size, size, size, size, 128, 128, 32, "ieee")
        launches.append((kernel, args))
    return store, save_recording(store, launches, session.capture_ids)


def save_recording(store: Store, launches, capture_ids) -> rec.Recording:
    """A recording of `launches` ((compiled kernel, arguments), each a signature), each input snapshotted, the
    kernels' captures among `capture_ids`; saved in `store`. Signature i has grid (i+1, 1, 1) and 10(i+1) launches
    of 0.01(i+1) ms."""
    by_hash = {c.triton_hash: c for c in store.captures(ids=capture_ids)}
    budget = rec.SnapshotBudget(per_signature=2**23, total=2**30)  # every input snapshotted
    described_signatures, snapshots = [], store.hold()
    for index, (kernel, args) in enumerate(launches):
        spec = _triton.launch_spec(kernel)
        described = rec.describe_args(args, spec.arg_names, spec.signature, spec.constexprs, blobs=snapshots,
                                      budget=budget)
        described_signatures.append(rec.Signature(
            id=index, kernel=spec.name, triton_hash=spec.triton_hash, capture_id=by_hash[kernel.hash].id,
            arch="sm_90a", grid=[index + 1, 1, 1], args=described, arg_names=spec.arg_names,
            signature=spec.signature, constexprs=spec.to_json()["constexprs"], launches=10 * (index + 1),
            times_ms=[0.01 * (index + 1)]))
    recording = rec.Recording(described_signatures, arch="sm_90a", device=None, triton_version="3.6.0",
                              torch_version=torch.__version__, pid=1, command=["python", "train.py"])
    recording.id = store.add_result(rec.RESULT_KIND, recording.to_json(), hold=snapshots)
    return recording
