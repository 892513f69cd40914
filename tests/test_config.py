"""config.py: every environment variable declared once; settings round-trip through the environment; scope restores.

The round-trip is checked against the readers that use it in a real child process (`tritonhook run` is covered by
test_capture_cmd.py); here, the pure parts and the rule that no other module spells a variable's name."""

import ast
import os
import sys
from pathlib import Path

import pytest

import tritonhook
from tritonhook import config
from tritonhook.rename import STRIP, rename_from_settings, rename_settings

PACKAGE = Path(tritonhook.__file__).parent
# The start-up hook runs before tritonhook may be imported (a process that never imports Triton pays nothing).
_SPELLS_ITS_OWN = {PACKAGE / "_bootstrap" / "sitecustomize.py"}


def test_capture_settings_round_trip():
    settings = config.CaptureSettings(store="/tmp/s", enable=True, rename=config.STRIP_VALUE, select="^add",
                                      fix_tma_scope=True)
    assert config.CaptureSettings.from_env(settings.to_env()) == settings
    assert config.CaptureSettings.from_env({}) == config.CaptureSettings()
    for fix in (True, "sm_12", "sm_90a", ""):  # "" (every target) must not read back as unset
        settings = config.CaptureSettings(fix_tma_scope=fix)
        assert config.CaptureSettings.from_env(settings.to_env()) == settings
    recording = config.RecordSettings(record=True, label="l", sample_every=4, snapshot_budget=0)
    assert config.RecordSettings.from_env(recording.to_env()) == recording
    assert config.RecordSettings.from_env({}) == config.RecordSettings()


def test_rename_travels_through_config():
    env = config.CaptureSettings(**rename_settings(STRIP, ["add_kernel"])).to_env()
    assert env[config.RENAME.name] == ":strip"
    assert rename_from_settings(config.CaptureSettings.from_env(env)) == (STRIP, "^(?:add_kernel)$")


def test_enable_and_run_command_give_a_child_the_same_tma_scope_fix(tmp_path):
    """Both write a child's environment through `CaptureSettings`: `enable(fix_tma_scope="sm_12")` once exported
    "" (a flag-only encoding) and `run_command` took a bool only, so a child fixed other targets than asked."""
    from tritonhook.run import run_command

    tritonhook.enable(tmp_path / "store", fix_tma_scope="sm_12")
    try:
        exported = config.FIX_TMA_SCOPE.raw()
    finally:
        tritonhook.disable()
    seen = tmp_path / "seen"
    script = f"from tritonhook import config; open({str(seen)!r}, 'w').write(config.FIX_TMA_SCOPE.raw() or '')"
    assert run_command([sys.executable, "-c", script], tmp_path / "store", fix_tma_scope="sm_12").exit_code == 0
    assert exported == seen.read_text() == "sm_12"
    assert config.CaptureSettings.from_env({config.FIX_TMA_SCOPE.name: exported}).fix_tma_scope == "sm_12"


def test_scope_sets_and_restores_exactly(monkeypatch):
    monkeypatch.setenv("TRITONHOOK_STORE", "before")
    monkeypatch.delenv("TRITONHOOK_GPU", raising=False)
    with config.scope({"TRITONHOOK_STORE": "inside", "TRITONHOOK_GPU": "h200"}):
        assert config.STORE.get() == "inside" and config.GPU.get() == "h200"
    assert os.environ["TRITONHOOK_STORE"] == "before" and "TRITONHOOK_GPU" not in os.environ


def test_scope_none_removes_for_the_block(monkeypatch):
    monkeypatch.setenv("TRITONHOOK_PTXAS", f"/a{os.pathsep}/b")
    assert config.PTXAS.get() == ["/a", "/b"]
    opened = config.scope({"TRITONHOOK_PTXAS": None})
    assert config.PTXAS.get() == []
    opened.close()
    opened.close()
    assert config.PTXAS.get() == ["/a", "/b"]


def test_enable_exports_and_disable_restores(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONHOOK_RENAME", "users_own")
    before = dict(os.environ)
    tritonhook.enable(tmp_path / "store", rename="cutlass_", select="^add")
    try:
        exported = config.CaptureSettings.from_env()
        assert exported == config.CaptureSettings(store=str((tmp_path / "store").resolve()), enable=True,
                                                  rename="cutlass_", select="^add")
    finally:
        tritonhook.disable()
    assert dict(os.environ) == before


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


def test_raw_tells_an_empty_variable_from_an_unset_one():
    """An empty CUDA_VISIBLE_DEVICES hides every GPU, an unset one hides none: `get` folds both into the default,
    `raw` keeps them apart (the sweep counts the GPUs it may pin workers to by it)."""
    assert config.CUDA_VISIBLE_DEVICES.raw({}) is None
    assert config.CUDA_VISIBLE_DEVICES.raw({"CUDA_VISIBLE_DEVICES": ""}) == ""
    assert config.CUDA_VISIBLE_DEVICES.get({"CUDA_VISIBLE_DEVICES": ""}) == "0"
