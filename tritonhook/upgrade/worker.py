"""The rebuild worker: `RELEASE_PYTHON -m tritonhook.upgrade.worker JOB.json`, run by `upgrade` in the virtualenv
of another Triton release with this tritonhook first on PYTHONPATH, so the same code compiles under that release;
and its parent's side, `rebuild_captures`, which writes the job, runs it and reads each kernel's outcome back.

The job lists modules (recorded text by its blob's sha256), helpers (a `helpers` artifact read back, by its
sha256) and kernels (a capture id, its module, its helpers if recorded, its rebuild record). Each module is written
to a folder of its own and executed as a module from that file, its code compiled under the file name it had when
captured: Triton writes that name into the PTX's line info and reads the function's source through `inspect`, so
the name is given the recorded text in `linecache`, and a kernel rebuilt under the same release gives the captured
PTX byte for byte. A module captured as `__main__` runs under another name (its main block must not run). A
kernel's recorded helper modules are executed the same way, under their dotted names, before its module: its
imports of them (`from liger_kernel.ops.utils import ...`) find them in `sys.modules`, so the helpers compiled are
the recorded ones, not whatever is installed now. Each kernel's outcome is written as soon as it is known
(`OUT/ID/kernel.ptx`, `kernel.cubin`, `metadata.json`, `result.json` with the compiler's error text when it failed):
one kernel failing, or the worker dying, loses no other kernel's outcome.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import linecache
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Sequence

from .. import _triton, config
from ..launcher import OFF, ChildSettings, run as run_child

MAIN_STAND_IN = "tritonhook_rebuilt_main"
"""The module name a kernel module captured as `__main__` is executed under."""


def load_module(text: str, record: dict, folder: Path):
    """The recorded module `text`, written into `folder` and executed as the module `record` names, its package
    imported first, as an import does: a package whose `__init__` imports its kernel modules (Liger's
    `liger_kernel.ops` imports every one) would otherwise be run by the module's own first import of a sibling and
    find this module half executed (`cannot import name 'LigerRMSNormFunction'`, and its kernel not rebuilt). A
    package that cannot be imported is left to the module's own imports to report."""
    original = record["file"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (Path(original).name or "kernel_module.py")
    path.write_text(text)
    name = MAIN_STAND_IN if record["module"] == "__main__" else record["module"]
    parent, _, child = name.rpartition(".")
    if parent:
        with contextlib.suppress(Exception):  # gone, or broken as installed: the module's imports say so if it matters
            importlib.import_module(parent)
    lines = text.splitlines(keepends=True)
    linecache.cache[original] = (len(text), None, lines, original)  # mtime None: never checked against a file
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    with _no_gpu_driver_needed(text):  # entered first: it imports the triton_helpers this may be the recorded text of
        sys.modules[name] = module  # dataclasses and Triton look a function's module up by name
        exec(compile(text, original, "exec"), module.__dict__)  # noqa: S102 - the captured kernel module itself
    if parent in sys.modules:  # as an import does: `from package import module` then finds this one
        setattr(sys.modules[parent], child, module)
    return module


def install_helpers(helpers: dict, folder: Path) -> None:
    """A kernel's recorded helper modules (`_triton.helper_modules`), executed in their recorded order (a module
    after those it calls into) in place of any installed module of the same name."""
    for index, helper in enumerate(helpers["modules"]):
        load_module(helper["text"], helper, folder / str(index))


@contextlib.contextmanager
def _no_gpu_driver_needed(text: str):
    """Inductor's generated modules call `triton_helpers.set_driver_to_gpu()` when executed, which raises "Could
    not find an active GPU backend" on a machine with no GPU (62 of a transformer's 64 Inductor kernels). A rebuild
    compiles for the recorded target, given explicitly, and needs no driver: the call does nothing while such a
    module is executed here."""
    if "set_driver_to_gpu" not in text:
        yield
        return
    from torch._inductor.runtime import triton_helpers

    original = triton_helpers.set_driver_to_gpu
    triton_helpers.set_driver_to_gpu = lambda: None
    try:
        yield
    finally:
        triton_helpers.set_driver_to_gpu = original


def rebuild_one(kernel: dict, job: dict, work: Path, loaded: dict) -> dict:
    """Compile one kernel; write its outputs under `work/ID`; return its result (the error text when it failed)."""
    out = work / str(kernel["id"])
    out.mkdir(parents=True, exist_ok=True)
    result = {"id": kernel["id"], "triton_version": _triton.triton_version()}
    helpers = job["helpers"].get(kernel["helpers"], {"modules": [], "left_out": []})
    try:
        key = kernel["module"], kernel["helpers"]
        if key not in loaded:  # a module is executed after its own kernel's helpers, once per pair
            install_helpers(helpers, work / "helpers" / str(key[1])[:16])
            loaded[key] = load_module(job["modules"][key[0]], kernel["rebuild"], work / "modules" / key[0][:16])
        rebuilt = _triton.compile_rebuilt(loaded[key], kernel["rebuild"])
    except Exception as exc:  # noqa: BLE001 - the compiler's own error is the answer for this kernel
        result["error"] = _error_text(exc)
        if helpers["left_out"]:
            result["error"] += (f" (helper modules not recorded, imported from what is installed: "
                                f"{', '.join(helpers['left_out'])})")
    else:
        (out / "kernel.ptx").write_text(rebuilt.ptx)
        (out / "kernel.cubin").write_bytes(rebuilt.cubin)
        (out / "metadata.json").write_text(json.dumps(rebuilt.metadata))
        result["unknown_options"] = rebuilt.unknown_options
    # asked after the compile (importing a module may point Triton at another ptxas), and for a kernel that failed
    # too: the captured PTX is still assembled with this release's ptxas
    result["ptxas_path"] = _triton.ptxas_for(kernel["rebuild"]["target"]["arch"])[0]
    (out / "result.json").write_text(json.dumps(result))
    return result


def _error_text(exc: BaseException) -> str:
    """The exception's own message (Triton's CompilationError holds the source excerpt), else its last frame."""
    text = str(exc).strip() or "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return f"{type(exc).__name__}: {text}"


def main(argv: list[str]) -> int:
    job_path = Path(argv[0])
    job = json.loads(job_path.read_text())
    work = Path(job["out"])
    loaded: dict = {}
    for kernel in job["kernels"]:
        rebuild_one(kernel, job, work, loaded)
    return 0



# ----- the parent's side --------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Rebuilt:
    """One capture's kernel as the other release built it, or `error`: the compiler's text, or why it was not tried."""

    capture_id: int
    triton_version: str | None = None
    ptx: str | None = None
    cubin: bytes | None = None
    metadata: dict | None = None
    ptxas_path: str | None = None
    unknown_options: tuple[str, ...] = ()
    error: str | None = None


def rebuild_captures(python: Path, store, captures: Sequence, work: Path) -> dict[int, Rebuilt]:
    """Every capture's kernel compiled by the Triton of `python` (one worker process for all), by capture id. A
    capture without the recorded module or record, or whose record says it cannot be rebuilt, is an `error`. A
    capture made before helpers were recorded has none, and its kernel's module imports them from what is
    installed."""
    outcomes, job = {}, {"out": str(work / "out"), "modules": {}, "helpers": {}, "kernels": []}
    for capture in captures:
        missing = [stage for stage in (_triton.PYTHON_STAGE, _triton.REBUILD_STAGE) if stage not in capture.artifacts]
        record = None if missing else json.loads(store.read(capture, _triton.REBUILD_STAGE))
        why = (f"its capture has no {' or '.join(missing)} artifact" if missing
               else record.get("unsupported") or _read_helpers(store, capture, job["helpers"]))
        if why:
            outcomes[capture.id] = Rebuilt(capture.id, error=f"not rebuilt: {why}")
            continue
        module = capture.artifacts[_triton.PYTHON_STAGE].sha256
        job["modules"].setdefault(module, store.read(capture, _triton.PYTHON_STAGE).decode("utf-8", "replace"))
        helpers = capture.artifacts.get(_triton.HELPERS_STAGE)
        job["kernels"].append({"id": capture.id, "module": module, "rebuild": record,
                               "helpers": helpers.sha256 if helpers is not None else None})
    if job["kernels"]:
        failure = _run_worker(python, job, work)
        outcomes |= {kernel["id"]: _read_outcome(work / "out" / str(kernel["id"]), kernel["id"], failure)
                     for kernel in job["kernels"]}
    return outcomes


def _read_helpers(store, capture, known: dict) -> str | None:
    """Add `capture`'s helpers artifact, read back, to `known` (by its sha256); why it cannot be used, if so."""
    helpers = capture.artifacts.get(_triton.HELPERS_STAGE)
    if helpers is None or helpers.sha256 in known:
        return None
    try:
        known[helpers.sha256] = _triton.helper_modules(store.read(capture, _triton.HELPERS_STAGE))
    except ValueError as exc:
        return str(exc)
    return None


def _run_worker(python: Path, job: dict, work: Path) -> str | None:
    """Run the worker on `job`; None when it finished, else what stopped it (its last stderr line)."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "job.json").write_text(json.dumps(job))
    settings = ChildSettings(capture=OFF, record=OFF, import_from=str(Path(__file__).resolve().parents[2]))
    try:
        done = run_child([str(python), "-m", __name__, str(work / "job.json")], settings, capture_output=True,
                         text=True, timeout=config.upgrade.REBUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"the rebuild worker ran past {config.upgrade.REBUILD_TIMEOUT_S} s and was killed"
    if done.returncode == 0:
        return None
    last = [line for line in done.stderr.splitlines() if line.strip()][-1:] or ["no message"]
    return f"the rebuild worker exited with status {done.returncode} ({last[0].strip()})"


def _read_outcome(out: Path, capture_id: int, failure: str | None) -> Rebuilt:
    try:
        result = json.loads((out / "result.json").read_text())
    except (OSError, ValueError):
        return Rebuilt(capture_id, error=f"not rebuilt: {failure or 'the rebuild worker wrote no result'}")
    if result.get("error"):
        return Rebuilt(capture_id, result["triton_version"], ptxas_path=result["ptxas_path"], error=result["error"])
    return Rebuilt(capture_id, result["triton_version"], (out / "kernel.ptx").read_text(),
                   (out / "kernel.cubin").read_bytes(), json.loads((out / "metadata.json").read_text()),
                   result["ptxas_path"], tuple(result["unknown_options"]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
