"""Every file a user names and tritonhook reads, given as something that never ends: `/dev/zero` (a device whose
size reads 0 and whose reads never stop) and a FIFO with no writer (whose open waits for one). Each command must
refuse it in one line, quickly, without reading it: the real CLI in a real process, under a memory ceiling, so a
reader that slips through ends the test instead of the machine."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tritonhook.errors import TritonhookError
from tritonhook.files import read_input
from tritonhook.store import Store

DATA = Path(__file__).resolve().parent / "data"
PTX = DATA / "ffma_loop.ptx"
MEMORY_CEILING = 6 << 30
"""Address space a command may take: enough for Python, Triton and torch to import, far below what reading
`/dev/zero` to the end would take."""
SECONDS = 120


def _ceiling() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CEILING, MEMORY_CEILING))


def _tritonhook(*args, cwd: Path) -> subprocess.CompletedProcess:
    Store(cwd / "store")  # a real, empty store: the commands that need one find it
    return subprocess.run([sys.executable, "-m", "tritonhook", *map(str, args)], capture_output=True, text=True,
                          timeout=SECONDS, preexec_fn=_ceiling, cwd=cwd, stdin=subprocess.DEVNULL)


# Each entry: the command's arguments, `{X}` where the endless file goes (stores are folders in the test's own).
COMMANDS = {
    "rename PTX": ["rename", "{X}", "-o", "out.ptx"],
    "diff input": ["diff", "{X}", PTX],
    "diff control file": ["diff", PTX, PTX, "--variants", "plain,cutlass_+acf:{X}"],
    "ptxas-matrix PTX": ["ptxas-matrix", "{X}"],
    "ptxas-matrix control file": ["ptxas-matrix", PTX, "--options", "acf:{X}"],
    "decisions import": ["decisions", "import", "{X}", "--store", "store"],
    "run --apply": ["run", "--store", "store", "--apply", "{X}", "--", sys.executable, "-c", "pass"],
    "replay --recording": ["replay", "--store", "store", "--recording", "{X}"],
    "export-trace --recording": ["export-trace", "--store", "store", "--recording", "{X}", "-o", "trace.json"],
    "check --baseline": ["check", "--store", "store", "--baseline", "{X}", "--", sys.executable, "-c", "pass"],
    "report --memwatch": ["report", "--store", "store", "--memwatch", "{X}", "-o", "report.html"],
    "preflight cubin": ["preflight", "{X}"],
}


@pytest.fixture(params=["device", "fifo"])
def endless(request, tmp_path) -> tuple[Path, str]:
    """(path, the kind the refusal names): /dev/zero, or a FIFO nobody writes."""
    if request.param == "device":
        return Path("/dev/zero"), "character device"
    fifo = tmp_path / "endless.fifo"
    os.mkfifo(fifo)
    return fifo, "FIFO"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_endless_file_is_refused_in_one_line_without_reading_it(command, endless, tmp_path):
    path, kind = endless
    result = _tritonhook(*(str(arg).replace("{X}", str(path)) for arg in COMMANDS[command]), cwd=tmp_path)
    assert result.returncode not in (0, -9, 137), result
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if "error:" in line]  # argparse adds its usage lines
    assert len(errors) == 1 and str(path) in errors[0] and kind in errors[0], result.stderr


def test_read_input_reads_at_most_its_cap_plus_one(tmp_path):
    exact, over = tmp_path / "exact.bin", tmp_path / "over.bin"
    exact.write_bytes(b"x" * 4096)
    over.write_bytes(b"x" * 4097)
    assert read_input(exact, "cubin", limit=4096) == b"x" * 4096
    with pytest.raises(TritonhookError, match=r"over\.bin: over 4096 bytes, the most a cubin may be"):
        read_input(over, "cubin", limit=4096)
    with pytest.raises(TritonhookError, match="a folder, where the cubin must be a regular file"):
        read_input(tmp_path, "cubin")
    with pytest.raises(TritonhookError, match="cannot read the cubin"):
        read_input(tmp_path / "missing", "cubin")
