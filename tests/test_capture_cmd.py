"""`tritonhook capture -- CMD`: every frontend reachable without installing anything, on real compiles."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tritonhook.store import Store

pytestmark = pytest.mark.every_release  # reaches what differs between Triton releases (scripts/test-matrix.sh)

TESTS = Path(__file__).resolve().parent
DEMO = TESTS.parent / "examples" / "capture_demo.py"


def capture(store_path, *command, env=None, options=()) -> tuple[subprocess.CompletedProcess, dict]:
    result = subprocess.run([sys.executable, "-m", "tritonhook", "capture", "--store", str(store_path), "--json",
                             *options, "--", *map(str, command)], capture_output=True, text=True, env=env)
    summary = json.loads(result.stdout) if result.returncode != 2 else {}  # stdout is the JSON summary alone
    return result, summary


def test_a_triton_script_is_captured_by_the_hook_and_through_ptxas(store_path):
    result, summary = capture(store_path, sys.executable, DEMO, "add", "--exit-code", "3")
    assert result.returncode == 3 and summary["exit_code"] == 3, result.stderr
    assert summary["by_frontend"] == {"triton": 3, "ptxas": 3}
    store = Store(store_path, create=False)
    by_frontend = {}
    for c in store.captures(ids=summary["captures"]):
        by_frontend.setdefault(c.frontend, {})[c.arch] = store.read(c, "cubin")
        assert c.entry == "add_kernel"
    assert set(by_frontend["triton"]) == {"sm_90a", "sm_100a", "sm_120a"}
    assert by_frontend["ptxas"] == by_frontend["triton"]  # the wrapper saw the very cubins Triton kept


def test_a_python_child_without_the_hook_is_still_captured_through_triton_ptxas_path(store_path):
    """`python -I` ignores PYTHONPATH, so tritonhook's start-up hook never loads; Triton still runs ptxas."""
    code = "from tritonhook.samples import compile_sample; compile_sample('add', 90)"
    result, summary = capture(store_path, sys.executable, "-I", "-c", code)
    assert result.returncode == 0, result.stderr
    assert summary["by_frontend"] == {"ptxas": 1}
    [c] = Store(store_path, create=False).captures()
    assert (c.entry, c.arch) == ("add_kernel", "sm_90a")
    assert "--gpu-name=sm_90a" in c.metadata["argv"] and c.metadata["exit_code"] == 0  # Triton's ptxas call
    assert "--wheel-ptxas" not in result.stderr and summary["hints"] == []  # something was captured, no cuTile


@pytest.mark.skipif(importlib.util.find_spec("cutlass") is None,
                    reason="nvidia-cutlass-dsl is not installed (pip install 'tritonhook[cute]')")
def test_a_cute_dsl_script_is_captured_from_its_dump_directory(store_path, tmp_path):
    out = tmp_path / "from-the-dsl"
    result, summary = capture(store_path, sys.executable, TESTS / "cute_scale.py", "--out", out, "sm_90a", "sm_120a")
    assert result.returncode == 0, result.stderr
    assert summary["by_frontend"] == {"cute": 2}
    store = Store(store_path, create=False)
    for c in store.captures():
        assert store.read(c, "cubin") == (out / f"{c.arch}.cubin").read_bytes()
        assert store.read(c, "ptx") == (out / f"{c.arch}.ptx").read_bytes()
    assert sorted(c.arch for c in store.captures()) == ["sm_120a", "sm_90a"]


def _tileiras_ptxas() -> Path | None:
    """The ptxas cuTile's `tileiras` runs (the one beside it in the nvidia-cuda-nvcc / -tileiras wheels)."""
    try:
        import nvidia.cu13
    except ImportError:
        return None
    bin_dir = Path(nvidia.cu13.__path__[0], "bin")
    return bin_dir / "ptxas" if (bin_dir / "tileiras").exists() and (bin_dir / "ptxas").exists() else None


needs_cutile = pytest.mark.skipif(importlib.util.find_spec("cuda.tile") is None or _tileiras_ptxas() is None,
                                  reason="cuda-tile[tileiras] is not installed (pip install 'tritonhook[test]')")


@needs_cutile
@pytest.mark.serial  # wraps the virtualenv's wheel ptxas in place, which other tests run and hash
@pytest.mark.release_independent  # cuTile and its wheel ptxas: no Triton in it
def test_a_cutile_export_is_captured_through_the_wheel_ptxas_and_the_wheel_is_restored(store_path, tmp_path):
    ptxas = _tileiras_ptxas()
    before = hashlib.sha256(ptxas.read_bytes()).hexdigest()
    out = tmp_path / "exported"
    result, summary = capture(store_path, sys.executable, TESTS / "tile_scale.py", "--out", out, "sm_90", "sm_120",
                              options=("--wheel-ptxas",))
    assert result.returncode == 0, result.stderr
    store = Store(store_path, create=False)
    kernels = {c.arch: c for c in store.captures() if c.entry.startswith("scale_tile")}
    assert sorted(kernels) == ["sm_120a", "sm_90a"] and set(summary["by_frontend"]) == {"cutile"}
    for arch, c in kernels.items():
        assert c.frontend_version == importlib.metadata.version("cuda-tile")  # the wrapper saw tileiras run it
        assert c.ptxas_path == str(ptxas.resolve()) and "--nv-host" in " ".join(c.metadata["argv"])
        assert store.read(c, "cubin") == (out / f"{arch.removesuffix('a')}.cubin").read_bytes()  # what cuTile wrote
    assert hashlib.sha256(ptxas.read_bytes()).hexdigest() == before  # the real binary is back
    assert not list(ptxas.parent.glob("ptxas.tritonhook-*"))


@needs_cutile
@pytest.mark.serial  # wraps the virtualenv's wheel ptxas in place, which other tests run and hash
@pytest.mark.release_independent  # cuTile and its wheel ptxas: no Triton in it
def test_a_killed_wheel_ptxas_capture_is_reported_and_the_next_capture_restores_it_and_captures(store_path, tmp_path):
    """`kill -9` of `tritonhook capture --wheel-ptxas` leaves the wheel ptxas wrapped for a dead run: `ptxas status`
    names the dead pid and how to recover, and the next capture puts the real binary back and captures again."""
    from tritonhook.ptxas import wrapper as ptxas_wrapper

    ptxas = _tileiras_ptxas()
    before = hashlib.sha256(ptxas.read_bytes()).hexdigest()
    sleeper = "import os, time; print(os.getpid(), flush=True); time.sleep(300)"
    killed = subprocess.Popen([sys.executable, "-m", "tritonhook", "capture", "--store", str(tmp_path / "killed"),
                               "--wheel-ptxas", "--", sys.executable, "-c", sleeper], stdout=subprocess.PIPE, text=True)
    command = int(killed.stdout.readline())  # the command runs: the wheel ptxas is wrapped for this capture
    try:
        assert ptxas_wrapper.status(ptxas).state == ptxas_wrapper.INSTALLED
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        status = subprocess.run([sys.executable, "-m", "tritonhook", "ptxas", "status", "--json",
                                 "--ptxas", str(ptxas)], capture_output=True, text=True)
        [row] = json.loads(status.stdout)
        assert row["state"] == "left-by-dead-capture" and f"dead capture run (pid {killed.pid})" in row["detail"]
        assert f"tritonhook ptxas uninstall --ptxas {ptxas.resolve()}" in row["detail"]
        result, summary = capture(store_path, sys.executable, TESTS / "tile_scale.py", "--out", tmp_path / "out",
                                  "sm_90", options=("--wheel-ptxas",))
        assert result.returncode == 0 and set(summary["by_frontend"]) == {"cutile"}, result.stderr
        assert [c.arch for c in Store(store_path).captures() if c.entry.startswith("scale_tile")] == ["sm_90a"]
        assert f"restored the real ptxas, left wrapped by a capture run that died (pid {killed.pid})" in result.stderr
    finally:
        os.kill(command, signal.SIGKILL)
        if ptxas_wrapper.status(ptxas).state != ptxas_wrapper.NOT_INSTALLED:  # never leave the venv's ptxas wrapped
            ptxas_wrapper.uninstall(ptxas)
    assert hashlib.sha256(ptxas.read_bytes()).hexdigest() == before
    assert not list(ptxas.parent.glob("ptxas.tritonhook-*"))


CUTILE_HINT = "tritonhook: the command imported cuda.tile and no cuTile kernel was captured; for cuTile kernels add " \
              "--wheel-ptxas (cuTile's tileiras runs {}, which only --wheel-ptxas records)"


@needs_cutile
@pytest.mark.serial  # wraps the virtualenv's wheel ptxas in place, which other tests run and hash
@pytest.mark.release_independent  # cuTile and its wheel ptxas: no Triton in it
def test_a_second_wheel_ptxas_capture_names_the_run_whose_wrapper_is_in_place(store_path, tmp_path):
    """Two `tritonhook capture --wheel-ptxas` at once: the second cannot record through the first's wrapper (its
    token is another) and says so, naming the first run's pid, instead of writing 0 cuTile captures silently."""
    from tritonhook.ptxas import wrapper as ptxas_wrapper

    ptxas = _tileiras_ptxas()
    before = hashlib.sha256(ptxas.read_bytes()).hexdigest()
    sleeper = "import os, time; print(os.getpid(), flush=True); time.sleep(300)"
    first = subprocess.Popen([sys.executable, "-m", "tritonhook", "capture", "--store", str(tmp_path / "first"),
                              "--wheel-ptxas", "--", sys.executable, "-c", sleeper], stdout=subprocess.PIPE, text=True)
    command = int(first.stdout.readline())  # the first run's command runs: the wheel ptxas is wrapped for it
    try:
        result, summary = capture(store_path, sys.executable, TESTS / "tile_scale.py", "--out", tmp_path / "out",
                                  "sm_90", options=("--wheel-ptxas",))
        assert result.returncode == 0 and summary["captures"] == [], result.stderr
        assert (f"{ptxas.resolve()}: wrapped by another capture run (pid {first.pid}) until it ends; this run's "
                f"calls of it are not recorded") in result.stderr
    finally:
        os.kill(command, signal.SIGKILL)
        first.wait(timeout=120)
        if ptxas_wrapper.status(ptxas).state != ptxas_wrapper.NOT_INSTALLED:  # never leave the venv's ptxas wrapped
            ptxas_wrapper.uninstall(ptxas)
    assert hashlib.sha256(ptxas.read_bytes()).hexdigest() == before


@needs_cutile
def test_a_cutile_capture_without_wheel_ptxas_captures_nothing_and_says_which_flag(store_path, tmp_path):
    result, summary = capture(store_path, sys.executable, TESTS / "tile_scale.py", "--out", tmp_path / "out", "sm_90")
    assert result.returncode == 0 and summary["captures"] == [] and (tmp_path / "out" / "sm_90.cubin").exists()
    [hint] = [line for line in result.stderr.splitlines() if "--wheel-ptxas" in line]
    assert hint == CUTILE_HINT.format(_tileiras_ptxas().resolve()) and summary["hints"] == [hint]


@needs_cutile
def test_a_program_of_triton_and_cutile_kernels_is_told_its_cutile_kernels_were_missed(store_path, tmp_path):
    """Its Triton kernels are captured; its cuTile kernels, compiled by a ptxas only --wheel-ptxas wraps, are not,
    and the hint says so though captures were written."""
    both = (f"import runpy, sys; from tritonhook.samples import compile_sample; compile_sample('add', 90); "
            f"sys.argv = ['tile_scale.py', '--out', {str(tmp_path / 'out')!r}, 'sm_90']; "
            f"runpy.run_path({str(TESTS / 'tile_scale.py')!r}, run_name='__main__')")
    result, summary = capture(store_path, sys.executable, "-c", both)
    assert result.returncode == 0 and summary["by_frontend"] == {"triton": 1, "ptxas": 1}, result.stderr
    assert (tmp_path / "out" / "sm_90.cubin").exists()  # cuTile compiled it
    assert summary["hints"] == [CUTILE_HINT.format(_tileiras_ptxas().resolve())]
    assert summary["hints"][0] in result.stderr.splitlines()


@needs_cutile
def test_ptxas_status_lists_the_wheel_ptxas():
    from tritonhook.ptxas import wrapper as ptxas_wrapper

    assert str(_tileiras_ptxas().resolve()) in ptxas_wrapper.status_targets()


def test_a_users_own_dump_directory_is_used_and_only_new_files_collected(store_path, tmp_path):
    dump = tmp_path / "users-dump"
    dump.mkdir()
    (dump / "old_kernel.sm_90a.ptx").write_text("// from an earlier run\n")
    os.utime(dump / "old_kernel.sm_90a.ptx", (0, 0))
    env = dict(os.environ, CUTE_DSL_DUMP_DIR=str(dump))
    result, summary = capture(store_path, sys.executable, "-c", "pass", env=env)
    assert result.returncode == 0 and summary["captures"] == []
    assert [p.name for p in dump.iterdir()] == ["old_kernel.sm_90a.ptx"]


def test_json_stdout_is_the_summary_alone_and_the_commands_output_goes_to_stderr(store_path):
    result, summary = capture(store_path, sys.executable, DEMO, "add")
    assert summary["by_frontend"] == {"triton": 3, "ptxas": 3}, result.stderr
    assert "add_kernel" in result.stderr  # what the demo prints on its stdout


def test_no_command_is_one_line_error(store_path):
    result = subprocess.run([sys.executable, "-m", "tritonhook", "capture", "--store", str(store_path)],
                            capture_output=True, text=True)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "after '--'" in result.stderr
