"""`tritonhook tune --space acf-search`: NVIDIA CompileIQ's engine driven inside tune's loop, pool by pool, on a CPU.
Real captures, real CompileIQ over its ptxas 13.3 search space, every candidate built by a real ptxas 13.3; only the
replay worker is replaced (tests/sweep_fake_worker.py --time-by-text: a variant "takes" a time inversely
proportional to its kernel's .text size), so each candidate's score follows from its cubin.

Where each runs: CompileIQ (Python >= 3.11) comes with the test extra, but CI has no ptxas 13.3 (the test extra's
is 13.4, which reads no 13.3 control file) and may not reach CompileIQ's search-space release: there the search
tests skip saying what they lack, and only the CLI's refusals run."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritonhook import binaries as tools
from tritonhook.sweep.tune import ACF_SEARCH, TuneResult, TuneSpace, tune
from tritonhook.ptxas.tune_space import FAILED_POOLS_LIMIT

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.release_independent  # the search and its bookkeeping; the worker is replaced

from sample_recording import sample_recording  # noqa: E402 - tests/sample_recording.py, after torch is known
from test_tune_space import HAS_COMPILEIQ, _ptxas_13_3, _ptxas_13_3_space  # noqa: E402 - the same lookups

FAKE_WORKER = [str(Path(__file__).with_name("sweep_fake_worker.py")), "--time-by-text",
               "--seconds-per-signature", "0.3"]  # replays take time: the chunks' workers are busy at once


@pytest.fixture(scope="module")
def searchable(tmp_path_factory):
    """(store, recording, ptxas 13.3, search-space file), or a skip naming what is missing."""
    ptxas, space = _ptxas_13_3(), _ptxas_13_3_space()
    if not HAS_COMPILEIQ or ptxas is None or space is None:
        pytest.skip(f"needs CompileIQ ({'installed' if HAS_COMPILEIQ else 'not installed'}), a ptxas 13.3 "
                    f"({'found' if ptxas else 'none found'}) and CompileIQ's ptxas 13.3 search space "
                    f"({'found' if space else 'not found'})")
    store, recording = sample_recording(tmp_path_factory.mktemp("acf-search-store"), 2)
    return store, recording, ptxas.path, str(space)


def _crashing_once(real: str, folder: Path) -> Path:
    """A ptxas 13.3 that dies of SIGFPE (as ptxas 13.3 does on ~5% of the att space's control files) on the first
    control file it is given, and builds every other one."""
    wrapper = folder / "ptxas"
    wrapper.write_text(f'#!/bin/sh\ncase "$*" in *--apply-controls=*) if mkdir "{folder}/crashed" 2>/dev/null; '
                       f'then ulimit -c 0; kill -s FPE $$; fi;; esac\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def _acf_sha256(candidate: dict) -> str:
    return candidate["controls"]["sha256"]


def test_the_engine_proposes_pools_that_are_built_timed_and_told_and_a_crash_loses_only_itself(searchable,
                                                                                              tmp_path):
    store, recording, real, space_file = searchable
    space = TuneSpace.parse(ACF_SEARCH, ptxas=[str(_crashing_once(real, tmp_path))], acf_space=space_file,
                            acf_pool=6, acf_generations=2)
    result = tune(recording, store, space, kernel="add", rounds=7, confirm_rounds=7, worker=FAKE_WORKER)
    (tuned,) = result.kernels
    searched = result.space[ACF_SEARCH]
    (kept,) = searched["kernels"].values()
    assert kept["generation"] == 2 and kept["stopped"] == "completed 2 generation(s)"
    assert [t.label for t in tuned.trials] == [c["label"] for c in kept["candidates"]]
    assert {t.axis for t in tuned.trials} == {ACF_SEARCH} and len(tuned.trials) >= 12
    for candidate in kept["candidates"]:  # built as plain@13.3+acf:FILE, the file kept in the run's work folder
        path = Path(candidate["controls"]["path"])
        assert candidate["ptxas_version"].startswith("13.3.") and path.is_relative_to(store.path / "tune")
        assert hashlib.sha256(path.read_bytes()).hexdigest() == _acf_sha256(candidate)
    pools = {}
    for trial, candidate in zip(tuned.trials, kept["candidates"]):
        pools.setdefault(trial.pool, set()).add(_acf_sha256(candidate))
    assert len(pools) >= 2 and pools[0] != pools[1]  # a second pool, proposed after the first was told

    # what the engine holds is what each candidate scored: its time ratio to plain, None for the crash
    engine = {row["acf_sha256"]: row["score"] for row in kept["engine"]}
    assert len(kept["engine"]) == len(tuned.trials)
    for trial, candidate in zip(tuned.trials, kept["candidates"]):
        told = engine[_acf_sha256(candidate)]
        assert told == (None if trial.score is None else pytest.approx(trial.score)), trial
    crashed = [t for t in tuned.trials if t.outcome == "crashed"]
    assert len(crashed) == 1 and crashed[0].score is None and tuned.counts["crashed"] == 1
    assert all(t.ratio is not None for t in tuned.trials if t is not crashed[0])  # the others of its pool timed
    assert all(t.ratio == pytest.approx(t.score) for t in tuned.trials if t.score is not None)

    if tuned.winner:  # the fake worker's fastest is the largest .text: confirmed as any winner
        best = min((t for t in tuned.trials if t.outcome == "faster"), key=lambda t: t.ratio)
        assert tuned.winner == best.label and tuned.confirmed
    saved = store.result(result.id)
    assert isinstance(saved, TuneResult) and saved.to_json() == result.to_json()


def test_a_budget_of_candidates_stops_the_search_mid_pool(searchable):
    store, recording, real, space_file = searchable
    space = TuneSpace.parse(ACF_SEARCH, ptxas=[real], acf_space=space_file, acf_pool=6, acf_generations=3)
    result = tune(recording, store, space, kernel="add", budget="4", rounds=7, confirm_rounds=7,
                  worker=FAKE_WORKER)
    (tuned,) = result.kernels
    (kept,) = result.space[ACF_SEARCH]["kernels"].values()
    assert len(tuned.trials) == 4 and len(kept["engine"]) == 4 and kept["pools"] == 1
    assert kept["generation"] == 0 and kept["stopped"] == "the budget"
    assert any(w.endswith("stopped at generation 0 of 3: the budget") for w in result.warnings)


def test_a_ptxas_that_reads_no_candidate_ends_the_search_after_a_few_failed_pools(tmp_path):
    """ptxas 13.4 reads control files but none of a 13.3 space's ("Invalid compiler controls file"); the engine
    would refill its first generation forever."""
    newer = next((b for b in tools.find_ptxas() if tools.supports_controls(b.path)
                  and not b.version.startswith("13.3.")), None)
    space_file = _ptxas_13_3_space()
    if newer is None or space_file is None:
        pytest.skip(f"needs CompileIQ's ptxas 13.3 search space ({'found' if space_file else 'not found'}) and a "
                    f"ptxas other than 13.3 that reads control files ({'found' if newer else 'none found'})")
    store, recording = sample_recording(tmp_path / "store", 1)
    space = TuneSpace.parse(ACF_SEARCH, ptxas=[newer.path], acf_space=str(space_file), acf_pool=6)
    result = tune(recording, store, space, rounds=7, confirm_rounds=7, worker=FAKE_WORKER)
    (tuned,) = result.kernels
    (kept,) = result.space[ACF_SEARCH]["kernels"].values()
    assert tuned.counts == {"error": FAILED_POOLS_LIMIT * 6} and tuned.winner is None
    assert kept["generation"] == 0 and kept["stopped"].startswith(f"no candidate of {FAILED_POOLS_LIMIT} pools")
    assert all(row["score"] is None for row in kept["engine"]) and len(kept["engine"]) == FAILED_POOLS_LIMIT * 6


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tritonhook", "tune", *args], capture_output=True, text=True,
                          env={**os.environ})


def test_the_cli_refuses_a_ptxas_that_cannot_read_control_files_in_one_line(tmp_path):
    space = tmp_path / "space.bin"
    space.write_bytes(b"\0" * 64)
    without = [b for b in tools.find_ptxas() if not tools.supports_controls(b.path)]  # Triton's own: 12.x
    if not without:
        pytest.skip("no ptxas without --apply-controls found")
    done = _cli("--store", str(tmp_path / "s"), "--space", ACF_SEARCH, "--acf-space", str(space), "--ptxas",
                without[0].path)
    assert done.returncode == 2 and done.stderr.strip() == (
        f"tritonhook: error: --acf-space {space} needs a ptxas with --apply-controls (CUDA >= 13.3); ptxas "
        f"{without[0].version} at {without[0].path} cannot read it")
    assert not (tmp_path / "s").exists()  # refused before any work


@pytest.mark.parametrize("args, message", [
    ((f"--space={ACF_SEARCH}",), f"--space {ACF_SEARCH}: give CompileIQ's search-space file with --acf-space "
                                 f"SPACE.bin"),
    (("--acf-space", "x.bin"), f"--acf-space x.bin: add {ACF_SEARCH} to --space to search it"),
    ((f"--space={ACF_SEARCH}", "--acf-space", "x.bin"), f"--space {ACF_SEARCH}: give the one ptxas that builds "
                                                        f"its control files with --ptxas (13.3.x for CompileIQ's "
                                                        f"13.3 spaces; got 0)"),
])
def test_the_cli_says_what_acf_search_lacks_in_one_line(tmp_path, args, message):
    done = _cli("--store", str(tmp_path / "s"), *args)
    assert done.returncode == 2 and done.stderr.strip() == f"tritonhook: error: {message}"
