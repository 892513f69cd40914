"""`tritonhook bisect` on the CPU: kernels compiled and captured under Triton 3.6.0, searched over the releases
tritonhook supports (3.6.0, 3.7.1, 3.8.0, 3.9.0) for the first whose build of each differs, and the answer checked
against each release compiling the same kernels directly (their `.text` hashes, in a process of its own).

The release virtualenvs are never downloaded here: scripts/test-matrix.sh points $TRITONHOOK_RELEASES_DIR at links
to its own; without all of them the tests that need them skip. The subjects (tests/release_subjects.py), their
capture, their bisect and each release's own compile of them (fixtures `bisect_subjects`, `releases`, `bisected`,
`direct_builds`) are tests/conftest.py's, shared with the report's tests and tests/test_bisect_timing.py."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from release_subjects import BISECT_COMPILES

from tritonhook import cli, config

from tritonhook import binaries as tools
from tritonhook.upgrade.bisect import FAILED, NO_CHANGE, BisectResult
from tritonhook.upgrade.result import BASELINE, BOTH, PTX_ONLY, PTXAS_ONLY

pytestmark = pytest.mark.release_independent  # the other releases run in their own virtualenvs; one run suffices
FIRST, LAST = config.upgrade.SUPPORTED_RELEASES[0], config.upgrade.SUPPORTED_RELEASES[-1]


@pytest.fixture(scope="module")
def direct(direct_builds) -> dict[str, dict[str, str | None]]:
    """The independent measure (conftest's `direct_builds`): release -> kernel -> `.text` hash of the release's own
    compile (None: refused)."""
    return {release: {name: built and built["text_sha256"] for name, built in kernels.items()}
            for release, kernels in direct_builds.items()}


def _first_differing(direct: dict, name: str) -> str | None:
    """The first release whose own compile of `name` is not the oldest release's, in release order."""
    return next((r for r in config.upgrade.SUPPORTED_RELEASES[1:] if direct[r][name] != direct[FIRST][name]), None)


def _kernel(result: BisectResult, name: str):
    return next(k for k in result.kernels if k.kernel == name)


def test_the_first_differing_release_is_the_one_each_release_builds_itself(bisected, direct, bisect_subjects):
    """The known answer (each release compiling the kernels itself): the scale kernel's SASS for sm_90 moves at 3.9
    alone, the softmax's at 3.8, the steady kernel (sm_80) never, and 3.9 refuses tl.advance."""
    store = bisect_subjects[0]
    known = {name: _first_differing(direct, name) for name in BISECT_COMPILES}
    assert known == {"scale_kernel": "3.9.0", "softmax_kernel": "3.8.0", "steady_kernel": None,
                     "advance_kernel": "3.9.0"}
    for name, first in known.items():
        found = _kernel(bisected, name)
        captured = store.get(found.capture_id)
        assert _text_sha256(store.read(captured, "cubin"), captured.entry) == direct[FIRST][name]
        assert found.first_differing == first, (name, [s.text() for s in found.path])
        # every step's verdict is what that release's own compile says
        for step in found.path:
            own = direct[step.release][name]
            assert step.verdict == (FAILED if own is None else "same" if own == direct[FIRST][name] else "differs")


def test_the_search_takes_at_most_log2_n_plus_one_rebuilds(bisected):
    after = len(config.upgrade.SUPPORTED_RELEASES) - 1
    for found in bisected.kernels:
        assert found.rebuilds == len(found.path) <= found.bound == math.ceil(math.log2(after)) + 1
        assert found.path[0].release == LAST  # --to first: unchanged there, one rebuild says so
    assert _kernel(bisected, "steady_kernel").rebuilds == 1


def test_a_kernel_identical_across_the_releases_is_no_change(bisected):
    steady = _kernel(bisected, "steady_kernel")
    assert steady.first_differing is None and steady.split == NO_CHANGE and steady.cells == {}
    assert steady.path[0].verdict == "same" and steady.path[0].delta.sass_identical


def test_the_split_is_what_the_cells_between_the_two_releases_say(bisected, releases):
    """At 3.9 the scale kernel's move is ptxas 13.4's: 3.8's PTX assembled by 3.9's ptxas gives 3.9's SASS change,
    the PTX 3.9 writes assembled by 3.8's ptxas does not. The cells are built against 3.8's own build."""
    scale = _kernel(bisected, "scale_kernel")
    assert (scale.previous, scale.first_differing) == ("3.8.0", "3.9.0")
    assert set(scale.cells) == {BASELINE, PTXAS_ONLY, PTX_ONLY, BOTH}
    assert not scale.cells[PTXAS_ONLY].delta.sass_identical and scale.cells[PTX_ONLY].delta.sass_identical
    assert scale.split == "ptxas"
    # the ptxas cell again, by hand: 3.8's PTX through 3.9's ptxas with 3.9's flags
    ptx = (Path(scale.cells[BASELINE].variant) / "kernel.ptx").read_text()
    metadata = json.loads((Path(scale.cells[BOTH].variant) / "metadata.json").read_text())
    blackwell = next(releases["3.9.0"].parents[1].glob("lib/python*/site-packages/triton/backends/nvidia/bin/"
                                                       "ptxas-blackwell"))
    again = tools.assemble(ptx, str(blackwell), "sm_90a", tools.triton_ptxas_args(metadata, (3, 9))).cubin
    assert _text_sha256(again, "scale_kernel") == _text_sha256(
        (Path(scale.cells[PTXAS_ONLY].variant) / "kernel.cubin").read_bytes(), "scale_kernel")
    softmax = _kernel(bisected, "softmax_kernel")
    assert (softmax.previous, softmax.first_differing) == ("3.7.1", "3.8.0")
    moved = {axis: not softmax.cells[cell].delta.sass_identical for axis, cell in (("PTX", PTX_ONLY),
                                                                                   ("ptxas", PTXAS_ONLY))}
    assert softmax.split == ("both" if all(moved.values()) or not any(moved.values())
                             else next(axis for axis, did in moved.items() if did))


def test_a_release_that_refuses_the_kernel_differs_with_its_error(bisected):
    advance = _kernel(bisected, "advance_kernel")
    assert advance.first_differing == "3.9.0" and advance.split == FAILED
    assert advance.path[0].verdict == FAILED and "advance" in advance.path[0].error
    assert "advance" in advance.note


def test_the_result_is_saved_and_renders(bisected, bisect_subjects):
    (saved,) = [r for r in bisect_subjects[0].results("bisect") if r.id == bisected.id]
    assert saved.to_json() == bisected.to_json()
    assert BisectResult.from_json(json.loads(json.dumps(bisected.to_json()))).to_json() == bisected.to_json()
    from rich.console import Console

    screen = Console(width=300, record=True)
    screen.print(bisected)
    text = screen.export_text()
    assert re.search(r"scale_kernel .* 3\.9\.0 differs \(regs 16, .* 3\.9\.0 +│ ptxas +│ 2 \(≤ 3\)", text), text
    assert re.search(r"^│ +│ +│ 3\.8\.0 same \(regs 16, SASS identical\) .* 3\.8\.0 PTX, 3\.9\.0 ptxas: regs 16",
                     text, re.MULTILINE), text
    assert re.search(r"steady_kernel .* 3\.9\.0 same .* no change", text), text


def test_the_command_prints_json(bisect_subjects, releases, capsys):
    store = str(bisect_subjects[0].path)
    assert cli.main(["bisect", "--store", store, "--kernel", "steady", "--from", FIRST, "--to", LAST,
                     "--releases", ",".join(reversed(config.upgrade.SUPPORTED_RELEASES)), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["releases"] == list(config.upgrade.SUPPORTED_RELEASES)
    (steady,) = out["kernels"]
    assert steady["kernel"] == "steady_kernel" and steady["first_differing"] is None and steady["rebuilds"] == 1


@pytest.mark.parametrize("args,message", [
    (["--kernel", "scale", "--from", "3.5.0", "--to", LAST], r"--from 3\.5\.0: not among the releases bisected"),
    (["--kernel", "scale", "--from", LAST, "--to", FIRST], rf"--from {LAST} is not before --to {FIRST}"),
    (["--kernel", "no_such_kernel", "--from", FIRST, "--to", LAST],
     r"no captured Triton kernel matching 'no_such_kernel'"),
    (["--kernel", "scale", "--from", FIRST, "--to", LAST, "--releases", "3.6.0,3.9"], r"give each release as X\.Y\.Z"),
    (["--kernel", "(", "--from", FIRST, "--to", LAST], r"not a regular expression"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, bisect_subjects, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(config.upgrade.RELEASES_DIR.name, str(tmp_path / "releases"))  # nothing installed, nothing there
    assert cli.main(["bisect", "--store", str(bisect_subjects[0].path), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(message, err), err
    assert not (tmp_path / "releases").exists()


# ----- a bisect of ptxas versions -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ptxas_versions() -> dict[str, str]:
    """Every ptxas found on this machine, one path per version, oldest first: `tools.find_ptxas()` (Triton's
    bundled two, a CUDA toolkit's, the pip wheel's) and those the release virtualenvs bundle."""
    from tritonhook.upgrade.releases import releases_dir

    found = {binary.version: binary.path for binary in reversed(tools.find_ptxas())}
    for path in sorted(releases_dir().glob("triton-*/lib/python*/site-packages/triton/backends/nvidia/bin/ptxas*")):
        found.setdefault(tools.ptxas_version(str(path)), str(path))
    if len(found) < 3:
        pytest.skip(f"a ptxas bisect needs 3 ptxas versions or more, found {', '.join(found) or 'none'}")
    return dict(sorted(found.items(), key=lambda item: tuple(int(part) for part in item[0].split("."))))


def _by_hand(ptxas: str, capture, store, folder: Path) -> str | None:
    """The captured PTX assembled by `ptxas` run directly with the captured Triton's flags (not through
    tritonhook's assembler): its kernel's `.text` hash, None where ptxas refuses it."""
    import subprocess

    from tritonhook import _triton

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "k.ptx").write_bytes(store.read(capture, "ptx"))
    flags = tools.triton_ptxas_args(capture.options, _triton.parse_version(capture.frontend_version))
    done = subprocess.run([ptxas, f"-arch={capture.arch}", *flags, str(folder / "k.ptx"), "-o",
                           str(folder / "k.cubin")], capture_output=True, text=True, timeout=300)
    return _text_sha256((folder / "k.cubin").read_bytes(), capture.entry) if done.returncode == 0 else None


def test_a_ptxas_bisect_finds_the_first_version_whose_sass_of_the_captured_ptx_differs(bisect_subjects,
                                                                                       ptxas_versions, tmp_path):
    """Each kernel's captured PTX assembled by every ptxas here, by hand: the first whose `.text` is not the
    captured one's is the bisect's answer, in ≤ ⌈log2 M⌉ + 1 assemblies; what moved it is ptxas."""
    from tritonhook.upgrade.bisect import bisect_ptxas

    store = bisect_subjects[0]
    versions = list(ptxas_versions)
    result = bisect_ptxas(store, kernel="_kernel$", ptxas=list(ptxas_versions.values()))
    assert result.over == "ptxas" and result.releases == versions
    assert sorted(k.kernel for k in result.kernels) == sorted(BISECT_COMPILES)
    for found in result.kernels:
        capture = store.get(found.capture_id)
        captured = _text_sha256(store.read(capture, "cubin"), capture.entry)
        after = versions[1:] if versions[0].startswith(capture.ptxas_version + ".") else versions
        own = {v: _by_hand(ptxas_versions[v], capture, store, tmp_path / str(capture.id) / v) for v in after}
        differing = [v for v in after if own[v] != captured]
        assert differing == after[len(after) - len(differing):], own  # the search's assumption holds here
        assert found.first_differing == (differing[0] if differing else None), [s.text() for s in found.path]
        assert found.rebuilds == len(found.path) <= found.bound == math.ceil(math.log2(len(after))) + 1
        for step in found.path:
            assert step.verdict == (FAILED if own[step.release] is None else
                                    "same" if own[step.release] == captured else "differs"), step.text()
        assert found.split == (NO_CHANGE if not differing else FAILED if own[differing[0]] is None else "ptxas")
    assert {k.first_differing is None for k in result.kernels} == {True, False}  # an answer of each kind
    (saved,) = [r for r in store.results("bisect") if r.id == result.id]
    assert saved.to_json() == result.to_json()


def test_a_ptxas_bisect_from_the_command_line(bisect_subjects, ptxas_versions, capsys):
    paths = list(ptxas_versions.values())
    assert cli.main(["bisect", "--store", str(bisect_subjects[0].path), "--kernel", "steady", "--ptxas",
                     ",".join(paths), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["over"] == "ptxas" and out["releases"] == list(ptxas_versions)
    (steady,) = out["kernels"]
    assert steady["first_differing"] is None and steady["rebuilds"] == 1


@pytest.mark.parametrize("args,message", [
    (["--kernel", "scale", "--ptxas", "12.8,99.9"], r"--ptxas: no ptxas 99\.9 found \(found: "),
    (["--kernel", "scale", "--ptxas", "12.8,12.8.93"], r"--ptxas 12\.8\.93: ptxas 12\.8\.93 is given twice"),
    (["--kernel", "scale", "--ptxas", "12.8"], r"ptxas 12\.8\.93 built capture \d+ \(scale_kernel\); give the"),
    (["--kernel", "scale", "--ptxas", "12.8,12.9", "--from", FIRST], r"--ptxas with --from: .* give it alone"),
    (["--kernel", "scale", "--to", LAST], r"--from: required \(or --ptxas"),
])
def test_ptxas_bisect_bad_input_is_one_line_and_exit_2(args, message, bisect_subjects, capsys):
    if "12.8" in args[3] and not any(b.version.startswith("12.8.") for b in tools.find_ptxas()):
        pytest.skip("no ptxas 12.8 here")
    assert cli.main(["bisect", "--store", str(bisect_subjects[0].path), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(message, err), err


def _text_sha256(cubin: bytes, entry: str) -> str:
    from tritonhook.cubin import Cubin

    return Cubin.from_bytes(cubin).summary(entry)["text_sha256"]
