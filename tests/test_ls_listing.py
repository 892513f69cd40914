"""`tritonhook ls` as a script reads it (stdout a pipe: plain aligned text, no rich), its keyset pages (`--after`,
`--before`, `Store.page`), and what `tritonhook --version` and `ls` leave unimported. CPU only, synthetic stores (no
compile); nothing here is timed: the speed targets live in benchmarks/store_scale.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from tritonhook.format import human_bytes
from tritonhook.store import NewCapture, Store

from rich_tables import rich_cells

pytestmark = pytest.mark.release_independent  # synthetic stores, no compile; what tritonhook's commands import

ARCHS = ("sm_90a", "sm_100a", "sm_120a")
COLUMNS = ["id", "time", "event", "frontend", "kernel (PTX entry)", "specialization", "arch", "ptxas", "ptx", "cubin",
           "compile s"]


def tritonhook(*args, env=None, check=True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "tritonhook", *map(str, args)], capture_output=True, text=True,
                            env=env, timeout=120)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def synthetic(i: int) -> NewCapture:
    """Capture i (from 0): seven kernel names, every fifth renamed `cutlass_`, every sixth without a ptxas version,
    every ninth with a PTX alone, every other without a specialization."""
    name = f"kernel_{i % 7}"
    return NewCapture(
        event="cache_hit" if i % 4 == 0 else "compile", frontend="triton", kernel=name,
        entry=f"cutlass_{name}" if i % 5 == 0 else name, original_entry=name, src_file="k.py", src_line=3,
        arch=ARCHS[i % 3], frontend_version="3.6.0", ptxas_path=None, ptxas_version=None if i % 6 == 0 else "12.8",
        triton_hash=f"h{i}", options={"num_warps": 4}, metadata={"name": name},
        times={"ttir": 0.01 * i, "ptx": 0.25}, specialization="fp16 BLOCK=64" if i % 2 else "",
        artifacts={"ptx": b"p" * (40 * i + 1)} if i % 9 == 0 else {"ptx": b"p" * (40 * i + 1), "cubin": b"c" * 3000 * i})


@pytest.fixture
def store(tmp_path):
    made = Store(tmp_path / "store")
    made.add_many(synthetic(i) for i in range(23))
    made.close()
    return tmp_path / "store"


def expected_row(capture: dict) -> list[str]:
    """The cells `ls` showed for a capture before it had a plain listing, from its JSON record."""
    entry = capture["entry"]
    kernel = entry if entry == capture["original_entry"] else f"{entry} (was {capture['original_entry']})"
    size = {stage: human_bytes(a["size"]) for stage, a in capture["artifacts"].items()}
    return [str(capture["id"]), time.strftime("%H:%M:%S", time.localtime(capture["created"])), capture["event"],
            f"triton {capture['frontend_version']}", kernel, capture["specialization"] or "-", capture["arch"],
            capture["ptxas_version"] or "-", size.get("ptx", "-"), size.get("cubin", "-"),
            f"{sum(capture['times'].values()):.2f}"]


def plain_cells(text: str) -> list[list[str]]:
    """The plain listing's lines split into cells (no cell of this data is empty or holds two spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines()]


def test_ls_piped_is_plain_text_with_the_rows_and_columns_of_the_table(store):
    listed = json.loads(tritonhook("ls", "--store", store, "-n", "12", "--json").stdout)
    piped = tritonhook("ls", "--store", store, "-n", "12")
    assert not re.search(r"[\x1b┃│━─]", piped.stdout)  # no rich: no escape code, no box
    assert piped.stdout.splitlines()[0].split("  ")[0].strip() == "id"
    rows = plain_cells(piped.stdout)
    assert rows[0] == COLUMNS
    assert rows[1:] == [expected_row(capture) for capture in listed]
    assert [row[0] for row in rows[1:]] == [str(i) for i in range(12, 24)]
    assert piped.stderr == "showing newest 12 of 23; --all for every row\n"
    renamed = next(row for row in rows[1:] if row[0] == "21")
    assert renamed[4] == "cutlass_kernel_6 (was kernel_6)" and renamed[6] == "sm_120a"
    assert next(row for row in rows[1:] if row[0] == "19")[7:10] == ["-", "721 B", "-"]  # no ptxas, PTX alone

    # On a terminal (TTY_COMPATIBLE=1 is rich's own switch): the rich table, bold header, the same cells.
    env = dict(os.environ, TTY_COMPATIBLE="1", TERM="xterm-256color")
    drawn = tritonhook("ls", "--store", store, "-n", "12", env=env)
    assert "\x1b[1m" in drawn.stdout and rich_cells(re.sub(r"\x1b\[[0-9;]*m", "", drawn.stdout)) == rows
    assert drawn.stderr == piped.stderr


def test_ls_piped_right_aligns_the_numbers_and_keeps_the_empty_and_filtered_notes(store):
    lines = tritonhook("ls", "--store", store, "-n", "20").stdout.splitlines()
    assert len({len(line) for line in lines}) == 1  # the last column (compile s) flush right, no trailing space
    assert lines[0].startswith("id  time") and lines[1].startswith(" 4  ") and lines[-1].startswith("23  ")
    assert tritonhook("ls", "--store", store, "--arch", "sm_90").stdout.count("sm_90a") == 8
    assert tritonhook("ls", "--store", store, "--arch", "sm_100f").stdout == \
        "no captures for sm_100f; did you mean sm_100a?\n"


def ids(result: subprocess.CompletedProcess) -> list[int]:
    return [capture["id"] for capture in json.loads(result.stdout)]


def test_ls_after_walks_the_store_page_by_page(store):
    pages, after = [], 0
    while True:
        page = tritonhook("ls", "--store", store, "--after", after, "-n", "10")
        if page.stdout.startswith("no captures"):
            assert page.stdout == f"no captures after id {after}\n"
            break
        cells = [int(row[0]) for row in plain_cells(page.stdout)[1:]]
        pages.append(cells)
        assert ids(tritonhook("ls", "--store", store, "--after", after, "-n", "10", "--json")) == cells
        hint = page.stderr.strip()
        if len(pages) < 3:
            assert hint == f"showing 10 of {23 - after} after id {after}; next page: --after {cells[-1]}"
        else:
            assert hint == ""
        after = cells[-1]
    assert pages == [list(range(1, 11)), list(range(11, 21)), [21, 22, 23]]


def test_ls_before_goes_back_from_the_newest_page(store):
    newest = tritonhook("ls", "--store", store, "-n", "10")
    assert [int(row[0]) for row in plain_cells(newest.stdout)[1:]] == list(range(14, 24))
    older = tritonhook("ls", "--store", store, "--before", 14, "-n", "10")
    assert [int(row[0]) for row in plain_cells(older.stdout)[1:]] == list(range(4, 14))
    assert older.stderr == "showing 10 of 13 before id 14; next page: --before 4\n"
    oldest = tritonhook("ls", "--store", store, "--before", 4, "-n", "10", "--json")
    assert ids(oldest) == [1, 2, 3] and oldest.stderr == ""


def test_ls_pages_with_filters(store):
    """sm_90a captures are ids 1, 4, 7, ...; kernel_3 is captures 3, 10, 17 (ids 4, 11, 18), and only its entry
    names 'cutlass_kernel_3' for capture 10 (id 11)."""
    assert ids(tritonhook("ls", "--store", store, "--arch", "sm_90", "--after", 4, "-n", "3", "--json")) == [7, 10, 13]
    paged = tritonhook("ls", "--store", store, "--arch", "sm_90", "--after", 4, "-n", "3")
    assert paged.stderr == "showing 3 of 6 after id 4; next page: --after 13\n"
    assert ids(tritonhook("ls", "--store", store, "--kernel", "_3$", "--after", 4, "--json")) == [11, 18]
    assert ids(tritonhook("ls", "--store", store, "--kernel", "^cutlass_", "--before", 16, "--json")) == [1, 6, 11]
    assert tritonhook("ls", "--store", store, "--kernel", "_3$", "--before", 4).stdout == \
        "no captures before id 4\n"
    both = tritonhook("ls", "--store", store, "--after", 1, "--before", 9, check=False)
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    negative = tritonhook("ls", "--store", store, "--after", -1, check=False)
    assert negative.returncode == 2 and negative.stderr == \
        "tritonhook: error: --after -1: give a capture id (0 or more)\n"


@pytest.mark.parametrize("kernel", [None, "kernel", "_[25]$", "^cutlass_kernel_[0-4]", "^kernel_6$", "nothing"])
@pytest.mark.parametrize("arch", [None, "sm_100"])
def test_store_page_is_a_slice_of_captures(store, kernel, arch):
    """Every page and count equals what `captures` with the same filters gives, sliced by id (the kernel regex
    'kernel' matches every name: the listing then drops the name clause)."""
    reader = Store(store, readonly=True)
    every = reader.captures(kernel=kernel, arch=arch)
    for bound in (0, 5, 12, 23):
        above = [c for c in every if c.id > bound]
        below = [c for c in every if c.id < bound]
        assert reader.page(kernel=kernel, arch=arch, after=bound, limit=4) == above[:4]
        assert reader.page(kernel=kernel, arch=arch, before=bound, limit=4) == below[-4:]
        assert reader.page_count(kernel=kernel, arch=arch, after=bound) == len(above)
        assert reader.page_count(kernel=kernel, arch=arch, before=bound) == len(below)
    assert reader.page(kernel=kernel, arch=arch, limit=4) == every[-4:]
    assert reader.page(kernel=kernel, arch=arch) == every
    assert reader.page_count(kernel=kernel, arch=arch) == len(every)


def test_the_distinct_names_by_seeks_and_by_the_walk_agree(store):
    reader = Store(store, readonly=True)
    conn = reader._connection()
    for column in ("kernel", "entry"):
        walked = sorted(name for (name,) in conn.execute(f"SELECT DISTINCT {column} FROM captures"))
        assert sorted(reader._distinct(conn, column)) == walked and len(walked) >= 7
        assert sorted(reader._distinct(conn, column, seeks=3)) == walked  # past 3 seeks: the walk


HEAVY = ("rich", "triton", "torch", "jinja2", "matplotlib", "numpy")


def _imported_by(argv: list[str], modules, env=None) -> tuple[list[str], str]:
    """Which of `modules` a `tritonhook ARGV` run (in-process, through the console script's `main`) imported that
    Python had not imported at start-up (site's .pth files may import some)."""
    code = (f"import sys; started = set(sys.modules); import json; sys.argv = ['tritonhook', *{argv!r}]; "
            f"from tritonhook.cli import main; main(); sys.stdout.flush(); sys.stderr.write(json.dumps(sorted("
            f"m for m in {list(modules)!r} if m in sys.modules and m not in started)) + '\\n')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stderr.splitlines()[-1]), done.stdout


def test_version_imports_neither_rich_nor_triton_nor_torch_nor_the_store_nor_memwatch():
    from tritonhook import __version__

    imported, out = _imported_by(["--version"], HEAVY + ("sqlite3", "tritonhook.store", "tritonhook.ptx_capture",
                                                         "argparse", "importlib.abc", "tritonhook.memwatch",
                                                         "tritonhook.mem", "pynvml"))
    assert (imported, out) == ([], f"tritonhook {__version__}\n")
    assert tritonhook("--version").stdout == out


def test_ls_piped_imports_neither_rich_nor_triton_nor_torch(store):
    imported, out = _imported_by(["ls", "--store", str(store)], HEAVY + ("tritonhook.ptx_capture",
                                                                        "tritonhook._triton"))
    assert imported == [] and out.splitlines()[0].startswith("id  ")
    on_terminal, _ = _imported_by(["ls", "--store", str(store)], ("rich",), env=dict(os.environ, TTY_COMPATIBLE="1"))
    assert on_terminal == ["rich"]


def test_the_capture_core_is_wired_whichever_way_it_is_imported():
    """`import tritonhook` no longer imports the capture core; importing it (directly, or through the package's
    lazy names) still registers preflight's checker and the decisions applier, once."""
    code = ("import sys, tritonhook; assert 'tritonhook.ptx_capture' not in sys.modules; "
            "import tritonhook.ptx_capture as p; assert tritonhook.enable is p.enable; "
            "print([f.__name__ for f in p.LISTENER_FACTORIES], [f.__name__ for f in p.APPLIERS], "
            "tritonhook.Store.__name__, tritonhook.memwatch.__name__, tritonhook.memwatch.watch.__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout == "['_preflight_checker'] ['_decision_applier'] Store tritonhook.memwatch watch\n", done.stderr
