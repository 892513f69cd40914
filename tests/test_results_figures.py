"""docs/results.md against its results files, and the README and docs against their house rules.

Each row of a results table names a figure, its value, the results file and where in that file the value is: a
JSON key path (`a/b/0/c`, list items by index, a key holding a slash taken whole) or, for a text file, `text: FRAGMENT` (a fragment of the file that
holds the value). A value read from a JSON number matches when it is that number rounded to the decimals written.
The README is a user's guide of at most 200 lines of at most 120 columns; no page of docs/ tells a session's
history or cites this project's issues. No GPU, no Triton: this reads text only."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.release_independent  # the repository's text

ROOT = Path(__file__).resolve().parents[1]
RESULTS_PAGE = ROOT / "docs" / "results.md"
ROW = re.compile(r"^\|(?P<figure>[^|]+)\|(?P<value>[^|]+)\|(?P<device>[^|]+)\|(?P<date>[^|]+)\|"
                 r"\s*`(?P<file>benchmarks/results/[\w.-]+)`\s*\|\s*`(?P<key>[^`]+)`\s*\|$")
NUMBER = re.compile(r"^-?[\d,]*\.?\d+$")
HISTORY = re.compile(r"machine start|earlier session|\bissue \d+|\bissues \d+ and \d+", re.I)


def rows() -> list[dict[str, str]]:
    found = []
    for number, line in enumerate(RESULTS_PAGE.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("|") and "`benchmarks/results/" in line:
            match = ROW.match(line)
            assert match, f"docs/results.md:{number}: a row without its six cells: {line[:100]}"
            found.append({k: v.strip() for k, v in match.groupdict().items()} | {"line": str(number)})
    return found


def lookup(path: Path, key: str):
    """The value a row's key names in its file: a JSON key path, or a text fragment that must be in the file."""
    if key.startswith("text:"):
        fragment = key[len("text:"):].strip()
        text = path.read_text(encoding="utf-8", errors="replace")
        if fragment not in text:
            raise KeyError(f"{fragment!r} is not in {path.name}")
        return Fragment(fragment)
    return walk(json.loads(path.read_text(encoding="utf-8")), key.split("/"))


def walk(value, parts: list[str]):
    """Follow a key path; a dict key that holds a slash itself (`ours/fa4`) is taken whole, longest first."""
    while parts:
        if isinstance(value, list):
            value, parts = value[int(parts[0])], parts[1:]
            continue
        for n in range(len(parts), 0, -1):
            if "/".join(parts[:n]) in value:
                value, parts = value["/".join(parts[:n])], parts[n:]
                break
        else:
            raise KeyError(parts[0])
    return value


class Fragment(str):
    """A piece of a text file: a value matches it when the piece holds it."""


def mismatch(value: str, found) -> str | None:
    """Why a written value does not match the one in its file, or None when it does."""
    if isinstance(found, Fragment):
        return None if value in found else f"{value!r} is not in {found!r}"
    if isinstance(found, str):
        return None if value == found else f"{value!r} against {found!r}"
    if isinstance(found, bool) or not isinstance(found, (int, float)):
        return None if value == str(found) else f"{value!r} against {found!r}"
    if not NUMBER.match(value):
        return f"{value!r} is not a number (the file holds {found!r})"
    decimals = len(value.split(".")[1]) if "." in value else 0
    written = float(value.replace(",", ""))
    if abs(written - found) > 0.5 * 10 ** -decimals + 1e-9:
        return f"{value} against {found!r} in the file"
    return None


def test_results_page_has_tables():
    assert len(rows()) >= 40


@pytest.mark.parametrize("row", rows(), ids=lambda row: f"line{row['line']}")
def test_every_figure_matches_its_results_file(row):
    path = ROOT / row["file"]
    assert path.is_file(), f"docs/results.md:{row['line']}: {row['file']} does not exist"
    try:
        found = lookup(path, row["key"])
    except (KeyError, IndexError, ValueError, TypeError) as error:
        pytest.fail(f"docs/results.md:{row['line']}: {row['key']} not in {row['file']}: {error}")
    why = mismatch(row["value"], found)
    assert why is None, f"docs/results.md:{row['line']}: {row['figure']}: {why}"


def test_a_wrong_figure_fails(tmp_path):
    data = tmp_path / "r.json"
    data.write_text(json.dumps({"runs": [{"ratio": 1.0446, "within": 7, "ours/fa4": [0.97]}], "note": "10 of 10"}))
    assert mismatch("0.970", lookup(data, "runs/0/ours/fa4/0")) is None
    assert mismatch("1.045", lookup(data, "runs/0/ratio")) is None
    assert mismatch("1.04", lookup(data, "runs/0/ratio")) is None
    assert mismatch("1.050", lookup(data, "runs/0/ratio")) is not None
    assert mismatch("10", lookup(data, "runs/0/within")) is not None
    assert mismatch("7", lookup(data, "runs/0/within")) is None
    assert mismatch("10", lookup(data, "note")) is not None
    assert mismatch("10 of 10", lookup(data, "note")) is None
    text = tmp_path / "r.txt"
    text.write_text("ratio 1.0000 [0.9966, 1.0003] no difference\n")
    assert mismatch("0.9966", lookup(text, "text: 1.0000 [0.9966, 1.0003]")) is None
    assert mismatch("0.9967", lookup(text, "text: 1.0000 [0.9966, 1.0003]")) is not None
    with pytest.raises(KeyError):
        lookup(text, "text: 1.0001 [0.9966")


def test_readme_is_short_and_narrow():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines"
    wide = [f"README.md:{n}: {len(line)} columns" for n, line in enumerate(lines, 1) if len(line) > 120]
    assert not wide, "\n".join(wide)


def test_docs_tell_no_session_history_nor_issue_numbers():
    found = [f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
             for page in sorted((ROOT / "docs").glob("*.md"))
             for text in [page.read_text(encoding="utf-8")] for m in HISTORY.finditer(text)]
    assert not found, "history belongs in git and CHANGELOG.md:\n" + "\n".join(found)
