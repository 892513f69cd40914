#!/usr/bin/env bash
# The GPU proofs, as run on the lent H200: every @pytest.mark.gpu test of the tritonhook package, the A/B noise
# benchmark, and the memwatch stack-reservation demo. Logs and JSON go to the directory given (default
# gpu-results/). Run from the repository root with tritonhook importable (installed, or PYTHONPATH=.).
set -uo pipefail
out=${1:-gpu-results}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
step() {  # step NAME SECONDS CMD...: run with a time limit, log to $out/NAME.log
    local name=$1 limit=$2
    shift 2
    echo "=== $name: $*"
    timeout "$limit" "$@" 2>&1 | tee "$out/$name.log"
}
step gpu-tests 300 python3 -m pytest tests -m gpu -q -s -p no:cacheprovider
step ab-noise 200 python3 benchmarks/ab_noise.py --out "$out/ab_noise.json"
step stack-demo 120 python3 examples/stack_reservation.py --kernel local --reset
step memwatch-overhead 200 python3 benchmarks/memwatch_overhead.py --out "$out/memwatch_overhead.json"
step memwatch-compare 200 python3 -m tritonhook memwatch --compare \
    local="python3 examples/stack_reservation.py --kernel local --no-watch" \
    tma="python3 examples/stack_reservation.py --kernel tma --no-watch" \
    plain="python3 examples/stack_reservation.py --kernel plain --no-watch"
