"""Results render themselves: rich renderables through `__rich_console__` and `to_json()`, printed by the one
`format.show`. Checked on real cubins (a Triton sample compiled for sm_120a with no GPU), with readelf as the
independent reference for the kernel's name."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from rich.console import Console

from tritonhook import format, preflight
from tritonhook.cubin import Cubin
from tritonhook.diff import diff_cubins
from tritonhook.samples import compile_sample


@pytest.fixture(scope="module")
def tma_cubin() -> bytes:
    return compile_sample("tma_copy", 120).asm["cubin"]


def rendered(result) -> str:
    console = Console(record=True, width=200, highlight=False)
    console.print(result, crop=False)
    return console.export_text()


def test_preflight_report_renders_itself_and_to_json(tma_cubin, tmp_path):
    cubin = Cubin.from_bytes(tma_cubin, label="tma")
    report = preflight.PreflightReport([preflight.SourcedPrediction(None, None, p)
                                        for p in preflight.predict_cubin(cubin)])
    text = rendered(report)
    if shutil.which("readelf"):
        path = tmp_path / "k.cubin"
        path.write_bytes(tma_cubin)
        symbols = subprocess.run(["readelf", "-sW", str(path)], capture_output=True, text=True).stdout
        [kernel] = [line.split()[-1] for line in symbols.splitlines()
                    if " FUNC " in line and "GLOBAL" in line and not line.split()[-1].startswith("__cuda")]
        assert kernel in text
    assert (", ".join(cubin.syscalls) or "-") in text
    bases = [line for line in text.splitlines() if line.startswith("basis ")]
    assert len(bases) == len({p.prediction.basis for p in report.predictions}) > 0
    data = json.loads(json.dumps(report.to_json()))
    assert data and all(row["capture_id"] is None and row["specialization"] == "-" for row in data)


def test_cubin_diff_renders_through_show(tma_cubin, capsys):
    result = diff_cubins(Cubin.from_bytes(tma_cubin, label="a"), Cubin.from_bytes(tma_cubin, label="b"))
    format.show(result)
    assert capsys.readouterr().out.startswith("identical: a and b are the same cubin")
    format.show(result, as_json=True)
    assert json.loads(capsys.readouterr().out)["identical"] is True


def test_bytes_exact_and_counts():
    assert format.bytes_exact(-4_152_360_960) == "-3.9 GiB (-4,152,360,960 B)"
    assert format.bytes_exact(512) == "512 B" and format.count(None) == "-" and format.delta(3, 1) == "-2"
    assert format.size_ratio(0, 5) == "" and format.times(1.149) == "1.15x"


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
