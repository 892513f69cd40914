"""A recording made without a GPU, for tests of what runs after a recording (the sweep's scheduling, `tune`):
real captures of two sample kernels for sm_90a and launch signatures of them with real input snapshots; and the
signatures of one autotune decision, from real captures of each config of a `triton.autotune`d kernel."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tritonhook
from tritonhook import _triton
from tritonhook.samples import compile_sample
from tritonhook.store import Store
from tritonhook.sweep import recording as rec


def sample_recording(store_dir, signatures: int, snapshot_bytes: int = 2**23) -> tuple[Store, rec.Recording]:
    """A store at `store_dir` holding captures of the `add` and `matmul_fp32_ieee` samples and a recording of
    `signatures` launch signatures alternating between them (different grids and sizes; signature i has 10(i+1)
    launches of 0.01(i+1) ms), each input snapshotted as a blob within `snapshot_bytes` per signature (the rest
    synthetic)."""
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
    return store, save_recording(store, launches, session.capture_ids, snapshot_bytes)


def save_recording(store: Store, launches, capture_ids, snapshot_bytes: int = 2**23) -> rec.Recording:
    """A recording of `launches` ((compiled kernel, arguments), each a signature), each input snapshotted within
    `snapshot_bytes` per signature (the default: all of them), the kernels' captures among `capture_ids`; saved in
    `store`. Signature i has grid (i+1, 1, 1) and 10(i+1) launches of 0.01(i+1) ms; its source hash is the
    kernel's, as the recorder keeps it."""
    by_hash = {c.triton_hash: c for c in store.captures(ids=capture_ids)}
    budget = rec.SnapshotBudget(per_signature=snapshot_bytes, total=2**30)
    described_signatures, snapshots = [], store.hold()
    for index, (kernel, args) in enumerate(launches):
        spec = _triton.launch_spec(kernel)
        described = rec.describe_args(args, spec.arg_names, spec.signature, spec.constexprs, blobs=snapshots,
                                      budget=budget)
        described_signatures.append(rec.Signature(
            id=index, kernel=spec.name, triton_hash=spec.triton_hash, capture_id=by_hash[kernel.hash].id,
            arch="sm_90a", grid=[index + 1, 1, 1], args=described, arg_names=spec.arg_names,
            signature=spec.signature, constexprs=spec.to_json()["constexprs"], launches=10 * (index + 1),
            times_ms=[0.01 * (index + 1)], source=spec.source))
    recording = rec.Recording(described_signatures, arch="sm_90a", device=None, triton_version="3.6.0",
                              torch_version=torch.__version__, pid=1, command=["python", "train.py"])
    recording.id = store.add_result(rec.RESULT_KIND, recording.to_json(), hold=snapshots)
    return recording


def compile_configs(folder: Path, autotuned, types: dict) -> tuple[Store, list]:
    """Each config of `autotuned` (a `triton.autotune`d kernel, its arguments' `types`) compiled for sm_90a under
    capture into `folder/store`, with a Triton cache of its own (as `release_subjects.compile_subjects`, for its
    reason): the store, and the compiled kernels in its configs' order."""
    compiled = []
    with pytest.MonkeyPatch.context() as patch, tritonhook.session(folder / "store"):
        patch.setenv("TRITON_CACHE_DIR", str(folder / "triton-cache"))
        for config in autotuned.configs:
            compiled.append(triton.compile(ASTSource(autotuned.fn, types, dict(config.kwargs)),
                                           target=GPUTarget("cuda", 90, 32),
                                           options={"num_warps": config.num_warps, "num_stages": config.num_stages}))
    return Store(folder / "store"), compiled


def autotune_signatures(store: Store, autotuned, compiled: list, bench_ms: list[float],
                        key: list[str]) -> tuple[list[rec.Signature], dict]:
    """The signatures the recorder writes for one decision (group 0, tuning `key`) of `autotuned` over its
    `compiled` configs (in `store`), without inputs: every config benchmarked 120 times, `bench_ms` the autotuner's
    median per config, and the fastest, its choice, also launched 50 times by the workload (n = 4096); and the
    decision as the recording keeps it."""
    by_hash = {c.triton_hash: c for c in store.captures()}
    chosen = autotuned.configs[bench_ms.index(min(bench_ms))]
    signatures = []
    for index, (config, kernel) in enumerate(zip(autotuned.configs, compiled)):
        spec, capture = _triton.launch_spec(kernel), by_hash[kernel.hash]
        won = config is chosen
        signatures.append(rec.Signature(
            id=index, kernel=spec.name, triton_hash=spec.triton_hash, capture_id=capture.id, arch=capture.arch,
            grid=[4096 // config.kwargs["BLOCK"], 1, 1], args=[], arg_names=spec.arg_names, signature=spec.signature,
            constexprs=spec.to_json()["constexprs"], launches=50 if won else 0,
            times_ms=[0.021, 0.02] if won else [], tuning_launches=120,
            autotune={"group": 0, "config": _triton.autotune_config(config)}))
    decision = _triton.AutotuneDecision(0, signatures[0].kernel, key, _triton.autotune_config(chosen),
                                        [[_triton.autotune_config(c), [ms] * 3]
                                         for c, ms in zip(autotuned.configs, bench_ms)], 0.5)
    return signatures, dataclasses.asdict(decision)
