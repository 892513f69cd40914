"""config.py: every environment variable declared once; scope restores; no module spells a variable's name.

What a child process inherits (`launcher.ChildSettings`) is tested in test_launcher.py."""

import ast
import os
from pathlib import Path

import pytest

import tritonhook
from tritonhook import config

pytestmark = pytest.mark.release_independent  # tritonhook's settings and sources

PACKAGE = Path(tritonhook.__file__).parent
# The start-up hook runs before tritonhook may be imported (a process that never imports Triton pays nothing).
_SPELLS_ITS_OWN = {PACKAGE / "_bootstrap" / "sitecustomize.py"}


def test_scope_sets_and_restores_exactly(monkeypatch):
    monkeypatch.setenv("TRITONHOOK_STORE", "before")
    monkeypatch.delenv("TRITONHOOK_GPU", raising=False)
    with config.scope({"TRITONHOOK_STORE": "inside", "TRITONHOOK_GPU": "h200"}):
        assert config.capture.STORE.get() == "inside" and config.capture.GPU.get() == "h200"
    assert os.environ["TRITONHOOK_STORE"] == "before" and "TRITONHOOK_GPU" not in os.environ


def test_scope_none_removes_for_the_block(monkeypatch):
    monkeypatch.setenv("TRITONHOOK_PTXAS", f"/a{os.pathsep}/b")
    assert config.ptxas.PTXAS.get() == ["/a", "/b"]
    opened = config.scope({"TRITONHOOK_PTXAS": None})
    assert config.ptxas.PTXAS.get() == []
    opened.close()
    opened.close()
    assert config.ptxas.PTXAS.get() == ["/a", "/b"]


def _string_literals(path: Path) -> set[str]:
    return {node.value for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)}


@pytest.mark.parametrize("path", sorted(p for p in PACKAGE.rglob("*.py") if p.name != "config.py"),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_spells_a_variable_name(path):
    """A variable's name as a string literal anywhere but config.py is a second declaration waiting to drift."""
    if path in _SPELLS_ITS_OWN:
        return
    names = {var.name for var in config.declared()} - {"PATH", "PYTHONPATH"}  # too common as words to forbid
    assert not names & _string_literals(path), f"{path.name} spells {sorted(names & _string_literals(path))}"


def test_every_variable_is_declared_in_one_group():
    """Settings are grouped by concern (`config.GROUPS`, as Triton's knobs are): none is left at the module's top
    level, where `declared()` would not list it, and none is declared in two groups."""
    flat = [name for name, value in vars(config).items() if isinstance(value, config.EnvVar)]
    found = list(config.declared())
    assert not flat and len(found) == len(set(found)) == len({var.name for var in found})


def test_raw_tells_an_empty_variable_from_an_unset_one():
    """An empty CUDA_VISIBLE_DEVICES hides every GPU, an unset one hides none: `get` folds both into the default,
    `raw` keeps them apart (the sweep counts the GPUs it may pin workers to by it)."""
    assert config.sweep.CUDA_VISIBLE_DEVICES.raw({}) is None
    assert config.sweep.CUDA_VISIBLE_DEVICES.raw({"CUDA_VISIBLE_DEVICES": ""}) == ""
    assert config.sweep.CUDA_VISIBLE_DEVICES.get({"CUDA_VISIBLE_DEVICES": ""}) == "0"


NUMBERS = [var for var in config.declared() if isinstance(var.parse, config.Number)]


def test_every_setting_that_is_a_number_is_found_when_it_is_not():
    assert {var.name for var in NUMBERS} >= {"TRITONHOOK_SNAPSHOT_BUDGET", "TRITONHOOK_RECORD_COMPILE_THREADS",
                                             "TRITONHOOK_PTXAS_TIMEOUT"}
    environ = {var.name: "lots" for var in NUMBERS} | {"TRITONHOOK_STORE": "lots"}
    assert [line.split(": not a ")[0] for line in config.unreadable(environ)] == [f"${var.name}='lots'"
                                                                                 for var in NUMBERS]
    assert config.unreadable({var.name: "12" for var in NUMBERS}) == []


@pytest.mark.parametrize("var", NUMBERS, ids=lambda var: var.name)
def test_a_command_refuses_a_setting_that_is_no_number_in_one_line_before_it_starts(var, tmp_path):
    """Child processes read these settings (recordings, A/B rounds, ptxas runs): one that no process could read is
    one line from the command itself, before anything runs, not a failure in each child."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "tritonhook", "ls", "--store", str(tmp_path)], capture_output=True,
                          text=True, env={**os.environ, var.name: "1e3x"})
    (line,) = done.stderr.splitlines()
    assert done.returncode == 2 and line.startswith(f"tritonhook: error: ${var.name}='1e3x': not a "), line


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "1e400"])
@pytest.mark.parametrize("command", [["diff", "{PTX}", "{PTX}", "--variants", "plain,cutlass_"],
                                     ["ptxas-matrix", "{PTX}"]], ids=["diff --variants", "ptxas-matrix"])
def test_a_ptxas_timeout_that_is_no_time_to_wait_is_refused_before_any_build(value, command, tmp_path):
    """A real environment setting, the real commands that build with ptxas under it: NaN and infinity (float()
    reads both) and a limit of 0 or below (every build would "run past -1 s") are one line naming the setting."""
    import subprocess
    import sys

    ptx = str(Path(__file__).parent / "data" / "ffma_loop.ptx")
    arguments = [ptx if arg == "{PTX}" else arg for arg in command]
    done = subprocess.run([sys.executable, "-m", "tritonhook", *arguments], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120, env={**os.environ, "TRITONHOOK_PTXAS_TIMEOUT": value})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines() == [f"tritonhook: error: $TRITONHOOK_PTXAS_TIMEOUT={value!r}: not a finite "
                                        f"number of seconds, above 0"]


def test_a_ptxas_timeout_above_0_is_still_taken(tmp_path):
    assert config.ptxas.PTXAS_TIMEOUT_S.get({"TRITONHOOK_PTXAS_TIMEOUT": "0.5"}) == 0.5
    assert config.sweep.RECORD_SAMPLE.get({"TRITONHOOK_RECORD_SAMPLE": "3"}) == 3
