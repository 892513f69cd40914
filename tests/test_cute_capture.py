"""The CuTe DSL adapter on real CuTe DSL compiles (no GPU: fake tensors) for sm_90a and sm_120a."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys

import pytest

pytest.importorskip("cutlass.cute", reason="nvidia-cutlass-dsl is not installed (pip install 'tritonhook[cute]')")

pytestmark = pytest.mark.release_independent  # CuTe DSL's compiler and its captures: no Triton compile in them

import cute_scale  # noqa: E402  (tests/cute_scale.py; imports the DSL)

from tritonhook.cute import capture as cute_capture  # noqa: E402
from tritonhook.cubin import Cubin  # noqa: E402
from tritonhook.errors import TritonhookError  # noqa: E402
from tritonhook.store import Store  # noqa: E402

ARCHES = ("sm_90a", "sm_120a")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    dump = tmp_path_factory.mktemp("dump")  # keep options also write files there (default: the current directory)
    return {arch: cute_scale.compile_scale(arch, f"{cute_capture.KEEP_OPTIONS} --dump-dir {dump}") for arch in ARCHES}


def tritonhook_json(*args) -> object:
    result = subprocess.run([sys.executable, "-m", "tritonhook", *map(str, args), "--json"], capture_output=True,
                            text=True, check=True)
    return json.loads(result.stdout)


@pytest.mark.parametrize("arch", ARCHES)
def test_a_compiled_function_becomes_a_capture_like_tritons(compiled, store_path, arch):
    function = compiled[arch]
    store = Store(store_path)
    capture = store.get(cute_capture.capture_compiled(function, store))
    [entry] = function.kernel_info  # the DSL's own account of its kernels
    assert (capture.frontend, capture.event, capture.kernel, capture.entry, capture.original_entry, capture.arch) == (
        "cute", "compile", function.function_name, entry, entry, arch)
    assert capture.frontend_version == importlib.metadata.version("nvidia-cutlass-dsl")
    assert "cutlass" in capture.entry  # DSL names all take ptxas's cutlass path (docs/ptxas_cutlass.md#the-cutlass-name-path)
    assert store.read(capture, "ptx") == function.__ptx__.encode()
    assert store.read(capture, "cubin") == function.__cubin__
    cubin = Cubin.from_bytes(store.read(capture, "cubin"))
    assert list(cubin.kernels) == [entry] and cubin.arch.startswith(arch.rstrip("a"))


def test_diff_and_preflight_take_cute_captures(compiled, store_path):
    store = Store(store_path)
    ids = [cute_capture.capture_compiled(compiled[arch], store) for arch in ARCHES]
    diff = tritonhook_json("diff", "--store", store_path, *ids)
    assert diff["origin_a"] == f"capture {ids[0]}" and diff["origin_b"] == f"capture {ids[1]}"
    [entry] = compiled["sm_90a"].kernel_info
    assert entry in json.dumps(diff)
    predictions = tritonhook_json("preflight", "--store", store_path)
    assert {(p["kernel"], p["arch"]) for p in predictions} == {(entry, arch) for arch in ARCHES}


def test_a_dump_directory_is_collected_with_the_trailing_nul_removed(compiled, tmp_path, store_path):
    dump = tmp_path / "dump"
    dump.mkdir()  # the DSL writes nothing into a directory that does not exist
    function = cute_scale.compile_scale("sm_120a", f"{cute_capture.KEEP_OPTIONS} --dump-dir {dump}")
    [ptx_file] = dump.glob("*.sm_120a.ptx")
    ptx_file.write_bytes(ptx_file.read_bytes().rstrip(b"\0") + b"\0")  # as CuTe DSL 4.4 dumps it
    store = Store(store_path)
    [capture_id] = cute_capture.collect_dump_dir(dump, store)
    capture = store.get(capture_id)
    assert (capture.kernel, capture.arch) == (function.function_name, "sm_120a")
    assert store.read(capture, "ptx") == function.__ptx__.encode()
    assert store.read(capture, "cubin") == function.__cubin__
    assert cute_capture.collect_dump_dir(dump, store, since=ptx_file.stat().st_mtime + 60) == []


def test_without_keep_options_there_is_nothing_to_capture(store_path, tmp_path):
    with pytest.raises(TritonhookError, match="--keep-ptx --keep-cubin"):
        cute_capture.capture_compiled(cute_scale.compile_scale("sm_90a"), Store(store_path))
    with pytest.raises(TritonhookError, match="not a directory"):
        cute_capture.collect_dump_dir(tmp_path / "never-made", Store(store_path))
