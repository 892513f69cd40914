"""launcher.py: the one way into a child process.

Each part of `ChildSettings` is read back by a real child Python process (what `ChildSettings.current` and the
features' own readers see there), not only by this one; `enable()` exports the same variables `run_command` gives
a child and puts the environment back; and no module but the launcher hands an environment to a subprocess."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tritonhook
from tritonhook import config
from tritonhook.errors import TritonhookError
from tritonhook.launcher import OFF, AbRound, Capture, ChildSettings, CuteKeep, Ptxas, Record, popen, run, run_workload

PACKAGE = Path(tritonhook.__file__).parent

_READ_BACK = """
import json, os, sys
from tritonhook import config
from tritonhook.launcher import ChildSettings
seen = ChildSettings.current()
capture = seen.capture and {k: (repr(v) if k == "rename" and not isinstance(v, str) else v)
                            for k, v in vars(seen.capture).items()}
print(json.dumps({"capture": capture, "record": seen.record and vars(seen.record), "ab": seen.ab and vars(seen.ab),
                  "token": seen.token, "notes": seen.notes,
                  "vars": {var.name: os.environ.get(var.name) for var in config.declared()}}))
"""


def _child_sees(settings: ChildSettings) -> dict:
    """What a fresh Python process started under `settings` reads back (it imports tritonhook from this tree)."""
    done = run([sys.executable, "-c", _READ_BACK], settings, capture_output=True, text=True, check=True,
               cwd=PACKAGE.parent)
    return json.loads(done.stdout.splitlines()[-1])


def test_every_part_reaches_a_child_as_given(tmp_path):
    capture = Capture.of(tmp_path / "store", rename=tritonhook.STRIP, select=["add_kernel"], fix_tma_scope="sm_12",
                         apply=tmp_path / "decisions.json")
    settings = ChildSettings(capture=capture, record=Record("lab", 4, 0, 123),
                             ab=AbRound(str(tmp_path / "out.jsonl"), "cutlass_", 3, str(tmp_path)),
                             ptxas=Ptxas("/opt/ptxas", "/opt/ptxas-bw", ("-O2", "--fmad=false"), str(tmp_path / "p"),
                                         str(tmp_path / "cache")),
                             cute_keep=CuteKeep(str(tmp_path / "dump")), token="t0k", notes=str(tmp_path / "notes"),
                             inductor_through_triton=True, inductor_cold=True, visible_devices="1")
    seen = _child_sees(settings)
    assert seen["capture"] == {"store": str((tmp_path / "store").resolve()), "rename": "tritonhook.STRIP",
                               "select": "^(?:add_kernel)$", "fix_tma_scope": "sm_12",
                               "apply": str((tmp_path / "decisions.json").resolve())}
    assert seen["record"] == {"label": "lab", "sample_every": 4, "snapshot_budget": 0, "snapshot_total_budget": 123}
    assert seen["ab"] == {"out": str(tmp_path / "out.jsonl"), "variant": "cutlass_", "round_index": 3,
                          "outputs": str(tmp_path)}
    assert (seen["token"], seen["notes"]) == ("t0k", str(tmp_path / "notes"))
    env = seen["vars"]
    assert (env[config.ptxas.TRITON_PTXAS_PATH.name], env[config.ptxas.TRITON_PTXAS_BLACKWELL_PATH.name]) == \
        ("/opt/ptxas", "/opt/ptxas-bw")
    assert env[config.ptxas.PTXAS_OPTIONS.name].split()[-2:] == ["-O2", "--fmad=false"]
    assert env[config.paths.PATH.name].split(os.pathsep)[0] == str(tmp_path / "p")
    assert env[config.report.TRITON_CACHE_DIR.name] == str(tmp_path / "cache")
    assert env[config.cute.CUTE_DSL_DUMP_DIR.name] == str(tmp_path / "dump")
    assert set(env[config.cute.CUTE_DSL_KEEP.name].split(",")) >= {"ptx", "cubin"}
    assert env[config.memwatch.TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER.name] == "0"
    assert env[config.decisions.INDUCTOR_CACHES_OFF.name] == "1"
    assert env[config.sweep.CUDA_VISIBLE_DEVICES.name] == "1"
    assert env[config.paths.PYTHONPATH.name].split(os.pathsep)[0] == str(config.capture.BOOTSTRAP_DIR)


@pytest.mark.release_independent  # torch's config, whatever the Triton release
def test_a_cold_child_has_every_inductor_cache_off_as_torch_reads_it(monkeypatch):
    """`inductor_cold` as torch itself reads it in the child (`decisions confirm`'s arms rely on it): Inductor's
    `force_disable_caches` on (torch's default is off), which turns its FX graph and autotune caches off."""
    pytest.importorskip("torch")
    script = "import torch._inductor.config as c; print(c.force_disable_caches)"
    monkeypatch.delenv(config.decisions.INDUCTOR_CACHES_OFF.name, raising=False)
    done = run([sys.executable, "-c", script], ChildSettings(inductor_cold=True), capture_output=True, text=True,
               check=True)
    assert done.stdout.split()[-1] == "True"


def test_off_turns_a_capturing_parents_capture_and_recording_off_and_none_inherits(tmp_path):
    parent = ChildSettings(capture=Capture.of(tmp_path / "s", rename="cutlass_"), record=Record("r"), token="t")
    inherited = parent.environment()
    off = ChildSettings(capture=OFF, record=OFF).environment(inherited)
    assert ChildSettings.current(off).capture is None and ChildSettings.current(off).record is None
    assert str(config.capture.BOOTSTRAP_DIR) not in config.paths.PYTHONPATH.get(off)
    kept = ChildSettings(visible_devices="0").environment(inherited)
    assert ChildSettings.current(kept) == ChildSettings.current(inherited)
    assert ChildSettings.current(kept).capture.rename == "cutlass_" and ChildSettings.current(kept).token == "t"


def test_ptxas_options_go_after_the_users_own(monkeypatch):
    monkeypatch.setenv(config.ptxas.PTXAS_OPTIONS.name, "-lineinfo")
    assert ChildSettings(ptxas=Ptxas(options=("-O1",))).variables()[config.ptxas.PTXAS_OPTIONS.name] == "-lineinfo -O1"


def test_import_from_comes_first_after_the_start_up_hook(tmp_path):
    tree = str(tmp_path / "src")
    env = ChildSettings(capture=Capture.of(tmp_path / "s"), import_from=tree).environment(
        {config.paths.PYTHONPATH.name: os.pathsep.join([str(config.capture.BOOTSTRAP_DIR), "/user"])})
    assert config.paths.PYTHONPATH.get(env) == [str(config.capture.BOOTSTRAP_DIR), tree, "/user"]
    env = ChildSettings(capture=OFF, import_from=tree).environment(env)
    assert config.paths.PYTHONPATH.get(env) == [tree, "/user"]


def test_a_callable_selector_renames_nothing_in_a_child(tmp_path):
    capture = Capture.of(tmp_path, rename="cutlass_", select=lambda name, metadata: True)
    assert (capture.rename, capture.select) == (None, None)


def test_enable_exports_what_a_child_gets_and_disable_restores(tmp_path, monkeypatch):
    monkeypatch.setenv(config.rename.RENAME.name, "users_own")
    before = dict(os.environ)
    tritonhook.enable(tmp_path / "store", rename="cutlass_", select="^add", fix_tma_scope="sm_12")
    try:
        exported = ChildSettings.current().capture
    finally:
        tritonhook.disable()
    assert exported == Capture.of(tmp_path / "store", rename="cutlass_", select="^add", fix_tma_scope="sm_12")
    assert dict(os.environ) == before


def test_enable_and_run_command_give_a_child_the_same_tma_scope_fix(tmp_path):
    """`enable(fix_tma_scope="sm_12")` and `run_command` write a child's environment through the launcher: a
    flag-only encoding once fixed other targets than asked."""
    from tritonhook.run import run_command

    tritonhook.enable(tmp_path / "store", fix_tma_scope="sm_12")
    try:
        exported = config.capture.FIX_TMA_SCOPE.raw()
    finally:
        tritonhook.disable()
    seen = tmp_path / "seen"
    script = f"from tritonhook import config; open({str(seen)!r}, 'w').write(config.capture.FIX_TMA_SCOPE.raw() or '')"
    assert run_command([sys.executable, "-c", script], tmp_path / "store", fix_tma_scope="sm_12").exit_code == 0
    assert exported == seen.read_text() == "sm_12"


@pytest.mark.parametrize("start", [run, popen, run_workload])
def test_a_program_that_cannot_start_is_one_line(tmp_path, start):
    handlers = [signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)]
    with pytest.raises(TritonhookError, match=r"^/nonexistent/prog: cannot start it \("):
        start(["/nonexistent/prog"], ChildSettings())
    assert [signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)] == handlers


# ----- a workload and the signals that end it ------------------------------------------------------------------------
def _tritonhook(*args: object, **kwargs) -> subprocess.Popen:
    """A real `tritonhook` process, outside any terminal (as under a script, CI or `kill`)."""
    return subprocess.Popen([sys.executable, "-m", "tritonhook", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, **kwargs)


@pytest.mark.release_independent  # the launcher's signals and exit statuses: the same under every Triton
@pytest.mark.parametrize("command", ["run", "capture"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL, signal.SIGINT, signal.SIGHUP])
def test_a_command_killed_by_a_signal_exits_as_a_shell_says(tmp_path, command, signum):
    """`sh -c 'kill -N $$'` ends with status 128 + N under a shell; under tritonhook run and capture too (Python's
    returncode is -N, which sys.exit turned into 256 - N)."""
    done = _tritonhook(command, "--store", tmp_path / "store", "--", "sh", "-c", f"kill -{signum.name[3:]} $$")
    _, stderr = done.communicate(timeout=120)
    assert done.returncode == 128 + signum, stderr


def _gone(pid: int) -> bool:
    """No such process, or a zombie nobody reaped yet (its parent gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


_SLEEPER = """
import os, subprocess, sys, time
# the grandchild dies of SIGINT silently, as a program that sets no handler of its own does once started; the pids
# are written once it is started (a signal during its start-up makes Python print a fatal error, under load too)
grandchild = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGINT, "
                               "signal.SIG_DFL); print('ready', flush=True); time.sleep(600)"], stdout=subprocess.PIPE)
grandchild.stdout.readline()
open(sys.argv[1] + ".tmp", "w").write(f"{os.getpid()} {grandchild.pid}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
try:
    while True:
        time.sleep(0.05)
except KeyboardInterrupt:
    grandchild.kill()
    sys.exit(int(sys.argv[2]))
"""


def _started_workload(tmp_path: Path, handled_status: int = 0) -> tuple[subprocess.Popen, list[int]]:
    """`tritonhook run -- python` of a loop that started a grandchild and wrote both pids; (tritonhook, the pids)."""
    pids = tmp_path / "pids"
    process = _tritonhook("run", "--store", tmp_path / "store", "--", sys.executable, "-c", _SLEEPER, pids,
                          handled_status)
    deadline = time.monotonic() + 120
    while not pids.exists():
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    return process, [int(pid) for pid in pids.read_text().split()]


@pytest.mark.release_independent  # the launcher's signals and exit statuses: the same under every Triton
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_tritonhook_run_ends_the_workload_and_every_process_it_started(tmp_path, signum):
    """`kill` of tritonhook run reaches the workload's process group, and tritonhook waits for it: afterwards
    neither the workload nor the process it started is running, and the status is the workload's as a shell says
    it (killed by the signal)."""
    process, pids = _started_workload(tmp_path)
    assert not any(_gone(pid) for pid in pids)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, stderr
    assert _gone(pids[0])  # tritonhook reaped it before exiting
    deadline = time.monotonic() + 10  # the grandchild, orphaned, is reaped by init
    while not _gone(pids[1]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pids[1])
    assert f"{signum.name} passed to" in stderr


@pytest.mark.release_independent  # the launcher's signals and exit statuses: the same under every Triton
def test_a_workload_that_handles_ctrl_c_gives_tritonhook_its_own_status(tmp_path):
    """SIGINT reaches the workload once; it handles it (exits 7 from KeyboardInterrupt), and tritonhook exits 7,
    not 130 nor a traceback of its own."""
    process, pids = _started_workload(tmp_path, handled_status=7)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 7, stderr
    assert "Traceback" not in stderr and _gone(pids[0])


SAVING_PROCESS = """
import pathlib, sys, time
from tritonhook import processes
saved = pathlib.Path(sys.argv[1])
restore = processes.save_before_terminated(lambda: saved.write_text("saved"))
if sys.argv[2] == "restored":
    restore()
print("ready", flush=True)
time.sleep(60)
"""


@pytest.mark.release_independent  # signals: the same under every Triton
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("state", ["installed", "restored"])
def test_a_process_saves_before_a_terminating_signal_ends_it_and_dies_of_it(tmp_path, signum, state):
    """What a process keeps only at exit (a recording, a memory timeline) is saved when SIGTERM or SIGHUP ends it,
    and it still dies of the signal; once its region has put the default back, the signal ends it unsaved."""
    saved = tmp_path / "saved"
    # the child starts with the signal at its default action, as from a shell: a run under nohup (SIGHUP ignored,
    # which the child would inherit and save_before_terminated rightly leaves alone) would wait out the timeout
    process = subprocess.Popen([sys.executable, "-c", SAVING_PROCESS, str(saved), state], stdout=subprocess.PIPE,
                               text=True, preexec_fn=lambda: signal.signal(signum, signal.SIG_DFL))
    assert process.stdout.readline().strip() == "ready"
    process.send_signal(signum)
    process.wait(timeout=60)
    assert process.returncode == -signum
    assert saved.exists() == (state == "installed")


def _passes_env(call: ast.Call) -> bool:
    return any(keyword.arg == "env" for keyword in call.keywords)


@pytest.mark.release_independent
def test_only_the_launcher_builds_a_child_environment():
    """No module but launcher.py passes `env=` to a call: every child's environment is built in one place."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "launcher.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and _passes_env(node):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert offenders == []
