"""Running a command with capture: the library side of `tritonhook run` and `tritonhook capture`.

`run_command` captures Triton compiles in every Python process the command starts (tritonhook's sitecustomize
on PYTHONPATH), with an optional rename and the TMA-scope fix; `capture_command` adds every frontend reachable
without installing anything: Triton's ptxas calls through wrappers named in Triton's variables, CuTe DSL's kept
files, and the pip-wheel ptxas that cuTile runs (wrapped for the command's duration). Both return a `RunResult`,
whose hints say what the command compiled that could not be captured (its Python has no Triton; it used cuTile
without --wheel-ptxas), from the notes its processes leave (`config.capture.NOTE_IMPORTS`). Those notes also count the
captures its processes could not write (a full disk): a run that lost any has failed (`RunResult.status`), since
its store is not what the command compiled, unless the caller accepts the loss.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import secrets
import tempfile
import time
from pathlib import Path
from typing import IO

from . import config, format
from ._imports import noted, noted_count
from ._triton import REQUIREMENT
from .errors import TritonhookError
from .launcher import Capture, ChildSettings, run_workload
from .preflight import named_gpu
from .rename import Rename, Selector
from .store import Store


@dataclasses.dataclass
class RunResult:
    """What a command under capture left: its exit status and the captures it wrote, by frontend."""

    store: str
    exit_code: int
    captures: list[int]
    by_frontend: dict[str, int]
    hints: list[str] = dataclasses.field(default_factory=list)
    """What the command compiled that was not captured, and how to capture it: lines for stderr."""
    lost: int = 0
    """Captures the command's processes made and could not write (each process warned why on stderr)."""

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    def summary(self, *, frontends: bool = True) -> str:
        split = ", ".join(f"{frontend} {n}" for frontend, n in sorted(self.by_frontend.items()))
        return (f"tritonhook: {len(self.captures)} capture(s) written to {self.store}"
                f"{f' ({split})' if frontends and split else ''}")

    def lost_line(self, *, allowed: bool = False) -> str | None:
        """The line saying what was lost, None when nothing was."""
        if not self.lost:
            return None
        verdict = "accepted (--allow-lost)" if allowed else "the run fails; pass --allow-lost to accept the loss"
        return (f"tritonhook: {self.lost} of {self.lost + len(self.captures)} capture(s) could not be written to "
                f"{self.store} (see the warnings above); {verdict}")

    def status(self, *, allow_lost: bool = False) -> int:
        """The command's exit status, or `LOST_STATUS` where it succeeded and captures were lost (unless
        `allow_lost`)."""
        return self.exit_code or (LOST_STATUS if self.lost and not allow_lost else 0)

    def __rich_console__(self, console, options):
        yield format.line(self.summary())


LOST_STATUS = 1
"""The exit status of a run whose command succeeded but whose captures were not all written."""


def run_command(command: list[str], store: Store | str | os.PathLike | None = None, *,
                rename: Rename | None = None, select: Selector = None, fix_tma_scope: bool | str = False,
                apply: str | os.PathLike | None = None) -> RunResult:
    """Run `command` with capture enabled in every Python process it starts, into `store` (a path is created);
    `rename`, `select`, `fix_tma_scope` and `apply` as `tritonhook.enable` takes them (the decisions `apply` names
    are checked here, before the command starts)."""
    store = _writable_store(store)
    if apply is not None:
        from .decisions.apply import check_source

        if rename is not None:
            raise TritonhookError("--apply names each kernel's rename itself: give it without --rename/--strip")
        apply = check_source(apply)
    before = store.last_id()
    with tempfile.TemporaryDirectory(prefix="tritonhook-run-") as notes:
        capture = Capture.of(store.path, rename=rename, select=select, fix_tma_scope=fix_tma_scope, apply=apply)
        completed = run_workload(command, ChildSettings(capture=capture, notes=notes))
        return _result(store, before, completed.returncode, notes)


def capture_command(command: list[str], store: Store | str | os.PathLike | None = None, *, stdout: IO | None = None,
                    wheel_ptxas: bool = False) -> RunResult:
    """Run `command` capturing every frontend reachable without an install (see the module's docstring);
    `stdout` redirects the command's own output (the CLI's --json keeps stdout for its summary).
    `wheel_ptxas`: also wrap the pip-wheel ptxas binaries in place for the command's duration (cuTile's
    `tileiras` reaches no other way); opt-in, since it changes files of the Python environment while it runs."""
    from .cute.capture import collect_dump_dir, keep_settings
    from .ptxas.wrapper import restore_orphans, side_wrappers, wheel_ptxas_wrapped

    store = _writable_store(store)
    before = store.last_id()
    token = secrets.token_hex(8)
    restore_orphans()  # a killed capture's wrapped wheel ptxas would record nothing, for it or for this run
    wheels = wheel_ptxas_wrapped(store.path, token) if wheel_ptxas else contextlib.nullcontext()
    with tempfile.TemporaryDirectory(prefix="tritonhook-capture-") as work, wheels:
        dump = config.cute.CUTE_DSL_DUMP_DIR.get() or str(Path(work) / "cute-dump")
        notes = Path(work) / "notes"
        notes.mkdir()
        settings = ChildSettings(capture=Capture.of(store.path), ptxas=side_wrappers(work, store.path),
                                 cute_keep=keep_settings(dump), token=token, notes=str(notes))
        began = time.time()
        try:
            completed = run_workload(command, settings, stdout=stdout)
        finally:  # what CuTe DSL dumped before a signal stopped the command is kept too: the folder goes with `work`
            collect_dump_dir(dump, store, since=began)
        return _result(store, before, completed.returncode, str(notes), cutile_hint=not wheel_ptxas)


def _writable_store(store: Store | str | os.PathLike | None) -> Store:
    """The store to capture into, checked before the command starts: a bad $TRITONHOOK_GPU (which the capture
    warning quotes) fails here rather than in the command's compiles, an unwritable store likewise."""
    named_gpu()
    return Store.of(store, create=True)


def _result(store: Store, before: int, exit_code: int, notes_folder: str, *, cutile_hint: bool = False) -> RunResult:
    """The captures the command wrote, those it lost, and the hints its processes' notes (in `notes_folder`) call
    for; an error if the store was removed or replaced meanwhile, since the rows read through this process's
    handle would then be of a file that no longer exists (they are lost)."""
    store.check_in_place()
    notes = noted(notes_folder)
    new = store.captures(after=before)
    by_frontend = dict(collections.Counter(c.frontend for c in new))
    hints = [] if new else [f"tritonhook: {python} cannot import triton, so nothing it ran was captured; install "
                            f"Triton there: {python} -m pip install '{REQUIREMENT}'"
                            for python in notes.get(config.capture.NOTED_TRITON_MISSING, [])]
    if cutile_hint and (hint := _wheel_ptxas_hint(notes, by_frontend)):
        hints.append(hint)
    return RunResult(str(store.path), exit_code, [c.id for c in new], by_frontend, hints,
                     noted_count(notes_folder, config.capture.NOTED_CAPTURES_LOST))


def _wheel_ptxas_hint(notes: dict[str, list[str]], by_frontend: dict[str, int]) -> str | None:
    """cuTile's `tileiras` runs the wheel ptxas beside it, which only --wheel-ptxas reaches: say so when the
    command imported cuda.tile and no cuTile capture came of it, or when nothing was captured at all (a cuTile
    program whose processes leave no notes); only when that ptxas is here."""
    from .ptxas.wrapper import tileiras_ptxas

    if by_frontend.get("cutile"):
        return None
    if config.capture.NOTED_CUTILE in notes:
        what = "the command imported cuda.tile and no cuTile kernel was captured"
    elif not by_frontend:
        what = "nothing captured"
    else:
        return None
    if not (found := tileiras_ptxas()):
        return None
    return (f"tritonhook: {what}; for cuTile kernels add --wheel-ptxas (cuTile's tileiras runs {found[0]}, which "
            f"only --wheel-ptxas records)")
