"""`tritonhook demo`: the README's main job, end to end, on whatever machine it runs on.

With no GPU: compile the bundled sample kernels (and the Gluon attention kernels) for sm_90a, sm_100a and sm_120a
into a fresh store, once with their own names and once renamed `cutlass_` (each variant with its own Triton
cache: on Triton 3.6 a renamed and a plain build share a cache entry), assemble the Blackwell attention's PTX with
every ptxas found (the ptxas matrix, saved in the store), then write the report, whose collection runs the cubin
diffs and the preflight predictions. With a GPU it also A/B-times two bundled kernels in this process
(`ab.compare`) and runs memwatch over the stack-reservation example, and the report shows both.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Callable, Iterator, Sequence

from .. import config
from ..errors import TritonhookError
from ..files import create_new, holding_others
from ..rename import DEFAULT_PREFIX
from ..ptx_capture import session as capture_session
from ..store import Store

TARGETS = (90, 100, 120)
VARIANTS = (("plain", None), (DEFAULT_PREFIX, DEFAULT_PREFIX))  # (label, rename)
STACK_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "stack_reservation.py"
"""The memwatch subject of the GPU path; present in a source checkout, absent from an installed wheel."""
DEMO_FILES = frozenset({"store", "triton-cache", "report.html", "memwatch-stack.json"})
"""What a demo writes in its --out folder: a folder holding anything else is not a demo's, and is refused."""


@dataclasses.dataclass(frozen=True)
class DemoResult:
    report: Path
    summary: list[str]
    skipped: list[str]  # what did not run here, and why
    seconds: float


def compile_jobs(samples: Sequence[str] | None, attention: bool) -> list[tuple[str, Callable[[], object]]]:
    """(label, compile) for every sample on every target it supports, then the bundled attention kernels."""
    from ..samples import SAMPLES, compile_sample

    names = list(SAMPLES) if samples is None else list(samples)
    unknown = [name for name in names if name not in SAMPLES]
    if unknown:
        raise TritonhookError(f"--samples: unknown sample(s) {', '.join(unknown)}; choose from {', '.join(SAMPLES)}")
    jobs = [(f"{name} sm_{cap}", functools.partial(compile_sample, name, cap))
            for cap in TARGETS for name in names if cap >= SAMPLES[name].min_capability]
    if attention:
        from gluon_kernels import compile_blackwell_attention, compile_hopper_attention

        jobs += [("Hopper Gluon attention bf16 sm_90", functools.partial(compile_hopper_attention, dtype="bf16")),
                 ("Blackwell Gluon attention fp16 sm_100",
                  functools.partial(compile_blackwell_attention, dtype="fp16"))]
    return jobs


def run_demo(out: str | os.PathLike, *, samples: Sequence[str] | None = None, attention: bool = True,
             progress: bool = True) -> DemoResult:
    """Everything `tritonhook demo` does; the report is `out/report.html`. What it cannot do here (no Triton, bad
    `samples`) is refused before anything is created: a half-made store would make the next demo refuse."""
    from .. import _triton
    from . import write_report, summary_lines

    started = time.perf_counter()
    _triton.check_supported()
    out = Path(out)
    jobs = compile_jobs(samples, attention)
    store = Store(_claimed_store(out))
    gpu = _gpu_present()
    skipped = [] if gpu else ["A/B sweep and memwatch: no CUDA GPU here (run `tritonhook demo` on a GPU machine)"]
    steps = len(jobs) * len(VARIANTS) + 2 + (2 if gpu else 0)
    with _progress(progress, steps) as step:
        for label, rename in VARIANTS:
            with config.scope({config.report.TRITON_CACHE_DIR.name: str(out / "triton-cache" / label)}), \
                    warnings.catch_warnings(), capture_session(store, subprocesses=False, rename=rename):
                warnings.simplefilter("ignore", RuntimeWarning)  # preflight's capture warnings: the report has them
                for name, compile_kernel in jobs:
                    step(f"compile {name} ({label})")
                    compile_kernel()
        step("ptxas matrix")
        skipped += _ptxas_matrix(store)
        if gpu:
            step("A/B sweep on the GPU")
            skipped += _gpu_sweep(store, out)
            step("memwatch of the stack example")
            skipped += _memwatch(store, out)
        step("report: cubin diffs, preflight, page")
        path, data = write_report(store, out / "report.html")
    seconds = time.perf_counter() - started
    lines = summary_lines(path, data)
    lines[0] += f" (demo took {seconds:.0f} s)"
    return DemoResult(path, lines, skipped, seconds)


def _claimed_store(out: Path) -> Path:
    """`out`/store, made by this demo alone (one mkdir decides: of two demos started together into one folder,
    one runs and the other is refused), in a folder that holds nothing but a demo's files."""
    store_path = out / "store"
    try:
        made = create_new(store_path, folder=True)
    except OSError as exc:
        raise TritonhookError(f"{store_path}: cannot make the demo's store ({exc.strerror or exc})") from None
    if not made:
        raise TritonhookError(f"{store_path}: already holds a store from an earlier demo (or one running now); pass "
                              f"another --out or remove it (the demo starts from a fresh store)")
    if others := holding_others(out, DEMO_FILES):
        store_path.rmdir()
        raise TritonhookError(f"{out}: {others}, not a demo's; pass a new or empty --out")
    return store_path


@contextlib.contextmanager
def _progress(enabled: bool, total: int) -> Iterator[Callable[[str], None]]:
    """A rich progress bar on a terminal's stderr; `step(text)` starts the next step."""
    from ..format import console

    screen = console(stderr=True)
    if not (enabled and screen.is_terminal):
        yield lambda text: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("demo"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=screen, transient=True) as bar:
        task = bar.add_task("", total=total)
        done = [0]

        def step(text: str) -> None:
            bar.update(task, completed=done[0], description=text)
            done[0] += 1

        yield step
        bar.update(task, completed=total)


def _ptxas_matrix(store: Store) -> list[str]:
    """The ptxas matrix of the largest plain sm_100a build (the Blackwell attention when compiled), saved in the
    store; returns what was skipped."""
    from ..ptxas_matrix import ptxas_matrix
    from ..binaries import find_ptxas, one_per_version
    from .model import PTXAS_MATRIX_KIND

    plain = [c for c in store.captures(arch="sm_100") if not c.renamed and "ptx" in c.artifacts]
    if not plain:
        return ["ptxas matrix: no plain sm_100a capture to assemble"]
    subject = max(plain, key=lambda c: c.artifacts["cubin"].size if "cubin" in c.artifacts else 0)
    paths = [binary.path for binary in one_per_version(find_ptxas())]
    label = f"capture {subject.id} ({subject.entry}, {subject.arch})"
    try:
        matrix = ptxas_matrix(store.read(subject, "ptx").decode(), paths, label=label)
    except TritonhookError as exc:
        return [f"ptxas matrix: {exc}"]
    command = (f"tritonhook export --store {store.path} {subject.id} ptx-{subject.id} && "
               f"tritonhook ptxas-matrix ptx-{subject.id}/{subject.entry}.ptx")
    store.add_result(PTXAS_MATRIX_KIND, {"source": label, "capture_id": subject.id, "command": command,
                                         **matrix.to_json()})
    return []


def _gpu_present() -> bool:
    from ..measure.timing import cuda_torch

    try:
        cuda_torch()
    except TritonhookError:
        return False
    return True


def _gpu_sweep(store: Store, out: Path) -> list[str]:
    """plain vs cutlass_ on two bundled kernels, both ways, saved in the store: an in-process A/B
    (`ab.compare`) and a workload sweep (`sweep.record` of their launches, then `sweep.replay` kernel by kernel)."""
    import torch

    from .. import ab, sweep
    from ..flops import attention_flops
    from ..measure.variants import parse_variants
    from ..samples import matmul_kernel

    size = 4096
    a, b = (torch.randn(size, size, device="cuda", dtype=torch.float16) for _ in range(2))

    def matmul_fp16():
        c = torch.empty(size, size, device="cuda", dtype=torch.float16)
        matmul_kernel[(size // 128, size // 128)](a, b, c, size, size, size, size, size, size, BLOCK_M=128,
                                                  BLOCK_N=128, BLOCK_K=64, PRECISION="tf32", num_warps=8,
                                                  num_stages=3)
        return c

    benchmarks = [("matmul_fp16 4096^3", matmul_fp16, 2.0 * size ** 3)]
    if torch.cuda.get_device_capability() == (9, 0):
        from gluon_kernels import hopper_attention

        q, k, v = (torch.randn(2, 16, 4096, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        benchmarks.append(("hopper attention bf16 S=4096", lambda: hopper_attention(q, k, v),
                           attention_flops(2, 16, 4096, 128)))
    with config.scope({config.report.TRITON_CACHE_DIR.name: str(out / "triton-cache" / "ab")}):
        for name, run, flops in benchmarks:
            ab.compare(run, flops=flops, rounds=5, store=store, name=name, progress=False)
        with sweep.record(store) as recorder:
            for _ in range(3):
                for _, run, _ in benchmarks:
                    run()
            torch.cuda.synchronize()
        sweep.replay(recorder.recording, store, parse_variants("plain,cutlass_"), sweep.ReplayPlan(rounds=7))
    return [] if len(benchmarks) > 1 else ["A/B of the Hopper attention: the GPU is not sm_90"]


def _memwatch(store: Store, out: Path) -> list[str]:
    """memwatch over the stack-reservation example (a kernel with a 16 KiB stack frame), saved in the store (the
    report reads it there) and written as JSON beside it; returns what was skipped."""
    from ..memwatch import run_command, write_json

    if not STACK_EXAMPLE.exists():
        return [f"memwatch: {STACK_EXAMPLE} is not here (a source checkout has it)"]
    command = [sys.executable, str(STACK_EXAMPLE), "--kernel", "local", "--no-watch"]
    code, result = run_command(command, 2.0)
    if code != 0:
        return [f"memwatch: {' '.join(command)} exited with status {code}"]
    result.label = f"python {STACK_EXAMPLE.name} --kernel local --no-watch"
    result.save(store)
    write_json(result, out / "memwatch-stack.json")
    return []
