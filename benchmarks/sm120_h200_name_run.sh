#!/usr/bin/env bash
# The sm120_attn name experiment on an sm_90 GPU (the H200): does the `cutlass` in every CuTe DSL kernel name
# change what ptxas makes of our kernels, and their speed? (sm120_attn/README.md, "The cutlass name".)
#
#   bash benchmarks/sm120_h200_name_run.sh name [ROUNDS]   # build + check the three arms, cubin diffs, tritonhook ab
#   bash benchmarks/sm120_h200_name_run.sh bench           # benchmarks/sm120_attention.py with the Gluon column
#
# Run from the repository root, with torch, nvidia-cutlass-dsl and pyelftools importable (pip install -e '.[cute]';
# a machine with no network can get them as wheels on PYTHONPATH). $OUT (default ./sm120-name-run) gets the JSON,
# logs and a tarball of the cubins / PTX / diffs (a handful of files: the device tool brings back 8 at most); the
# rest stays in WORK. Short tables are printed last.
set -u
MODE=${1:-name}; ROUNDS=${2:-6}
OUT=$(mkdir -p "${OUT:-sm120-name-run}" && cd "${OUT:-sm120-name-run}" && pwd)
WORK=${WORK:-/tmp/sm120-name-work}  # the ptxas cache, the A/B store and the experiment's files (tarred into $OUT)
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1
export SM120_NAME_CACHE=$WORK/ptxas-cache
NX=$WORK/name_experiment; mkdir -p "$NX"
log() { echo "== $(date +%T) $*"; }

if [ "$MODE" = name ]; then
  log "ptxas: $(ptxas --version 2>/dev/null | tail -1)"
  log experiment
  python3 benchmarks/sm120_name_ab.py --experiment --out "$NX" --json "$OUT/name_experiment.json" > "$NX/experiment.log" 2>&1
  echo "experiment rc=$?"; grep -v "^{" "$NX/experiment.log" | tail -25
  log "cubin diffs (tritonhook diff --sass)"
  for c in cpasync-full cpasync-causal tma-full tma-causal; do
    [ -f "$NX/$c.strip.cubin" ] || continue
    python3 -m tritonhook diff "$NX/$c.plain.cubin" "$NX/$c.ext.cubin" --sass > "$NX/$c.diff_plain_ext.txt" 2>&1
    python3 -m tritonhook diff "$NX/$c.recut.cubin" "$NX/$c.strip.cubin" --sass > "$NX/$c.diff_cutlass_strip.txt" 2>&1
    python3 -m tritonhook diff "$NX/$c.recut.cubin" "$NX/$c.strip.cubin" --sass --json > "$NX/$c.diff_cutlass_strip.json" 2>&1
    echo "-- $c plain vs ext: $(head -1 "$NX/$c.diff_plain_ext.txt" | cut -c1-160)"
  done
  if [ -f "$OUT/name_experiment.json" ]; then
    log "tritonhook ab, $ROUNDS rounds"
    timeout 480 python3 -m tritonhook ab --store "$WORK/abstore" --variants plain,strip,ext --rounds "$ROUNDS" --json \
      -- python3 benchmarks/sm120_name_ab.py > "$OUT/name_ab.json" 2> "$NX/ab.stderr"
    echo "ab rc=$?"; tail -3 "$NX/ab.stderr"
  fi
  tar -czf "$OUT/name_artifacts.tar.gz" -C "$WORK" name_experiment 2>/dev/null
  log done
  python3 benchmarks/sm120_name_ab.py --summarize-ab "$OUT/name_ab.json" --json "$OUT/name_ab_rows.json" 2>&1 | tail -20
else
  log bench
  python3 benchmarks/sm120_attention.py --json "$OUT/bench.json" > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
  log done
  grep -v "^{" "$OUT/bench.log" | tail -14
fi
