"""Candidate ptxas control files (ACFs) from NVIDIA CompileIQ's search engine, scored by the caller.

Why a generator over CompileIQ's ask/tell API, not `Search.start()`: `tune` owns the evaluation (its own ptxas,
cubin reading, GPU timing), so CompileIQ is used only for what it alone can do, sampling its encrypted search
space into encrypted ACFs and choosing the next pool from the scores it is told. The caller assembles each
candidate with `ptxas --apply-controls=FILE` and sends back its score (lower is better by default); a candidate
sent back `None` (or iterated past with `next`) counts as failed. docs/control_files.md records what was checked:
an ACF is accepted only by the ptxas release its search space was made for (a 13.3 space's ACFs by ptxas 13.3.x;
ptxas 13.4 answers `Invalid compiler controls file`), and the engine samples at random (no seed).

This is the only module that imports `compileiq`; it is optional (not a dependency of tritonhook).
"""

from __future__ import annotations

import importlib
import os
import pathlib
import tempfile
from typing import Generator

from .errors import TritonhookError


def compileiq_candidates(space: str | os.PathLike, *, pool_size: int = 32, generations: int = 1,
                         maximize: bool = False) -> Generator[bytes, float | None, None]:
    """Yield `pool_size * generations` ACFs (bytes, ready to write to FILE.acf) sampled from the CompileIQ search
    space file `space` (a `.bin` such as `ptxas13.3_search_space.bin`); `generator.send(score)` answers the last
    one (None: it failed to build or check) and returns the next. Ends early when the engine has no untried
    candidate left. A missing file or CompileIQ is reported here; a file the engine cannot read, at the first
    `next()`."""
    path = pathlib.Path(space)
    if not path.is_file():
        raise TritonhookError(f"{space}: no such CompileIQ search-space file (a .bin such as "
                              f"ptxas13.3_search_space.bin)")
    if pool_size < 1 or generations < 1:
        raise TritonhookError(f"{space}: pool_size and generations must be positive (got {pool_size}, {generations})")
    try:
        importlib.import_module("compileiq.ciq")
    except ImportError as exc:
        raise TritonhookError(f"{space}: sampling control files needs NVIDIA CompileIQ >= 1.1 with its native "
                              f"runtime (pip install compileiq; Python >= 3.11): {exc}") from None
    return _ask_and_tell(path, pool_size, generations, "max" if maximize else "min")


def _ask_and_tell(path: pathlib.Path, pool_size: int, generations: int,
                  problem: str) -> Generator[bytes, float | None, None]:
    from compileiq.backends import SearchSpaceExhaustedError
    from compileiq.ciq import Search
    from compileiq.search_spaces.compilers import LocalSearchSpaceBin
    from compileiq.types import INVALID_SCORE, SearchConfiguration, WorkerTypes
    from compileiq.utils.validation import Score

    with tempfile.TemporaryDirectory(prefix="tritonhook-compileiq-") as cache:
        try:
            search = Search(objective_function=_scored_by_caller, search_space=LocalSearchSpaceBin(path),
                            search_config=SearchConfiguration(problem_type=problem, pool_size=pool_size,
                                                              generations=generations),
                            worker_type=WorkerTypes.MANUAL, cache_folder=pathlib.Path(cache),
                            disable_progress_bar=True, exit_on_failure=False)
        except Exception as exc:  # the closed engine's own errors: the file is not a search space it can read
            raise TritonhookError(f"{path}: CompileIQ cannot use this search space ({exc})") from None
        while search.current_generation < generations:
            try:
                candidates = search.ask()
            except SearchSpaceExhaustedError:
                return
            scores = []
            for candidate in candidates:
                score = yield bytes.fromhex(candidate.params)
                scores.append(Score(score=INVALID_SCORE if score is None else float(score),
                                    param_id=candidate.param_id, num_objectives=1))
            search.tell(scores)


def _scored_by_caller(_params):
    """Never called: a manual-worker search only asks and is told (CompileIQ requires an objective anyway)."""
    raise AssertionError("compileiq_candidates scores candidates through send()")
