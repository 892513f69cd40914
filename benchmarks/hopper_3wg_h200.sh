#!/usr/bin/env bash
# GPU proofs of the three-consumer Hopper attention (docs/hopper_attention.md#three-consumer-warpgroups-consumers3),
# for the H200 (torch 2.11 + Triton 3.6). From the repository root, FlashAttention-4 and CuTe DSL unpacked as for
# `hopper_attention.py --fa4` (FA4_SITE: the folder holding flash_attn/ and nvidia_cutlass_dsl/dsl_packages/):
#     OUT=/some/dir FA4_SITE=/tmp/site [VARIANTS=ws,ws-3wg] [HEAD_DIMS=64] [TESTS_K=three_consumer] [NCU=1] \
#         [STALLS=1] [NAME_AB=0] bash benchmarks/hopper_3wg_h200.sh
# Steps, each under `timeout`; $OUT gets steps.log (each step's tail) and one tarball of everything (the device tool
# brings back 8 files at most): the correctness tests of `consumers=3` (NaN-poisoned outputs, odd S,
# the LSE; TESTS_K picks them); bf16 D=64 timed beside FA4 and cuDNN, our VARIANTS interleaved in one run
# (hopper_attention.py's names: ws the tuned build, ws-2wg two consumers, ws-3wg three, ws-3wg-ol three with the
# intra-warpgroup overlap, -thread with each thread's share of the row sums; HEAD_DIMS=64,128 times D=128 too, for
# variants built at both); NCU=1, Nsight Compute's counters of one launch of each at S = 16k
# (hopper_attention_bound.py); STALLS=1, the per-instruction stall samples of the two-consumer D=128 build (which
# barrier its `barrier` stalls wait at); NAME_AB=1, the `cutlass_` name timed on the tuned bf16 D=64 builds at 8k
# (hopper_name_ab.py --in-process: intervals, SASS compared).
set -u
OUT=${OUT:-$PWD/hopper-3wg-out}
WORK=${WORK:-/tmp/hopper-3wg}
SITE=${FA4_SITE:-/tmp/site}
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=$SITE/nvidia_cutlass_dsl/dsl_packages:$SITE:$PWD:$PWD/benchmarks:${PYTHONPATH:-}
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
SHAPES=64:0:16384,64:1:16384
VARIANTS=${VARIANTS:-ws,ws-3wg}
step() {  # step NAME SECONDS CMD...: output to $WORK/NAME.txt, its tail and exit status to steps.log
  local name=$1 limit=$2; shift 2
  local began=$(date +%s)
  timeout "$limit" "$@" > "$WORK/$name.txt" 2>&1
  echo "$name: exit $? after $(( $(date +%s) - began )) s" | tee -a "$OUT/steps.log"
  tail -n 6 "$WORK/$name.txt" | cut -c1-300 | sed 's/^/   | /' | tee -a "$OUT/steps.log"
}
$PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())" | tee "$WORK/versions.txt"
step tests ${TESTS_S:-240} $PY -m pytest tests/gluon_kernels/test_hopper_gpu.py -k "${TESTS_K:-three_consumer}" -q \
    -p no:cacheprovider --maxfail=10
step d64 ${BENCH_S:-240} $PY benchmarks/hopper_attention.py --fa4 --head-dims "${HEAD_DIMS:-64}" --variants "$VARIANTS" \
    --no-fp8 --runs ${RUNS:-3} --out "$WORK/d64.json"
NCU="ncu --profile-from-start off --clock-control none"
if [ "${NCU:-1}" = 1 ]; then
  step ncu ${NCU_S:-120} $NCU --csv --page raw --section SpeedOfLight --section ComputeWorkloadAnalysis \
      --section SchedulerStats --section WarpStateStats --section LaunchStats --section Occupancy \
      --section InstructionStats --log-file "$WORK/ncu.csv" $PY benchmarks/hopper_attention_bound.py run \
      --shapes $SHAPES --ours "$VARIANTS"
  $PY benchmarks/hopper_attention_bound.py table "$WORK/ncu.csv" --shapes $SHAPES --ours "$VARIANTS" \
      --out "$WORK/bound.json" | tee "$WORK/bound.txt"
fi
if [ "${NAME_AB:-0}" = 1 ]; then
  step name_ab ${NAME_AB_S:-150} $PY benchmarks/hopper_name_ab.py --in-process --head-dim 64 --no-fp8 --rounds 10 \
      --store "$WORK/ab-store"
fi
if [ "${STALLS:-1}" = 1 ]; then
  step stalls ${NCU_S:-120} $NCU -k regex:_attn_fwd_ws --section WarpStateStats --section SourceCounters \
      -f -o /tmp/stalls_d128 $PY benchmarks/hopper_attention_bound.py run --shapes 128:0:16384
  ncu --import /tmp/stalls_d128.ncu-rep --page source --print-source sass --csv > "$WORK/stalls_d128.csv" 2>&1
fi
tar -cJf "$OUT/hopper_3wg.tar.xz" -C "$WORK" .
