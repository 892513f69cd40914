#!/usr/bin/env bash
# The project's test command: runs the whole suite once per supported Triton release, each in its own
# virtualenv (.venv-triton-X.Y.Z, created on first use), so Triton 3.6 and 3.9 are both proven on every run.
# Extra arguments go to pytest, e.g. scripts/test-matrix.sh -k capture.  TRITON_VERSIONS overrides the matrix.
set -euo pipefail
cd "$(dirname "$0")/.."
versions=${TRITON_VERSIONS:-"3.6.0 3.9.0"}
failed=""
for version in $versions; do
    venv=".venv-triton-$version"
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -e ".[test,cute]" "triton==$version"
    echo "=== Triton $version ==="
    "$venv/bin/python" -m pytest -n 2 -q -p no:cacheprovider "$@" || failed="$failed $version"
done
if [ -n "$failed" ]; then
    echo "tests failed under Triton:$failed"
    exit 1
fi
