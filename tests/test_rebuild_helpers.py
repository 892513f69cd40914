"""A kernel calling `@triton.jit` helpers from other modules of its package rebuilds from its capture alone: the
capture records those modules' texts (the `helpers` artifact, found by Triton's own dependency walk), and the rebuild
worker imports the recorded texts, not the package as it is on disk later (edited here, on the worker's path).

The package (`b` the kernel, calling `a.scaled`, which calls `c.factor`) is written to tmp_path and compiled for
sm_90 on the CPU. What the recorded helper determines is a float constant in the PTX: 3.25 (0f40500000) recorded,
7.5 (0f40F00000) in the edited file."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest
from release_subjects import POINTERS_ALIGNED

import tritonhook
from tritonhook import _triton, config
from tritonhook.upgrade.worker import rebuild_captures

pytestmark = pytest.mark.release_independent  # the other release runs in its own virtualenv; one run suffices
PACKAGE = "tritonhook_helper_subjects"
RECORDED, EDITED = "0f40500000", "0f40F00000"  # 3.25 and 7.5 as PTX float literals
MODULES = {
    "__init__": "",
    "c": '''
import triton


@triton.jit
def factor():
    return 3.25
''',
    "a": f'''
import triton

from {PACKAGE}.c import factor


@triton.jit
def scaled(x):
    return x * factor()
''',
    "b": f'''
import triton
import triton.language as tl

from {PACKAGE} import a


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, a.scaled(tl.load(x_ptr + offsets, mask=mask)), mask=mask)
''',
}


@pytest.fixture
def captured(tmp_path, monkeypatch):
    return _capture(tmp_path, monkeypatch)


def _capture(tmp_path: Path, monkeypatch, modules: dict = MODULES):
    """The package (`modules`) written to tmp_path/pkgs, its kernel compiled under capture into tmp_path/store: the
    store."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    folder = tmp_path / "pkgs" / PACKAGE
    folder.mkdir(parents=True)
    for name, text in modules.items():
        (folder / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    try:
        kernel = importlib.import_module(f"{PACKAGE}.b").scale_kernel
        with tritonhook.session(tmp_path / "store"):
            triton.compile(ASTSource(kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 256},
                                     POINTERS_ALIGNED), target=GPUTarget("cuda", 90, 32), options={"num_warps": 2})
    finally:
        for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
            del sys.modules[name]
    return tritonhook.Store(tmp_path / "store")


def _helpers(store) -> dict:
    (capture,) = store.captures()
    return _triton.helper_modules(store.read(capture, _triton.HELPERS_STAGE))


def test_the_capture_records_the_modules_of_the_helpers_its_kernel_reaches(captured):
    """Both helper modules, the one the kernel calls and the one that helper calls, callee first (the order they
    are executed in); not the kernel's own module (its `python` artifact), not Triton's."""
    helpers = _helpers(captured)
    assert [m["module"] for m in helpers["modules"]] == [f"{PACKAGE}.c", f"{PACKAGE}.a"]
    assert helpers["left_out"] == []
    for module in helpers["modules"]:
        assert module["text"] == MODULES[module["module"].rsplit(".", 1)[1]]
        assert Path(module["file"]).name == module["module"].rsplit(".", 1)[1] + ".py"
    (capture,) = captured.captures()
    assert RECORDED in captured.read(capture, "ptx").decode()


def test_helper_modules_past_the_size_cap_are_named_not_recorded(tmp_path, monkeypatch):
    monkeypatch.setattr(config.upgrade, "REBUILD_HELPERS_MAX_BYTES", len(MODULES["c"]))  # room for c alone
    store = _capture(tmp_path, monkeypatch)
    helpers = _helpers(store)
    assert [m["module"] for m in helpers["modules"]] == [f"{PACKAGE}.c"] and helpers["left_out"] == [f"{PACKAGE}.a"]


def test_a_helpers_artifact_of_another_format_is_refused_in_words():
    with pytest.raises(ValueError, match=r"format 99; this tritonhook reads 1"):
        _triton.helper_modules(json.dumps({"format": 99, "modules": []}).encode())


def test_the_rebuild_compiles_the_recorded_helpers_not_the_edited_files(captured, tmp_path, monkeypatch, release_39):
    """The helper the kernel reaches through another helper is edited on disk (7.5 instead of 3.25), the kernel's
    own module deleted, and the package left on the worker's PYTHONPATH: the rebuild under the same Triton gives the
    captured PTX byte for byte (the helpers' line info names their recorded files), and under 3.9.0 the recorded
    constant."""
    folder = tmp_path / "pkgs" / PACKAGE
    (folder / "c.py").write_text(MODULES["c"].replace("3.25", "7.5"))
    (folder / "b.py").unlink()
    monkeypatch.setenv(config.paths.PYTHONPATH.name, config.paths.PYTHONPATH.encode([str(tmp_path / "pkgs")]))
    (capture,) = captured.captures()
    same = rebuild_captures(Path(sys.executable), captured, [capture], tmp_path / "same")[capture.id]
    assert same.error is None, same.error
    assert same.ptx == captured.read(capture, "ptx").decode()
    other = rebuild_captures(release_39 / "bin" / "python", captured, [capture], tmp_path / "other")[capture.id]
    assert other.error is None, other.error
    assert other.triton_version == "3.9.0"
    assert RECORDED in other.ptx and EDITED not in other.ptx


def test_a_package_that_imports_its_kernel_modules_rebuilds(tmp_path, monkeypatch):
    """Liger's shape: the package's `__init__` imports the kernel module. The worker imports the package before it
    executes the recorded kernel module, as an import does; executed first, the module's own import of a sibling
    ran `__init__`, which found the module half executed (Liger's RMSNorm forward on the H200: "cannot import name
    'LigerRMSNormFunction'")."""
    store = _capture(tmp_path, monkeypatch, MODULES | {"__init__": f"from {PACKAGE}.b import scale_kernel\n"})
    (tmp_path / "pkgs" / PACKAGE / "c.py").write_text(MODULES["c"].replace("3.25", "7.5"))
    monkeypatch.setenv(config.paths.PYTHONPATH.name, config.paths.PYTHONPATH.encode([str(tmp_path / "pkgs")]))
    (capture,) = store.captures()
    rebuilt = rebuild_captures(Path(sys.executable), store, [capture], tmp_path / "rebuilt")[capture.id]
    assert rebuilt.error is None, rebuilt.error
    assert rebuilt.ptx == store.read(capture, "ptx").decode()


INDUCTOR_SHAPED = '''
import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers

triton_helpers.set_driver_to_gpu()


@triton.jit
def max_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, triton_helpers.maximum(a, tl.load(y_ptr + offsets, mask=mask)), mask=mask)
'''


def test_an_inductor_shaped_kernel_records_and_rebuilds_torchs_triton_helpers(tmp_path, monkeypatch):
    """A module shaped like Inductor's (it calls `triton_helpers.set_driver_to_gpu()` when executed, which needs a
    GPU, and its kernel calls `triton_helpers.maximum`): torch's triton_helpers is recorded, and the rebuild, which
    executes that recorded text under torch's dotted name, still gives the captured PTX."""
    pytest.importorskip("torch")
    import triton
    from torch._inductor.runtime import triton_helpers
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    (tmp_path / "inductor_shaped.py").write_text(INDUCTOR_SHAPED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    monkeypatch.setattr(triton_helpers, "set_driver_to_gpu", lambda: None)  # no GPU here
    try:
        kernel = importlib.import_module("inductor_shaped").max_kernel
    finally:
        sys.modules.pop("inductor_shaped", None)
    with tritonhook.session(tmp_path / "store"):
        triton.compile(ASTSource(kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                                 {"BLOCK": 256}, POINTERS_ALIGNED), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 4})
    store = tritonhook.Store(tmp_path / "store")
    assert [m["module"] for m in _helpers(store)["modules"]] == ["torch._inductor.runtime.triton_helpers"]
    (capture,) = store.captures()
    rebuilt = rebuild_captures(Path(sys.executable), store, [capture], tmp_path / "rebuilt")[capture.id]
    assert rebuilt.error is None, rebuilt.error
    assert rebuilt.ptx == store.read(capture, "ptx").decode()
