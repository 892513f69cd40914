"""`tritonhook sweep`: which kernels of a real workload gain from the `cutlass` name (or another ptxas), measured
kernel by kernel with no benchmark code.

Design
------
Record, then replay. `record` runs the workload once; `replay` re-launches every recorded kernel signature in
isolation for each variant; `sweep` is both.

How launches are caught (`_triton.LaunchTracer`). Triton's launch hooks receive a LazyDict with the kernel's name
and stream, not its arguments; `CompiledKernel.launch_metadata(grid, stream, *args)` builds that dict and is called
with the full argument list on every launch path that runs the hooks: the JIT's `run`, `compiled[grid](...)`, and
Inductor's generated launcher. TritonParse sets a `launch_metadata` function on each JITFunction from
`jit_post_compile_hook`; we wrap the method on the class instead (restored by identity), because that hook is a
single slot, misses kernels compiled before it was set, and under Inductor fires only in the compile worker, not
in the process that launches. Inductor's static CUDA launcher calls none of this: recording (and memwatch) sets
`TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER=0` (for children; the live torch config too). CUDA graphs replay
without any launcher and are not seen.

Record format (`recording.py`, versioned JSON saved in the store's results table, kind "recording"). A signature is
(Triton hash, grid, every scalar's and constexpr's value, every host TMA descriptor's class, shape, strides, block
shape, padding and, for Gluon's, NVMMA shared layout); tensors reach a kernel as pointers alone and add nothing
(their first launch's shapes are kept as data). Per signature: the kernel name, its capture (linked by Triton hash:
the compile listener already stored its PTX, cubin and metadata JSON), the launcher's source signature and
constexprs, the launch count, the argument descriptions and, at its first launch, input snapshots: each distinct
storage the arguments view, copied before the kernel runs into a content-addressed blob (`Store.put_blob`). Budget:
256 MiB per signature and 8 GiB per process (TRITONHOOK_SNAPSHOT_BUDGET, TRITONHOOK_SNAPSHOT_TOTAL_BUDGET); beyond it
a tensor is marked "synthetic" and replayed with random normal floats, or zeros for integers and booleans (valid
indices). Arguments sharing an address are recorded as aliases and replayed sharing one buffer.

Time share. CUDA events around the launches of each signature, in the recorded run: launches 2 to 9 and then one
in 256 (the first launch waited for its snapshot), read once at exit; a signature's GPU time is its mean sampled
time x its launch count, and its share is over all recorded Triton kernels (cuBLAS and other non-Triton kernels
are not in the denominator). Each sampled launch is queued behind a stream hold (`measure.timing.hold_stream`, as in
the replay's timer) so that its events time the kernel, not the host's launch latency; a sample whose kernel was
queued after the hold ran out is used only where a signature has no other, and followed by an empty kernel
(`measure.timing.time_empty_kernel`), as every replayed call is. At launches 2 to 9 the recording also
notes how far the GPU ran behind the host (`behind_ms`: an event measured from the last one queued on an idle
stream, no synchronize), the context those times were taken in. Sampling (`--sample K`): after each
kernel's first `config.sweep.RECORD_EXACT_FIRST` launches the tracer looks at about one launch in K (random gaps), each
seen launch standing for the ones passed over before it: per-kernel counts exact, per-signature counts estimated.
Cost: the launches of a signature the recording does not time are passed over in C (`_triton.LaunchTracer`,
`tritonhook/_launchpath.c`): a key and a lookup, no Python, so that a launch-bound loop slows by a few percent
at most (docs/sweep.md#recording-overhead).

Variants (`variants.py`, CPU-testable). plain = the captured cubin; a prefix (`cutlass_`) or `strip` = the
captured PTX renamed (`rename.rename_ptx` / `strip_ptx`) and assembled with the ptxas that built the capture and
Triton's flags (`binaries.triton_ptxas_args`; plain assembled that way reproduces the captured cubin byte for
byte); `--ptxas P` adds every name assembled by P (`plain@13.0.88`, ...). The metadata JSON's `name` follows the
rename. A variant whose kernel `.text` is byte-identical to an earlier one is reported "SASS identical" and not
timed.

Replay (`replay.py`, `worker.py`). Workers are subprocesses that take the signatures one by one and write a JSON
line as each starts and ends: a kernel that faults (and takes the CUDA context with it) or hangs loses only
itself; a fresh worker goes on with the rest. A worker loads every variant through Triton's own loader and
launcher (`_triton.load_kernel`: `CompiledKernel` from metadata JSON + cubin, so global scratch, TMA descriptors,
clusters and PDL are handled by Triton), restores the inputs, finds the buffers the kernel writes (poisoning
those a first call leaves unchanged), runs the baseline five times and each other variant once and judges each
variant's outputs against the baseline's own run-to-run spread (`measure.outputs`: bitwise, within spread or differ,
with ULPs, relative error and NaN/Inf positions as data), then times the variants with the A/B
timer (`measure.timing.bench_interleaved`: CUDA events, warm-up, L2 rotation with, by default (`--l2 measured`), the
parts of each buffer that the recording's L2 probe (`l2probe`: a one-warp latency probe at each signature's first
timed launches) found in L2 inside the workload brought into L2 before each call, on an L2 left dirty or clean as
the recording's dirt probe found it (`l2probe.DirtCalibration`), or with `--l2 cold` rotation
alone, `--l2 warm` one input set, `--l2 inputs` rotation and the buffers the kernel only reads brought into L2;
call-by-call interleaving), one figure (the interquartile mean of its calls) per variant per round, loading the
variants afresh and restoring written buffers from the snapshot at every round, and the small integer buffers a
kernel writes (state it may consume: a tile counter, locks) before every call (docs/sweep.md#state-a-kernel-consumes).
The parent computes
`ratio_interval` and the verdict per signature; the fidelity (`SweepRow.fidelity`: replayed plain time over the
time inside the workload, both taken with an empty kernel queued after the kernel's end event, `measure.timing.
time_empty_kernel`; `result.Fidelity`: how many of the signatures making 90% of the GPU time replay within ±10%,
how much of the GPU time those make, and how many net of the launch-lead difference, `SweepRow.net_fidelity`);
and per variant the estimate for the workload: rename only kernels faster for some signature and slower for none
(outputs equal) and faster only where the replay is within the fidelity bar, with the `--select` regex and the
`tritonhook run` line that does exactly that; a kernel faster only beyond the bar is listed with the `ab` line that
would confirm it in the workload.

Autotuned kernels (`autotune.py`; docs/sweep.md). `_triton.AutotuneTracer` wraps `Autotuner.run` and `_bench`
while recording, and Inductor's `CachingAutotuner.benchmark_all_configs`, `bench` and
`coordinate_descent_tuning` once torch imports it, and its compile-time choice (`select_algorithm`) and compile: a
launch inside a benchmark is tagged with its decision (one Autotuner and tuning key, one Inductor kernel, one GEMM
choice) and config and counted in `tuning_launches`, never in the workload's launches, times or share (a launch
while Inductor compiles, of no decision, only counted); the decision (chosen
config, the autotuner's own timing per config) is saved in the recording. The replay replays every candidate (the
`--autotune-top K` fastest by that timing, plus the workload's winner) per variant, and shows one row per group:
each variant at the workload's config unless another config is faster for it beyond noise (then its best against
the baseline's best, and the two at the same config beside it), whether the config changed; the candidate rows are
in the JSON (`SweepResult.candidates`).

Scaling out (`schedule.py`). `gpus=` ("all" or indices): one worker per local GPU pinned with
CUDA_VISIBLE_DEVICES, signatures handed out one at a time from one queue, results merged by the parent as they
arrive; a worker that dies loses only its signature in flight, retried once on another GPU. `ray=`: one Ray task per
signature (`num_gpus=1`), the job, variant files and snapshot blobs travelling through Ray's object store; the
driver retries a task that dies once. Each row says where it ran (host/gpuN).
"""

from .recorder import RecordResult, Recorder, check_can_record, load, record, record_command
from .recording import Recording, Signature, SnapshotBudget
from .replay import ReplayPlan, Workers, replay, select_signatures
from .schedule import require_ray, resolve_gpus
from .result import SweepResult, SweepRow, VariantTiming, WorkloadEstimate
from .tune import TuneResult, TuneSpace, tune
from .builds import BuiltVariant, build_variants

__all__ = ["TuneResult", "TuneSpace", "tune", "BuiltVariant", "RecordResult", "Recorder", "Recording", "ReplayPlan",
           "Signature", "SnapshotBudget", "SweepResult", "SweepRow", "VariantTiming", "Workers", "WorkloadEstimate",
           "build_variants", "check_can_record", "load", "record", "record_command", "replay", "require_ray",
           "resolve_gpus", "select_signatures"]
