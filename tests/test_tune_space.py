"""Candidate control files from CompileIQ (tritonhook.tune_space; docs/control_files.md): the one-line errors when
the search space or CompileIQ is missing, and, where CompileIQ, its ptxas 13.3 search space and a ptxas 13.3 are all
present, real candidates that ptxas 13.3 reads and that change the cubin.

Where each runs: CompileIQ is not a tritonhook dependency (its wheel needs Python >= 3.11 and brings Ray, pandas,
pymoo), and its search spaces come from GitHub releases, so CI runs the error tests only; the real test skips with
what it lacks.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tritonhook import tools
from tritonhook.cubin import Cubin
from tritonhook.errors import TritonhookError
from tritonhook.tune_space import compileiq_candidates

DATA = Path(__file__).parent / "data"
HAS_COMPILEIQ = importlib.util.find_spec("compileiq") is not None


def test_missing_search_space_is_one_line(tmp_path):
    with pytest.raises(TritonhookError, match=r"nope\.bin: no such CompileIQ search-space file"):
        compileiq_candidates(tmp_path / "nope.bin")


def test_bad_pool_size_is_one_line(tmp_path):
    space = tmp_path / "space.bin"
    space.write_bytes(b"\0" * 64)
    with pytest.raises(TritonhookError, match=r"space\.bin: pool_size and generations must be positive"):
        compileiq_candidates(space, pool_size=0)


@pytest.mark.skipif(HAS_COMPILEIQ, reason="compileiq is installed")
def test_missing_compileiq_names_the_package(tmp_path):
    space = tmp_path / "space.bin"
    space.write_bytes(b"\0" * 64)
    with pytest.raises(TritonhookError, match=r"space\.bin: sampling control files needs NVIDIA CompileIQ .*"
                                              r"pip install compileiq"):
        compileiq_candidates(space)


@pytest.mark.skipif(not HAS_COMPILEIQ, reason="compileiq is not installed")
def test_unreadable_search_space_is_one_line(tmp_path):
    space = tmp_path / "space.bin"
    space.write_bytes(bytes(range(256)) * 16)
    with pytest.raises(TritonhookError, match=r"space\.bin: CompileIQ cannot use this search space"):
        next(compileiq_candidates(space))


def _ptxas_13_3():
    return next((b for b in tools.find_ptxas() if b.version.startswith("13.3.")), None)


def _ptxas_13_3_space():
    if not HAS_COMPILEIQ:
        return None
    from compileiq.search_spaces.compilers import PtxasSearchSpace
    try:  # CompileIQ's own lookup: its cache, CIQ_SEARCH_SPACES_DIR, or its GitHub release
        return PtxasSearchSpace(version="13.3").retrieve()
    except Exception:
        return None


@pytest.mark.skipif(not HAS_COMPILEIQ, reason="compileiq is not installed")
def test_candidates_are_control_files_ptxas_13_3_reads(tmp_path):
    ptxas, space = _ptxas_13_3(), _ptxas_13_3_space()
    if ptxas is None or space is None:
        pytest.skip(f"needs a ptxas 13.3 ({'found' if ptxas else 'none found'}) and CompileIQ's ptxas 13.3 search "
                    f"space ({'found' if space else 'not found'})")
    ptx = (DATA / "ffma_loop.ptx").read_text()
    plain = Cubin.from_bytes(tools.assemble(ptx, ptxas.path, "sm_80").cubin).summary("ffma_loop")
    candidates = compileiq_candidates(space, pool_size=6, generations=2)
    texts, score, count = set(), None, 0
    try:
        acf = next(candidates)
        while True:
            count += 1
            (tmp_path / "c.acf").write_bytes(acf)
            built = tools.assemble(ptx, ptxas.path, "sm_80", controls=tools.read_control_file(tmp_path / "c.acf"))
            summary = Cubin.from_bytes(built.cubin).summary("ffma_loop")
            texts.add(summary["text_sha256"])
            acf = candidates.send(summary["text_size"])
    except StopIteration:
        pass
    assert count >= 12
    assert texts - {plain["text_sha256"]}, "no candidate changed the SASS"
