"""The one module that touches Ray (an optional extra: `pip install 'tritonhook[ray]'`), as `_triton.py` is for
Triton: connecting to a cluster, putting bytes into its object store, submitting a function as a task and waiting
for tasks one at a time. What runs in the tasks and what travels is the caller's (`sweep.schedule`)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from typing import Callable, Iterator, Sequence

from . import config
from .errors import TritonhookError

INSTALL_HINT = "--ray needs Ray: pip install 'tritonhook[ray]'"


def _ray():
    try:
        import ray
    except ImportError:
        raise TritonhookError(INSTALL_HINT) from None
    return ray


def available() -> bool:
    """Whether Ray can be imported here."""
    try:
        _ray()
    except TritonhookError:
        return False
    return True


@contextlib.contextmanager
def cluster(address: str | None = None) -> Iterator[None]:
    """Connected to a Ray cluster for the block: the one this process already joined; else `address`; else (None)
    the cluster this machine belongs to (RAY_ADDRESS, a local `ray start`), else a new one on this machine. A
    connection made here is closed at the end (a cluster started here stops with it)."""
    ray = _ray()
    if ray.is_initialized():
        yield
        return
    with config.scope({config.sweep.RAY_USAGE_STATS_ENABLED.name: config.sweep.RAY_USAGE_STATS_ENABLED.get() or "0"}):
        try:
            ray.init(address=address or None, include_dashboard=False, logging_level="WARNING")
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"--ray {address}" if address else "--ray"
            raise TritonhookError(f"{where}: cannot connect to a Ray cluster ({exc})") from None
    try:
        yield
    finally:
        ray.shutdown()


def capacity(options: dict) -> int:
    """How many tasks with these resource `options` the cluster can run at once (0: none, they would wait)."""
    total = _ray().cluster_resources()
    needed = {"GPU": options.get("num_gpus", 0), "CPU": options.get("num_cpus", 0), **options.get("resources", {})}
    return int(min((total.get(name, 0) // amount for name, amount in needed.items() if amount), default=0))


def put(data) -> object:
    """An object-store reference to `data`: each node that runs a task given it fetches it once."""
    return _ray().put(data)


@functools.lru_cache(maxsize=None)
def _remote(function: Callable):
    return _ray().remote(function)


def submit(function: Callable, options: dict, *args) -> object:
    """Run `function(*args)` as a Ray task with these resource `options` (e.g. {"num_gpus": 1}); references among
    `args` arrive as their values. Ray does not retry it: a task that dies is the caller's to retry."""
    return _remote(function).options(max_retries=0, **options).remote(*args)


@dataclasses.dataclass
class TaskDied:
    """A task whose process died or whose function raised something other than a TritonhookError."""

    message: str


def next_done(running: Sequence[object]):
    """(reference, value) of the first of `running` to finish; the value is a `TaskDied` when the task did. A
    TritonhookError raised in a task is raised here (it is about the job, not the node)."""
    ray = _ray()
    (done,), _ = ray.wait(list(running), num_returns=1)
    try:
        return done, ray.get(done)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, TritonhookError):
            raise TritonhookError(str(exc.cause)) from None
        return done, TaskDied(f"{type(exc.cause).__name__}: {exc.cause}"[:2000])
    except ray.exceptions.RayError as exc:
        return done, TaskDied(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:2000])
