"""Static preflight on real cubins (Triton compiles for sm_90a / sm_100a / sm_120a, no GPU needed)."""

from __future__ import annotations

import json
import os
import runpy
import sys
import warnings
from pathlib import Path

import pytest
import triton

import tritonhook
from tritonhook import _triton, cli, preflight
from tritonhook.cubin import Cubin
from tritonhook.errors import TritonhookError
from tritonhook.samples import compile_sample

from compile_warning import compile_warning
from rich_tables import rich_cells

pytestmark = pytest.mark.every_release  # reaches what differs between Triton releases (scripts/test-matrix.sh)

EXAMPLE = Path(__file__).parents[1] / "examples" / "stack_reservation.py"
TMA_SYSCALL_PREFIX = "__cuda_syscall_cp_async_bulk_tensor_"
TRITON_EMITS_CLUSTER_TMA = _triton.parse_version(triton.__version__) < (3, 7)
"""Triton 3.4-3.6 emit `shared::cluster` TMA loads, which ptxas lowers to a driver call on sm_120a (docs/tma_stack.md#the-stack-reservation)."""
H200_MEASURED_GROWTH = 4_152_360_960
"""NVML used growth measured on the H200 after launching a kernel with a 16 KiB .local array (docs/tma_stack.md#the-stack-reservation)."""
RTX5090_REPORTED = 3.7 * 2**30
"""The ~3.7 GiB reported for Triton TMA kernels on the RTX 5090 (docs/tma_stack.md#the-stack-reservation)."""


@pytest.fixture(scope="module")
def cubins(tmp_path_factory):
    """tma_copy for sm_90a, sm_100a, sm_120a and the 16 KiB local-array kernel for sm_90a, compiled once."""
    example = runpy.run_path(str(EXAMPLE), run_name="stack_reservation")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.mktemp("triton-cache")))
        built = {cap: compile_sample("tma_copy", cap).asm["cubin"] for cap in (90, 100, 120)}
        built["local16k"] = example["compile_local_array"](16384, 90).asm["cubin"]
    return built


@pytest.mark.parametrize("capability", [90, 100, 120])
def test_tma_copy_driver_call_only_on_sm120a_with_cluster_tma(cubins, capability):
    cubin = Cubin.from_bytes(cubins[capability], label=f"tma_copy sm_{capability}")
    assert cubin.arch == f"sm_{capability}a"
    calls = [name for name in cubin.syscalls if name.startswith(TMA_SYSCALL_PREFIX)]
    expect_call = capability == 120 and TRITON_EMITS_CLUSTER_TMA
    assert bool(calls) == expect_call, f"Triton {triton.__version__} sm_{capability}a: syscalls {cubin.syscalls}"


def test_sm120a_tma_prediction_brackets_the_reported_rtx5090_figure(cubins):
    cubin = Cubin.from_bytes(cubins[120], label="tma_copy sm_120a")
    (prediction,) = preflight.predict_cubin(cubin, [preflight.find_gpu("RTX 5090")])
    if TRITON_EMITS_CLUSTER_TMA:
        # ptxas reports only the caller's few bytes; the prediction rests on the driver routine's frame
        assert prediction.ptxas_stack < 1024
        assert prediction.reserve_low <= RTX5090_REPORTED <= prediction.reserve_high
    else:
        assert prediction.reserve_high == 0


def test_local_array_prediction_equals_the_h200_measurement(cubins):
    cubin = Cubin.from_bytes(cubins["local16k"], label="local array 16 KiB")
    (prediction,) = preflight.predict_cubin(cubin, [preflight.find_gpu("NVIDIA H200")])
    assert prediction.ptxas_stack == 16384
    assert prediction.reserve_low == prediction.reserve_high == H200_MEASURED_GROWTH


@pytest.mark.parametrize("need, expected", [(0, (1024, 1024)), (1000, (1024, 1024)), (12000, (12000, 16384)),
                                            (14608, (14608, 16384)), (16384, (16384, 16384)),
                                            (16385, (16400, 32768))])
def test_stack_limit_range(need, expected):
    assert preflight.stack_limit_range(need) == expected


@pytest.mark.parametrize("arch, gpu, loads", [("sm_120a", "rtx5090", True), ("sm_120a", "gb10", False),
                                              ("sm_120", "gb10", True), ("sm_90a", "h200", True),
                                              ("sm_90a", "b200", False), ("sm_80", "h100", False),
                                              ("sm_100f", "b200", True)])
def test_runs_on(arch, gpu, loads):
    assert preflight.runs_on(arch, preflight.GPUS[gpu]) is loads


def test_every_gpu_entry_names_its_sources():
    for spec in preflight.GPUS.values():
        assert "SMs:" in spec.source and "Programming Guide" in spec.source, spec.name


# ----- capture-time warning -------------------------------------------------------------------------------------
@pytest.mark.parametrize("capability", [90, 120])
def test_capture_warns_when_a_kernel_would_reserve_over_256_mib(capture_session, capability):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compile_sample("tma_copy", capability)
    messages = [str(w.message) for w in caught if "tritonhook preflight" in str(w.message)]
    expect = capability == 120 and TRITON_EMITS_CLUSTER_TMA
    assert len(messages) == (1 if expect else 0), messages
    if expect:
        assert "tma_copy_kernel" in messages[0] and "sm_120a" in messages[0] and TMA_SYSCALL_PREFIX in messages[0]


def test_the_capture_warning_names_the_line_that_compiled_the_kernel(capture_session):
    """The warning is issued deep inside Triton's compile (the listener); it must name the user's line."""
    from triton.compiler import ASTSource

    example = runpy.run_path(str(EXAMPLE), run_name="stack_reservation")
    source = ASTSource(example["local_array_kernel"], {"x_ptr": "*i32", "out_ptr": "*i32"},
                       {"BLOCK": example["BLOCK"], "ASM": example["local_array_asm"](16384)})
    warning, compiled_at = compile_warning(source, 120, "tritonhook preflight")
    assert (warning.filename, warning.lineno, warning.category) == (*compiled_at, RuntimeWarning)


def test_a_child_of_tritonhook_run_warns_too(tmp_path):
    """The capture core imports no feature: the package registers preflight's checker for every session, so a
    child of `tritonhook run`, enabled at start-up before anything imported preflight, warns as `enable()` does."""
    import subprocess

    script = ("import runpy, triton\n"
              "from triton.backends.compiler import GPUTarget\n"
              "from triton.compiler import ASTSource\n"
              f"example = runpy.run_path({str(EXAMPLE)!r}, run_name='stack_reservation')\n"
              "triton.compile(ASTSource(example['local_array_kernel'], {'x_ptr': '*i32', 'out_ptr': '*i32'},\n"
              "                         {'BLOCK': example['BLOCK'], 'ASM': example['local_array_asm'](16384)}),\n"
              "               target=GPUTarget('cuda', 120, 32))\n")
    done = subprocess.run([sys.executable, "-m", "tritonhook", "run", "--store", str(tmp_path / "store"), "--",
                           sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "triton-cache")})
    assert done.returncode == 0, done.stderr
    assert "tritonhook preflight: kernel local_array_kernel (capture 1) for sm_120a" in done.stderr, done.stderr


def test_warnings_held_while_recording_name_only_the_kernels_the_workload_launched(capture_session):
    """While a workload is recorded, an autotuner compiles configs that lose; their warnings are held and, at the
    end, only a kernel the workload launched gets one, the others one line between them."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    example = runpy.run_path(str(EXAMPLE), run_name="stack_reservation")
    held = preflight.hold_warnings()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for size in (16384, 8192):  # two "configs": two kernels predicted to reserve GiBs
                triton.compile(ASTSource(example["local_array_kernel"], {"x_ptr": "*i32", "out_ptr": "*i32"},
                                         {"BLOCK": example["BLOCK"], "ASM": example["local_array_asm"](size)}),
                               target=GPUTarget("cuda", 120, 32))
        assert [w for w in caught if "tritonhook preflight" in str(w.message)] == []
        winner, loser = capture_session.captures()
        lines = held.release({winner.triton_hash}, measured=lambda: "stack limit 1024 B/thread")
    finally:
        preflight._held = None
    assert len(lines) == 3, lines
    assert lines[0].startswith(f"tritonhook preflight: kernel local_array_kernel (capture {winner.id}) for sm_120a")
    assert lines[1].startswith("tritonhook preflight: 1 kernel(s) compiled but never launched by the workload")
    assert lines[2] == "tritonhook preflight: measured at the end of the recording: stack limit 1024 B/thread"
    with warnings.catch_warnings(record=True) as caught:  # released: the next warning is issued at once again
        warnings.simplefilter("always")
        triton.compile(ASTSource(example["local_array_kernel"], {"x_ptr": "*i32", "out_ptr": "*i32"},
                                 {"BLOCK": example["BLOCK"], "ASM": example["local_array_asm"](12288)}),
                       target=GPUTarget("cuda", 120, 32))
    assert [w for w in caught if "tritonhook preflight" in str(w.message)]


# ----- CLI ------------------------------------------------------------------------------------------------------
def test_cli_preflight_on_a_cubin_file_json(cubins, tmp_path, capsys):
    path = tmp_path / "local.cubin"
    path.write_bytes(cubins["local16k"])
    assert cli.main(["preflight", str(path), "--gpu", "H200", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["kernel"], row["gpu"]["name"], row["reserve_low"]) == ("local_array_kernel", "H200",
                                                                       H200_MEASURED_GROWTH)


@pytest.mark.filterwarnings("ignore:tritonhook preflight")
def test_cli_preflight_over_a_store(capture_session, store_path, capsys):
    compile_sample("tma_copy", 90)
    compile_sample("tma_copy", 120)
    assert cli.main(["preflight", "--store", str(store_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {row["arch"] for row in rows} == {"sm_90a", "sm_120a"}
    assert {row["gpu"]["name"] for row in rows if row["arch"] == "sm_120a"} == {"RTX 5090", "RTX PRO 6000 Blackwell"}
    assert cli.main(["preflight", str(capture_session.capture_ids[0]), "--store", str(store_path)]) == 0
    assert "tma_copy_kernel" in capsys.readouterr().out


def test_cli_preflight_over_a_store_with_a_corrupt_cubin_predicts_the_rest_and_names_it(capture_session, store_path,
                                                                                         capsys):
    for name in ("add", "matmul_fp16", "tma_copy"):
        compile_sample(name, 90)
    add, matmul, tma = capture_session.store.captures()
    blob = capture_session.store.blob_path(matmul.artifacts["cubin"].sha256)
    blob.write_bytes(blob.read_bytes()[:100])
    reason = f"{blob} (capture {matmul.id} cubin): blob is corrupt (its sha256 does not match its name)"

    assert cli.main(["preflight", "--store", str(store_path), "--gpu", "H200"]) == 1
    out = capsys.readouterr().out
    assert f"not predicted: capture {matmul.id} (matmul_kernel, sm_90a): {reason}" in out.splitlines()
    assert f"basis 1 (captures {add.id}, {tma.id} on H200): need = 0 B ptxas stack" in out
    assert cli.main(["preflight", "--store", str(store_path), "--gpu", "H200", "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert [(row["capture_id"], row.get("error")) for row in rows] == [(add.id, None), (tma.id, None),
                                                                      (matmul.id, reason)]


def test_cli_preflight_basis_lines_name_their_rows(cubins, capture_session, store_path, tmp_path, capsys):
    path = tmp_path / "local.cubin"
    path.write_bytes(cubins["local16k"])
    assert cli.main(["preflight", str(path), "--gpu", "H200"]) == 0
    out = capsys.readouterr().out
    assert [(row[0], row[1], row[-1]) for row in rich_cells(out)[1:]] == [("-", "local_array_kernel", "1")]
    assert "basis 1 (local_array_kernel on H200): need = 16384 B ptxas stack;" in out

    compile_sample("add", 90)
    compile_sample("add", 100)
    assert cli.main(["preflight", "--store", str(store_path)]) == 0
    out = capsys.readouterr().out
    assert [(row[0], row[4], row[-1]) for row in rich_cells(out)[1:]] == [
        ("1", "H100 SXM5", "1"), ("1", "H100 PCIe", "2"), ("1", "H200", "1"), ("2", "B200", "3")]
    assert [line.split(":")[0] for line in out.splitlines() if line.startswith("basis")] == [
        "basis 1 (capture 1 on H100 SXM5, H200)", "basis 2 (capture 1 on H100 PCIe)", "basis 3 (capture 2 on B200)"]


def test_cli_preflight_errors_are_one_line(tmp_path, capsys):
    text = tmp_path / "kernel.ptx"
    text.write_text(".version 8.7\n.target sm_90a\n")
    assert cli.main(["preflight", str(text)]) == 2
    assert cli.main(["preflight", str(text), "--gpu", "A100"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and str(text) in lines[0] and "A100" in lines[1]


# ----- which GPU the capture-time warning quotes ------------------------------------------------------------------
@pytest.fixture
def local_array_sm120(tmp_path):
    """A 16 KiB .local frame compiled for sm_120a: a reservation on every GPU that loads it, on any Triton."""
    example = runpy.run_path(str(EXAMPLE), run_name="stack_reservation")
    return example["compile_local_array"], 16384, 120


def _warnings_while(compile_args) -> list[str]:
    compile_local_array, frame, capability = compile_args
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compile_local_array(frame, capability)
    return [str(w.message) for w in caught if "tritonhook preflight" in str(w.message)]


@pytest.fixture
def rtx5090_named(monkeypatch):
    monkeypatch.setenv("TRITONHOOK_GPU", "rtx-5090")


def test_warning_quotes_the_gpu_named_by_the_environment(rtx5090_named, capture_session, local_array_sm120):
    (message,) = _warnings_while(local_array_sm120)
    assert " on RTX 5090 for the life" in message and "RTX PRO 6000" not in message


def test_warning_with_no_gpu_named_or_visible_gives_the_range_over_the_gpus_that_load_it(capture_session,
                                                                                          local_array_sm120):
    (message,) = _warnings_while(local_array_sm120)  # no GPU here; on a GPU machine an H200 cannot load sm_120a
    cubin = Cubin.from_bytes(capture_session.store.read(capture_session.store.captures()[-1], "cubin"), label="x")
    rtx5090, pro6000 = (preflight.predict_cubin(cubin, [preflight.GPUS[key]])[0] for key in ("rtx5090", "rtxpro6000"))
    gib = 2**30
    assert (f"reserve {rtx5090.reserve_low / gib:.2f}-{pro6000.reserve_high / gib:.2f} GiB of stack on RTX 5090 or "
            f"RTX PRO 6000 Blackwell (whichever runs it; $TRITONHOOK_GPU names yours)") in message


def test_an_unknown_gpu_in_the_environment_is_one_line_listing_the_valid_names(monkeypatch, store_path, capsys):
    monkeypatch.setenv("TRITONHOOK_GPU", "a100")
    assert cli.main(["run", "--store", str(store_path), "--", sys.executable, "-c", "pass"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("tritonhook: error: $TRITONHOOK_GPU 'a100': not in the GPU table; choose from h100 (H100")
    assert "rtx5090 (RTX 5090)" in line
    with pytest.raises(TritonhookError, match=r"\$TRITONHOOK_GPU 'a100'"):
        tritonhook.enable(store_path)


@pytest.mark.gpu
def test_the_visible_gpu_is_found_in_the_table():
    """On the GPU machine (an H200 or an H100): the entry found for the visible GPU has its compute capability and
    SM count as the device reports them (a marketing name such as 'NVIDIA H100 80GB HBM3' need not contain the
    table's name, 'H100 SXM5'), and the warning would quote it for kernels it can load."""
    import torch

    gpu = preflight.visible_gpu()
    properties = torch.cuda.get_device_properties(0)
    assert gpu is not None, torch.cuda.get_device_name()
    assert (gpu.capability, gpu.sms) == (properties.major * 10 + properties.minor,
                                         properties.multi_processor_count), (gpu, properties)
    arch = f"sm_{gpu.capability}a"
    assert preflight.warning_gpus(arch, gpu) == [gpu] and preflight.warning_gpus("sm_80", gpu) == []
