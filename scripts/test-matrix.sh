#!/usr/bin/env bash
# The project's test command. Each supported Triton release gets its own virtualenv (.venv-triton-X.Y.Z, made on
# first use): the whole suite (tests/: tritonhook's, and the kernel packages' in tests/gluon_kernels/ and
# tests/sm120_attn/) runs under Triton 3.6.0 and 3.9.0, the releases the bundled kernels target, and tritonhook's
# own tests (tests/ without those two folders) also under 3.7.1 and 3.8.0, so every
# supported release is proven. Extra arguments go to pytest (e.g. -k capture).
# TRITON_VERSIONS / TRITON_CORE_VERSIONS override the two lists.
set -euo pipefail
cd "$(dirname "$0")/.."
full=${TRITON_VERSIONS-"3.6.0 3.9.0"}
core=${TRITON_CORE_VERSIONS-"3.7.1 3.8.0"}
failed=""

run_suite() {  # run_suite VERSION [PYTEST PATHS/ARGS...]
    local version=$1 venv=".venv-triton-$1"
    shift
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -e ".[test,cute]" "triton==$version"
    echo "=== Triton $version: pytest $* ==="
    # tests marked `serial` change files the others use (a wheel ptxas wrapped in place): they run alone, after
    "$venv/bin/python" -m pytest -n 2 -q -p no:cacheprovider -m "not serial" "$@" || failed="$failed $version"
    "$venv/bin/python" -m pytest -q -p no:cacheprovider -m serial "$@" || failed="$failed $version(serial)"
}

for version in $full; do run_suite "$version" "$@"; done
for version in $core; do run_suite "$version" tests --ignore=tests/gluon_kernels --ignore=tests/sm120_attn "$@"; done
if [ -n "$failed" ]; then
    echo "tests failed under Triton:$failed"
    exit 1
fi
