"""Results that several test modules read, each built once per test session: an upgrade, a bisect and a recording's
upgrade each rebuild kernels under other Triton releases (seconds to tens of seconds), and both the modules that
check the commands (tests/test_upgrade.py, test_bisect.py, test_bisect_timing.py, test_upgrade_timing.py) and the
report's (tests/test_report_upgrade.py) read them. A module that adds results to one of these stores must not count on
being the only one that did.

The release virtualenvs are never downloaded here: scripts/test-matrix.sh points $TRITONHOOK_RELEASES_DIR at links
to its own; without them the fixtures that need them skip."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from release_subjects import (BISECT_COMPILES, BISECT_SUBJECTS, UPGRADE_COMPILES, UPGRADE_SUBJECTS, capture_subjects,
                              compile_subjects)

UPGRADE_TARGET = "3.9.0"


def _release_python(release: str) -> Path | None:
    from tritonhook.upgrade.releases import installed_triton, releases_dir

    folder = releases_dir() / f"triton-{release}"
    return folder / "bin" / "python" if installed_triton(folder) == release else None


@pytest.fixture(scope="session")
def release_39() -> Path:
    """The Triton 3.9.0 virtualenv `upgrade` would use, where one exists already (never installed here)."""
    from tritonhook.upgrade.releases import releases_dir

    if _release_python(UPGRADE_TARGET) is None:
        pytest.skip(f"no Triton {UPGRADE_TARGET} virtualenv under {releases_dir()} ($TRITONHOOK_RELEASES_DIR; "
                    f"scripts/test-matrix.sh links its own there)")
    return releases_dir() / f"triton-{UPGRADE_TARGET}"


@pytest.fixture(scope="session")
def upgrade_subjects(tmp_path_factory):
    """tests/release_subjects.py's upgrade subjects captured for sm_90 under the running Triton, from a module file
    deleted afterwards (a rebuild has the capture alone)."""
    import tritonhook
    from tritonhook import _triton

    if _triton.parse_version(_triton.triton_version()) >= (3, 9):
        pytest.skip("the subjects are captured under a release that has tl.advance (Triton 3.9 removed it)")
    folder = tmp_path_factory.mktemp("upgrade")
    return tritonhook.Store(capture_subjects(folder, "upgrade_subjects", UPGRADE_SUBJECTS, UPGRADE_COMPILES,
                                             keep=False))


@pytest.fixture(scope="session")
def upgraded(upgrade_subjects, release_39):
    """`upgrade` of the upgrade subjects to Triton 3.9.0: the scale kernel's four cells, and the tl.advance kernel
    3.9 refuses (a row with its compile error)."""
    from tritonhook.upgrade import upgrade

    return upgrade(upgrade_subjects, to=UPGRADE_TARGET)


@pytest.fixture(scope="session")
def releases() -> dict[str, Path]:
    """Each supported release's Python, where its virtualenv exists already (never installed here)."""
    from tritonhook import config
    from tritonhook.upgrade.releases import releases_dir

    found = {release: _release_python(release) for release in config.upgrade.SUPPORTED_RELEASES}
    missing = [release for release, python in found.items() if python is None]
    if missing:
        pytest.skip(f"no Triton {', '.join(missing)} virtualenv under {releases_dir()} ($TRITONHOOK_RELEASES_DIR; "
                    f"scripts/test-matrix.sh links its own there)")
    return found


@pytest.fixture(scope="session")
def bisect_subjects(tmp_path_factory):
    """tests/release_subjects.py's bisect subjects compiled under capture from a module file (kept: test_bisect's
    direct compiles read it too): (store, module file)."""
    import tritonhook
    from tritonhook import _triton, config

    first = config.upgrade.SUPPORTED_RELEASES[0]
    if _triton.triton_version() != first:
        pytest.skip(f"the known answers are for kernels captured under the oldest supported release, {first} "
                    f"(this is Triton {_triton.triton_version()})")
    folder = tmp_path_factory.mktemp("bisect")
    store = capture_subjects(folder, "bisect_subjects", BISECT_SUBJECTS, BISECT_COMPILES, keep=True)
    return tritonhook.Store(store), folder / "bisect_subjects.py"


@pytest.fixture(scope="session")
def bisected(bisect_subjects, releases):
    """`bisect` of every bisect subject from the oldest supported release to the newest."""
    from tritonhook import config
    from tritonhook.upgrade.bisect import bisect

    return bisect(bisect_subjects[0], kernel="_kernel$", from_release=config.upgrade.SUPPORTED_RELEASES[0],
                  to_release=config.upgrade.SUPPORTED_RELEASES[-1])


@pytest.fixture(scope="session")
def recording_upgraded(tmp_path_factory, release_39):
    """A recording made without a GPU (tests/sample_recording.py: two signatures) and the upgrade of its kernels to
    Triton 3.9.0: (store, recording, upgrade result)."""
    pytest.importorskip("torch")
    from sample_recording import sample_recording
    from tritonhook.upgrade import upgrade

    store, recording = sample_recording(tmp_path_factory.mktemp("store"), signatures=2)
    return store, recording, upgrade(store, to=UPGRADE_TARGET, recording=str(recording.id))


DIRECT = '''
import importlib.util, json, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from tritonhook.cubin import Cubin

spec = importlib.util.spec_from_file_location("bisect_subjects", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
found = {}
for name, (signature, constexprs, arch) in json.loads(sys.argv[2]).items():
    attrs = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}
    try:
        built = triton.compile(ASTSource(getattr(module, name), signature, constexprs, attrs),
                               target=GPUTarget("cuda", arch, 32), options={"num_warps": 2})
    except Exception:
        found[name] = None
        continue
    summary = Cubin.from_bytes(built.asm["cubin"]).summary(built.metadata.name)
    found[name] = {"text_sha256": summary["text_sha256"], "text_size": summary["text_size"]}
print(json.dumps(found))
'''
"""Each release compiling the bisect subjects itself, straight from their file (no capture, no rebuild worker): the
`.text` hash and size of each kernel, None where the release refuses it."""


@pytest.fixture(scope="session")
def direct_builds(bisect_subjects, releases, tmp_path_factory) -> dict[str, dict[str, dict | None]]:
    """The bisects' independent measure: release -> kernel -> the `.text` (`text_sha256`, `text_size`) of the
    release's own compile of it (None: refused)."""
    import tritonhook
    from tritonhook.launcher import OFF, ChildSettings, Ptxas, run

    cache = tmp_path_factory.mktemp("triton-cache-direct")
    settings = ChildSettings(capture=OFF, import_from=str(Path(tritonhook.__file__).parents[1]),
                             ptxas=Ptxas(cache_dir=str(cache)))
    found = {}
    for release, python in releases.items():
        done = run([str(python), "-c", DIRECT, str(bisect_subjects[1]), json.dumps(BISECT_COMPILES)], settings,
                   capture_output=True, text=True, timeout=600, check=True)
        found[release] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


TIMED_SUBJECTS = ("scale_kernel", "softmax_kernel", "advance_kernel")
"""The bisect subjects a recording launches for the timed bisect: the sm_90 ones (a recording is of one GPU)."""


@pytest.fixture(scope="session")
def time_by_text_worker() -> list[str]:
    """The replay worker of the timing tests on a machine with no GPU: tests/sweep_fake_worker.py, a variant's time
    inversely proportional to its kernel's .text size."""
    return [str(Path(__file__).with_name("sweep_fake_worker.py")), "--time-by-text"]


@pytest.fixture(scope="session")
def bisect_recording(bisect_subjects, tmp_path_factory):
    """The sm_90 bisect subjects captured under the oldest supported release into a store of their own, and a
    recording (made without a GPU, tests/sample_recording.py) of one launch signature of each: (store,
    recording)."""
    torch = pytest.importorskip("torch")
    import tritonhook
    from sample_recording import save_recording

    store_path, kernels, capture_ids = compile_subjects(
        tmp_path_factory.mktemp("bisect-recording"), "bisect_subjects",
        BISECT_SUBJECTS, {name: BISECT_COMPILES[name] for name in TIMED_SUBJECTS}, keep=False)
    n = 200
    arguments = {"scale_kernel": (torch.randn(n), torch.empty(n), n, 2.0, 256),
                 "softmax_kernel": (torch.randn(4 * n), torch.empty(4 * n), n, 256),
                 "advance_kernel": (torch.randn(n).half(), torch.empty(n).half(), n, 128)}
    store = tritonhook.Store(store_path)
    return store, save_recording(store, [(kernels[name], arguments[name]) for name in TIMED_SUBJECTS], capture_ids)


@pytest.fixture(scope="session")
def timed_bisected(bisect_recording, releases, time_by_text_worker):
    """`bisect --time` of every signature of `bisect_recording` from the oldest supported release to the newest,
    replayed by `time_by_text_worker` (7 rounds: the fewest the adaptive rule decides at), each release's cells
    built here."""
    from tritonhook import config
    from tritonhook.measure.sequential import SEQUENCE_MIN_ROUNDS
    from tritonhook.upgrade.bisect_timing import bisect_time

    store, recording = bisect_recording
    return bisect_time(recording, store, kernel="_kernel$", from_release=config.upgrade.SUPPORTED_RELEASES[0],
                       to_release=config.upgrade.SUPPORTED_RELEASES[-1], rounds=SEQUENCE_MIN_ROUNDS,
                       worker=time_by_text_worker)


DEMO_SAMPLES = ("add", "matmul_fp16", "tma_copy")


@pytest.fixture(scope="session")
def demo(tmp_path_factory):
    """One `tritonhook demo` run over three samples without the attention kernels (18 compiles: 3 kernels x 3
    targets x plain/renamed, and the ptxas matrix), read by both the report's page tests and its browser tests
    (tests/test_report_page.py, test_report_browser.py: each ran a demo of its own, 26-30 s of a CI core). Both
    modules are in the pytest-xdist group "demo", so one worker makes it. No test may change it."""
    from tritonhook.page.demo import run_demo

    return run_demo(tmp_path_factory.mktemp("demo"), samples=list(DEMO_SAMPLES), attention=False, progress=False)


@pytest.fixture(scope="session")
def select_algorithm_cpu(tmp_path_factory) -> subprocess.CompletedProcess:
    """tests/select_algorithm_choice.py (on the CPU) run once for the whole test run, in an Inductor cache of its own:
    Inductor compiling and benchmarking a GEMM two ways takes 15-30 s on a CI core, and both the autotune tracer's
    test (tests/test_sweep_autotune.py) and the divergence test read the same run. The pytest-xdist workers share it: the
    first to ask runs it, the other waits for its result (basetemp is per worker; its parent is the run's)."""
    import fcntl

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    result = shared / "select-algorithm-cpu.json"
    with open(shared / "select-algorithm-cpu.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not result.exists():
            env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path_factory.mktemp("inductor"))}
            done = subprocess.run([sys.executable, str(Path(__file__).with_name("select_algorithm_choice.py"))],
                                  capture_output=True, text=True, timeout=600, env=env)
            result.write_text(json.dumps({"args": done.args, "returncode": done.returncode, "stdout": done.stdout,
                                          "stderr": done.stderr}))
    return subprocess.CompletedProcess(**json.loads(result.read_text()))
