"""Results render themselves: rich renderables through `__rich_console__` and `to_json()`, printed by the one
`format.show`. Checked on real cubins (Triton samples compiled with no GPU), the tables read back cell by cell
(`rich_tables`), with readelf as the independent reference for the kernel's name and the sections' sizes."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys

import pytest
from rich.console import Console

from tritonhook import format, preflight
from tritonhook.cubin import Cubin
from tritonhook.diff import diff_cubins
from tritonhook.format import human_bytes
from tritonhook.samples import compile_sample

from rich_tables import rich_cells


@pytest.fixture(scope="module")
def tma_cubin() -> bytes:
    return compile_sample("tma_copy", 120).asm["cubin"]


def rendered(result) -> str:
    console = Console(record=True, width=200, highlight=False)
    console.print(result, crop=False)
    return console.export_text()


def readelf(cubin: bytes, flags: str, tmp_path) -> str:
    """readelf's listing of a cubin (`flags`: -s the symbols, -S the section headers): the reference independent of
    tritonhook's ELF reader."""
    path = tmp_path / f"{hashlib.sha256(cubin).hexdigest()[:16]}.cubin"
    path.write_bytes(cubin)
    return subprocess.run(["readelf", flags + "W", str(path)], capture_output=True, text=True, check=True).stdout


def readelf_kernels(cubin: bytes, tmp_path) -> list[str]:
    return [line.split()[-1] for line in readelf(cubin, "-s", tmp_path).splitlines()
            if " FUNC " in line and "GLOBAL" in line and not line.split()[-1].startswith("__cuda")]


def readelf_sections(cubin: bytes, tmp_path) -> dict[str, tuple[int, bool]]:
    """Section name -> (size from its header, whether the file holds its bytes: not NOBITS)."""
    found = re.findall(r"^\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+[0-9a-f]{16}\s+[0-9a-f]+\s+([0-9a-f]+)",
                       readelf(cubin, "-S", tmp_path), re.M)
    return {name: (int(size, 16), kind != "NOBITS") for name, kind, size in found}


def number(cell: str) -> int:
    return int(cell.replace(",", ""))


needs_readelf = pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf is the independent reference")


@needs_readelf
def test_preflight_report_shows_a_row_per_prediction_with_the_cubins_kernel_and_driver_calls(tma_cubin, tmp_path):
    """The table read back cell by cell: one row per prediction of the JSON, in its order, each naming the kernel
    readelf finds in the cubin and the driver calls its code makes, with the JSON's stack and reserve figures; and
    one basis line per number the basis column shows."""
    cubin = Cubin.from_bytes(tma_cubin, label="tma")
    report = preflight.PreflightReport([preflight.SourcedPrediction(None, None, p)
                                        for p in preflight.predict_cubin(cubin)])
    data = json.loads(json.dumps(report.to_json()))
    text = rendered(report)
    header, *rows = rich_cells(text)
    [kernel] = readelf_kernels(tma_cubin, tmp_path)
    assert header == ["capture", "kernel", "specialization", "arch", "GPU", "driver calls", "ptxas stack",
                      "predicted limit", "reserve", "basis"]
    assert len(rows) == len(data) == 2  # the sm_120 GPUs preflight knows
    for row, predicted in zip(rows, data):
        calls = ", ".join(cubin.syscalls) or "-"  # Triton 3.7+ emits the TMA form that calls none
        assert row[:6] == ["-", kernel, "-", "sm_120a", predicted["gpu"]["name"], calls]
        assert number(row[6]) == predicted["ptxas_stack"]
        # a range, or one figure where its two ends meet (no driver call: Triton 3.7+)
        limits = {predicted["stack_low"], predicted["stack_high"]}
        assert [number(end) for end in row[7].split("-")] == sorted(limits)
        reserves = dict.fromkeys(predicted[end] for end in ("reserve_low", "reserve_high"))
        assert row[8] == "-".join(human_bytes(reserve) for reserve in reserves)
    bases = [line for line in text.splitlines() if line.startswith("basis ")]
    assert bases == [f"basis {row[9]} ({kernel} on {predicted['gpu']['name']}): {predicted['basis']}"
                     for row, predicted in zip(rows, data)]


@needs_readelf
def test_cubin_diff_shows_each_sections_sizes_as_readelf_reads_them(tmp_path, capsys):
    """The add sample at 4 and 8 warps: two real cubins of one kernel. `show` prints the sections table; read back
    cell by cell, each section's two sizes are its header's in readelf's listing of each cubin, the total is that of
    the sections the file holds, and the JSON that `show` prints says the same (and that the cubins differ)."""
    four, eight = (compile_sample("add", 90, num_warps=warps).asm["cubin"] for warps in (4, 8))
    result = diff_cubins(Cubin.from_bytes(four, label="w4"), Cubin.from_bytes(eight, label="w8"))
    format.show(result)
    shown = capsys.readouterr().out
    sections_table = shown.split(" sections ")[1].split(" kernel add_kernel ")[0]
    header, *rows = rich_cells(sections_table)
    assert header[:4] == ["section", "size A", "size B", "Δ"]
    *sections, total = rows
    sizes = {side: readelf_sections(cubin, tmp_path) for side, cubin in (("a", four), ("b", eight))}
    assert {row[0].removesuffix(" (no file bytes)") for row in sections} == set(sizes["a"]) == set(sizes["b"])
    for row in sections:
        name = row[0].removesuffix(" (no file bytes)")
        assert (number(row[1]), number(row[2])) == (sizes["a"][name][0], sizes["b"][name][0]), name
        assert number(row[3]) == sizes["b"][name][0] - sizes["a"][name][0]
    in_file = [sum(size for size, held in side.values() if held) for side in (sizes["a"], sizes["b"])]
    assert total[0] == "total (bytes in the file)" and [number(cell) for cell in total[1:3]] == in_file
    format.show(result, as_json=True)
    data = json.loads(capsys.readouterr().out)
    assert data["identical"] is False and [data["section_total"][side] for side in ("a", "b")] == in_file
    assert {s["name_a"]: (s["size_a"], s["size_b"]) for s in data["sections"]} == \
        {name: (size, sizes["b"][name][0]) for name, (size, _) in sizes["a"].items()}


@pytest.mark.release_independent  # formatting of given numbers: no Triton
def test_bytes_exact_and_counts():
    assert format.bytes_exact(-4_152_360_960) == "-3.9 GiB (-4,152,360,960 B)"
    assert format.bytes_exact(512) == "512 B" and format.count(None) == "-" and format.delta(3, 1) == "-2"
    assert format.size_ratio(0, 5) == "" and format.times(1.149) == "1.15x"


@pytest.mark.release_independent  # the progress lines of a loop that compiles nothing: no Triton
def test_progress_in_a_log_is_a_line_now_and_then_and_nothing_for_short_work():
    """A sweep running for minutes into a log file (no terminal: no bar) says how far it got, a line at most every
    `LOG_EVERY_S` and one at the end; work shorter than that writes nothing."""
    program = """
import sys, time
from tritonhook import format
format.progress.LOG_EVERY_S = float(sys.argv[1])
with format.progress(True, 4, "replay") as step:
    for index in range(4):
        time.sleep(0.4)
        step(f"kernel {index}")
"""
    def logged(every: float) -> list[str]:
        done = subprocess.run([sys.executable, "-c", program, str(every)], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stderr.splitlines()

    lines = logged(0.7)
    assert [line.split(" (")[0] for line in lines] == ["replay 2/4 kernel 1", "replay 4/4 kernel 3", "replay 4/4 done"]
    assert logged(60.0) == []
