#!/usr/bin/env bash
# GPU proofs of `tritonhook sweep` (issue 15), for the H200 (torch 2.11 + Triton 3.6). Run from the repository root:
#     OUT=/some/dir [ONLY="own liger ..."] bash benchmarks/sweep_h200.sh
# Each step runs under `timeout` and keeps what it produced (in WORK); the last step prints the summary table
# (benchmarks/sweep_summary.py), and $OUT gets summary.json, the logs and one tarball of the steps' outputs (the device
# tool brings back 8 files at most).
#   (a) own kernels: fp32 ieee FFMA matmul (expected slower renamed), fp8 wgmma matmul (expected SASS identical)
#   (b) an Inductor-compiled transformer (torch.compile, forward + backward): plain vs cutlass_
#   (c) A/A (plain vs plain) over the same recording: "no difference" for >= 95% of signatures
#   (d) time split (record, build, replay) and fidelity (replayed / in-workload time) per kernel: in (a)-(e)
#   (e) the ops of a published Triton kernel library (Liger-Kernel; its wheel carried in .whl/), plain vs cutlass_
#   (f) a runtime ptxas matrix: (a)'s recording replayed with the system ptxas beside Triton's (--ptxas)
#   (g) recording overhead on a launch-bound loop (benchmarks/memwatch_overhead.py, record arm)
set -u
OUT=${OUT:-$PWD/sweep-out}
WORK=${WORK:-/tmp/sweep-work}  # stores, caches and each step's output; $OUT gets the summaries and one tarball
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export TRITON_CACHE_DIR="$WORK/triton-cache" TORCHINDUCTOR_CACHE_DIR="$WORK/inductor-cache"
PY=${PYTHON:-python}
step() {  # step NAME SECONDS CMD...: stdout to $WORK/NAME.json (or .txt), stderr to $WORK/NAME.log, status recorded
  local name=$1 limit=$2; shift 2
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return; fi
  echo "== $name (limit ${limit}s): $*" | tee -a "$WORK/steps.log"
  local began=$(date +%s)
  timeout "$limit" "$@" > "$WORK/$name.out" 2> "$WORK/$name.log"
  local rc=$?
  echo "   $name: exit $rc after $(( $(date +%s) - began )) s" | tee -a "$WORK/steps.log"
  tail -n 3 "$WORK/$name.log" | sed 's/^/   | /'
}
$PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())" | tee "$WORK/versions.txt"
step gpu_tests 300 $PY -m pytest tests/test_sweep_gpu.py -q -x -p no:cacheprovider
step own 420 $PY -m tritonhook sweep --store "$WORK/store-own" --rounds 9 --json -- $PY benchmarks/workloads/own_kernels.py
step transformer 600 $PY -m tritonhook sweep --store "$WORK/store-tf" --json -- $PY benchmarks/workloads/inductor_transformer.py 10
step transformer_aa 480 $PY -m tritonhook replay --store "$WORK/store-tf" --variants plain,plain --json
step liger 600 $PY -m tritonhook sweep --store "$WORK/store-liger" --json -- $PY benchmarks/workloads/liger_ops.py 10
step own_ptxas 300 $PY -m tritonhook replay --store "$WORK/store-own" --ptxas "$(command -v ptxas)" --json
# (h) throughput, ~100 signatures x 2 variants: (b) and (e) in one command (their recordings merge), then the same
#     recording replayed warm (--l2 warm: fidelity against the in-workload times), with its read-only inputs in L2
#     (--l2 inputs), with what the recording's L2 probe found in L2 (--l2 measured), and plain vs plain (cold,
#     inputs and measured)
step both 600 $PY -m tritonhook sweep --store "$WORK/store-both" --json -- bash -c "$PY benchmarks/workloads/inductor_transformer.py 10 && $PY benchmarks/workloads/liger_ops.py 10"
step both_warm 480 $PY -m tritonhook replay --store "$WORK/store-both" --l2 warm --json
step both_aa 480 $PY -m tritonhook replay --store "$WORK/store-both" --variants plain,plain --json
step both_inputs 480 $PY -m tritonhook replay --store "$WORK/store-both" --l2 inputs --json
step both_inputs_aa 480 $PY -m tritonhook replay --store "$WORK/store-both" --l2 inputs --variants plain,plain --json
# with what the recording's L2 probe found in L2 inside the workload (--l2 measured; docs/sweep_fidelity.md#the-l2-probe)
step both_measured 480 $PY -m tritonhook replay --store "$WORK/store-both" --l2 measured --json
step both_measured_aa 480 $PY -m tritonhook replay --store "$WORK/store-both" --l2 measured --variants plain,plain --json
step overhead 300 $PY benchmarks/memwatch_overhead.py --launches 3000 --rounds 11 --out "$WORK/overhead.json"
$PY benchmarks/sweep_summary.py "$WORK" | tee "$OUT/summary.txt"
cp "$WORK/summary.json" "$WORK/steps.log" "$WORK/versions.txt" "$OUT/" 2>/dev/null
(cd "$WORK" && tar -czf "$OUT/steps.tar.gz" --exclude="store-*" --exclude="*-cache" .)
