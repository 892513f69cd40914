"""Candidate control files from CompileIQ (tritonhook.ptxas.tune_space; docs/control_files.md): the one-line errors when
the search space or CompileIQ is missing, and, where CompileIQ, its ptxas 13.3 search space and a ptxas 13.3 are all
present, real candidates that ptxas 13.3 reads and that change the cubin.

Where each runs: CompileIQ is not a tritonhook dependency (its wheel needs Python >= 3.11 and brings Ray, pandas,
pymoo), and its search spaces come from GitHub releases, so CI runs the error tests only; the real test skips with
what it lacks.
"""

from __future__ import annotations

import os

import functools
import importlib.util
from pathlib import Path

import pytest

from tritonhook import binaries as tools
from tritonhook.cubin import Cubin
from tritonhook.errors import TritonhookError
from tritonhook.ptxas.tune_space import POOL_MIN, ControlFileSearch

DATA = Path(__file__).parent / "data"
HAS_COMPILEIQ = importlib.util.find_spec("compileiq") is not None


def test_missing_search_space_is_one_line(tmp_path):
    with pytest.raises(TritonhookError, match=r"nope\.bin: no such CompileIQ search-space file"):
        ControlFileSearch(tmp_path / "nope.bin")


def test_bad_pool_size_is_one_line(tmp_path):
    space = tmp_path / "space.bin"
    space.write_bytes(b"\0" * 64)
    for pool_size, generations in ((0, 1), (POOL_MIN - 1, 1), (POOL_MIN, 0)):  # CompileIQ's smallest pool is 6
        with pytest.raises(TritonhookError, match=rf"space\.bin: a pool of at least {POOL_MIN} \(CompileIQ's "
                                                  rf"smallest\) and at least one generation \(got {pool_size}, "
                                                  rf"{generations}\)"):
            ControlFileSearch(space, pool_size=pool_size, generations=generations)


@pytest.mark.skipif(HAS_COMPILEIQ, reason="compileiq is installed")
def test_missing_compileiq_names_the_package(tmp_path):
    space = tmp_path / "space.bin"
    space.write_bytes(b"\0" * 64)
    with pytest.raises(TritonhookError, match=r"space\.bin: sampling control files needs NVIDIA CompileIQ .*"
                                              r"pip install compileiq"):
        ControlFileSearch(space)


@pytest.mark.skipif(not HAS_COMPILEIQ, reason="compileiq is not installed")
@pytest.mark.release_independent  # CompileIQ reading a file: no Triton
def test_unreadable_search_space_is_one_line(tmp_path):
    space = tmp_path / "space.bin"
    space.write_bytes(bytes(range(256)) * 16)
    with pytest.raises(TritonhookError, match=r"space\.bin: CompileIQ cannot use this search space"):
        ControlFileSearch(space)


def _ptxas_13_3():
    return next((b for b in tools.find_ptxas() if b.version.startswith("13.3.")), None)


@functools.lru_cache(maxsize=None)  # CompileIQ may ask GitHub: once per session is enough
def _ptxas_13_3_space():
    if not HAS_COMPILEIQ:
        return None
    if not os.environ.get("CIQ_SEARCH_SPACES_DIR"):  # never CompileIQ's download: a test must not need the network
        return None
    from compileiq.search_spaces.compilers import PtxasSearchSpace
    try:  # CompileIQ's own lookup, in CIQ_SEARCH_SPACES_DIR
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
    texts, count = set(), 0
    with ControlFileSearch(space, pool_size=6, generations=2) as search:
        while pool := search.ask():
            scores = []
            for acf in pool:
                count += 1
                (tmp_path / "c.acf").write_bytes(acf)
                built = tools.assemble(ptx, ptxas.path, "sm_80",
                                       controls=tools.read_control_file(tmp_path / "c.acf"))
                summary = Cubin.from_bytes(built.cubin).summary("ffma_loop")
                texts.add(summary["text_sha256"])
                scores.append(summary["text_size"])
            search.tell(scores)
        assert search.generation == 2 and search.stopped == "completed 2 generation(s)"
    assert count >= 12
    assert texts - {plain["text_sha256"]}, "no candidate changed the SASS"
