#!/usr/bin/env bash
# The gate between two cold runs of one workload, on two GPUs of one host at once: GPU 1 records the baseline and
# saves it as a baseline file (`check --save-baseline`), GPU 0 records the current run (`record`), each from cold
# Triton and Inductor caches and on half of the cores; then `check --baseline FILE --current ID` of the second
# against the first. No baseline pick is pinned in the current run (the two ran at once): under `max-autotune` the
# two runs' autotuners choose apart, so this is the hardest case of the gate's matching. From the repository root:
#     OUT=/some/dir bash benchmarks/gate_two_cold_runs.sh python3 benchmarks/workloads/bert_max_autotune.py 6
# Writes OUT/versions.txt, OUT/check.json (the gate's result) and OUT/summary.json (checked, unchecked share, the signatures met by
# machine code under another name and their share), and prints the summary last.
set -u
OUT=${OUT:-$PWD/gate-out}
SCRATCH=${SCRATCH:-/tmp/gate-two}
PY=${PYTHON:-python3}
mkdir -p "$OUT" "$SCRATCH"
began=$(date +%s)
$PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())" \
    > "$OUT/versions.txt" 2>&1
nvidia-smi --query-gpu=driver_version --format=csv,noheader >> "$OUT/versions.txt" 2>&1
cold() { echo TRITON_CACHE_DIR="$SCRATCH/$1/triton" TORCHINDUCTOR_CACHE_DIR="$SCRATCH/$1/inductor"; }
( env $(cold base) CUDA_VISIBLE_DEVICES=1 taskset -c 16-31 $PY -m tritonhook check --store "$SCRATCH/base-store" \
    --save-baseline "$SCRATCH/baseline.json" -- "$@" > "$OUT/baseline.log" 2>&1
  echo "baseline exit $? after $(( $(date +%s) - began )) s" >> "$OUT/baseline.log" ) &
env $(cold current) CUDA_VISIBLE_DEVICES=0 taskset -c 0-15 $PY -m tritonhook record --store "$SCRATCH/store" --json \
    -- "$@" > "$OUT/current.json" 2> "$OUT/current.log"
echo "current exit $? after $(( $(date +%s) - began )) s" >> "$OUT/current.log"
wait
tail -1 "$OUT/baseline.log" "$OUT/current.log"
current=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['recording'])" "$OUT/current.json")
CUDA_VISIBLE_DEVICES=0 $PY -m tritonhook check --store "$SCRATCH/store" --baseline "$SCRATCH/baseline.json" \
    --current "$current" --json > "$OUT/check.json" 2> "$OUT/check.log"
echo "check exit $? after $(( $(date +%s) - began )) s" >> "$OUT/check.log"
$PY - "$OUT" <<'SUMMARY'
import json, sys
from pathlib import Path
from tritonhook.check.result import OUTPUTS_CHANGED, CheckResult
out = Path(sys.argv[1])
gate = CheckResult.from_json(json.loads((out / "check.json").read_text()))
checked = [k for k in gate.kernels if k.checked]
renamed = [k for k in gate.kernels if k.baseline_kernel]
current_unmatched = [u for u in gate.unmatched if u.signature is not None]
summary = {"signatures": len(gate.kernels), "checked": len(checked), "failures": [k.label for k in gate.failures],
           "outputs_changed": sum(k.status == OUTPUTS_CHANGED for k in gate.kernels), "renamed": len(renamed),
           "renamed_share": sum(k.share or 0 for k in renamed), "renamed_checked": sum(k.checked for k in renamed),
           "unchecked_share": gate.unchecked_share, "unmatched_current": len(current_unmatched),
           "unmatched_current_share": sum(u.share or 0 for u in current_unmatched),
           "why": sorted({u.why.split(",")[0] for u in gate.unmatched})}
(out / "summary.json").write_text(json.dumps(summary, indent=1))
print(json.dumps(summary))
SUMMARY
tail -2 "$OUT/check.log"
