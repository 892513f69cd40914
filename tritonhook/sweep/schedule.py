"""Handing a replay's signatures to workers: one worker process per local GPU, or Ray tasks on a cluster.

Local (`run_workers`). One slot per GPU, each running `python -m tritonhook.sweep.worker JOB` pinned with
`CUDA_VISIBLE_DEVICES`; a slot takes the next signature from one shared queue when its worker is free ("by
kernel"), so a long kernel never holds up the others. Results are merged as they arrive. A worker that dies or
hangs (killed after `timeout_s`) loses only the signature in flight: that one goes back to the queue and is
retried once on another GPU (on the same one when there is only one); a second death reports it as a fault. The
slot starts a fresh worker for the rest. One GPU is the case of one slot.

Ray (`run_on_ray`). Tasks of a few signatures each (`RAY_TASKS_PER_GPU`), `num_gpus=1` (Ray pins them with
CUDA_VISIBLE_DEVICES). What a task needs travels through Ray's object store, so a node needs no shared filesystem,
only tritonhook, Triton and torch: the job, the signatures' variant files (metadata JSON + cubin) and the snapshot
blobs their inputs read, each put once however many tasks share it. On the node the task writes them to a
temporary folder (a store holding just those blobs) and runs the same worker there through `run_workers` with one
slot and no retry, so a kernel fault kills only that worker, and the task returns every result, the fault
included. The driver retries a faulted signature once as a task of its own; when a whole task dies (its Ray worker
or node lost), each of its signatures is retried once on its own. Results come back to the driver, which alone
writes the local store.

Every result names where it ran (`where`: host/gpuN, from the worker's hello).
"""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

from .. import _ray, config, format
from ..errors import TritonhookError
from ..launcher import OFF, ChildSettings, popen
from ..store import Store
from .job import ReplayJob
from .recording import tensors_of
from .worker import NEXT_JOB, REFUSED_EXIT

WORKER = ("-m", "tritonhook.sweep.worker")
"""The worker program, as arguments of the Python that runs the workers (on a Ray node: that node's); the job
file's path is its last argument. Tests of the scheduling alone replace it."""
KERNEL_TIMEOUT_S = 120.0
"""A worker that shows no result this long after it was handed a signature is killed (the kernel hung)."""
WORKER_START_TIMEOUT_S = 300.0
"""How long a worker may take to say hello (importing torch, creating a CUDA context) on a loaded machine."""
RETRIES = 1
"""How often a signature whose worker died is handed out again before it is reported as a fault."""
RAY_TASK = {"num_gpus": 1}
"""The resources of one Ray replay task."""
RAY_TASKS_PER_GPU = 3
"""A Ray replay is cut into about this many tasks per GPU of the cluster: each task starts one worker (torch and a
CUDA context: seconds), and several per GPU still balance uneven kernels."""


# ----- which GPUs ---------------------------------------------------------------------------------------------------
def visible_gpus() -> list[str] | None:
    """The GPUs CUDA would show this process, as CUDA_VISIBLE_DEVICES entries (index or UUID) to pin a worker to
    each; None when they cannot be counted without creating a CUDA context (no NVML bindings or driver)."""
    if (visible := config.sweep.CUDA_VISIBLE_DEVICES.raw()) is not None:
        return [entry.strip() for entry in visible.split(",") if entry.strip()]
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no bindings, no driver: cannot count
        return None
    try:
        return [str(index) for index in range(pynvml.nvmlDeviceGetCount())]
    finally:
        pynvml.nvmlShutdown()


def resolve_gpus(spec: str | Sequence[int] | None, visible: list[str] | None = None) -> list[str | None]:
    """The CUDA_VISIBLE_DEVICES value of each worker slot for `--gpus` `spec` ("all", "0,1" or a list of indices,
    counted as CUDA counts the visible GPUs); None: one worker that inherits this process's GPUs."""
    if spec is None:
        return [None]
    visible = visible_gpus() if visible is None else visible
    if isinstance(spec, str) and spec.strip() == "all":
        if visible is None:
            raise TritonhookError("--gpus all: cannot count the GPUs here (no NVML: pip install nvidia-ml-py, or "
                                  "set CUDA_VISIBLE_DEVICES, or name them: --gpus 0,1)")
        if not visible:
            raise TritonhookError("--gpus all: no GPU is visible on this machine")
        return list(visible)
    text = spec if isinstance(spec, str) else ",".join(map(str, spec))
    parts = [part.strip() for part in text.split(",")]
    if not parts or not all(part.isdigit() for part in parts):
        raise TritonhookError(f"--gpus {text}: give 'all' or GPU indices such as 0,1")
    indices = [int(part) for part in parts]
    if len(set(indices)) != len(indices):
        raise TritonhookError(f"--gpus {text}: a GPU is named twice")
    if visible is not None and max(indices) >= len(visible):
        raise TritonhookError(f"--gpus {text}: this machine shows {len(visible)} GPU(s)"
                              + (f" (0-{len(visible) - 1})" if visible else ""))
    return [visible[i] if visible is not None else str(i) for i in indices]


# ----- one worker process -------------------------------------------------------------------------------------------
def where(hello: dict) -> str:
    """host/gpuN of a worker's hello line (gpu0 when it was not pinned)."""
    return f"{hello.get('host', '?')}/gpu{hello.get('gpu') or 0}"


class _Worker:
    """One worker process on one GPU: hand it a signature id, read its protocol lines (worker.serve)."""

    def __init__(self, command: Sequence[str], job_path: Path, device: str | None):
        # a worker replays the kernels its job names: it neither captures nor records
        self.command, self.job_path, self.device = tuple(command), job_path, device
        settings = ChildSettings(capture=OFF, record=OFF, visible_devices=device)
        self.stderr = tempfile.TemporaryFile("w+")
        self.process = popen([sys.executable, *command, str(job_path)], settings, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=self.stderr, text=True, bufsize=1)
        self.lines: queue.Queue = queue.Queue()
        self.hung, self.where = False, "?"
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            if line.strip():
                self.lines.put(json.loads(line))
        self.lines.put(None)

    def _next(self, timeout_s: float) -> dict | None:
        """The next protocol record; None when the worker exited, or hung and was killed."""
        try:
            record = self.lines.get(timeout=timeout_s)
        except queue.Empty:
            self.hung = True
            self.process.kill()
            record = None
        if record is None:
            self.process.wait()
        return record

    def start(self) -> None:
        """Wait for its hello; a worker that refuses the job or dies first fails the whole replay."""
        hello = self._next(WORKER_START_TIMEOUT_S)
        if hello is not None and hello.get("status") == "refused" or self.process.returncode == REFUSED_EXIT:
            raise TritonhookError((hello or {}).get("message") or "the replay worker refused the job")
        if hello is None or hello.get("status") != "worker":
            raise TritonhookError(f"the replay worker failed before replaying anything ({self.why()})")
        self.where = where(hello)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def take_job(self, job_path: Path) -> None:
        """Go on with another job of the same replay (`worker.serve`'s `job PATH` line)."""
        if job_path != self.job_path:
            self.job_path = job_path
            try:
                self.process.stdin.write(f"{NEXT_JOB}{job_path}\n")
                self.process.stdin.flush()
            except (BrokenPipeError, OSError):
                pass  # it died meanwhile: its next signature says so

    def replay(self, signature_id: int, timeout_s: float) -> dict:
        """Its result record for the signature; a "fault" record when the worker died or hung on it."""
        try:
            self.process.stdin.write(f"{signature_id}\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # it died meanwhile: reading says so
        while (record := self._next(timeout_s)) is not None:
            if record.get("id") == signature_id and record.get("status") != "started":
                return {**record, "where": self.where}
        return {"id": signature_id, "status": "fault", "message": self.why()[:2000], "where": self.where}

    def why(self) -> str:
        """Why it stopped, with its last stderr lines."""
        self.stderr.seek(0)
        tail = collections.deque(self.stderr.read().splitlines(), maxlen=3)
        what = "hung (killed)" if self.hung else f"worker exited with status {self.process.returncode}"
        return " | ".join([what, *tail])

    def close(self) -> None:
        if self.alive:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.stderr.close()


# ----- the queue ----------------------------------------------------------------------------------------------------
def settle(record: dict, deaths: list[str], retries: int) -> dict | None:
    """The final record of a signature after this attempt; None when its worker died (appended to `deaths`) and
    it goes back for another try (at most `retries`). A retried result says where the earlier ones died."""
    if record["status"] == "fault":
        deaths.append(f"{record['where']}: {record['message']}")
        if len(deaths) <= retries:
            return None
        return {**record, "message": "; then ".join(deaths)[:2000], "attempts": len(deaths)}
    if deaths:
        record = {**record, "retried_after": "; ".join(deaths)[:2000]}
    return {**record, "attempts": len(deaths) + 1}


@dataclasses.dataclass
class _Item:
    id: int
    deaths: list[str] = dataclasses.field(default_factory=list)   # "where: why" of each worker that died on it
    tried: set = dataclasses.field(default_factory=set)           # slots it ran on


class _Queue:
    """The signatures not handed out yet, shared by the slots; `take` blocks while a retry waits for another
    slot to be free. Thread-safe."""

    def __init__(self, ids: list[int], slots: int, retries: int, step: Callable[[str], None],
                 arrived: Callable[[dict], None]):
        self.pending = collections.deque(_Item(i) for i in ids)
        self.slots, self.retries, self.step, self.arrived = slots, retries, step, arrived
        self.running: dict[int, _Item] = {}
        self.results: dict[int, dict] = {}
        self.error: BaseException | None = None
        self.cond = threading.Condition()

    def take(self, slot: int) -> int | None:
        """The next signature for `slot` (one that did not die there, unless every slot has tried it); None when
        there is no more work for anyone."""
        with self.cond:
            while self.error is None:
                item = next((it for it in self.pending if slot not in it.tried or len(it.tried) >= self.slots), None)
                if item is not None:
                    self.pending.remove(item)
                    item.tried.add(slot)
                    self.running[item.id] = item
                    return item.id
                if not self.pending and not self.running:
                    break
                self.cond.wait()
            return None

    def done(self, record: dict) -> None:
        with self.cond:
            item = self.running.pop(record["id"])
            final = settle(record, item.deaths, self.retries)
            if final is None:
                self.pending.appendleft(item)
            else:
                self.results[item.id] = final
                self.arrived(final)
                self.step(str(item.id))
            self.cond.notify_all()

    def fail(self, error: BaseException) -> None:
        with self.cond:
            self.error = self.error or error
            self.cond.notify_all()


class WorkerPool:
    """Workers kept from one job of a replay to the next (its stages: the replay, the config check, each miss
    check's condition; `tune`'s chunks), one per slot: each job would otherwise start its own, torch and a CUDA
    context, seconds each. A slot's worker is checked out for one signature at a time, so jobs that run side by
    side share the slots: while one job waits for its last signature, the other's take the free GPU. Only for
    stages that do not need a fresh process (the gate's retest does). `close()` ends them."""

    def __init__(self):
        self.kept: dict[int, _Worker] = {}
        self.busy: set[int] = set()
        self.cond = threading.Condition()

    def take(self, slot: int, command, job_path: Path, device: str | None) -> _Worker | None:
        """The slot's kept worker moved to `job_path`, once no other job has it; None when there is none to
        reuse (none yet, another program or GPU, or dead): the caller starts one. Either way the slot is this
        caller's until `give`."""
        with self.cond:
            while slot in self.busy:
                self.cond.wait()
            self.busy.add(slot)
            worker = self.kept.pop(slot, None)
        if worker is None:
            return None
        if worker.command != tuple(command) or worker.device != device or not worker.alive:
            worker.close()
            return None
        worker.take_job(job_path)
        return worker

    def give(self, slot: int, worker: _Worker | None) -> None:
        """The slot back, with its worker to keep (None: it died or was closed)."""
        with self.cond:
            if worker is not None:
                self.kept[slot] = worker
            self.busy.discard(slot)
            self.cond.notify_all()

    def close(self) -> None:
        with self.cond:
            kept, self.kept = list(self.kept.values()), {}
        for worker in kept:
            worker.close()


def _serve_slot(slot: int, device: str | None, work: _Queue, command, job_path: Path, timeout_s: float,
                pool: WorkerPool) -> None:
    """Replay the queue's signatures on `slot`'s worker, checked out of `pool` a signature at a time."""
    try:
        while (signature_id := work.take(slot)) is not None:
            worker, going_on = pool.take(slot, command, job_path, device), None
            try:
                going_on = _replay_on(worker, command, job_path, device, signature_id, work, timeout_s)
            finally:
                pool.give(slot, going_on)  # None: it died, or was closed when the replay failed
    except BaseException as exc:  # noqa: BLE001 - stops every slot; raised by run_workers
        work.fail(exc)


def _replay_on(worker: _Worker | None, command, job_path: Path, device: str | None, signature_id: int,
               work: _Queue, timeout_s: float) -> _Worker | None:
    """Replay one signature on `worker` (a fresh one when there is none or it was killed while idle: not this
    signature's fault) and hand its record to the queue; the worker to go on with, None when it died on it. A
    replay that fails closes its worker."""
    try:
        if worker is None or not worker.alive:
            if worker is not None:
                worker.close()
            worker = _Worker(command, job_path, device)
            worker.start()
        began = time.monotonic()
        record = worker.replay(signature_id, timeout_s)
        record["worker_s"] = time.monotonic() - began  # its GPU's busy time (`replay.replay`'s "replay idle")
        if record["status"] == "fault" or record.get("context_lost"):
            worker.close()
            worker = None
        work.done(record)
        return worker
    except BaseException:
        if worker is not None:
            worker.close()
        raise


def run_workers(work: Path, job: ReplayJob, devices: Sequence[str | None] = (None,), *, progress: bool = False,
                timeout_s: float = KERNEL_TIMEOUT_S, worker: Sequence[str] = WORKER, retries: int = RETRIES,
                arrived: Callable[[dict], None] = lambda record: None,
                pool: WorkerPool | None = None) -> dict[int, dict]:
    """Replay every signature of `job` (written to `work`/job.json) on one worker per entry of `devices` (a
    CUDA_VISIBLE_DEVICES value, None: inherit); signature id -> result record, each also handed to `arrived` the
    moment it is final. `pool`: take the workers an earlier job of the replay left there, and leave them there
    after (else the job's own, closed at its end). See the module docstring."""
    own_pool = pool is None
    pool = pool or WorkerPool()
    job_path = work / "job.json"
    job_path.write_text(json.dumps(job.to_json()))
    with format.progress(progress, len(job.signatures), "replay") as step:
        lock = threading.Lock()

        def locked_step(text: str) -> None:
            with lock:
                step(text)

        shared = _Queue([s["id"] for s in job.signatures], len(devices), retries, locked_step, arrived)
        threads = [threading.Thread(target=_serve_slot, daemon=True,
                                    args=(slot, device, shared, worker, job_path, timeout_s, pool))
                   for slot, device in enumerate(devices)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if own_pool:
        pool.close()
    if shared.error is not None:
        raise shared.error
    return shared.results


# ----- Ray ----------------------------------------------------------------------------------------------------------
def require_ray() -> None:
    """A TritonhookError saying how to install Ray, when it is missing."""
    if not _ray.available():
        raise TritonhookError(_ray.INSTALL_HINT)


def _payload(entries: list[dict]) -> tuple[list[str], list[str]]:
    """(variant files relative to the work folder, snapshot blob digests) these signatures' replays read."""
    files = {v[key]: None for entry in entries for v in entry["variants"] for key in ("metadata", "cubin")}
    blobs = {t["blob"]: None for entry in entries for t in tensors_of(entry["args"]) if t.get("blob")}
    return list(files), list(blobs)


def replay_on_node(job: dict, entries: list[dict], worker: Sequence[str], timeout_s: float, files: list[str],
                   blobs: list[str], *contents: bytes) -> dict[int, dict]:
    """The body of one Ray task: lay out the files and blobs (`contents`, in that order) in a temporary folder and
    replay the signatures with one local worker, no retry (the driver retries)."""
    with tempfile.TemporaryDirectory(prefix="tritonhook-ray-") as folder:
        work = Path(folder)
        for name, data in zip(files, contents):
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_bytes(data)
        store = Store(work / "store")
        for digest, data in zip(blobs, contents[len(files):]):
            if store.put_blob(data) != digest:
                raise TritonhookError(f"snapshot blob {digest}: corrupted on its way to this node")
        store.close()
        node_job = ReplayJob.from_json(job).part(entries, store=str(store.path))
        return run_workers(work, node_job, worker=worker, timeout_s=timeout_s, retries=0)


def run_on_ray(work: Path, job: ReplayJob, store: Store, *, address: str | None = None, progress: bool = False,
               timeout_s: float = KERNEL_TIMEOUT_S, worker: Sequence[str] = WORKER, task: dict | None = None,
               retries: int = RETRIES, arrived: Callable[[dict], None] = lambda record: None) -> dict[int, dict]:
    """Replay every signature of `job` as Ray tasks (`task`: the resources of each, default one GPU); the variant
    files under `work` and the snapshot blobs in `store` travel through the object store. Each final record is
    handed to `arrived` as it comes back. See the module docstring."""
    task = task or RAY_TASK
    common = job.part(()).to_json()  # each task's job, its own signatures given beside it
    entries = list(job.signatures)
    results: dict[int, dict] = {}
    deaths: dict[int, list[str]] = {entry["id"]: [] for entry in entries}
    with _ray.cluster(address), format.progress(progress, len(entries), "replay (ray)") as step:
        slots = _ray.capacity(task)
        if not slots:
            raise TritonhookError(f"--ray: the cluster has no room for a replay task ({task}): add a node with a GPU")
        refs: dict[str, object] = {}

        def ref(key: str, read: Callable[[], bytes]):
            if key not in refs:
                refs[key] = _ray.put(read())
            return refs[key]

        def submit(batch: list[dict]):
            files, blobs = _payload(batch)
            contents = [ref(f"file:{name}", lambda name=name: (work / name).read_bytes()) for name in files]
            contents += [ref(f"blob:{digest}", lambda digest=digest: store.read_blob(digest, what="snapshot"))
                         for digest in blobs]
            return _ray.submit(replay_on_node, task, common, batch, list(worker), timeout_s, files, blobs, *contents)

        size = max(1, math.ceil(len(entries) / (RAY_TASKS_PER_GPU * slots)))
        running = {submit(entries[i:i + size]): entries[i:i + size] for i in range(0, len(entries), size)}
        while running:
            done, outcome = _ray.next_done(list(running))
            batch = running.pop(done)
            if isinstance(outcome, _ray.TaskDied):
                outcome = {entry["id"]: {"id": entry["id"], "status": "fault", "where": "ray task",
                                         "message": outcome.message} for entry in batch}
            for entry in batch:
                final = settle(outcome[entry["id"]], deaths[entry["id"]], retries)
                if final is None:
                    running[submit([entry])] = [entry]
                else:
                    results[entry["id"]] = final
                    arrived(final)
                    step(str(entry["id"]))
    return results
