"""Every citation of a docs file names a file and an anchor that exist, no file cites the removed docs/notes.md or a
section number of it, and every cited results file exists.

Docs are cited as `docs/X.md` or `docs/X.md#anchor` anywhere in the tracked text files, and as relative links
`(X.md#anchor)` / `(#anchor)` inside docs/. An anchor is a heading's GitHub slug (lowercase; punctuation other than
'-' and '_' dropped; spaces to '-'; a repeated slug gets -1, -2, ...) or an explicit `<a id="...">` / `<a name="...">`.
A results file removed from the tree is cited as "results file in commit SHA: benchmarks/results/NAME" (read with
`git show`), which is not checked here. No GPU, no Triton: this reads text only."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.release_independent  # the repository's text

ROOT = Path(__file__).resolve().parents[1]
SELF = "tests/test_doc_links.py"  # names the forms it checks for
TEXT = {".py", ".md", ".sh", ".c", ".txt", ".ptx", ".cfg", ".toml", ".yml", ".yaml", ".h", ".in"}
DOC_CITE = re.compile(r"(?<![\w/.-])docs/([\w.-]+\.md)(?:#([\w-]+))?")
RELATIVE = re.compile(r"\]\((?!https?:)([\w./-]*\.md)?(?:#([\w-]+))?\)")
RESULT = re.compile(r"(?<![\w/.-])benchmarks/results/[\w.-]+\.(?:json|txt|csv)")
FROM_COMMIT = re.compile(r"in commit [0-9a-f]{7,40}:\s*`?$")
NOTES = re.compile(r"notes\.md|(?:NOTES|notes)[ \t]*§")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
EXPLICIT = re.compile(r"<a\s+(?:id|name)=[\"']([^\"']+)[\"']")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a clone (CI runs from one)")
    names = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    return [n for n in names if Path(n).suffix in TEXT and (ROOT / n).is_file()
            and not n.startswith("benchmarks/results/") and n != SELF]


def slug(heading: str) -> str:
    """GitHub's heading anchor: markup and punctuation dropped, lowercase, spaces to hyphens."""
    text = re.sub(r"<[^>]+>", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    found, seen = set(), {}
    for heading in HEADING.findall(text):
        base = slug(heading)
        n = seen.get(base, 0)
        found.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    found.update(EXPLICIT.findall(text))
    return found


def read(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8", errors="replace")


def test_slug_follows_github():
    assert slug("The `cutlass` name path") == "the-cutlass-name-path"
    assert slug("K/V blocks in falling order") == "kv-blocks-in-falling-order"
    assert slug("Inductor's autotuning in a recording") == "inductors-autotuning-in-a-recording"
    assert slug("The fp8 tile at D=128") == "the-fp8-tile-at-d128"


def test_every_cited_doc_and_anchor_exists():
    cache: dict[Path, set[str]] = {}
    missing = []
    for name in tracked():
        text = read(name)
        cites = [(ROOT / "docs" / f, a, m.start()) for m in DOC_CITE.finditer(text) for f, a in [m.groups()]]
        if name.startswith("docs/") and name.endswith(".md"):
            for m in RELATIVE.finditer(text):
                target, anchor = m.groups()
                if target is None and anchor is None:
                    continue
                cites.append(((ROOT / name).parent / target if target else ROOT / name, anchor, m.start()))
        for path, anchor, pos in cites:
            line = text.count("\n", 0, pos) + 1
            if not path.is_file():
                missing.append(f"{name}:{line}: {path.relative_to(ROOT)} does not exist")
            elif anchor and anchor not in cache.setdefault(path, anchors(path)):
                missing.append(f"{name}:{line}: no anchor #{anchor} in {path.relative_to(ROOT)}")
    assert not missing, "\n".join(missing)


def test_nothing_cites_the_removed_notes():
    cites = [f"{name}:{read(name).count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
             for name in tracked() for m in NOTES.finditer(read(name))]
    assert not cites, "docs/notes.md was split into topic docs (run the cite rewrite):\n" + "\n".join(cites)


def test_every_cited_results_file_exists():
    missing = []
    for name in tracked():
        text = read(name)
        for m in RESULT.finditer(text):
            if FROM_COMMIT.search(text[max(0, m.start() - 60):m.start()]):
                continue
            if not (ROOT / m.group(0)).is_file():
                missing.append(f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}")
    assert not missing, "\n".join(missing)
