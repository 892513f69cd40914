"""benchmarks/README.md's index of results files against the folder: every results file indexed once, with its
device, the figures it backs, the command that remakes it and a date; every indexed file there; a scripts' name
in a command kept in the tree. A results file added without its row, or a row left for a file removed, fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.release_independent  # the repository's text

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DATES = r"\d{4}-\d{2}-\d{2}(?:, \d{4}-\d{2}-\d{2})*"
ROW = re.compile(rf"^\| `benchmarks/results/([^`]+)` \| ([^|]+) \| (.+) \| (.+) \| ({DATES}) \|$")


def _rows() -> dict[str, tuple[str, str, str, str]]:
    rows: dict[str, tuple[str, str, str, str]] = {}
    for line in (ROOT / "benchmarks" / "README.md").read_text().splitlines():
        if line.startswith("| `benchmarks/results/"):
            match = ROW.match(line)
            assert match, f"a row without its five cells: {line[:120]}"
            name, *cells = match.groups()
            assert name not in rows, f"{name}: indexed twice"
            rows[name] = tuple(cell.strip() for cell in cells)
    return rows


def test_every_results_file_is_indexed_once_and_every_row_names_a_file_there():
    rows = _rows()
    files = {path.name for path in RESULTS.iterdir()}
    assert sorted(files - set(rows)) == [], "results files missing from benchmarks/README.md"
    assert sorted(set(rows) - files) == [], "rows naming no file in benchmarks/results"


def test_each_rows_device_is_the_files_own():
    """A file named for a device (`_h100`, `_h200`, `_cpu`) is indexed on it; one that names the other GPU in its
    text too is indexed as both."""
    for name, (device, *_) in _rows().items():
        text = (RESULTS / name).read_text(errors="replace")
        stem = Path(name).stem
        if stem.endswith("_cpu"):
            assert device.startswith("CPU"), name
        elif stem.endswith("_h100"):
            assert "H100" in device, name
        elif stem.endswith("_h200"):
            assert "H200" in device and ("H100" not in device or "H100" in text), name
        if "H100" in text and "H200" in text:
            assert "H100" in device and "H200" in device, name


def test_the_scripts_a_command_names_are_kept():
    for name, (_, _, command, _) in _rows().items():
        for script in re.findall(r"benchmarks/[\w/]+\.(?:py|sh)", command):
            assert (ROOT / script).is_file(), f"{name}: its command names {script}, not in the tree"


def test_the_scripts_a_results_file_names_are_kept():
    """A results file's own command (the workload it ran, the script that wrote it) names this tree's files as they
    are now: a script renamed since leaves its figures without the command that remakes them."""
    for path in sorted((ROOT / "benchmarks" / "results").iterdir()):
        text = path.read_text(encoding="utf-8", errors="replace")
        for script in sorted(set(re.findall(r"benchmarks/[\w/]+\.(?:py|sh)", text))):
            assert (ROOT / script).is_file(), f"{path.name}: names {script}, not in the tree"
