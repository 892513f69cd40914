"""The ptxas wrapper on COPIES of real ptxas binaries (never the venv's own): install/uninstall/status, every
half state an interruption can leave (step by step and by SIGKILL), pass-through of ptxas's results, recording
into the store, and real compiles through it (Triton in a subprocess, nvcc in a throw-away toolkit)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tritonhook.ptxas import wrapper
from tritonhook.errors import TritonhookError
from tritonhook.binaries import find_ptxas
from tritonhook.store import Store

pytestmark = pytest.mark.every_release  # reaches what differs between Triton releases (scripts/test-matrix.sh)

DATA = Path(__file__).parent / "data"
FFMA = DATA / "ffma_loop.ptx"
MODE = 0o751  # not the usual 0o755, so a lost mode shows


@functools.cache
def bundled(origin: str = "triton ptxas") -> str:
    return next(b.path for b in find_ptxas() if b.origin == origin)


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


sha256_of = functools.cache(sha256)  # of the original binaries, hashed once


def copy_ptxas(directory: Path, origin: str = "triton ptxas", name: str = "ptxas") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / name
    shutil.copyfile(bundled(origin), target)
    target.chmod(MODE)
    return target


@pytest.fixture
def ptxas(tmp_path) -> Path:
    return copy_ptxas(tmp_path / "bin")


def assert_pristine(path: Path, origin: str = "triton ptxas") -> None:
    """The real binary is back, byte for byte, with its mode, and nothing of ours is left beside it."""
    assert sha256(path) == sha256_of(bundled(origin))
    assert path.stat().st_mode & 0o7777 == MODE
    assert sorted(os.listdir(path.parent)) == [path.name]
    assert wrapper.status(path).state == wrapper.NOT_INSTALLED


def stable(stderr: bytes) -> bytes:
    """ptxas -v output without its timing line, which differs run to run."""
    return re.sub(rb"ptxas info\s*: Compile time = .*\n", b"", stderr)


def run_ptxas(binary, *args, cwd, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), *map(str, args)], capture_output=True, cwd=cwd, env=env)


def tritonhook_cli(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tritonhook", *map(str, args)], capture_output=True, text=True,
                          env=env)


# ----- install / uninstall / status ----------------------------------------------------------------------------
@pytest.mark.release_independent  # the wrapper's file steps on a copy of a ptxas: the same under every Triton
def test_install_uninstall_round_trip_restores_the_exact_binary_and_mode(ptxas, store_path):
    assert wrapper.status(ptxas).state == wrapper.NOT_INSTALLED
    installed = wrapper.install(ptxas, store=store_path)
    assert installed.state == wrapper.INSTALLED
    assert ptxas.read_bytes().startswith(b"#!") and ptxas.stat().st_mode & 0o7777 == MODE
    assert sha256(installed.real) == sha256_of(bundled())
    inode, text = ptxas.stat().st_ino, ptxas.read_bytes()
    assert wrapper.install(ptxas, store=store_path).state == wrapper.INSTALLED  # second install: no-op
    assert (ptxas.stat().st_ino, ptxas.read_bytes()) == (inode, text)
    version = run_ptxas(ptxas, "--version", cwd=ptxas.parent)
    assert re.search(rb"release \d+\.\d+", version.stdout)  # what Triton parses from a TRITON_PTXAS_PATH binary
    assert wrapper.uninstall(ptxas).state == wrapper.NOT_INSTALLED
    assert_pristine(ptxas)
    assert wrapper.uninstall(ptxas).state == wrapper.NOT_INSTALLED  # uninstalling a plain ptxas: no-op


def test_cli_status_json_and_one_line_errors(ptxas, tmp_path, store_path):
    assert tritonhook_cli("ptxas", "install", "--ptxas", ptxas, "--store", store_path).returncode == 0
    listed = json.loads(tritonhook_cli("ptxas", "status", "--json", "--ptxas", ptxas).stdout)
    assert [(r["path"], r["state"], r["settings"]["real"]) for r in listed] == [
        (str(ptxas), "installed", f"{ptxas}.tritonhook-real")]
    script = tmp_path / "other" / "ptxas"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\nexec {ptxas} \"$@\"\n")
    script.chmod(0o755)
    refused = tritonhook_cli("ptxas", "install", "--ptxas", script)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert str(script) in refused.stderr and "refusing to wrap a wrapper" in refused.stderr
    assert tritonhook_cli("ptxas", "uninstall", "--ptxas", ptxas).returncode == 0
    assert_pristine(ptxas)


def test_install_without_ptxas_lists_what_it_would_wrap_and_needs_yes(tmp_path):
    """The default targets are Triton's and the system's binaries: never wrapped in place without --yes."""
    targets = wrapper.default_targets()
    assert targets  # Triton's bundled ptxas at least
    before = {path: sha256(path) for path in targets}
    refused = tritonhook_cli("ptxas", "install", "--store", tmp_path / "store")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.startswith(f"tritonhook: error: tritonhook ptxas install would wrap in place: "
                                     f"{', '.join(targets)}; pass --yes")
    dry = tritonhook_cli("ptxas", "install", "--dry-run", "--json")
    assert dry.returncode == 0 and [r["path"] for r in json.loads(dry.stdout)] == targets
    assert {path: sha256(path) for path in targets} == before
    assert not (tmp_path / "store").exists()


def test_wrapping_a_wrapper_or_our_own_files_is_refused(ptxas, tmp_path):
    wrapper.install(ptxas)
    elsewhere = tmp_path / "copy-of-wrapper" / "ptxas"
    elsewhere.parent.mkdir()
    shutil.copy2(ptxas, elsewhere)
    with pytest.raises(TritonhookError, match="refusing to wrap a wrapper"):
        wrapper.install(elsewhere)
    with pytest.raises(TritonhookError, match="bookkeeping"):
        wrapper.install(wrapper.real_path(ptxas))
    wrapper.uninstall(ptxas)
    assert_pristine(ptxas)


def test_a_symlink_is_followed_and_keeps_pointing_at_ptxas(ptxas, tmp_path):
    link = tmp_path / "link-dir" / "ptxas"
    link.parent.mkdir()
    link.symlink_to(ptxas)
    assert wrapper.install(link).path == str(ptxas)
    assert link.is_symlink() and wrapper.read_settings(link) is not None
    wrapper.uninstall(link)
    assert link.is_symlink()
    assert_pristine(ptxas)


# ----- interrupted installs and uninstalls ----------------------------------------------------------------------
class Interrupted(Exception):
    pass


def stop_at(wanted: str):
    def on_step(name: str) -> None:
        if name == wanted:
            raise Interrupted(name)

    return on_step


@pytest.mark.release_independent  # the wrapper's file steps on a copy of a ptxas: the same under every Triton
@pytest.mark.parametrize("step, state", [("cleaned", wrapper.NOT_INSTALLED),
                                         ("wrapper-written", wrapper.INTERRUPTED_INSTALL),
                                         ("real-linked", wrapper.INTERRUPTED_INSTALL),
                                         ("wrapper-in-place", wrapper.INSTALLED)])
def test_install_stopped_after_each_step_is_recognised_and_recovered(ptxas, step, state):
    with pytest.raises(Interrupted):
        wrapper.install(ptxas, on_step=stop_at(step))
    assert wrapper.status(ptxas).state == state
    assert wrapper.install(ptxas).state == wrapper.INSTALLED  # a new install finishes the job
    wrapper.uninstall(ptxas)
    assert_pristine(ptxas)
    with pytest.raises(Interrupted):
        wrapper.install(ptxas, on_step=stop_at(step))
    wrapper.uninstall(ptxas)  # so does an uninstall
    assert_pristine(ptxas)


@pytest.mark.release_independent  # the wrapper's file steps on a copy of a ptxas: the same under every Triton
def test_states_nobody_left_on_purpose(ptxas, tmp_path):
    wrapper.install(ptxas)
    ptxas.unlink()  # the wrapper is gone, the real binary sits under its bookkeeping name
    assert wrapper.status(ptxas).state == wrapper.REAL_ONLY
    wrapper.uninstall(ptxas)
    assert_pristine(ptxas)

    wrapper.install(ptxas)
    upgraded = copy_ptxas(tmp_path / "upgrade", origin="triton ptxas-blackwell")
    os.replace(upgraded, ptxas)  # a toolkit upgrade wrote a new ptxas over the wrapper
    assert wrapper.status(ptxas).state == wrapper.STALE_REAL
    with pytest.raises(TritonhookError, match=re.escape(str(ptxas))):
        wrapper.install(ptxas)
    wrapper.uninstall(ptxas)
    assert_pristine(ptxas, origin="triton ptxas-blackwell")


def test_wrapper_whose_real_binary_was_deleted_is_reported_not_guessed(ptxas):
    wrapper.install(ptxas)
    os.unlink(wrapper.real_path(ptxas))
    assert wrapper.status(ptxas).state == wrapper.WRAPPER_WITHOUT_REAL
    result = tritonhook_cli("ptxas", "uninstall", "--ptxas", ptxas)
    assert result.returncode == 2 and str(ptxas) in result.stderr and "is gone" in result.stderr


def test_a_wrapper_whose_owner_died_is_reported_orphaned_even_before_it_is_reaped(ptxas, store_path):
    """`install(owner=pid)` is what `tritonhook capture --wheel-ptxas` does: once that process is SIGKILLed, the
    wrapper is named as left by it (a zombie not yet reaped counts as dead), and uninstall restores the binary."""
    owner = subprocess.Popen(["sleep", "300"])
    try:
        installed = wrapper.install(ptxas, store=store_path, token="t", owner=owner.pid)
        assert installed.state == wrapper.INSTALLED and installed.settings["owner"]["pid"] == owner.pid
        assert installed.settings["owner"]["start"].isdigit()  # guards against a later process given the same pid
        owner.send_signal(signal.SIGKILL)
        while Path(f"/proc/{owner.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            time.sleep(0.01)
        left = wrapper.status(ptxas)
        assert left.state == wrapper.ORPHANED and f"pid {owner.pid}" in left.detail
        assert f"tritonhook ptxas uninstall --ptxas {ptxas}" in left.detail
        with pytest.raises(TritonhookError, match=re.escape(str(ptxas))):
            wrapper.install(ptxas, store=store_path)  # another install does not take over a dead run's wrapper
    finally:
        owner.kill()
        owner.wait()
    assert wrapper.status(ptxas).state == wrapper.ORPHANED  # reaped: still dead
    assert wrapper.uninstall(ptxas).state == wrapper.NOT_INSTALLED
    assert_pristine(ptxas)


def test_status_of_a_path_with_no_ptxas_is_one_line_naming_it(tmp_path):
    missing = tmp_path / "no-such-dir" / "ptxas"
    result = tritonhook_cli("ptxas", "status", "--ptxas", missing)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"tritonhook: error: {missing}: no such file") and result.stderr.count("\n") == 1


STEPS_AT_MOST = 5
"""More steps than an install (4) or an uninstall (2) takes: a kill point may also fall after the operation."""


def _killed_during(operation, path: Path, rng: random.Random) -> None:
    """Fork; the child runs `operation(path)` step by step, telling the parent of each step through a pipe; SIGKILL
    it at a random point: after a random number of its steps (0: before the first), a random part of a step later.
    Kill points count steps, not seconds, so a loaded machine (a child slow to start) moves none of them."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no cleanup, no pytest, just the operation
        os.close(read)
        try:
            operation(path, on_step=lambda name: (os.write(write, b"."), time.sleep(0.002)))
        finally:
            os._exit(0)
    os.close(write)
    for _ in range(rng.randrange(STEPS_AT_MOST + 1)):
        if not os.read(read, 1):  # the operation ended
            break
    time.sleep(rng.uniform(0, 0.002))
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(read)


@pytest.mark.release_independent  # the wrapper's file steps on a copy of a ptxas: the same under every Triton
def test_sigkill_at_random_points_never_loses_the_real_binary(ptxas):
    rng = random.Random(5)
    wrapper.status(ptxas)  # warms ptxas_version's cache, so children spend their time in the steps
    wrapper.install(ptxas)
    wrapper.uninstall(ptxas)
    seen = set()
    for trial in range(60):
        operation = wrapper.install if trial % 2 == 0 else wrapper.uninstall
        if operation is wrapper.uninstall:
            wrapper.install(ptxas)
        _killed_during(operation, ptxas, rng)
        state = wrapper.status(ptxas).state
        seen.add(state)
        assert state in (wrapper.NOT_INSTALLED, wrapper.INTERRUPTED_INSTALL, wrapper.INSTALLED), (trial, state)
        wrapper.uninstall(ptxas)
        assert_pristine(ptxas)
    assert wrapper.INTERRUPTED_INSTALL in seen, seen  # the kills did land between steps


def _owned_install(path, on_step):
    """What `tritonhook capture --wheel-ptxas` does to a binary: an install owned by this process."""
    wrapper.install(path, token="t", owner=os.getpid(), on_step=on_step)


@pytest.mark.release_independent  # the wrapper's file steps on a copy of a ptxas: the same under every Triton
def test_a_capture_run_killed_during_its_install_is_recovered_by_the_next_one(ptxas, capsys):
    """SIGKILL at random points of an owned install: whatever it left (a half install, a wrapper of a dead run),
    the next capture run's `restore_orphans` puts the real binary back and says so, and a wrap then works."""
    rng = random.Random(7)
    wrapper.status(ptxas)  # warms ptxas_version's cache, so children spend their time in the steps
    seen = set()
    for _ in range(30):
        _killed_during(_owned_install, ptxas, rng)
        state = wrapper.status(ptxas).state
        seen.add(state)
        assert state in (wrapper.NOT_INSTALLED, wrapper.INTERRUPTED_INSTALL, wrapper.ORPHANED), state
        assert wrapper.restore_orphans([str(ptxas)]) == ([] if state == wrapper.NOT_INSTALLED else [str(ptxas)])
        assert_pristine(ptxas)
    assert wrapper.INTERRUPTED_INSTALL in seen, seen  # the kills did land inside the install
    assert "left half wrapped (killed during its install) by a capture run that died (pid" in capsys.readouterr().err
    with wrapper.wheel_ptxas_wrapped("store", "t", targets=[str(ptxas)]) as wrapped:
        assert wrapped == [str(ptxas)] and wrapper.status(ptxas).state == wrapper.INSTALLED
    assert_pristine(ptxas)


def _held_child(ptxas: Path, body: str) -> subprocess.Popen:
    """A Python process running `body` (with `os`, `sys` and the wrapper module `w` imported; `sys.argv[1]` is
    `ptxas`), which prints a line and waits on its stdin where `body` does."""
    return subprocess.Popen([sys.executable, "-c", f"import os, sys\nfrom tritonhook.ptxas import wrapper as w\n{body}",
                             str(ptxas)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


@pytest.mark.release_independent  # the wrapper's file steps on a copy of a ptxas: the same under every Triton
def test_a_live_install_is_told_from_an_interrupted_one_and_left_alone(ptxas):
    """A capture run stopped inside its install but alive: `status` names it, restoring and installing leave it."""
    child = _held_child(ptxas, "def step(name):\n"
                               "    if name == 'real-linked':\n"
                               "        print('linked', flush=True); sys.stdin.readline()\n"
                               "w.install(sys.argv[1], token='t', owner=os.getpid(), on_step=step)\n")
    try:
        assert child.stdout.readline() == "linked\n"
        current = wrapper.status(ptxas)
        assert current.state == wrapper.INSTALLING and f"(pid {child.pid})" in current.detail
        assert wrapper.restore_orphans([str(ptxas)]) == []
        with pytest.raises(TritonhookError, match=f"pid {child.pid}"):
            wrapper.install(ptxas)
        child.stdin.write("go\n")
        child.stdin.close()
        assert child.wait(timeout=60) == 0  # it finished its install, then exited: a dead run's wrapper now
        assert wrapper.status(ptxas).state == wrapper.ORPHANED
    finally:
        child.kill()
        child.wait()
    wrapper.uninstall(ptxas)
    assert_pristine(ptxas)


def test_a_second_capture_run_says_whose_wrapper_is_in_place(ptxas, capsys):
    """Two capture runs at once: the second cannot record through the first's wrapper and says so, naming it."""
    first = _held_child(ptxas, "with w.wheel_ptxas_wrapped('store', 'first', targets=[sys.argv[1]]):\n"
                               "    print('wrapped', flush=True); sys.stdin.readline()\n")
    try:
        assert first.stdout.readline() == "wrapped\n"
        with wrapper.wheel_ptxas_wrapped("store", "second", targets=[str(ptxas)]) as wrapped:
            assert wrapped == []
        assert (f"{ptxas}: wrapped by another capture run (pid {first.pid}) until it ends; this run's calls of it "
                f"are not recorded") in capsys.readouterr().err
        first.stdin.close()
        assert first.wait(timeout=60) == 0
    finally:
        first.kill()
        first.wait()
    assert_pristine(ptxas)


@pytest.mark.parametrize("what, detail", [("directory", "a directory"), ("text file", "not an executable file")])
def test_status_of_something_that_is_no_ptxas_says_so(tmp_path, what, detail):
    target = tmp_path / "ptxas"
    target.mkdir() if what == "directory" else target.write_text("root:x:0:0\n")
    assert wrapper.status(target).state == wrapper.NOT_PTXAS
    result = tritonhook_cli("ptxas", "status", "--ptxas", target)
    assert result.returncode == 2 and result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"tritonhook: error: {target}: {detail}") and result.stderr.count("\n") == 1


# ----- what the wrapper does with a call -----------------------------------------------------------------------
def _assemble_in(work: Path, binary, ptx: Path, *args, env=None) -> tuple[subprocess.CompletedProcess, Path]:
    """`binary` on a copy of `ptx` in `work`, writing `work/out.cubin`."""
    work.mkdir(exist_ok=True)
    shutil.copy(ptx, work / ptx.name)
    return run_ptxas(binary, *args, ptx.name, "-o", "out.cubin", cwd=work, env=env), work / "out.cubin"


def _reference(tmp_path: Path, ptx: Path, *args) -> tuple[subprocess.CompletedProcess, Path]:
    """The original binary (not a copy of ours) on the same input, for comparison."""
    return _assemble_in(tmp_path / "reference", bundled(), ptx, *args)


def _through_wrapper(tmp_path: Path, wrapped: Path, ptx: Path, *args, env=None):
    return _assemble_in(tmp_path / "wrapped", wrapped, ptx, *args, env=env)


def test_a_call_is_recorded_and_its_result_passed_through(ptxas, tmp_path, store_path):
    wrapper.install(ptxas, store=store_path)
    args = ("-v", "--gpu-name=sm_90a")
    expected, expected_cubin = _reference(tmp_path, FFMA, *args)
    got, got_cubin = _through_wrapper(tmp_path, ptxas, FFMA, *args)
    assert (got.returncode, got.stdout) == (expected.returncode, expected.stdout) == (0, b"")
    assert stable(got.stderr) == stable(expected.stderr) and got_cubin.read_bytes() == expected_cubin.read_bytes()
    store = Store(store_path, create=False)
    [capture] = store.captures()
    assert (capture.frontend, capture.event, capture.entry, capture.arch) == ("ptxas", "compile", "ffma_loop", "sm_90a")
    assert capture.frontend_version == "" and capture.frontend_label == "ptxas"  # run from a test: caller unknown
    assert store.read(capture, "ptx") == FFMA.read_bytes()
    assert store.read(capture, "cubin") == expected_cubin.read_bytes()
    version = re.search(rb"V(\d+\.\d+\.\d+)", run_ptxas(bundled(), "--version", cwd=tmp_path).stdout).group(1)
    assert capture.ptxas_version == version.decode() and capture.ptxas_path == str(ptxas)
    assert capture.metadata["argv"] == [*args, FFMA.name, "-o", "out.cubin"]
    assert capture.metadata["exit_code"] == 0 and capture.metadata["stderr"].encode() == got.stderr
    assert capture.times["ptxas"] > 0


def test_rejected_ptx_keeps_ptxas_exit_code_and_stderr(ptxas, tmp_path, store_path):
    broken = tmp_path / "broken.ptx"
    broken.write_text(FFMA.read_text().replace("fma.rn.f32", "fma.bogus.f32", 1))
    wrapper.install(ptxas, store=store_path)
    expected, _ = _reference(tmp_path, broken, "--gpu-name=sm_90a")
    got, got_cubin = _through_wrapper(tmp_path, ptxas, broken, "--gpu-name=sm_90a")
    assert expected.returncode != 0 and b"error" in expected.stderr
    assert (got.returncode, got.stderr, got.stdout) == (expected.returncode, expected.stderr, expected.stdout)
    assert not got_cubin.exists()
    [capture] = Store(store_path, create=False).captures()
    assert capture.event == "error" and "cubin" not in capture.artifacts
    assert capture.metadata["exit_code"] == expected.returncode
    assert capture.metadata["stderr"] == expected.stderr.decode()


@pytest.mark.parametrize("spoil", ["a-file-not-a-directory", "garbage-index"])
def test_a_failed_recording_leaves_ptxas_result_unchanged(ptxas, tmp_path, spoil):
    wrapper.install(ptxas, store=tmp_path / "unused")
    bad = tmp_path / "bad-store"
    if spoil == "a-file-not-a-directory":
        bad.write_text("not a store")
    else:
        bad.mkdir()
        (bad / "index.sqlite").write_bytes(b"this is not sqlite" * 100)
    env = dict(os.environ, TRITONHOOK_STORE=str(bad))
    expected, expected_cubin = _reference(tmp_path, FFMA, "-v", "--gpu-name=sm_90a")
    got, got_cubin = _through_wrapper(tmp_path, ptxas, FFMA, "-v", "--gpu-name=sm_90a", env=env)
    assert (got.returncode, got.stdout) == (expected.returncode, expected.stdout)
    assert got_cubin.read_bytes() == expected_cubin.read_bytes()
    assert stable(got.stderr).startswith(stable(expected.stderr)) and b"call not recorded" in got.stderr


def test_the_wrapper_still_runs_ptxas_when_tritonhook_is_gone(ptxas, tmp_path):
    """A wrapper whose tritonhook cannot be imported any more (its venv moved) just execs ptxas."""
    settings = {"ptxas": str(ptxas), "real": str(ptxas), "version": "", "store": str(tmp_path / "s")}
    orphan = tmp_path / "orphan" / "ptxas"
    orphan.parent.mkdir()
    orphan.write_text(wrapper.wrapper_script(settings).replace("tritonhook.ptxas.wrapper", "tritonhook_gone"))
    orphan.chmod(0o755)
    expected, expected_cubin = _reference(tmp_path, FFMA, "--gpu-name=sm_90a")
    got, got_cubin = _through_wrapper(tmp_path, orphan, FFMA, "--gpu-name=sm_90a")
    assert (got.returncode, got.stderr) == (expected.returncode, expected.stderr)
    assert got_cubin.read_bytes() == expected_cubin.read_bytes()


def test_the_wrapper_outlives_the_virtualenv_that_installed_it(ptxas, tmp_path, store_path):
    """Install from a throw-away venv, delete the venv: ptxas still assembles (plain), status says recording is
    off and why, and uninstall restores the original bytes."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    install = f"from tritonhook.ptxas import wrapper; wrapper.install({str(ptxas)!r}, store={str(store_path)!r})"
    subprocess.run([venv / "bin" / "python", "-c", install], check=True,
                   env=dict(os.environ, PYTHONPATH=str(Path(wrapper.__file__).parents[1])))
    shutil.rmtree(venv)
    expected, expected_cubin = _reference(tmp_path, FFMA, "--gpu-name=sm_90a")
    got, got_cubin = _through_wrapper(tmp_path, ptxas, FFMA, "--gpu-name=sm_90a")
    assert (got.returncode, got.stderr) == (expected.returncode, expected.stderr) == (0, b"")
    assert got_cubin.read_bytes() == expected_cubin.read_bytes()
    assert not os.path.exists(store_path)  # nothing recorded: the recorder's Python is gone
    current = wrapper.status(ptxas)
    assert current.state == wrapper.INSTALLED
    assert f"NOT RECORDING: its Python {venv}/bin/python is gone" in current.detail
    assert wrapper.uninstall(ptxas).state == wrapper.NOT_INSTALLED
    assert_pristine(ptxas)


# ----- real frontends through an installed wrapper ------------------------------------------------------------
def test_triton_compile_in_a_subprocess_lands_in_the_store(tmp_path, store_path, triton_cache):
    """TRITON_PTXAS_PATH / TRITON_PTXAS_BLACKWELL_PATH at installed wrappers; no capture hook in the child."""
    env = dict(os.environ)
    overrides = (("triton ptxas", "TRITON_PTXAS_PATH"), ("triton ptxas-blackwell", "TRITON_PTXAS_BLACKWELL_PATH"))
    for origin, var in overrides:
        copy = copy_ptxas(tmp_path / origin.split()[1], origin=origin)
        wrapper.install(copy, store=store_path)
        env[var] = str(copy)
    code = "from tritonhook.samples import compile_sample; compile_sample('add', 90); compile_sample('add', 120)"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    store = Store(store_path, create=False)
    captures = store.captures()
    assert sorted((c.frontend, c.entry, c.arch) for c in captures) == [
        ("ptxas", "add_kernel", "sm_120a"), ("ptxas", "add_kernel", "sm_90a")]
    cached = sorted(triton_cache.rglob("add_kernel.cubin"))
    assert sorted(store.read(c, "cubin") for c in captures) == sorted(p.read_bytes() for p in cached)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (a CUDA toolkit) on PATH")
def test_nvcc_compile_through_the_wrapper_is_captured(tmp_path, store_path):
    """nvcc runs the ptxas of its own bin directory, so the test builds a throw-away toolkit bin directory: a copy
    of nvcc, an nvcc.profile pointing at the real toolkit, and a copy of its ptxas with the wrapper installed."""
    toolkit = _toolkit_root()
    bin_dir = tmp_path / "cuda" / "bin"
    bin_dir.mkdir(parents=True)
    shutil.copy2(toolkit / "bin" / "nvcc", bin_dir / "nvcc")
    shutil.copy2(toolkit / "bin" / "ptxas", bin_dir / "ptxas")
    profile = (toolkit / "bin" / "nvcc.profile").read_text()
    profile = re.sub(r"^TOP\s*=.*$", f"TOP = {toolkit}", profile, flags=re.MULTILINE)
    profile = re.sub(r"^PATH\s*\+=\s*(.*)$", r"PATH += \1$(TOP)/bin:", profile, flags=re.MULTILINE)
    (bin_dir / "nvcc.profile").write_text(profile)
    wrapper.install(bin_dir / "ptxas", store=store_path)
    source = tmp_path / "scale.cu"
    source.write_text("__global__ void scale(float *x) { x[threadIdx.x] *= 2.0f; }\n")
    subprocess.run([str(bin_dir / "nvcc"), "-cubin", "-arch=sm_90a", str(source), "-o", str(tmp_path / "scale.cubin")],
                   check=True, cwd=tmp_path)
    store = Store(store_path, create=False)
    [capture] = store.captures()
    assert (capture.frontend, capture.entry, capture.arch) == ("ptxas", "_Z5scalePf", "sm_90a")
    assert store.read(capture, "cubin") == (tmp_path / "scale.cubin").read_bytes()
    wrapper.uninstall(bin_dir / "ptxas")
    assert sha256(bin_dir / "ptxas") == sha256(toolkit / "bin" / "ptxas")


def _toolkit_root() -> Path:
    """The CUDA toolkit nvcc belongs to, from `nvcc --dryrun` (PATH's nvcc may be a script that execs it)."""
    dry = subprocess.run(["nvcc", "--dryrun", "-cubin", "x.cu"], capture_output=True, text=True).stderr
    match = re.search(r"^#\$ _HERE_=(.+)$", dry, re.MULTILINE)
    return Path(match.group(1).strip()).resolve().parent


def test_a_wrapper_with_a_token_records_only_the_processes_that_carry_it(ptxas, store_path, tmp_path):
    """`tritonhook capture` wraps a shared (pip-wheel) ptxas for its command's duration: other processes that run
    that ptxas meanwhile must not land in the capture's store (seen: a concurrent test's call recorded)."""
    wrapper.install(ptxas, store=store_path, token="capture-1")
    source = FFMA
    env = {k: v for k, v in os.environ.items() if k not in ("TRITONHOOK_STORE", "TRITONHOOK_CAPTURE_TOKEN")}
    for token in (None, "capture-2", "capture-1"):
        out = tmp_path / f"{token}.cubin"
        call_env = env if token is None else {**env, "TRITONHOOK_CAPTURE_TOKEN": token}
        done = run_ptxas(ptxas, "--gpu-name=sm_90a", source, "-o", out, cwd=tmp_path, env=call_env)
        assert done.returncode == 0 and out.exists(), done.stderr  # everyone's ptxas works
    recorded = [c.metadata["output"] for c in Store(store_path).captures()]
    assert recorded == [str(tmp_path / "capture-1.cubin")]
    wrapper.uninstall(ptxas)
    assert_pristine(ptxas)
