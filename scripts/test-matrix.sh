#!/usr/bin/env bash
# The project's test command. Each supported Triton release gets its own virtualenv (.venv-triton-X.Y.Z, made on
# first use). The first release runs the whole suite (tests/: tritonhook's, and the kernel packages' in
# tests/gluon_kernels/ and tests/sm120_attn/). Every later release runs the tests marked `every_release`: those that
# reach what differs from one release to the next (the hook points of tritonhook._triton, the only code that touches
# Triton's internals; the launch path; the release's ptxas and what it writes). What stands on them (the sweep's
# statistics, the gate, decisions, tune, the CLI) is release-independent code over those hook points, proven under
# the first release: so a test that reaches a line of tritonhook._triton no `every_release` test reaches is marked
# `every_release` itself. The releases of TRITON_VERSIONS are those the bundled kernels target: each also runs the
# kernels' tests (`bundled_kernels`; the Hopper kernel's tuning grid under the first, the release its tables are tuned
# with: gluon_kernels.tuning.TUNED_WITH_TRITON). TRITON_CORE_VERSIONS: the releases between, which run the
# `every_release` tests alone. Extra arguments go to pytest (e.g. -k capture).
# Tests marked `release_independent` (what they check cannot change with the release the suite runs under: they
# never reach its Triton compiler or tritonhook._triton, or they build under every release's own virtualenv as
# `bisect` and `upgrade` do; the sweep's scheduler and Ray, the report in Chromium, pure statistics, rendering,
# argument checks, the docs' links) run under the first release only, like everything not marked.
#
# The heavy test dependencies (torch, Ray, CuTe DSL, cuTile, TritonParse, ...) are installed once, into
# .venv-test-deps, with the first release's Triton: that virtualenv is the first release's. Each other release's
# virtualenv holds only Triton and tritonhook (editable) and reaches the shared ones through a .pth file placed after
# its own site-packages, so its own Triton is the one imported. Disk is what a CI machine runs out of first (5.5 GB
# installed: the shared 3.0, each other release 0.7-1.0; 6.3 GB at most while the suites run), so nothing is
# installed twice and pip keeps no cache.
# Every release's virtualenv is made before the first suite runs, and TRITONHOOK_RELEASES_DIR points at links to
# them (.venv-releases/triton-X.Y.Z), so that `tritonhook upgrade` and `bisect` in tests/test_upgrade.py and
# tests/test_bisect.py find the other releases there instead of downloading them (the releases here are
# config.upgrade.SUPPORTED_RELEASES).
set -euo pipefail
cd "$(dirname "$0")/.."
# Python writes the bytecode of what it imports (into __pycache__, git-ignored), so that each later process (every
# pytest worker, every workload a test starts) loads torch, Triton and the rest compiled instead of compiling their
# sources again: a machine that sets PYTHONDONTWRITEBYTECODE pays ~1 s of compiling per `import torch, triton`, a
# quarter of the suites' time (3.7.1's suite: 90 s with it set, 66 s without, on 2 cores)
unset PYTHONDONTWRITEBYTECODE
full=${TRITON_VERSIONS-"3.6.0 3.9.0"}
core=${TRITON_CORE_VERSIONS-"3.7.1 3.8.0"}
deps=.venv-test-deps
failed=""
first=${full%% *}

pip_install() {  # pip_install PYTHON ARGS...: with the shared virtualenv's pip, into PYTHON's environment
    local python=$1
    shift
    # no byte-compiling at install (torch alone is thousands of files): Python compiles what the tests import, once
    "$deps/bin/python" -m pip --python "$python" install -q --disable-pip-version-check --no-compile --no-cache-dir \
        "$@"
}

release_venv() {  # release_venv VERSION: the virtualenv whose Triton is VERSION (the first release's: the shared one)
    if [ "$1" = "$first" ]; then echo "$deps"; else echo ".venv-triton-$1"; fi
}

install_failed() {  # install_failed WHAT: say what failed to install and how much disk is left (the usual cause)
    echo "installing $1 failed; disk free here: $(df -h . | awk 'NR == 2 {print $4}')"
    exit 1
}

purelib() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }

cpu_seconds() {  # CPU seconds (user + system) of this script's finished children, from /proc (no `times` in a subshell)
    local stat
    read -r stat < "/proc/$$/stat"
    # shellcheck disable=SC2086
    set -- ${stat##*) }  # from the state on: $14 and $15 are cutime and cstime, in clock ticks
    echo $(( (${14} + ${15}) / $(getconf CLK_TCK) ))
}

phase_wall=$SECONDS
phase_cpu=0
phases=""
phase_done() {  # phase_done WHAT: the phase's wall and CPU time since the last one, and the machine's load (a CI
    # machine shared with other jobs shows it there), so that a run says where its time went; the walls again in
    # one line at the end (`phases`), where a log cut to its tail still shows them
    local cpu; cpu=$(cpu_seconds)
    echo "--- $1: $((SECONDS - phase_wall)) s wall, $((cpu - phase_cpu)) s CPU; load $(cut -d' ' -f1-3 /proc/loadavg)"
    phases="$phases${phases:+, }$1 $((SECONDS - phase_wall)) s"
    phase_wall=$SECONDS
    phase_cpu=$cpu
}

make_deps() {  # the shared dependencies: the test and cute extras with the first release's Triton
    pip_install "$deps/bin/python" -e ".[test,cute]" "triton==${first:-3.6.0}"
}

share_triton_key() {  # every process of the suites, in every release's virtualenv (each reaches $deps's site
    # directory), reuses Triton's triton_key() for its files, not hashing libtriton again (scripts/triton_key_memo.py)
    local site; site=$(purelib "$deps/bin/python")
    ln -sfn "$PWD/scripts/triton_key_memo.py" "$site/tritonhook_test_triton_key_memo.py"
    echo "import tritonhook_test_triton_key_memo" > "$site/tritonhook-test-triton-key-memo.pth"
    export TRITONHOOK_TEST_TRITON_KEY_MEMO="$PWD/$deps/triton-key-memo"
}

triton_venv() {  # triton_venv VERSION: a virtualenv holding Triton VERSION
    local version=$1 venv; venv=$(release_venv "$1")
    [ -x "$venv/bin/python" ] || python3 -m venv --without-pip "$venv"  # pip_install installs into it
    rm -f "$(purelib "$venv/bin/python")/zz-tritonhook-test-deps.pth"  # while pip runs: through it pip sees the
    pip_install "$venv/bin/python" --no-deps "triton==$version"         # shared Triton as installed, installs none
}

finish_venv() {  # finish_venv VERSION: tritonhook itself (editable); everything else from $deps
    local venv; venv=$(release_venv "$1")
    pip_install "$venv/bin/python" --no-deps -e .
    # a site directory (its own .pth files processed too), appended after the virtualenv's own
    echo "import site; site.addsitedir('$(purelib "$deps/bin/python")')" \
        > "$(purelib "$venv/bin/python")/zz-tritonhook-test-deps.pth"
}

link_releases() {  # the release virtualenvs as `tritonhook upgrade` looks for them (config.upgrade.RELEASES_DIR)
    mkdir -p .venv-releases
    for version in "$@"; do
        ln -sfn "../$(release_venv "$version")" ".venv-releases/triton-$version"
    done
    export TRITONHOOK_RELEASES_DIR="$PWD/.venv-releases"
}

run_suite() {  # run_suite VERSION MARKS [PYTEST ARGS...]: MARKS selects among the tests not marked serial
    local version=$1 marks=$2 venv serial_files
    venv=$(release_venv "$1")
    shift 2
    echo "=== Triton $version: pytest -m '$marks' $* ==="
    # --dist loadgroup: tests spread one by one over the two workers, but the groups of conftest.py's WORKER_GROUPS
    # (modules whose module or session fixtures start a Ray cluster or build kernels under other releases, a tuning
    # family's configs) each on one worker, so that what they share is made once, not once per worker
    "$venv/bin/python" -m pytest -n 2 --dist loadgroup -q -p no:cacheprovider -m "not serial and ($marks)" "$@" \
        || failed="$failed $version"
    # tests marked `serial` change files the others use (a wheel ptxas wrapped in place): they run alone, after,
    # collected from the files that mark any rather than from the whole suite again (exit 5: none selected); they
    # are release-independent too (conftest.py holds them to it), so only the first release runs them
    phase_done "Triton $version"
    [ "$version" = "$first" ] || return 0
    serial_files=$(grep -rl --include='test_*.py' 'mark\.serial' tests)
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pytest -q -p no:cacheprovider -m "serial and ($marks)" "$@" $serial_files \
        || [ $? -eq 5 ] || failed="$failed $version(serial)"
    phase_done "Triton $version, serial tests"
}

# the releases' Triton side by side, and beside the shared dependencies' install (each is mostly unpacking wheels;
# the shared one, 3.0 GB, is pip resolving and unpacking on one core: ~85 s of a CI machine's 2 cores at half use);
# tritonhook's editable install after, one at a time, since each builds in the same source tree
[ -x "$deps/bin/python" ] || python3 -m venv "$deps"  # its pip installs into every virtualenv
pids=""
others=$(for version in $full $core; do [ "$version" = "$first" ] || echo "$version"; done)
for version in $others; do
    triton_venv "$version" & pids="$pids $!"
done
make_deps || install_failed "the test dependencies"
for pid in $pids; do
    wait "$pid" || install_failed "a Triton release"
done
share_triton_key
for version in $others; do
    finish_venv "$version"
done
# shellcheck disable=SC2086
link_releases $full $core
phase_done "installs"
later_release_files() {  # later_release_files [kernels]: what a later release collects, the files that mark any
    # test every_release (and the bundled kernels' tests, conftest.py's BUNDLED_KERNEL_TESTS): not the whole suite
    # again, whose collection costs each worker seconds
    grep -l 'mark\.every_release' tests/test_*.py
    if [ "${1-}" = kernels ]; then echo tests/gluon_kernels tests/sm120_attn tests/test_golden_ptx.py; fi
}

for version in $full $core; do
    if [ "$version" = "$first" ]; then
        run_suite "$version" "release_independent or not release_independent" "$@"
    elif case " $full " in *" $version "*) true ;; *) false ;; esac; then  # a release the kernels target
        # shellcheck disable=SC2046
        run_suite "$version" "(every_release or bundled_kernels) and not release_independent" \
            $(later_release_files kernels) "$@"
    else
        # shellcheck disable=SC2046
        run_suite "$version" "every_release and not release_independent" $(later_release_files) "$@"
    fi
done
echo "--- $SECONDS s in all: $phases"
if [ -n "$failed" ]; then
    echo "tests failed under Triton:$failed"
    exit 1
fi
