#!/usr/bin/env bash
# Device calls for issue 9's remaining parts (H200, sm_90a, CuTe DSL 4.4.2 carried in .devcarry, pyelftools in .whl).
#   bash sm120_attn/h200_name_run.sh name [ROUNDS]   # name experiment (build, check, cubin diffs) + tritonhook ab
#   bash sm120_attn/h200_name_run.sh bench           # sm120_attn.bench with the Hopper Gluon column
# Writes JSON and a tarball of cubins / PTX / diffs under $OUT; prints short tables last.
set -u
MODE=${1:-name}; ROUNDS=${2:-6}
OUT=${OUT:-/tmp/sm120_out}; mkdir -p "$OUT"
mkdir -p /tmp/site && tar -xJf .devcarry/cutedsl-4.4.2.tar.xz -C /tmp/site
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site/nvidia_cutlass_dsl/python_packages:/tmp/site:$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1
export SM120_NAME_CACHE=/tmp/sm120_name_cache
NX=/tmp/name_experiment; mkdir -p $NX
log() { echo "== $(date +%T) $*"; }

if [ "$MODE" = name ]; then
  log "ptxas: $(/usr/local/cuda/bin/ptxas --version | tail -1)"
  log experiment
  python3 -m sm120_attn.name_ab --experiment --out $NX --json $OUT/name_experiment.json > $NX/experiment.log 2>&1
  echo "experiment rc=$?"; grep -v "^{" $NX/experiment.log | tail -25
  log "cubin diffs (tritonhook diff --sass)"
  for c in cpasync-full cpasync-causal tma-full tma-causal; do
    [ -f $NX/$c.strip.cubin ] || continue
    python3 -m tritonhook diff $NX/$c.plain.cubin $NX/$c.ext.cubin --sass > $NX/$c.diff_plain_ext.txt 2>&1
    python3 -m tritonhook diff $NX/$c.recut.cubin $NX/$c.strip.cubin --sass > $NX/$c.diff_cutlass_strip.txt 2>&1
    python3 -m tritonhook diff $NX/$c.recut.cubin $NX/$c.strip.cubin --sass --json > $NX/$c.diff_cutlass_strip.json 2>&1
    echo "-- $c plain vs ext: $(head -1 $NX/$c.diff_plain_ext.txt | cut -c1-160)"
  done
  if [ -f $OUT/name_experiment.json ]; then
    log "tritonhook ab, $ROUNDS rounds"
    timeout 480 python3 -m tritonhook ab --store /tmp/abstore --variants plain,strip,ext --rounds $ROUNDS --json \
      -- python3 -m sm120_attn.name_ab > $OUT/name_ab.json 2> $NX/ab.stderr
    echo "ab rc=$?"; tail -3 $NX/ab.stderr
  fi
  tar -czf $OUT/name_artifacts.tar.gz -C /tmp name_experiment 2>/dev/null
  log done
  python3 -m sm120_attn.name_ab --summarize-ab $OUT/name_ab.json --json $OUT/name_ab_rows.json 2>&1 | tail -20
else
  log bench
  python3 -m sm120_attn.bench --json $OUT/bench.json > $OUT/bench.log 2>&1; echo "bench rc=$?"
  log done
  grep -v "^{" $OUT/bench.log | tail -14
fi
