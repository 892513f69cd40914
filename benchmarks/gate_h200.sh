#!/usr/bin/env bash
# GPU proof of the gate (`tritonhook check`) under adaptive rounds and the tick floor (docs/check.md#on-the-h200),
# for the H200 (torch 2.11 + Triton 3.6). From the repository root, with .wheels carried (base, liger:
# benchmarks/workloads/carry.sh):
#     OUT=/some/dir [RUNS=10] [BUDGET_S=420] bash benchmarks/gate_h200.sh
# The event timer's quantum (benchmarks/event_tick.py); the workload (the transformer + Liger step and our own
# kernels) recorded plain (the baseline) and again with a decision renaming the fp32 FFMA matmul `cutlass_` (the
# seeded 3.8% slowdown, benchmarks/gate_seed.py), every other build identical; then `check --time-identical` of the
# second against the first, RUNS times or until BUDGET_S seconds have passed since the start (each an A/A of the gate
# over the identical builds, and a test of its power on the seeded one). benchmarks/gate_summary.py prints the table.
# A second call on the same (warm) machine finds the recordings and earlier checks in SCRATCH and goes on from there,
# so ten runs can span two device calls.
set -u
OUT=${OUT:-$PWD/gate-out}
SCRATCH=${SCRATCH:-/tmp/gate-work}
mkdir -p "$OUT" "$SCRATCH/checks"
began=$(date +%s)
eval "$(bash benchmarks/workloads/carry.sh "$SCRATCH" base liger)"
export PYTHONPATH=$PWD:$PYTHONPATH PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR="$SCRATCH/triton-cache" TORCHINDUCTOR_CACHE_DIR="$SCRATCH/inductor-cache"
PY=${PYTHON:-python3}
STORE="$SCRATCH/store"
WORKLOAD="$PY benchmarks/apply_end_to_end.py --workload 10 && $PY benchmarks/workloads/own_kernels.py"
id_of() { $PY -c "import json,sys; print(json.load(open(sys.argv[1]))['recording'])" "$1"; }
log() { echo "$(( $(date +%s) - began )) s: $*" | tee -a "$OUT/steps.log"; }

$PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())" | tee "$OUT/versions.txt"
$PY benchmarks/event_tick.py > "$OUT/event_tick.json" 2>> "$OUT/steps.log"
log "event quantum: $($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['quantum_ns'])" "$OUT/event_tick.json") ns"
if [ -s "$SCRATCH/current.json" ]; then  # an earlier call on this machine recorded both
  BASE=$(id_of "$SCRATCH/baseline.json"); CURRENT=$(id_of "$SCRATCH/current.json")
  log "recordings of an earlier call: baseline $BASE, current $CURRENT"
else
  $PY -m tritonhook record --store "$STORE" --json -- bash -c "$WORKLOAD" > "$SCRATCH/baseline.json" \
      2> "$SCRATCH/record.log" || { tail "$SCRATCH/record.log"; exit 1; }
  BASE=$(id_of "$SCRATCH/baseline.json")
  log "baseline recorded: $BASE"
  $PY benchmarks/gate_seed.py --store "$STORE" --recording "$BASE" --kernel matmul_kernel \
      --constexpr PRECISION=ieee -o "$SCRATCH/seed.json" | tee -a "$OUT/steps.log"
  $PY -m tritonhook record --store "$STORE" --apply "$SCRATCH/seed.json" --json -- bash -c "$WORKLOAD" \
      > "$SCRATCH/current.json" 2>> "$SCRATCH/record.log" || { tail "$SCRATCH/record.log"; exit 1; }
  CURRENT=$(id_of "$SCRATCH/current.json")
  log "current recorded: $CURRENT"
fi
done_before=$(ls "$SCRATCH"/checks/check_*.json 2>/dev/null | wc -l)
last=0
for run in $(seq $(( done_before + 1 )) "${RUNS:-10}"); do
  now=$(( $(date +%s) - began ))
  if [ $(( now + last )) -gt "${BUDGET_S:-420}" ]; then log "stopped before run $run: budget"; break; fi
  start=$(date +%s)
  $PY -m tritonhook check --store "$STORE" --baseline "$BASE" --current "$CURRENT" --time-identical --json \
      ${CHECK_ARGS:-} > "$SCRATCH/checks/check_$run.json" 2> "$SCRATCH/checks/check_$run.log"
  rc=$?
  last=$(( $(date +%s) - start ))
  log "check $run: exit $rc after $last s"
done
tar -czf "$OUT/checks.tar.gz" -C "$SCRATCH" checks baseline.json current.json seed.json record.log
$PY benchmarks/gate_summary.py "$SCRATCH/checks" --out "$OUT/gate_summary.json" | tee "$OUT/summary.txt"
