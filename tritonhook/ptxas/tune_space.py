"""Candidate ptxas control files (ACFs) from NVIDIA CompileIQ's search engine, scored by the caller, pool by pool.

Why CompileIQ's ask/tell API, not `Search.start()`: `tune` owns the evaluation (its own ptxas, cubin reading, GPU
timing in isolated replay workers), so CompileIQ is used only for what it alone can do, sampling its encrypted
search space into encrypted ACFs and choosing the next pool from the scores it is told. Why pools, not one
candidate at a time: the engine itself works in pools (`ask()` hands out a whole pool, `tell()` takes its scores),
and `tune` times candidates side by side with plain in one replay, so a pool is the natural unit of both. The
caller assembles each candidate with `ptxas --apply-controls=FILE` and tells back its score (lower is better by
default); None counts as failed. An ACF is accepted only by the ptxas release its search space was made for (a
13.3 space's ACFs by ptxas 13.3.x; ptxas 13.4 answers `Invalid compiler controls file`), and the engine samples at
random (no seed); docs/control_files.md.

This is the only module that imports `compileiq`; it is optional (not a dependency of tritonhook).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import pathlib
import tempfile
import warnings
from typing import Sequence

from .. import config
from ..errors import TritonhookError

POOL_MIN = 6
"""CompileIQ 1.1's smallest pool: its `SearchConfiguration` requires `pool_size > 5`."""
FAILED_POOLS_LIMIT = 3
"""A search ends after this many pools in a row in which no candidate scored. The engine fills a generation only
with scored candidates and asks again for as many as failed (a refill pool), so a ptxas that fails every candidate
(a 13.4 ptxas given a 13.3 space: it reads no ACF of it) would otherwise be asked forever; candidates fail
independently and seldom (a few percent of a space crash ptxas), so three failed pools in a row is not bad luck."""


def check_space(space: str | os.PathLike, pool_size: int, generations: int) -> pathlib.Path:
    """The search-space file, once the file, the pool sizes and CompileIQ itself are known to be usable: each
    missing one is a line naming it (before a search starts, and before `tune` does any work)."""
    path = pathlib.Path(space)
    if not path.is_file():
        raise TritonhookError(f"{space}: no such CompileIQ search-space file (a .bin such as "
                              f"ptxas13.3_search_space.bin)")
    if pool_size < POOL_MIN or generations < 1:
        raise TritonhookError(f"{space}: a pool of at least {POOL_MIN} (CompileIQ's smallest) and at least one "
                              f"generation (got {pool_size}, {generations})")
    try:
        importlib.import_module("compileiq.ciq")
    except ImportError as exc:
        raise TritonhookError(f"{space}: sampling control files needs NVIDIA CompileIQ >= 1.1 with its native "
                              f"runtime (pip install compileiq; Python >= 3.11): {exc}") from None
    return path


class ControlFileSearch:
    """CompileIQ's engine over one search-space file (a `.bin` such as `ptxas13.3_search_space.bin`): `ask()` the
    next pool of ACFs (bytes, ready to write to FILE.acf; [] when the search is over, `stopped` says why), then
    `tell()` their scores in the same order (None: it failed to build, run or check). A pool told only in part
    (a budget ran out) is fine as a last one. `record()` is what the engine itself holds of what it was told.
    What `check_space` refuses is refused here, a file the engine cannot read too. Close it (or use `with`) to
    remove the engine's cache folder."""

    def __init__(self, space: str | os.PathLike, *, pool_size: int = config.sweep.TUNE_ACF_POOL,
                 generations: int = config.sweep.TUNE_ACF_GENERATIONS, maximize: bool = False):
        path = check_space(space, pool_size, generations)
        from compileiq.ciq import Search
        from compileiq.search_spaces.compilers import LocalSearchSpaceBin
        from compileiq.types import SearchConfiguration, WorkerTypes

        self.path, self.generations = path, generations
        self.stopped: str | None = None
        self._pending: list = []
        self._failed_pools = 0
        self._cache = tempfile.TemporaryDirectory(prefix="tritonhook-compileiq-")
        try:
            self._search = Search(objective_function=_scored_by_caller, search_space=LocalSearchSpaceBin(path),
                                  search_config=SearchConfiguration(problem_type="max" if maximize else "min",
                                                                    pool_size=pool_size, generations=generations),
                                  worker_type=WorkerTypes.MANUAL, cache_folder=pathlib.Path(self._cache.name),
                                  disable_progress_bar=True, exit_on_failure=False)
        except Exception as exc:  # the closed engine's own errors: the file is not a search space it can read
            self._cache.cleanup()
            raise TritonhookError(f"{path}: CompileIQ cannot use this search space ({exc})") from None

    @property
    def generation(self) -> int:
        """The generation the engine is filling (0-based); equals `generations` once the search is complete."""
        return self._search.current_generation

    def ask(self) -> list[bytes]:
        """The next pool: a full one when a generation starts, else as many as failed in the last (a refill)."""
        from compileiq.backends import SearchSpaceExhaustedError

        if self.stopped is None and self.generation >= self.generations:
            self.stopped = f"completed {self.generations} generation(s)"
        if self.stopped is not None:
            return []
        try:
            self._pending = list(self._search.ask())
        except SearchSpaceExhaustedError:
            self.stopped = f"the search space has no untried candidate left (generation {self.generation})"
            return []
        return [bytes.fromhex(candidate.params) for candidate in self._pending]

    def tell(self, scores: Sequence[float | None]) -> None:
        """The scores of the last pool, in its order; fewer than the pool: the rest are never told."""
        from compileiq.types import INVALID_SCORE
        from compileiq.utils.validation import Score

        if len(scores) > len(self._pending):
            raise ValueError(f"{len(scores)} scores for a pool of {len(self._pending)}")
        if not scores:
            return
        told = [Score(score=INVALID_SCORE if score is None else float(score), param_id=candidate.param_id,
                      num_objectives=1) for candidate, score in zip(self._pending, scores)]
        with warnings.catch_warnings():  # "failed evaluation(s) left unfilled positions": the next ask refills them
            warnings.simplefilter("ignore", UserWarning)
            self._search.tell(told)
        self._pending = self._pending[len(scores):]
        self._failed_pools = 0 if any(score is not None for score in scores) else self._failed_pools + 1
        if self._failed_pools >= FAILED_POOLS_LIMIT:
            self.stopped = (f"no candidate of {FAILED_POOLS_LIMIT} pools in a row scored (generation "
                            f"{self.generation}): does this ptxas read this space's control files?")

    def record(self) -> list[dict]:
        """What the engine holds of every candidate it was told: the ACF's sha256, the generation, the score
        (None: failed), from CompileIQ's own result table, in the order told."""
        table = self._search.result.get_results()
        score = next(column for column in table.columns if str(column).startswith("score"))
        return [{"acf_sha256": hashlib.sha256(bytes.fromhex(row["params"])).hexdigest(),
                 "generation": int(row["generation"]), "score": _number(row[score])}
                for _, row in table.iterrows()]

    def close(self) -> None:
        self._cache.cleanup()

    def __enter__(self) -> "ControlFileSearch":
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


def _number(value) -> float | None:
    """A score as CompileIQ's table holds it: a number, or its failed marker (`INVALID_SCORE`, '*')."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _scored_by_caller(_params):
    """Never called: a manual-worker search only asks and is told (CompileIQ requires an objective anyway)."""
    raise AssertionError("ControlFileSearch is scored through tell()")


__all__ = ["FAILED_POOLS_LIMIT", "POOL_MIN", "ControlFileSearch", "check_space"]
