"""docs/results.md against its results files, and the README and docs against their house rules.

Each row of a results table names a figure, its value, the results file and where in that file the value is: a
JSON key path (`a/b/0/c`, list items by index, a key holding a slash taken whole) or `text: FRAGMENT` (a fragment of
the file that holds the value). A value read from a JSON number matches when it is that number rounded to the
decimals written. Every measured figure in the prose of the README and of docs/ is such a row's value, in a section
of docs/results.md that its page links to. The README is a user's guide of at most 200 lines of at most 120 columns;
no page of docs/ tells a session's history or cites this project's issues. No GPU, no Triton: this reads text only."""
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
HISTORY = re.compile(r"machine\s+start|earlier session|\bissue \d+|\bissues \d+ and \d+", re.I)


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


# Figures in the prose of the README and the manual pages. A figure is a number with a unit of time, size, speed or
# share (`4 µs`, `1.21x`, `3.8%`, `538 TFLOPS`, `1,168 B`), a ratio written with two or more decimals (`0.966`) or a
# count out of a total (`47 of 47`). Fenced code blocks (command output shown verbatim), inline code, link targets
# and version numbers are not prose. Each figure must be a value of a row of a docs/results.md section that the page
# links to (rounded as above), or match an entry of ALLOWED: a constant that no run measured.
PAGES = [ROOT / "README.md"] + [p for p in sorted((ROOT / "docs").glob("*.md")) if p != RESULTS_PAGE]
UNIT = r"(?:µs|us|ns|ms|s|min|h|%|pp|x|×|TFLOPS|GB/s|TB/s|KiB|MiB|GiB|KB|MB|GB|B|bytes)"
FIGURE = re.compile(r"(?<![\w./^])(?<![A-Za-z_]-)(?:[+\-−±~]?(?:\d[\d,]*(?:\.\d+)?[-–])?\d[\d,]*(?:\.\d+)?[  ]?"
                    + UNIT + r"(?![\w/])(?<![x×](?=[  ]?\d))"
                    r"|\d[\d,]* of \d[\d,]*(?![\d,]*\.?\d)|\d*\.\d{2,}(?![\d.]*\d|\w)"
                    r"|(?<=[\s(][x×])\d+\.\d+(?![\d.]*\d|\w)|\d[\d,]* (?:instructions|cycles|ULPs)\b)")
DIGITS = re.compile(r"\d[\d,]*(?:\.\d+)?")
NOT_PROSE = re.compile(r"`[^`]*`|\]\([^)]*\)|<[^>]+>|\b(?:sm|SM|compute)_?\d+\w*"
                       r"|\b(?:Python|Triton|triton|torch|CUDA|cu|ptxas|nvcc|ISA|PTX|driver|release|version|"
                       r"Liger-Kernel|TritonParse|rich|FlashAttention|cuDNN|CuTe DSL|cuTile|[Tt]ransformers)"
                       r"[ =<>~v-]*\d+(?:\.\d+)+\+?\w*(?:[ ,/]+(?:and |to |or )?\d+\.\d+(?:\.\d+)?)*"
                       r"|\b\d+\.\d+\.\d+\w*")
SECTION_LINK = re.compile(r"(?<![\w/])(?:docs/)?results\.md#([\w-]+)")
# A constant of the tool or of a setting, not a measurement: (a pattern of the text around it, why it is allowed).
ALLOWED = [
    (r"95% (?:confidence )?interval|95%-interval|at 95%|alpha 0\.05", "the level the intervals are computed at"),
    (r"within ±?10%|±10%|beyond 10%|10% of (?:its|their)", "the fidelity tolerance the sweep reports against"),
    (r"(?:making|covering|make|makes) (?:up )?90% of|(?:the|its|that) 90%", "the GPU time the fidelity set covers"),
    (r"spanning \d+x the L2", "the span of the replay's input copies, a constant of the code"),
    (r"(?:making|covering) 80% of", "the share of GPU time `tune` searches by default"),
    (r"`config\.[\w.]+`[,:=( ]*(?:default )?[\d.,]+ ?(?:%|[KMG]i?B|ms|s)(?!\w)", "a setting, its default beside it"),
    (r"\(?default [\d.]+ ?%?", "a setting's default, documented beside it"),
    (r"the bar is [≤≥] ?[\d.]+%|the target of [\d.]+|[Tt]arget: under [\d.]+ s to open, under [\d.]+ MB",
     "a test's or a benchmark's pass bar"),
    (r"(?:over|more than|at most|budget \(|budget of) \d+ [KMG]iB", "a size limit the code enforces"),
    (r"\(1024 B in a fresh context\)", "the driver's default stack limit"),
    (r"~14\.6 KB per thread", "the driver routine's frame as publicly reported, a constant of preflight's table"),
    (r"\d+ ms warm-up|at least \d+ ms of calls", "the timer's warm-up and minimum timed span"),
    (r"in \d+ s phases|every \d+ ms", "a benchmark's phase length and sampling interval"),
    (r"0\.5% (?:threshold|smallest effect)", "`ab`'s default smallest effect"),
    (r"H100 80GB HBM3", "the GPU's product name"),
    (r"shared memory per block: [\d,]+ B", "the architecture's limit, from NVIDIA's documentation"),
]


def slug(heading: str) -> str:
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", heading.strip().lower()))


def section_values() -> dict[str, list[str]]:
    """Each results.md section's slug and every number in its rows' value cells."""
    found: dict[str, list[str]] = {}
    current = ""
    for line in RESULTS_PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            current = slug(line[3:])
            found[current] = []
        elif line.startswith("|") and "`benchmarks/results/" in line and (match := ROW.match(line)):
            found[current] += DIGITS.findall(match["value"])
    return found


def prose_figures(text: str):
    """(line number, figure, the line) for each figure outside fenced code blocks, inline code and allowed phrases."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            continue
        prose = line
        for pattern, _why in ALLOWED:
            prose = re.sub(pattern, lambda m: " " * len(m.group(0)), prose)
        prose = NOT_PROSE.sub(lambda m: " " * len(m.group(0)), prose)
        for match in FIGURE.finditer(prose):
            yield number, match.group(0), line


def in_rows(figure: str, values: list[str]) -> bool:
    """Every number of the figure is a row's value, rounded to the decimals written."""
    for digits in DIGITS.findall(figure):
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        written = float(digits.replace(",", ""))
        if not any(abs(written - float(v.replace(",", ""))) <= 0.5 * 10 ** -decimals + 1e-9 for v in values):
            return False
    return True


def untraced(page: Path, text: str, sections: dict[str, list[str]]) -> list[str]:
    linked = [v for anchor in SECTION_LINK.findall(text) for v in sections.get(anchor, [])]
    return [f"{page.relative_to(ROOT)}:{number}: {figure!r} in: {line.strip()[:100]}"
            for number, figure, line in prose_figures(text) if not in_rows(figure, linked)]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_figure_in_the_readme_and_docs_is_a_results_row(page):
    found = untraced(page, page.read_text(encoding="utf-8"), section_values())
    assert not found, ("a measured figure in prose must be a value of a docs/results.md row in a section the page "
                       f"links to ({len(found)} are not):\n" + "\n".join(found))


def test_a_figure_without_its_row_fails():
    sections = section_values()
    anchor = next(a for a, values in sections.items() if "4.400" in values)
    page = ROOT / "docs" / "sweep.md"
    linked = f"Measured: [results](results.md#{anchor}).\n"
    assert not untraced(page, linked + "The build took 4.4 s.\n", sections)
    assert untraced(page, linked + "The build took 4.7 s, a ratio of 0.987, 12 of 13 within.\n", sections)
    assert len(untraced(page, "The build took 4.4 s.\n", sections)) == 1  # the value, but no link to its section
    assert not untraced(page, "```\nbuild 4.7 s\n```\nPython 3.10, Triton 3.6.0, sm_90a, `--budget 4m`.\n", sections)
    assert not untraced(page, "Each ratio comes with its 95% interval.\n", sections)
    assert untraced(page, "The best ACF ran x0.992; the loop lost 12 instructions, 1,200 cycles.\n", sections)
    assert not untraced(page, "ISA 8.7→9.4, CUDA 12.8.93, 2 × 128 columns, `SEED=1`.\n", sections)


def test_every_allowed_constant_is_still_written_somewhere():
    """An entry no page needs any more leaves the allow-list, so that the list stays short and each entry true."""
    text = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
    unused = [pattern for pattern, why in ALLOWED if not why or not re.search(pattern, text)]
    assert not unused, f"allow-list entries no page uses (or without a reason): {unused}"
