"""The CLI end to end, as a user runs it: real subprocesses, real compiles."""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from test_capture_cmd import _tileiras_ptxas, needs_cutile
from tritonhook.samples import add_kernel
from tritonhook.store import Store

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
DEMO = REPO / "examples" / "capture_demo.py"


def tritonhook(*args, check=True, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "tritonhook", *map(str, args)], capture_output=True, text=True,
                            **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f"tritonhook {args} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


@pytest.fixture
def small_disk(tmp_path):
    """A real 400 KiB file system (tmpfs): room for a store's index and a blob or two, not for six captures."""
    where = tmp_path / "small"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(where)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    yield where
    subprocess.run(["umount", str(where)], check=True)


@pytest.mark.parametrize("command, allow_lost, per_compile", [("run", False, 1), ("run", True, 1),
                                                              ("capture", False, 2)])
def test_a_run_whose_captures_could_not_all_be_written_fails(small_disk, tmp_path, command, allow_lost,
                                                             per_compile):
    """The workload compiles six kernels (it prints one line each; a cold Triton cache, so each runs ptxas) into a
    store on a full file system: the run counts every capture as written or lost (capture also records each ptxas
    call, from a process of its own), and with any lost it fails, although the workload exited 0, unless
    --allow-lost."""
    result = tritonhook(command, "--store", small_disk / "store", *(["--allow-lost"] if allow_lost else []), "--",
                        sys.executable, DEMO, "add", "matmul_fp16", check=False,
                        env=dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "triton-cache")))
    compiled = [line for line in result.stdout.splitlines() if re.match(r"sm_\d+: \w+ \(\d+ B cubin\)", line)]
    lost = re.search(r"^tritonhook: (\d+) of (\d+) capture\(s\) could not be written to \S+ \(see the warnings "
                     r"above\); (.*)$", result.stderr, re.M)
    written = re.search(r"^tritonhook: (\d+) capture\(s\) written to", result.stderr, re.M)
    assert len(compiled) == 6 and lost and written, result.stderr
    assert int(lost[1]) >= 1 and int(lost[2]) == per_compile * len(compiled) == int(lost[1]) + int(written[1])
    assert result.returncode == (0 if allow_lost else 1)
    assert lost[3] == ("accepted (--allow-lost)" if allow_lost else
                       "the run fails; pass --allow-lost to accept the loss")


def test_run_captures_a_script_with_no_source_edit_and_passes_its_exit_code(store_path):
    result = tritonhook("run", "--store", store_path, "--", sys.executable, DEMO, "add", "matmul_fp16",
                        "--exit-code", "3", check=False)
    assert result.returncode == 3, result.stderr
    entries = sorted((c.entry, c.arch) for c in Store(store_path, create=False).captures())
    assert entries == sorted((k, a) for k in ("add_kernel", "matmul_kernel") for a in ("sm_90a", "sm_100a", "sm_120a"))
    assert "6 capture(s)" in result.stderr


def test_run_reaches_grandchild_python_processes(store_path):
    inner = f"import subprocess, sys; sys.exit(subprocess.call([sys.executable, {str(DEMO)!r}, 'add']))"
    tritonhook("run", "--store", store_path, "--", sys.executable, "-c", inner)
    assert len(Store(store_path, create=False).captures()) == 3


def test_run_honours_the_store_environment_variable(tmp_path):
    env = dict(os.environ, TRITONHOOK_STORE=str(tmp_path / "from-env"))
    tritonhook("run", "--", sys.executable, DEMO, "add", env=env)
    assert len(Store(tmp_path / "from-env", create=False).captures()) == 3


def test_run_keeps_a_users_own_sitecustomize_working(store_path, tmp_path):
    users_dir = tmp_path / "users-site"
    users_dir.mkdir()
    (users_dir / "sitecustomize.py").write_text("import os\nos.environ['USER_SITECUSTOMIZE_RAN'] = '1'\n")
    script = tmp_path / "check.py"
    script.write_text("import os, sys\nsys.exit(0 if os.environ.get('USER_SITECUSTOMIZE_RAN') == '1' else 9)\n")
    env = dict(os.environ, PYTHONPATH=str(users_dir))
    assert tritonhook("run", "--store", store_path, "--", sys.executable, script, env=env, check=False).returncode == 0


def test_ls_show_export_on_real_captures(store_path, tmp_path):
    tritonhook("run", "--store", store_path, "--", sys.executable, DEMO, "add")
    listed = json.loads(tritonhook("ls", "--store", store_path, "--json").stdout)
    assert [c["entry"] for c in listed] == ["add_kernel"] * 3
    first = listed[0]["id"]

    table = tritonhook("ls", "--store", store_path, "--arch", "sm_100a").stdout
    assert "add_kernel" in table and "sm_100a" in table and "sm_90a" not in table

    ptx = tritonhook("show", "--store", store_path, first, "--ptx").stdout
    assert ".entry add_kernel" in ptx and ".target sm_90a" in ptx
    meta = json.loads(tritonhook("show", "--store", store_path, first, "--meta").stdout)
    assert meta["metadata"]["name"] == "add_kernel"
    source = tritonhook("show", "--store", store_path, first, "--source").stdout
    assert source == inspect.getsource(add_kernel.fn) and source.startswith("@triton.jit\ndef add_kernel(")
    for flag, first_op in (("--source-ir", "tt.func public @add_kernel"), ("--ttir", "tt.func public @add_kernel")):
        assert first_op in tritonhook("show", "--store", store_path, first, flag).stdout

    summary = tritonhook("show", "--store", store_path, first).stdout
    assert re.search(r"num_warps / num_stages +│ 4 / 3 ", summary) and "samples.py:" in summary, summary

    tritonhook("export", "--store", store_path, first, tmp_path / "out")
    exported = {p.name for p in (tmp_path / "out").iterdir()}
    assert exported == {f"add_kernel.{stage}" for stage in ("source", "ttir", "ttgir", "llir", "ptx", "cubin", "json",
                                                            "python", "rebuild", "capture.json")}
    assert (tmp_path / "out" / "add_kernel.ptx").read_text() == ptx


@pytest.mark.release_independent  # argument checks: the same under every Triton
@pytest.mark.parametrize("args,message", [
    (["show", "999"], "no capture with id 999"),
    (["show", "abc"], "whole number"),
    (["ls", "--kernel", "("], "regular expression"),
    (["run", "--"], "give the command"),
    (["ls", "-n", "-5"], "-n/--limit -5: give a count of 1 or more"),
    (["ls", "-n", "0"], "-n/--limit 0: give a count of 1 or more"),
    (["ls", "--arch", ""], "--arch '': empty; give a target such as sm_90a"),
    (["ls", "--kernel", " "], "--kernel ' ': empty; give a regular expression"),
])
def test_bad_input_is_one_line_and_status_2(store_path, args, message):
    Store(store_path).close()
    result = tritonhook(*args[:1], "--store", store_path, *args[1:], check=False)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.release_independent  # argument checks: the same under every Triton
@pytest.mark.parametrize("command", [["show", "1"], ["ls"], ["store", "verify"], ["preflight"]])
def test_an_unknown_option_is_the_subcommands_own_usage_error(store_path, command):
    Store(store_path).close()
    result = tritonhook(*command, "--store", store_path, "--bogus", check=False)
    name = " ".join(c for c in command if not c.isdigit())
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"usage: tritonhook {name} [-h]"), result.stderr
    assert result.stderr.endswith(f"tritonhook {name}: error: unrecognized arguments: --bogus\n")


@pytest.mark.release_independent  # the launcher refuses it before anything runs: the same under every Triton
@pytest.mark.parametrize("command", ["run", "capture", "ab"])
@pytest.mark.parametrize("target,why", [("script", "not executable"), ("directory", "is a directory")])
def test_a_command_that_cannot_run_is_one_line_naming_it(store_path, tmp_path, command, target, why):
    script = tmp_path / "script.py"
    script.write_text("print('hello')\n")  # mode 0644: no execute bit
    path = script if target == "script" else tmp_path
    result = tritonhook(command, "--store", store_path, "--", path, check=False)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip() == f"tritonhook: error: {path}: {why}" + \
        (f" (chmod +x it, or run it as: python {path})" if target == "script" else ", not a program")


# ----- every command that writes a file the user names ------------------------------------------------------------
@pytest.fixture(scope="module")
def recorded_store(tmp_path_factory) -> tuple[Path, int]:
    """A store of real captures (1 and 2) and a recording of them (tests/sample_recording.py): what the commands
    that write files read."""
    pytest.importorskip("torch")
    from sample_recording import sample_recording

    store, recording = sample_recording(tmp_path_factory.mktemp("writes") / "store", 2)
    return store.path, recording.id


WRITERS = {
    "decisions export": (lambda s, r, out: ["decisions", "export", "--store", s, out], "decisions file"),
    "export-trace": (lambda s, r, out: ["export-trace", "--store", s, "-o", out], "Chrome trace"),
    "export-tritonparse": (lambda s, r, out: ["export-tritonparse", "--store", s, "-o", out], "TritonParse NDJSON"),
    "report": (lambda s, r, out: ["report", "--store", s, "--no-sass", "-o", out], "report"),
    "rename": (lambda s, r, out: ["rename", DATA / "ffma_loop.ptx", "-o", out], "renamed PTX"),
    "memwatch --out": (lambda s, r, out: ["memwatch", "--out", out, "--", sys.executable, "-c", "pass"],
                       "memwatch result"),
    "memwatch --plot": (lambda s, r, out: ["memwatch", "--plot", out, "--", sys.executable, "-c", "pass"], "plot"),
    "check --save-baseline": (lambda s, r, out: ["check", "--store", s, "--current", r, "--save-baseline", out],
                              "baseline file"),
    "check --junit": (lambda s, r, out: ["check", "--store", s, "--current", r, "--baseline", r, "--junit", out],
                      "JUnit XML"),
    "export": (lambda s, r, out: ["export", "--store", s, "1", out], None),
    "demo": (lambda s, r, out: ["demo", "--out", out, "--samples", "add", "--no-attention"], None),
}
"""Every command that writes where the user says: its arguments (given the store, a recording id and the path) and
what its file is called in the error line (None: the path is a folder it writes into)."""


@pytest.mark.release_independent  # output paths; the captures are inputs: the same under every Triton
@pytest.mark.parametrize("where", ["a directory", "under a missing folder", "where writing is refused"])
@pytest.mark.parametrize("command", WRITERS)
def test_every_command_that_writes_a_file_says_in_one_line_which_path_it_cannot_write(recorded_store, tmp_path,
                                                                                      capsys, command, where):
    """Run as root, permission bits stop nothing: /proc refuses a new file (no such file), /sys refuses it
    (permission denied). memwatch and check find out before they run their command."""
    from tritonhook.cli import main
    from tritonhook.exports import TRITONPARSE_FILE

    arguments, what = WRITERS[command]
    out = {"a directory": tmp_path / "occupied", "under a missing folder": Path("/proc/tritonhook/out.json"),
           "where writing is refused": Path("/sys/tritonhook.json")}[where]
    if where == "a directory":
        (out / TRITONPARSE_FILE).mkdir(parents=True)  # export-tritonparse writes that file into a folder it is given
        if what is None:  # a command writing into a folder: a file stands where the folder should be
            out = tmp_path / "a-file"
            out.write_text("")
    store, recording = recorded_store
    assert main([str(a) for a in arguments(store, recording, out)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"tritonhook: error: {out}") and "Traceback" not in line, line
    assert what is None or f": cannot write the {what} (" in line, line


@pytest.mark.release_independent  # output files: the same under every Triton
def test_a_full_disk_is_said_in_the_line(tmp_path):
    from tritonhook.errors import TritonhookError
    from tritonhook.files import write_file

    with pytest.raises(TritonhookError) as raised:
        write_file("/dev/full", "x" * 4096, "report")
    assert str(raised.value) == "/dev/full: cannot write the report (No space left on device)"


@pytest.fixture(scope="module")
def one_capture(tmp_path_factory) -> Path:
    """A store holding one real capture (`add` for sm_90)."""
    import tritonhook as th
    from tritonhook.samples import compile_sample

    store = tmp_path_factory.mktemp("stdout") / "store"
    with th.session(store):
        compile_sample("add", 90)
    return store


STDOUT_WRITERS = {"ls": ["ls"], "ls --json": ["ls", "--json"], "show": ["show", "1"],
                  "show --ptx": ["show", "1", "--ptx"], "show --meta": ["show", "1", "--meta"],
                  "store verify": ["store", "verify"]}
"""Commands whose output is standard output, each as it prints a table, JSON or an artifact's text."""


@pytest.mark.release_independent  # output errors; the capture is an input: the same under every Triton
@pytest.mark.parametrize("command", STDOUT_WRITERS)
def test_standard_output_on_a_full_device_is_one_line_naming_it(one_capture, command):
    with open("/dev/full", "w") as full:
        run = subprocess.run([sys.executable, "-m", "tritonhook", *STDOUT_WRITERS[command], "--store", one_capture],
                             stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.splitlines() == ["tritonhook: error: standard output (/dev/full): cannot write (No space left "
                                       "on device)"]


@pytest.mark.release_independent  # output errors; the capture is an input: the same under every Triton
def test_standard_output_into_a_full_file_system_names_the_file_and_the_disk(one_capture, tmp_path):
    disk = tmp_path / "small"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", disk], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root and mount permission)")
    try:
        with open(disk / "filler", "wb", buffering=0) as filler, contextlib.suppress(OSError):
            while filler.write(b"\0" * 512):  # to the last byte
                pass
        out = disk / "captures.json"
        with open(out, "w") as listing:
            run = subprocess.run([sys.executable, "-m", "tritonhook", "ls", "--json", "--store", one_capture],
                                 stdout=listing, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        subprocess.run(["umount", "-l", disk], check=False)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    (line,) = run.stderr.splitlines()
    assert line.startswith(f"tritonhook: error: standard output ({out}): cannot write (disk full: "), line
    assert line.endswith(f"bytes free on the file system of {out})"), line


@pytest.mark.release_independent  # output errors; the capture is an input: the same under every Triton
def test_a_closed_pipe_still_ends_quietly(one_capture):
    """`tritonhook ls | head -0`: the reader went away; nothing to say about it."""
    listing = subprocess.Popen([sys.executable, "-m", "tritonhook", "show", "1", "--ptx", "--store", one_capture],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    listing.stdout.close()
    assert listing.wait(timeout=120) == 0 and listing.stderr.read() == b""


ID_TAKERS = {"decisions show": ["decisions", "show", "{ID}"],
             "decisions from-result": ["decisions", "from-result", "{ID}"], "decisions rm": ["decisions", "rm", "{ID}"],
             "decisions confirm --sweep": ["decisions", "confirm", "--sweep", "{ID}"],
             "replay --recording": ["replay", "--recording", "{ID}"],
             "tune --recording": ["tune", "--recording", "{ID}"],
             "export-trace --replay": ["export-trace", "--replay", "{ID}", "-o", "trace.json"],
             "upgrade --time": ["upgrade", "--time", "{ID}"], "show": ["show", "{ID}"],
             "ls --after": ["ls", "--after", "{ID}"], "ls --before": ["ls", "--before", "{ID}"]}
"""Every command that takes a capture or result id."""


@pytest.mark.release_independent  # argument checks: the same under every Triton
@pytest.mark.parametrize("command", ID_TAKERS)
def test_an_id_beyond_what_sqlite_holds_is_one_line_naming_it(tmp_path, command):
    Store(tmp_path / "store").close()
    for wanted in (2**63, 2**64 + 5):
        arguments = [str(wanted) if arg == "{ID}" else arg for arg in ID_TAKERS[command]]
        workload = ["--", "true"] if command == "decisions confirm --sweep" else []
        run = tritonhook(*arguments, "--store", tmp_path / "store", *workload, check=False, cwd=tmp_path, timeout=120)
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
        (line,) = run.stderr.splitlines()
        assert f"{wanted}" in line and "id is a whole number from 0 to 9223372036854775807" in line, line


@pytest.mark.release_independent  # the store's results: the same under every Triton
@pytest.mark.parametrize("kind, said", [("upgrade", "an upgrade result"), ("memwatch", "a memwatch result")])
@pytest.mark.parametrize("command", [["decisions", "from-result", "1"], ["decisions", "confirm", "--sweep", "1"],
                                     ["export-trace", "--replay", "1", "-o", "t.json"]], ids=" ".join)
def test_a_result_of_the_wrong_kind_is_named_with_its_article(tmp_path, kind, said, command):
    import sqlite3

    Store(tmp_path / "store").close()
    with sqlite3.connect(tmp_path / "store" / "index.sqlite") as conn:
        conn.execute("INSERT INTO results (created, kind, data) VALUES (0, ?, '{}')", (kind,))
    workload = ["--", "true"] if "confirm" in command else []
    run = tritonhook(*command, "--store", tmp_path / "store", *workload, check=False, cwd=tmp_path, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    (line,) = run.stderr.splitlines()
    assert f"result 1: {said};" in line or f"result 1 is {said}," in line, line


LONG_PREFIX = "k" * 100_000


@pytest.mark.release_independent  # argument checks: the same under every Triton
@pytest.mark.parametrize("command", [["run", "--prefix", LONG_PREFIX, "--", "true"],
                                     ["run", "--rename", LONG_PREFIX, "--", "true"],
                                     ["diff", DATA / "ffma_loop.ptx", DATA / "ffma_loop.ptx", "--variants",
                                      f"plain,{LONG_PREFIX}"]], ids=["run --prefix", "run --rename", "diff --variants"])
def test_a_prefix_over_the_one_cap_is_one_line_wherever_it_is_given(tmp_path, command):
    """Decisions cap prefixes at 64 characters; `run` and the variants took 100,000: one cap, declared once."""
    at = command.index("--") if "--" in command else len(command)
    run = tritonhook(*command[:at], "--store", tmp_path / "store", *command[at:], check=False, cwd=tmp_path,
                     timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-300:]
    errors = [line for line in run.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "100000 characters, at most 64" in errors[0], errors
    assert not (tmp_path / "store").exists()


@pytest.mark.release_independent  # argument checks: the same under every Triton
def test_the_prefix_cap_takes_a_prefix_of_64_characters_and_refuses_65():
    from tritonhook.errors import TritonhookError
    from tritonhook.rename import prefixer

    assert prefixer("k" * 64)("add_kernel") == "k" * 64 + "add_kernel"
    with pytest.raises(TritonhookError, match="65 characters, at most 64"):
        prefixer("k" * 65)


@pytest.mark.release_independent  # argument checks: the same under every Triton
@pytest.mark.parametrize("command, message", [
    (["diff", DATA / "ffma_loop.ptx", DATA / "ffma_loop.ptx", "--variants", ""], "variants '': give at least two"),
    (["ptxas-matrix", DATA / "ffma_loop.ptx", "--options", ""], "--options '': give only opt: and acf: parts"),
    (["preflight", DATA / "ffma_loop.ptx", "--gpu", ""], "--gpu '': not in the GPU table"),
], ids=["diff --variants", "ptxas-matrix --options", "preflight --gpu"])
def test_an_empty_option_is_refused_not_taken_as_absent(tmp_path, command, message):
    """`--variants ''` (an unset shell variable) used to build the default variants as if none were given."""
    run = tritonhook(*command, check=False, cwd=tmp_path, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    (line,) = run.stderr.splitlines()
    assert line.startswith("tritonhook: error: ") and message in line, line


KERNEL_SCRIPT = """
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def one_kernel(x_ptr):  # a kernel in a file that will be deleted
    tl.store(x_ptr, 1)


triton.compile(ASTSource(one_kernel, {"x_ptr": "*i32"}, {}), target=GPUTarget("cuda", 90, 32))
"""


def test_show_source_of_a_kernel_whose_file_is_gone_says_so(store_path, tmp_path):
    script = tmp_path / "kernels.py"
    script.write_text(KERNEL_SCRIPT)
    tritonhook("run", "--store", store_path, "--", sys.executable, script)
    shown = tritonhook("show", "--store", store_path, "1", "--source").stdout
    assert shown == KERNEL_SCRIPT[KERNEL_SCRIPT.index("@triton.jit"):KERNEL_SCRIPT.index("\n\n\ntriton.compile") + 1]
    script.unlink()
    gone = tritonhook("show", "--store", store_path, "1", "--source", check=False)
    assert gone.returncode == 2 and gone.stderr.strip() == (
        f"tritonhook: error: {script}: the kernel's source file is gone (capture 1 was compiled from line 8); "
        f"--ttir shows Triton's IR")


def test_missing_store_is_reported_not_created(tmp_path):
    result = tritonhook("ls", "--store", tmp_path / "nope", check=False)
    assert result.returncode == 2 and "no tritonhook store" in result.stderr
    assert not (tmp_path / "nope").exists()


def test_unwritable_store_fails_before_the_script_starts(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    marker = tmp_path / "script-ran"
    result = tritonhook("run", "--store", blocker, "--", sys.executable, "-c",
                        f"open({str(marker)!r}, 'w').close()", check=False)
    assert result.returncode == 2 and "not writable" in result.stderr
    assert not marker.exists()


# ----- without a package a command needs --------------------------------------------------------------------------
def python_without(path: Path, *packages: str) -> Path:
    """The python of a new virtualenv of this interpreter's Python whose site-packages link to everything this
    one's site directories hold (tritonhook's editable install included; under scripts/test-matrix.sh also the
    shared test dependencies, which this interpreter reaches through a .pth) except `packages` and their dist-info:
    a real interpreter in which importing them fails as on a machine where they were never installed (checked
    here). A .pth that adds another site directory is not linked: everything it would add is linked here."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", path], check=True)
    (site,) = (path / "lib").glob("python*/site-packages")
    site_dirs = [Path(entry) for entry in sys.path if entry.endswith("site-packages") and Path(entry).is_dir()]
    for directory in dict.fromkeys([Path(sysconfig.get_path("purelib")), *site_dirs]):  # the first of a name wins
        for entry in directory.iterdir():
            adds_site = entry.suffix == ".pth" and "addsitedir" in entry.read_text(errors="replace")
            if entry.name.split("-")[0] in packages or adds_site or (site / entry.name).exists():
                continue
            (site / entry.name).symlink_to(entry)
    python = path / "bin" / "python"
    for package in packages:
        assert subprocess.run([python, "-c", f"import {package}"], capture_output=True).returncode == 1
    assert subprocess.run([python, "-c", "import tritonhook, rich"]).returncode == 0
    return python


@pytest.fixture(scope="module")
def python_without_torch(tmp_path_factory) -> Path:
    return python_without(tmp_path_factory.mktemp("venv") / "no-torch", "torch", "torchgen", "functorch")


@pytest.mark.parametrize("command", ["record", "sweep"])
def test_without_torch_record_and_sweep_say_so_in_one_line_and_never_start_the_workload(python_without_torch,
                                                                                        tmp_path, command):
    ran = tmp_path / "workload-ran"
    done = subprocess.run([python_without_torch, "-m", "tritonhook", command, "--store", tmp_path / "s", "--",
                           python_without_torch, "-c", f"open({str(ran)!r}, 'w')"], capture_output=True, text=True)
    assert done.returncode == 2 and not ran.exists()
    assert done.stderr.splitlines() == [
        "tritonhook: error: recording needs torch with CUDA, and torch is not installed here (pip install torch), "
        f"so {python_without_torch} -c open({str(ran)!r}, 'w') was not run"]


def test_a_recording_that_cannot_start_inside_a_workload_never_breaks_it(python_without_torch, tmp_path):
    """A workload started with the recording environment (as `record` starts one; here by an interpreter without
    torch, which the recorder needs): at `import triton` the recording fails to start, the workload runs on with
    its own exit status, and tritonhook says so once, with no traceback."""
    from tritonhook.launcher import run
    from tritonhook.sweep.recorder import recording_settings

    done = run([python_without_torch, "-c", "import triton; print('workload done'); raise SystemExit(5)"],
               recording_settings(tmp_path / "s", "guarded"), capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (5, "workload done\n"), done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("tritonhook: recording in process ") and line.endswith(
        " failed 1 time(s) (the first at the start of recording: ModuleNotFoundError: No module named 'torch'); "
        "the workload itself was not affected"), line


@pytest.fixture(scope="module")
def python_without_triton(tmp_path_factory) -> Path:
    return python_without(tmp_path_factory.mktemp("venv") / "no-triton", "triton")


@pytest.mark.parametrize("out", [[], ["--out", "elsewhere/demo"]])
def test_demo_without_triton_is_one_line_naming_the_install_and_creates_nothing(python_without_triton, tmp_path, out):
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run([python_without_triton, "-m", "tritonhook", "demo", *out], cwd=work, capture_output=True,
                          text=True)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "tritonhook: error: cannot import triton (No module named 'triton'): install Triton: " \
                          "pip install 'triton>=3.6,<3.10'\n"
    assert list(work.iterdir()) == []


def test_run_of_a_python_without_triton_says_so_beside_its_zero_captures(python_without_triton, store_path):
    """The command's Python cannot import Triton: nothing can be captured, and the summary says why and where."""
    done = tritonhook("run", "--store", store_path, "--", python_without_triton, "-c", "pass")
    assert done.stderr.splitlines() == [
        f"tritonhook: 0 capture(s) written to {store_path}",
        f"tritonhook: {python_without_triton} cannot import triton, so nothing it ran was captured; install Triton "
        f"there: {python_without_triton} -m pip install 'triton>=3.6,<3.10'"]
    with_triton = tritonhook("run", "--store", store_path, "--", sys.executable, "-c", "pass")
    assert with_triton.stderr.splitlines() == [f"tritonhook: 0 capture(s) written to {store_path}"]  # no hint


def test_ls_tells_specializations_apart_and_matches_the_arch_family(capture_session):
    from tritonhook.samples import compile_sample

    compile_sample("matmul_fp16", 90)
    compile_sample("matmul_fp8", 90)
    compile_sample("add", 100)
    store = capture_session.store.path
    table = tritonhook("ls", "--store", store, "--arch", "sm_90").stdout
    assert "fp16 BLOCK_M=128 BLOCK_N=128 BLOCK_K=64" in table and "fp8e4nv fp16 BLOCK_M=128" in table
    assert "add_kernel" not in table
    listed = json.loads(tritonhook("ls", "--store", store, "--json").stdout)
    assert [c["specialization"].split()[0] for c in listed] == ["fp16", "fp8e4nv", "fp32"]
    assert tritonhook("ls", "--store", store, "--arch", "sm_100f").stdout.strip() == \
        "no captures for sm_100f; did you mean sm_100a?"


def test_ls_shows_the_newest_rows_and_says_how_many_it_left_out(capture_session):
    from tritonhook.samples import compile_sample

    for name in ("add", "matmul_fp16", "add"):
        compile_sample(name, 90)
    store = capture_session.store.path
    newest = tritonhook("ls", "--store", store, "--limit", "2", "--json")
    assert [c["entry"] for c in json.loads(newest.stdout)] == ["matmul_kernel", "add_kernel"]
    table = tritonhook("ls", "--store", store, "-n", "2")
    assert table.stderr.strip() == "showing newest 2 of 3; --all for every row"
    assert len(json.loads(tritonhook("ls", "--store", store, "--all", "--json").stdout)) == 3
    assert tritonhook("ls", "--store", store, "--kernel", "^add", "-n", "1").stderr.strip() == \
        "showing newest 1 of 2; --all for every row"


def test_export_names_the_blob_it_cannot_read_and_writes_the_rest(capture_session, tmp_path):
    from tritonhook.samples import compile_sample

    compile_sample("add", 90)
    (capture,) = capture_session.captures()
    blob = capture_session.store.blob_path(capture.artifacts["ptx"].sha256)
    blob.write_bytes(b"truncated")
    result = tritonhook("export", "--store", capture_session.store.path, capture.id, tmp_path / "out", check=False)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"tritonhook: error: exported {len(capture.artifacts) - 1} of {len(capture.artifacts)} artifacts of capture "
        f"{capture.id} to {tmp_path / 'out'}; not written: {blob} (capture {capture.id} ptx): blob is corrupt "
        f"(its sha256 does not match its name)")
    written = {p.name for p in (tmp_path / "out").iterdir()}
    assert written == {f"add_kernel.{stage}" for stage in capture.artifacts if stage != "ptx"} | \
        {"add_kernel.capture.json"}


def test_store_verify_reports_and_repairs(capture_session):
    import time

    from tritonhook.samples import compile_sample

    compile_sample("add", 90)
    store = capture_session.store
    temporary = store.blobs_dir / "ab" / ".abcdef01-777-0000.tmp"
    temporary.parent.mkdir(exist_ok=True)
    temporary.write_bytes(b"half a blob")
    os.utime(temporary, (time.time() - 120, time.time() - 120))
    found = json.loads(tritonhook("store", "verify", "--store", store.path, "--json").stdout)
    assert (found["ok"], found["temporary"], found["removed"]) == (True, [str(temporary)], [])
    repaired = json.loads(tritonhook("store", "verify", "--store", store.path, "--repair", "--json").stdout)
    assert repaired["removed"] == [str(temporary)] and not temporary.exists()

    (capture,) = capture_session.captures()
    store.blob_path(capture.artifacts["cubin"].sha256).write_bytes(b"not the cubin")
    damaged = tritonhook("store", "verify", "--store", store.path, check=False)
    assert damaged.returncode == 1 and "PROBLEMS" in damaged.stdout and "corrupt blobs" in damaged.stdout


def _cutile_bin(root: Path) -> Path:
    """cuTile's tileiras and the ptxas beside it, linked into root/nvidia/cu13/bin (copied across file systems), with
    the folders tileiras loads libnvvm from and the cuda-tile metadata beside them: a ptxas wrapper installed there
    records what tileiras runs, as in the wheel (frontend cutile and its version), and the shared wheel's ptxas
    stays untouched (the serial tests wrap it in place; its real binary is then beside it)."""
    from tritonhook.ptxas.wrapper import real_path

    ptxas = _tileiras_ptxas()
    wheel = ptxas.parent.parent
    bin_dir = root / "nvidia" / "cu13" / "bin"
    bin_dir.mkdir(parents=True)
    real = Path(real_path(ptxas))
    for source in (wheel / "bin" / "tileiras", real if real.exists() else ptxas):
        try:
            os.link(source, bin_dir / source.name.split(".")[0])
        except OSError:
            shutil.copy2(source, bin_dir / source.name.split(".")[0])
    for name in ("nvvm", "lib"):
        (bin_dir.parent / name).symlink_to(wheel / name)
    metadata = next(f for f in importlib.metadata.distribution("cuda-tile").files if f.name == "METADATA")
    (root / metadata.locate().parent.name).symlink_to(metadata.locate().parent)
    return bin_dir


@needs_cutile
def test_show_of_a_cutile_capture_leaves_out_what_cutile_does_not_record(store_path, tmp_path):
    from tritonhook.ptxas import wrapper as ptxas_wrapper

    bin_dir = _cutile_bin(tmp_path / "site-packages")
    ptxas_wrapper.install(bin_dir / "ptxas", store=store_path)
    bytecode = tmp_path / "scale_tile.bytecode"
    subprocess.run([sys.executable, "-c", "from cuda.tile.compilation import export_kernel; import tile_scale; "
                    f"export_kernel(tile_scale.scale_tile, [tile_scale.signature()], {str(bytecode)!r}, "
                    "gpu_code=None, output_format='tileir_bytecode')"], cwd=Path(__file__).parent, check=True)
    subprocess.run([bin_dir / "tileiras", bytecode, "-o", tmp_path / "scale_tile.cubin", "--gpu-name", "sm_90",
                    "-O3", "--lineinfo"], check=True, env=dict(os.environ, TRITONHOOK_STORE=str(store_path)))
    (capture,) = Store(store_path, create=False).captures()
    assert capture.frontend == "cutile" and capture.src_line is None

    shown = tritonhook("show", "--store", store_path, capture.id).stdout
    fields = dict(re.findall(r"^│ (.+?) +│ (.+?) +│$", shown, re.MULTILINE))
    assert fields["frontend"] == f"cutile {importlib.metadata.version('cuda-tile')}"
    assert fields["source"] == capture.src_file and fields["source"].endswith(".ptx")
    assert fields["ptxas"] == f"{capture.ptxas_version} ({bin_dir / 'ptxas'})"
    assert not {"num_warps / num_stages", "shared memory", "TMA loads rewritten to CTA scope"} & set(fields)
    assert "None" not in shown, shown


def _parsers(parser, name="tritonhook"):
    """(name, parser) of `parser` and every subcommand under it, however deep."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


@pytest.mark.release_independent  # argparse's help texts: the same under every Triton
def test_every_commands_help_renders():
    """argparse reads each help text as a %-format: one '%' unescaped (a percentage in a figure) makes that
    command's --help a traceback."""
    from tritonhook.cli import build_parser

    helped = {name: " ".join(parser.format_help().split()) for name, parser in _parsers(build_parser())}
    assert len(helped) > 20 and all(text.startswith("usage: ") for text in helped.values())
    assert "rows 2% wide" in helped["tritonhook sweep"] and "rows 2% wide" in helped["tritonhook replay"]


# ----- folders and files made where the user says, by one process alone --------------------------------------------
@pytest.mark.release_independent  # files.create_new between two processes: the same under every Triton
def test_two_demos_started_together_into_one_folder_make_one_store(tmp_path):
    """Both start at once: one runs, the other is refused in one line, and the store holds one demo's captures
    (each compile of each variant once), not two."""
    from tritonhook.page.demo import VARIANTS, compile_jobs

    out = tmp_path / "demo"
    demos = [subprocess.Popen([sys.executable, "-m", "tritonhook", "demo", "--out", str(out), "--samples", "add",
                               "--no-attention"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    done = sorted(((demo.wait(timeout=600), *demo.communicate()) for demo in demos), key=lambda d: d[0])
    (ran, ran_out, _), (refused, _, refused_err) = done
    assert (ran, refused) == (0, 2), done
    assert refused_err.splitlines() == [f"tritonhook: error: {out / 'store'}: already holds a store from an earlier "
                                        f"demo (or one running now); pass another --out or remove it (the demo "
                                        f"starts from a fresh store)"]
    one_demo = len(compile_jobs(["add"], attention=False)) * len(VARIANTS)
    assert Store(out / "store", readonly=True).count() == one_demo
    assert f"captures: {one_demo} in {out / 'store'}" in ran_out


@pytest.mark.release_independent  # the store's folder checks: the same under every Triton
@pytest.mark.parametrize("command", [["run", "--store"], ["demo", "--samples", "add", "--no-attention", "--out"]])
def test_a_folder_holding_other_files_is_not_made_a_store(tmp_path, command):
    """`run --store DIR` / `demo --out DIR` on a folder of the user's own files (or `/`) is refused in one line,
    and nothing is left in it; an empty folder is taken."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    for folder in (mine, Path("/")):
        before = sorted(os.listdir(folder))
        result = tritonhook(*command, folder, *(["--", "true"] if command[0] == "run" else []), check=False)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
        assert result.stderr.startswith(f"tritonhook: error: {folder}: a folder holding other files (")
        assert sorted(os.listdir(folder)) == before
    empty = tmp_path / "empty"
    empty.mkdir()
    if command[0] == "run":
        tritonhook(*command, empty, "--", "true")
        assert Store(empty, readonly=True).count() == 0


@pytest.mark.release_independent  # output paths; the captures are inputs: the same under every Triton
def test_export_onto_a_file_says_it_is_not_a_folder(recorded_store, tmp_path):
    store, _ = recorded_store
    (tmp_path / "a-file").write_text("")
    result = tritonhook("export", "--store", store, "1", tmp_path / "a-file", check=False)
    assert result.returncode == 2 and "File exists" not in result.stderr
    assert re.fullmatch(rf"tritonhook: error: {tmp_path}/a-file/\S+: cannot write the capture 1 \w+ \({tmp_path}/"
                        rf"a-file is not a folder\)\n", result.stderr), result.stderr
