"""Sweeps beyond one GPU (issue 17), on a CPU: the scheduling, retry and merge logic of `sweep.schedule` over a
recording built from real captures (real compiles, real ptxas-built variants, real snapshot blobs in a real store),
with the local workers and with a real local Ray cluster. Only the worker program is replaced
(tests/sweep_fake_worker.py): it speaks the real protocol and reads every file and blob a replay reads, but times
nothing, so these tests prove where work goes, not what a GPU measures. The replays themselves are proven on a
GPU: tests/test_sweep_gpu.py and benchmarks/sweep_scaling.py."""

from __future__ import annotations

import html
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from tritonhook import config
from tritonhook.cubin import SUMMARY_FIELDS
from tritonhook.errors import TritonhookError
from tritonhook.measure.variants import parse_variants
from tritonhook.store import Store
from tritonhook.sweep import ReplayPlan, Workers, replay
from tritonhook.sweep.result import RESULT_KIND, SweepResult
from tritonhook.sweep.replay import SIGNATURE_KIND
from tritonhook.sweep.job import ReplayJob
from tritonhook.sweep.schedule import resolve_gpus, run_workers

pytestmark = pytest.mark.release_independent  # the scheduler, retries and Ray: the same under every Triton

torch = pytest.importorskip("torch")

from sample_recording import sample_recording  # noqa: E402 - tests/sample_recording.py, after torch is known

FAKE_WORKER = str(Path(__file__).with_name("sweep_fake_worker.py"))
SIGNATURES = 6
VARIANTS = parse_variants("plain,cutlass_")


BUSY = ["--seconds-per-signature", "0.3"]
"""Each signature's replay takes this long: the scheduler's workers are busy side by side, as on GPUs."""


def fake(*flags: str) -> list[str]:
    return [FAKE_WORKER, *BUSY, *flags]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A store with real captures of two sample kernels for sm_90a and a recording of SIGNATURES launch
    signatures of them (tests/sample_recording.py)."""
    return sample_recording(tmp_path_factory.mktemp("scale-store"), SIGNATURES)


def _stored(store: Store, result: SweepResult) -> SweepResult:
    stored = store.result(result.id)
    assert isinstance(stored, SweepResult) and store.results(RESULT_KIND, source=result.recording_id)[-1] == stored
    return stored


# ----- which GPUs -----------------------------------------------------------------------------------------------------
def test_gpus_are_counted_as_cuda_counts_the_visible_ones():
    visible = ["4", "7"]
    assert resolve_gpus(None, visible) == [None]
    assert resolve_gpus("all", visible) == ["4", "7"]
    assert resolve_gpus("1", visible) == ["7"] and resolve_gpus([1, 0], visible) == ["7", "4"]
    for spec, message in [("0,x", "--gpus 0,x: give 'all' or GPU indices such as 0,1"),
                          ("2", "--gpus 2: this machine shows 2 GPU(s) (0-1)"),
                          ("0,0", "--gpus 0,0: a GPU is named twice")]:
        with pytest.raises(TritonhookError) as raised:
            resolve_gpus(spec, visible)
        assert str(raised.value) == message
    with pytest.raises(TritonhookError, match="--gpus all: no GPU is visible"):
        resolve_gpus("all", [])


@pytest.mark.parametrize("args, message", [
    (["--gpus", "0,x"], "--gpus 0,x: give 'all' or GPU indices such as 0,1"),
    (["--gpus", "all"], "--gpus all: cannot count the GPUs here"),
    (["--gpus", "0", "--ray"], "not allowed with argument"),
])
@pytest.mark.nogpu
def test_bad_gpus_are_one_line(tmp_path, args, message):
    import os

    Store(tmp_path / "s")
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    done = subprocess.run([sys.executable, "-m", "tritonhook", "replay", "--store", str(tmp_path / "s"), *args],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_ray_missing_says_how_to_install_it(tmp_path):
    Store(tmp_path / "s")
    code = ("import sys; sys.modules['ray'] = None; from tritonhook.cli import main; "
            f"sys.exit(main(['replay', '--store', {str(tmp_path / 's')!r}, '--ray']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert "--ray needs Ray: pip install 'tritonhook[ray]'" in done.stderr and "Traceback" not in done.stderr


# ----- local workers, one per GPU -------------------------------------------------------------------------------------
def test_work_is_spread_over_two_gpus_and_merged_into_the_store(recorded, monkeypatch):
    store, recording = recorded
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,7")  # --gpus 0,1 are the GPUs CUDA shows as 0 and 1
    result = replay(recording, store, VARIANTS, ReplayPlan(l2="cold"),
                    workers=Workers.at(gpus=[0, 1], worker=fake()))  # a recording without probe
    assert [row.status for row in result.rows] == ["ok"] * SIGNATURES
    where = {row.replayed_on.rsplit("/", 1)[1] for row in result.rows}
    assert where == {"gpu4", "gpu7"}  # both used; each worker saw only its own GPU
    stored = _stored(store, result)
    assert [(r.signature, r.replayed_on, r.variants[1].verdict) for r in stored.rows] == \
        [(r.signature, r.replayed_on, r.variants[1].verdict) for r in result.rows]
    assert not result.warnings


def test_the_gpu_seconds_no_signature_was_replaying_are_the_replays_idle_time(recorded, monkeypatch):
    """`replay idle`: the GPU-seconds a replay's workers replayed no signature (starting, or out of work while
    another GPU finished its last one), what keeps a second GPU from halving a replay (`tune` on two H200s timed
    1.41x-1.65x the candidates a minute of one). One signature takes 2 s longer than the rest: on two workers the
    other one waits nearly all of that, on one nobody waits."""
    store, recording = recorded
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,7")
    slow = fake("--slow", str(recording.signatures[0].id), "2")
    one, two = (replay(recording, store, VARIANTS, ReplayPlan(l2="cold"), workers=Workers.at(gpus=gpus, worker=slow))
                for gpus in ([0], [0, 1]))
    assert two.times_s["replay"] >= 2 and two.times_s["replay idle"] - one.times_s["replay idle"] >= 1.5


def test_each_timed_row_says_why_it_moved_in_the_table_the_stored_json_and_the_page(recorded, tmp_path):
    """Issue 38: the fp32 matmul renamed `cutlass_` builds other SASS on sm_90a than plain (spills, IMADs): its rows
    carry the two cubins' `CubinDelta`, whose figures are the two variants' own cubin summaries; the add kernel's
    renamed build is SASS identical, untimed, and carries none."""
    store, recording = recorded
    result = replay(recording, store, VARIANTS, ReplayPlan(l2="cold"), workers=Workers.at(worker=fake()))
    rows = {row.kernel: row for row in result.rows}
    plain, renamed = rows["matmul_kernel"].variants
    assert renamed.why["sass_identical"] is False and renamed.why["mix"]
    assert renamed.why["resources"] == {field: {"base": plain.facts[field], "variant": renamed.facts[field]}
                                        for field in SUMMARY_FIELDS}
    assert (renamed.why["base_entry"], renamed.why["variant_entry"]) == ("matmul_kernel", "cutlass_matmul_kernel")
    assert rows["add_kernel"].variants[1].verdict == "SASS identical" and rows["add_kernel"].variants[1].why is None
    stored = _stored(store, result)
    assert [v.why for row in stored.rows for v in row.variants] == [v.why for row in result.rows for v in row.variants]
    console = Console(width=400, record=True)
    console.print(result)
    text = console.export_text()
    assert "cutlass_ why" in text and renamed.why["text"] in text
    from tritonhook.page import write_report

    path, _ = write_report(store, tmp_path / "r.html", sass=False)
    assert f"<td>{renamed.why['text']}</td>" in html.unescape(path.read_text())


@pytest.mark.parametrize("l2, rule, dirt, words", [
    ("measured", "measured", "measured", "dirtied or cleaned before each call as measured"),
    ("cold", "measured", "dirty", "dirtied before each call"),
    ("measured", "half", "half", "half dirtied before each call"), ("measured", "none", "none", None),
    ("warm", "dirty", "none", None)])
def test_the_worker_is_told_how_to_dirty_the_l2_and_the_result_says_so(recorded, l2, rule, dirt, words):
    """Under measured the L2's dirt is the recording's, per signature; under every other rotating --l2 rule the
    measured dirt is a written L2; any other --l2-dirt is itself, but under warm (its calls find what the previous
    call left)."""
    store, recording = recorded
    result = replay(recording, store, VARIANTS, ReplayPlan(l2=l2, l2_dirt=rule),
                    workers=Workers.at(worker=fake("--expect", f'l2_dirt="{dirt}"')))
    assert [row.status for row in result.rows] == ["ok"] * SIGNATURES
    assert _stored(store, result).l2_dirt == dirt
    console = Console(width=300, record=True)
    console.print(result)
    assert (f"L2 {l2}, {words};" if words else f"L2 {l2};") in console.export_text()


def test_each_result_is_in_the_store_as_it_arrives_so_a_replay_killed_half_way_keeps_them(recorded, tmp_path):
    """The replaying process itself killed while one of its two workers hangs on signature 3: what the other
    measured meanwhile is already in the store (kind sweep-signature), tagged with the recording."""
    store, recording = recorded
    hung = 3
    script = (f"import sys; sys.path[:0] = {sys.path!r}\n"
              "from tritonhook.store import Store\nfrom tritonhook import sweep\n"
              "from tritonhook.measure.variants import parse_variants\n"
              f"store = Store({str(store.path)!r})\n"
              f"sweep.replay(sweep.load(store, '{recording.id}'), store, parse_variants('plain,cutlass_'), "
              f"workers=sweep.Workers.at([0, 1], worker={fake('--hang', str(hung))!r}))\n")
    before = {r["id"] for r in store.results(SIGNATURE_KIND)}
    process = subprocess.Popen([sys.executable, "-c", script], start_new_session=True,
                               env={**os.environ, "CUDA_VISIBLE_DEVICES": "0,1"})  # one worker hangs, one goes on
    try:
        deadline = time.time() + 120
        while time.time() < deadline and process.poll() is None:
            arrived = [r for r in store.results(SIGNATURE_KIND) if r["id"] not in before]
            if len(arrived) == SIGNATURES - 1:
                break
            time.sleep(0.5)
        assert process.poll() is None, "the replay ended instead of hanging"
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    arrived = [r for r in store.results(SIGNATURE_KIND) if r["id"] not in before]
    assert sorted(r["signature"] for r in arrived) == \
        [i for i in range(SIGNATURES) if i != hung]
    assert all(r["status"] == "ok" and r["recording"] == recording.id for r in arrived)


def test_a_worker_killed_mid_sweep_loses_only_its_kernel_which_is_retried_on_the_other_gpu(recorded, monkeypatch,
                                                                                           tmp_path):
    store, recording = recorded
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    victim = 2
    result = replay(recording, store, VARIANTS,
                    workers=Workers.at(gpus="all", worker=fake("--die-once", str(tmp_path / "died"),
                                                                        str(victim))))
    assert (tmp_path / "died").exists()  # a worker did die on it
    assert [row.status for row in result.rows] == ["ok"] * SIGNATURES
    row = next(r for r in result.rows if r.signature == victim)
    died_on = row.retried_after.split(":")[0]
    assert "worker exited with status -9" in row.retried_after and died_on != row.replayed_on
    assert any(f"replayed again on {row.replayed_on} after its worker died" in w for w in result.warnings)
    assert all(not r.retried_after for r in result.rows if r.signature != victim)


def _job(store, signatures) -> ReplayJob:
    """A job replaying `signatures` with no variants (the fake worker only reads their inputs)."""
    return ReplayJob(str(store.path), "sm_90a", "r", tuple({"id": s.id, "args": s.args, "variants": []}
                                                        for s in signatures), 5, "cold", False, 5.0, 20.0, 10)


def test_a_kernel_that_kills_every_worker_is_a_fault_after_one_retry_and_the_others_go_on(recorded, tmp_path):
    store, recording = recorded
    job = _job(store, recording.signatures)
    results = run_workers(tmp_path, job, ["0", "1"], worker=fake("--die", "3"))
    assert {i: r["status"] for i, r in results.items()} == {i: "fault" if i == 3 else "ok" for i in range(SIGNATURES)}
    fault = results[3]
    assert fault["attempts"] == 2 and fault["message"].count("worker exited with status -9") == 2
    assert "/gpu0:" in fault["message"] and "/gpu1:" in fault["message"]  # tried on both GPUs


def test_a_worker_reports_an_error_on_one_line_and_stops_when_the_cuda_context_is_lost(monkeypatch, tmp_path):
    """torch follows a CUDA error with lines of advice: the row gets the first, the traceback keeps the rest. After
    a fault that took the context, the worker replays nothing more (a fresh one goes on: tests/test_sweep_gpu.py's
    real fault)."""
    import io

    from tritonhook.sweep.worker import FAULT_EXIT, serve

    def replay_one(job, job_path, signature):
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nSearch for `cudaErrorIllegal`")

    records, lost = [], iter([False, True])
    monkeypatch.setattr(sys, "stdin", io.StringIO("0\n1\n2\n"))
    job = ReplayJob("unused", "sm_90a", "r", tuple({"id": i} for i in range(3)), 5, "cold", False, 5.0, 20.0, 10)
    (tmp_path / "job.json").write_text(json.dumps(job.to_json()))
    assert serve(tmp_path / "job.json", records.append, replay_one, context_lost=lambda: next(lost)) == FAULT_EXIT
    errors = [r for r in records if r["status"] == "error"]
    assert [r["id"] for r in errors] == [0, 1]  # signature 2 never started
    assert errors[0]["message"] == "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert errors[1]["message"].endswith("encountered (the CUDA context is lost: a fresh worker goes on)")
    assert "cudaErrorIllegal" in errors[1]["traceback"]


def test_one_gpu_retries_on_a_fresh_worker_and_a_hung_kernel_is_killed(recorded, tmp_path):
    store, recording = recorded
    job = _job(store, recording.signatures[:3])
    results = run_workers(tmp_path, job, worker=fake("--hang", "1"), timeout_s=4)
    assert [results[i]["status"] for i in range(3)] == ["ok", "fault", "ok"]
    assert results[1]["message"].count("hung (killed)") == 2 and results[1]["attempts"] == 2


def test_a_worker_that_refuses_the_job_stops_the_replay_with_its_reason(recorded, tmp_path):
    store, recording = recorded
    job = _job(store, recording.signatures)
    began = time.time()
    with pytest.raises(TritonhookError, match="^r: recorded on sm_90a, this GPU is sm_100$"):
        run_workers(tmp_path, job, ["0", "1"], worker=fake("--refuse", "r: recorded on sm_90a, this GPU is sm_100"))
    assert time.time() - began < 30  # not one refusal per signature and GPU


# ----- Ray ----------------------------------------------------------------------------------------------------------
TASK = {"num_cpus": 0, "resources": {"test_gpu": 1}}
"""A Ray task of these tests: a custom resource stands for the GPU a CPU cluster does not have."""


@pytest.fixture(scope="module")
def ray_cluster():
    """One real local Ray cluster for the module (it takes seconds to start), with two "GPUs"."""
    ray = pytest.importorskip("ray")
    import os

    os.environ.setdefault(config.sweep.RAY_USAGE_STATS_ENABLED.name, "0")
    ray.init(num_cpus=2, num_gpus=0, resources={"test_gpu": 2}, include_dashboard=False, logging_level="WARNING")
    yield ray
    ray.shutdown()


def test_ray_tasks_get_files_and_snapshots_through_the_object_store_and_results_reach_the_store(recorded,
                                                                                               ray_cluster):
    store, recording = recorded
    result = replay(recording, store, VARIANTS, workers=Workers.at(ray=True, ray_task=TASK, worker=fake()))
    assert [row.status for row in result.rows] == ["ok"] * SIGNATURES
    assert all(row.replayed_on for row in result.rows)
    stored = _stored(store, result)
    assert [r.replayed_on for r in stored.rows] == [r.replayed_on for r in result.rows]


def test_a_killed_ray_task_is_retried_and_nothing_is_lost(recorded, ray_cluster, tmp_path):
    store, recording = recorded
    victim = 1
    result = replay(recording, store, VARIANTS,
                    workers=Workers.at(ray=True, ray_task=TASK, worker=fake("--die-once", str(tmp_path / "died"), str(victim), "--kill-parent")))
    assert (tmp_path / "died").exists()
    assert [row.status for row in result.rows] == ["ok"] * SIGNATURES
    row = next(r for r in result.rows if r.signature == victim)
    assert row.retried_after.startswith("ray task: ") and "Crashed" in row.retried_after


def test_a_ray_task_whose_kernel_kills_its_worker_twice_is_a_fault(recorded, ray_cluster):
    store, recording = recorded
    result = replay(recording, store, VARIANTS, workers=Workers.at(ray=True, ray_task=TASK, worker=fake("--die", "4")))
    status = {row.signature: row.status for row in result.rows}
    assert status[4].startswith("fault: ") and status[4].count("worker exited with status -9") == 2
    assert all(s == "ok" for i, s in status.items() if i != 4)


def test_a_fault_inside_a_ray_batch_costs_only_that_kernel(recorded, ray_cluster, tmp_path):
    """A task needing both "GPUs" leaves room for one at a time, so the recording goes in batches of two: the
    worker dies on one kernel, a fresh worker on the node finishes the batch, the driver retries only that one."""
    store, recording = recorded
    victim = 3
    result = replay(recording, store, VARIANTS,
                    workers=Workers.at(ray=True, ray_task={"num_cpus": 0, "resources": {"test_gpu": 2}}, worker=fake("--die-once", str(tmp_path / "died"), str(victim))))
    assert (tmp_path / "died").exists()
    assert [row.status for row in result.rows] == ["ok"] * SIGNATURES
    assert [row.signature for row in result.rows if row.retried_after] == [victim]
    assert "worker exited with status -9" in next(r for r in result.rows if r.signature == victim).retried_after


def test_a_cluster_without_room_for_a_task_is_one_error_not_a_hang(recorded, ray_cluster):
    store, recording = recorded
    with pytest.raises(TritonhookError, match="--ray: the cluster has no room for a replay task"):
        replay(recording, store, VARIANTS,
               workers=Workers.at(ray=True, worker=fake()))  # one GPU per task; this cluster has none


def test_a_replay_job_hands_out_its_costliest_signatures_first(recorded, tmp_path):
    """The workers take a job's signatures in its order; a costly one taken last keeps one GPU busy while the others
    wait at the end (a `tune` chunk on two GPUs waited so). Given cheapest first, the job puts them costliest first:
    by timed arms, rounds and the recorded time per launch (`replay_cost`)."""
    from tritonhook.sweep.replay import build_all, replay_cost, replay_job, stop_rule

    store, recording = recorded
    cheapest_first = sorted(recording.signatures, key=lambda s: s.time_per_launch_ms)
    built = build_all(store, cheapest_first, VARIANTS, rows={})  # no row: a failed build would be a KeyError
    rules = {s.id: stop_rule(s, config.sweep.DEFAULT_ROUNDS, 0.01) for s in cheapest_first}
    fast_span_ms = 1e-3  # a round's span below every kernel's MIN_REPS calls: the time per launch decides
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(config.sweep.REPLAY_REP_MS.name, str(fast_span_ms))
        job = replay_job(tmp_path, recording, store, cheapest_first, built, {}, rules,
                         rounds=config.sweep.DEFAULT_ROUNDS, l2="cold", l2_dirt="none")
    order = [entry["id"] for entry in job.signatures]
    timed = {entry["id"]: sum(v["timed"] for v in entry["variants"]) for entry in job.signatures}
    by_id = {s.id: s for s in cheapest_first}
    costs = [replay_cost(by_id[i], timed[i], rules[i].cap, fast_span_ms) for i in order]
    assert costs == sorted(costs, reverse=True) and len(set(costs)) == len(costs)
    assert order != [s.id for s in cheapest_first]
    assert order[0] == max(by_id, key=lambda i: by_id[i].time_per_launch_ms * timed[i])
