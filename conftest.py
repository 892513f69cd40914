"""Shared by every test folder (tests/ and its kernel-package folders tests/gluon_kernels/, tests/sm120_attn/).

Every test gets its own Triton cache and store, so tests never see each other's kernels.
"""

from __future__ import annotations

import ctypes
import os
import re

import pytest

from tritonhook import config

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # silences Triton 3.9's start-up warning
# Inductor on a CPU probes each vector ISA the CPU's flags claim by compiling and loading a program per ISA into its
# cache; every test's Inductor compile has a cache of its own, so each paid the probe again (~8 s of a 2-core
# machine's CPU per process, 45 of tests/test_divergence.py's 118 s). The tests check what Inductor autotunes and
# compiles, not its ISA probe: the CPU's flags are taken as they are (inherited by every child process).
os.environ.setdefault("TORCHINDUCTOR_VEC_ISA_OK", "1")


def gpu_available() -> bool:
    """A CUDA driver with at least one device (checked through libcuda, so no torch is needed)."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return libcuda.cuInit(0) == 0 and libcuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0


WORKER_GROUPS = {
    # modules whose module or session fixtures cost seconds to tens of seconds: on one worker they are made once
    "tests/test_sweep_scale.py::": "ray",  # its Ray cluster
    "tests/test_bisect.py::": "releases",  # tests/conftest.py's builds under the other releases
    "tests/test_bisect_timing.py::": "releases",
    "tests/test_upgrade.py::": "releases",
    "tests/test_upgrade_timing.py::": "releases",
    "tests/test_report_upgrade.py::": "releases",
    "tests/test_decisions_confirm.py::": "decisions-confirm",  # its arms' real runs
    "tests/test_report_page.py::": "demo",  # the demo (`demo` in tests/conftest.py)
    "tests/test_report_browser.py::": "demo",
    # module fixtures both workers made in every suite (setups of the full matrix at 9b5e74b, each worker's)
    "tests/test_divergence.py::": "divergence",  # two ranks recorded: ~10 s
    "tests/test_exports.py::": "exports",  # a sweep's recording and replay: ~6.5 s
    "tests/test_sweep.py::": "sweep",  # a recorded workload: ~2.8 s
    "tests/test_variants_grammar.py::": "variants-grammar",  # a real build: ~2.5 s
    "tests/test_cubin_delta.py::": "cubin-delta",  # two real builds: ~3 s
}
"""Test ids (by the start of their id) that scripts/test-matrix.sh's pytest-xdist workers run on one worker: the
tests of a group go to one worker together, every other test on its own to whichever is free."""
_TUNING_FAMILY = re.compile(r"(tests/gluon_kernels/test_hopper_tune_cpu\.py::test_every_tuning_config_compiles\w*"
                            r"\[\w+-d\d+-(?:causal|full))-")
"""A Hopper tuning family's grid configs (their ids start with the family's): each compares against the family's
default build, which both workers would compile at once when each started on the family."""


def worker_group(nodeid: str) -> str | None:
    """The group of `WORKER_GROUPS` (or the tuning family) whose tests run on one pytest-xdist worker, or None."""
    family = _TUNING_FAMILY.match(nodeid)
    if family:
        return family.group(1)
    return next((group for start, group in WORKER_GROUPS.items() if nodeid.startswith(start)), None)


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` with the groups of `worker_group` (pytest-xdist's own reads `xdist_group` marks into the test
    id, which pytest 9.2 no longer lets it change: every test was scheduled on its own). The largest groups are
    handed out first, then single tests to whichever worker runs low."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class WorkerGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid) or nodeid

    return WorkerGroups(config, log)


BUNDLED_KERNEL_TESTS = ("tests/gluon_kernels/", "tests/sm120_attn/", "tests/test_golden_ptx.py")
"""The bundled kernels' tests, by the start of their id: marked `bundled_kernels` at collection."""


def pytest_collection_modifyitems(config, items):
    """`gpu` tests skip without a GPU; `nogpu` tests (what tritonhook says when there is none) skip with one;
    a `serial` test not also `release_independent` is a usage error; the bundled kernels' tests are marked
    `bundled_kernels` (scripts/test-matrix.sh selects them by it).
    A marker, not `from conftest import ...`: tests/gluon_kernels has a conftest.py of its own, and which one a
    plain import finds depends on the order pytest puts folders on sys.path."""
    has_gpu = gpu_available()
    for item in items:
        if "serial" in item.keywords and "release_independent" not in item.keywords:
            raise pytest.UsageError(f"{item.nodeid}: a `serial` test must be `release_independent` too "
                                    f"(scripts/test-matrix.sh runs the serial step under the first release only)")
        if item.nodeid.startswith(BUNDLED_KERNEL_TESTS):
            item.add_marker(pytest.mark.bundled_kernels)
        if "gpu" in item.keywords and not has_gpu:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))
        if "nogpu" in item.keywords and has_gpu:
            item.add_marker(pytest.mark.skip(reason="checks what is said when there is no GPU"))


@pytest.fixture(scope="session", autouse=True)
def session_triton_cache(tmp_path_factory):
    """Module and session fixtures run before `triton_cache` below: they share a fresh cache of this test session
    (as on a clean CI machine), never the user's ~/.triton/cache, where a stale entry once made a cubin rebuilt from
    its captured PTX differ from the captured one."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.mktemp("triton-cache-session")))
        patch.setenv("CUDA_TILE_CACHE_DIR", str(tmp_path_factory.mktemp("cutile-cache-session")))
        yield


@pytest.fixture(autouse=True)
def triton_cache(tmp_path, monkeypatch):
    """A fresh, empty Triton cache directory for each test (and cuTile's: a cache hit runs no ptxas)."""
    cache = tmp_path / "triton-cache"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    monkeypatch.setenv("CUDA_TILE_CACHE_DIR", str(tmp_path / "cutile-cache"))
    return cache


@pytest.fixture(autouse=True)
def no_held_capture_warnings():
    """No test leaves preflight holding this process's capture warnings: a recorder holds them from its start until
    its recording is saved (`preflight.hold_warnings`), and one a test builds without finishing it held them for
    every later test of its pytest worker, whose compiles then warned of nothing."""
    yield
    from tritonhook import preflight

    preflight._held = None


@pytest.fixture(autouse=True)
def no_miss_check(request, monkeypatch):
    """A sweep replays the rows that miss the fidelity bar again under other L2 rules (`sweep.misses`); replays by
    tests/sweep_fake_worker.py miss it by construction and would pay two more passes each. Tests of the check
    (`miss_check`) and GPU tests keep it."""
    if "miss_check" not in request.keywords and "gpu" not in request.keywords:
        monkeypatch.setenv(config.sweep.SWEEP_EXPLAIN_MISSES.name, "0")


@pytest.fixture(scope="session")
def kernel_build_cache(tmp_path_factory):
    """One Triton cache for the bundled kernels' builds, shared by every test that compiles them (tests/gluon_kernels,
    tests/test_golden_ptx.py) and by both pytest-xdist workers (Triton writes cache entries atomically): an
    attention kernel takes seconds to compile, and the golden PTX, the no-spill checks and the compile tests build
    many of the same configurations. Used through `kernel_builds` below."""
    if os.environ.get("PYTEST_XDIST_WORKER"):  # basetemp is per worker; its parent is the run's
        shared = tmp_path_factory.getbasetemp().parent / "kernel-build-cache"
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("kernel-build-cache")


@pytest.fixture
def kernel_builds(kernel_build_cache, monkeypatch):
    """Compile into the shared kernel cache, with Triton's default options (line info included: without it ptxas
    allocates registers differently, e.g. the fp8 D=128 tuned build spills 660/732 B instead of under 700)."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(kernel_build_cache))
    return kernel_build_cache


@pytest.fixture
def store_path(tmp_path):
    return tmp_path / "store"


@pytest.fixture
def capture_session(store_path):
    """An enabled capture session, disabled again after the test whatever happens."""
    import tritonhook

    with tritonhook.session(store_path) as session:
        yield session


TRITONPARSE_RUNTIME_SLOTS = ("launch_enter_hook", "launch_exit_hook", "jit_post_compile_hook")
"""The runtime hook slots TritonParse assigns outright (the `tritonparse` fixture puts them back)."""


@pytest.fixture
def tritonparse(monkeypatch):
    """TritonParse's logging module; afterwards its settings and every Triton slot it assigns are as before
    (tests/test_coexist.py, tests/test_doctor.py)."""
    logging = pytest.importorskip("tritonparse.structured_logging",
                                  reason="tritonparse is not installed (pip install 'tritonhook[test]')")
    from triton import knobs

    import tritonhook

    for setting in ("TRITON_TRACE_LAUNCH", "TORCHINDUCTOR_RUN_JIT_POST_COMPILE_HOOK"):
        monkeypatch.setattr(logging, setting, getattr(logging, setting))
    monkeypatch.delenv("TORCHINDUCTOR_RUN_JIT_POST_COMPILE_HOOK", raising=False)  # init(trace launch) sets it
    runtime = {name: getattr(knobs.runtime, name) for name in TRITONPARSE_RUNTIME_SLOTS}
    autotune_slot = vars(knobs.autotuning).get("listener")  # Triton 3.9+ has one; TritonParse assigns it
    yield logging
    tritonhook.disable()
    logging.clear_logging_config()
    for name, value in runtime.items():
        setattr(knobs.runtime, name, value)
    if autotune_slot is None:
        vars(knobs.autotuning).pop("listener", None)
    else:
        knobs.autotuning.listener = autotune_slot
    knobs.compilation.listener = None


@pytest.fixture
def old_store_module(tmp_path, monkeypatch):
    """`load(commit)`: the `tritonhook/store.py` of an older commit, imported as a module, to write a store of
    that commit's schema with that commit's own code (for the upgrade tests). Skips where git cannot show it. The
    store.py of schemas 5 to 7 imports `config.REPAIR_MIN_AGE_S`, the flat name of its time (now
    `config.capture.REPAIR_MIN_AGE_S`): it is given that name for the test's duration."""
    import importlib.util
    import subprocess
    import sys
    from pathlib import Path

    monkeypatch.setattr(config, "REPAIR_MIN_AGE_S", config.capture.REPAIR_MIN_AGE_S, raising=False)

    def load(commit: str):
        source = subprocess.run(["git", "-C", str(Path(__file__).parent), "show", f"{commit}:tritonhook/store.py"],
                                capture_output=True, text=True)
        if source.returncode != 0:
            pytest.skip(f"git cannot show {commit} here (shallow clone?)")
        name = f"store_{commit}"
        (tmp_path / f"{name}.py").write_text(source.stdout)
        spec = importlib.util.spec_from_file_location(f"tritonhook._{name}", tmp_path / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up there
        spec.loader.exec_module(module)
        return module

    return load
