"""The one way into a child process.

Every setting that crosses from a tritonhook process into a process it starts is a field of one typed object,
`ChildSettings`: capture (with its rename, whose text form is `rename.encode` / `rename.decode`), recording, the A/B
protocol, the ptxas Triton's compiles run, CuTe DSL's kept files, the capture token and notes folder, Inductor's
launcher switch, the visible GPU and the source tree the child imports tritonhook from. Features fill fields;
`ChildSettings.environment` is the only code that turns them into the environment a subprocess sees, `run` and
`popen` start a process under them, and `ChildSettings.current` is how a child reads its own back.

A user's command (the workload of run, capture, record, sweep, ab, memwatch, check, decisions confirm) starts as a
`Workload`: tritonhook stands between the shell and it, so it must not change what the shell sees. Its exit status
is the shell's (128 + N for a command killed by signal N, `exit_status`), and SIGTERM, SIGINT and SIGHUP sent to
tritonhook reach the command's process group, which tritonhook then waits for, as `timeout` does: a `kill` of
tritonhook never leaves the workload running without it. tritonhook's own workers (replay, rebuild) are not
workloads: a signal stops tritonhook, and them with it, as before.

A part left None is inherited as the parent has it (a `tritonhook capture` run's token reaches the processes its
command starts in turn). Capture and recording can also be switched `OFF`: every variable of the part is then set
to "" (which `EnvVar.get` reads as unset), so a replay worker neither captures nor records even when its parent
does. The variables are declared once, in `config`.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Mapping, Sequence

from . import config
from .config import EnvVar
from .errors import Stopped, TritonhookError

if TYPE_CHECKING:  # rename imports the Triton adapter: loaded where a rename is encoded or decoded, not before
    from . import rename as _rename


OFF: Literal["off"] = "off"
"""`ChildSettings.capture` / `record`: the child does not, whatever its parent does."""


@dataclasses.dataclass(frozen=True)
class Capture:
    """Capture every Triton compile into `store` from the child's first import of Triton, as `tritonhook.enable`
    would there: `rename` applied to the kernels `select` (a regex of names; None: all) matches, the TMA-scope fix
    (False, True for sm_12x, or an arch prefix), and the decisions of `apply` (a file or a store directory)."""

    store: str | None
    rename: _rename.Rename | None = None
    select: str | None = None
    fix_tma_scope: bool | str = False
    apply: str | None = None

    @classmethod
    def of(cls, store: os.PathLike | str, *, rename: _rename.Rename | None = None, select: _rename.Selector = None,
           fix_tma_scope: bool | str = False, apply: os.PathLike | str | None = None) -> "Capture":
        """What `enable(store, rename=, select=, fix_tma_scope=, apply=)` in this process means for a child: paths
        made absolute, the selector as the regex a child reads. A callable selector cannot travel: the child then
        renames nothing rather than every kernel."""
        from . import rename as _rename

        if rename is None or callable(select):
            rename, pattern = None, None
        elif select is None or isinstance(select, (str, re.Pattern)):
            pattern = None if select is None else _rename.compile_select(select).pattern
        else:
            pattern = _rename.exact_names_pattern(select)
        return cls(str(Path(store).resolve()), rename, pattern, fix_tma_scope,
                   None if apply is None else str(Path(apply).resolve()))


@dataclasses.dataclass(frozen=True)
class Record:
    """Record the child's kernel launches (`sweep.record`), saved under `label`: one launch in `sample_every`
    timed, input snapshots up to `snapshot_budget` bytes a signature and `snapshot_total_budget` a process."""

    label: str = config.sweep.RECORD_LABEL.default
    sample_every: int = config.sweep.RECORD_SAMPLE.default
    snapshot_budget: int = config.sweep.SNAPSHOT_BUDGET.default
    snapshot_total_budget: int = config.sweep.SNAPSHOT_TOTAL_BUDGET.default

    @classmethod
    def configured(cls, environ: Mapping[str, str] | None = None) -> "Record":
        """The sampling and budgets this process's environment sets (a user's settings travel on to the
        workload's processes), whether or not it records."""
        return cls(config.sweep.RECORD_LABEL.get(environ), config.sweep.RECORD_SAMPLE.get(environ),
                   config.sweep.SNAPSHOT_BUDGET.get(environ), config.sweep.SNAPSHOT_TOTAL_BUDGET.get(environ))


@dataclasses.dataclass(frozen=True)
class AbRound:
    """One child of `tritonhook ab`: it appends its timing records to `out`, as `variant` in round `round_index`,
    and saves its outputs under `outputs` (round 0 only)."""

    out: str
    variant: str
    round_index: int
    outputs: str

    @classmethod
    def current(cls, environ: Mapping[str, str] | None = None) -> "AbRound | None":
        """This process's round under `tritonhook ab`, None outside it: read on each timing a child reports, so it
        reads the A/B variables alone (not the capture part, whose rename loads the Triton adapter)."""
        if not config.ab.AB_OUT.get(environ):
            return None
        return cls(config.ab.AB_OUT.get(environ), config.ab.AB_VARIANT.get(environ), config.ab.AB_ROUND.get(environ),
                   config.ab.AB_OUTPUTS.get(environ))


@dataclasses.dataclass(frozen=True)
class Ptxas:
    """What Triton's compiles in the child assemble with: `triton` / `blackwell` replace the ptxas Triton runs for
    older / newer targets (a variant's binary, or capture's wrappers around them), `options` go after any
    PTXAS_OPTIONS the environment has, `path_first` is a folder put first on PATH (a wrapper around PATH's ptxas),
    and `cache_dir` is a Triton cache of the child's own (a build made with other binaries is never served)."""

    triton: str | None = None
    blackwell: str | None = None
    options: tuple[str, ...] = ()
    path_first: str | None = None
    cache_dir: str | None = None


@dataclasses.dataclass(frozen=True)
class CuteKeep:
    """Make CuTe DSL keep the PTX and cubin it compiles in `dump_dir`: through CUTE_DSL_KEEP (4.5+, merged with
    the tokens a user set) or, with `legacy`, the two switches 4.4 reads."""

    dump_dir: str
    legacy: bool = False


@dataclasses.dataclass(frozen=True)
class ChildSettings:
    """Everything a child process gets from tritonhook (the module docstring): a part None is inherited; capture
    and recording may be `OFF`."""

    capture: Capture | Literal["off"] | None = None
    record: Record | Literal["off"] | None = None
    ab: AbRound | None = None
    ptxas: Ptxas | None = None
    cute_keep: CuteKeep | None = None
    token: str | None = None
    """The capture run's token: a ptxas wrapped in place records only the processes that carry it."""
    notes: str | None = None
    """A folder where the child notes what `tritonhook run` cannot see otherwise (`_autoload`)."""
    inductor_through_triton: bool = False
    """Inductor's static CUDA launcher off from the child's first line, so Triton's launch hooks see its kernels."""
    inductor_cold: bool = False
    """Inductor's caches off in the child: it compiles and tunes as a first run does."""
    visible_devices: str | None = None
    import_from: str | None = None
    """A source tree put first on the child's import path (another release's Python runs our rebuild worker)."""

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment a child started with these settings sees: `base` (default this process's) with
        `variables` written over it."""
        env = dict(os.environ if base is None else base)
        env.update(self.variables(env))
        return env

    def variables(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The variables these settings write over `base` (default this process's environment): each given
        part's."""
        base = os.environ if base is None else base
        values: dict[EnvVar, object] = {**self._capture_values(), **self._record_values(), **self._ab_values()}
        for var, value in ((config.ptxas.CAPTURE_TOKEN, self.token), (config.capture.NOTE_IMPORTS, self.notes),
                           (config.sweep.CUDA_VISIBLE_DEVICES, self.visible_devices)):
            if value is not None:
                values[var] = value
        values.update(self._ptxas_values(base))
        values.update(self._cute_values(base))
        if self.inductor_through_triton:
            values[config.memwatch.TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER] = "0"
        if self.inductor_cold:
            values[config.decisions.INDUCTOR_CACHES_OFF] = "1"
        if self.capture is not None or self.import_from:
            values[config.paths.PYTHONPATH] = self._import_path(base)
        return {var.name: var.encode(value) for var, value in values.items()}

    @classmethod
    def current(cls, environ: Mapping[str, str] | None = None) -> "ChildSettings":
        """The capture, recording and A/B parts this process was started with (`environ`: default its own)."""
        from . import rename as _rename

        capture = record = None
        if config.capture.ENABLE.get(environ):
            capture = Capture(config.capture.STORE.get(environ), _rename.decode(config.rename.RENAME.get(environ)),
                              config.rename.SELECT.get(environ), config.capture.FIX_TMA_SCOPE.get(environ),
                              config.decisions.APPLY.get(environ))
        if config.sweep.RECORD.get(environ):
            record = Record.configured(environ)
        return cls(capture, record, AbRound.current(environ), token=config.ptxas.CAPTURE_TOKEN.get(environ),
                   notes=config.capture.NOTE_IMPORTS.get(environ))

    def _capture_values(self) -> dict[EnvVar, object]:
        from . import rename as _rename

        if self.capture is None:
            return {}
        on = Capture(None) if self.capture == OFF else self.capture
        return {config.capture.ENABLE: self.capture != OFF, config.capture.STORE: on.store,
                config.rename.RENAME: _rename.encode(on.rename), config.rename.SELECT: on.select,
                config.capture.FIX_TMA_SCOPE: on.fix_tma_scope, config.decisions.APPLY: on.apply}

    def _record_values(self) -> dict[EnvVar, object]:
        if self.record is None:
            return {}
        on = Record() if self.record == OFF else self.record
        return {config.sweep.RECORD: self.record != OFF, config.sweep.RECORD_LABEL: on.label,
                config.sweep.RECORD_SAMPLE: on.sample_every, config.sweep.SNAPSHOT_BUDGET: on.snapshot_budget,
                config.sweep.SNAPSHOT_TOTAL_BUDGET: on.snapshot_total_budget}

    def _ab_values(self) -> dict[EnvVar, object]:
        if self.ab is None:
            return {}
        return {config.ab.AB_OUT: self.ab.out, config.ab.AB_VARIANT: self.ab.variant,
                config.ab.AB_ROUND: self.ab.round_index, config.ab.AB_OUTPUTS: self.ab.outputs}

    def _ptxas_values(self, env: Mapping[str, str]) -> dict[EnvVar, object]:
        if self.ptxas is None:
            return {}
        values: dict[EnvVar, object] = {}
        for var, binary in ((config.ptxas.TRITON_PTXAS_PATH, self.ptxas.triton),
                            (config.ptxas.TRITON_PTXAS_BLACKWELL_PATH, self.ptxas.blackwell)):
            if binary is not None:
                values[var] = binary
        if self.ptxas.options:
            values[config.ptxas.PTXAS_OPTIONS] = " ".join([*(config.ptxas.PTXAS_OPTIONS.get(env) or "").split(),
                                                     *self.ptxas.options])
        if self.ptxas.path_first is not None:
            values[config.paths.PATH] = [self.ptxas.path_first, *config.paths.PATH.get(env)]
        if self.ptxas.cache_dir is not None:
            values[config.report.TRITON_CACHE_DIR] = self.ptxas.cache_dir
        return values

    def _cute_values(self, env: Mapping[str, str]) -> dict[EnvVar, object]:
        if self.cute_keep is None:
            return {}
        if self.cute_keep.legacy:
            return {config.cute.CUTE_DSL_DUMP_DIR: self.cute_keep.dump_dir, config.cute.CUTE_DSL_KEEP_PTX: True,
                    config.cute.CUTE_DSL_KEEP_CUBIN: True}
        tokens = [t for t in config.cute.CUTE_DSL_KEEP.get(env).split(",") if t.strip()]
        return {config.cute.CUTE_DSL_DUMP_DIR: self.cute_keep.dump_dir,
                config.cute.CUTE_DSL_KEEP: ",".join(dict.fromkeys([*tokens, "ptx", "cubin"]))}

    def _import_path(self, env: Mapping[str, str]) -> list[str]:
        """PYTHONPATH: tritonhook's sitecustomize first when the child captures (it enables capture at start-up;
        kept as the parent has it when capture is inherited), then `import_from`, then the parent's other entries."""
        bootstrap = str(config.capture.BOOTSTRAP_DIR)
        inherited = config.paths.PYTHONPATH.get(env)
        own = [p for p in inherited if p not in (bootstrap, self.import_from)]
        captures = isinstance(self.capture, Capture) or (self.capture is None and bootstrap in inherited)
        return [*([bootstrap] if captures else []), *([self.import_from] if self.import_from else []), *own]


def run(command: Sequence[str], settings: ChildSettings, **kwargs) -> subprocess.CompletedProcess:
    """`subprocess.run(command)` under `settings`; a program that cannot start (not found, a #! interpreter that
    does not exist) is one line."""
    try:
        return subprocess.run(list(command), env=settings.environment(), **kwargs)
    except OSError as exc:
        raise _cannot_start(command, exc) from None


def popen(command: Sequence[str], settings: ChildSettings, **kwargs) -> subprocess.Popen:
    """`subprocess.Popen(command)` under `settings`; a program that cannot start is one line."""
    try:
        return subprocess.Popen(list(command), env=settings.environment(), **kwargs)
    except OSError as exc:
        raise _cannot_start(command, exc) from None


def _cannot_start(command: Sequence[str], exc: OSError) -> TritonhookError:
    return TritonhookError(f"{command[0]}: cannot start it ({exc.strerror or exc})")


FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""What tritonhook passes on to a running workload, as `timeout` does: the signals that ask a process to stop."""


def exit_status(returncode: int) -> int:
    """A child's status as a shell says it: 128 + N for one killed by signal N (Python's returncode is -N, which
    `sys.exit` would turn into 256 - N)."""
    return 128 - returncode if returncode < 0 else returncode


def run_workload(command: Sequence[str], settings: ChildSettings, *, input=None, capture_output: bool = False,
                 **kwargs) -> subprocess.CompletedProcess:
    """`run` for a user's command, as a `Workload`: its returncode is `exit_status`'s; `capture_output` as
    `subprocess.run` takes it."""
    if capture_output:
        kwargs.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with Workload(command, settings, **kwargs) as workload:
        stdout, stderr = workload.process.communicate(input)
        status = workload.wait()
    return subprocess.CompletedProcess(workload.process.args, status, stdout, stderr)


class Workload:
    """A user's command under `settings` (`popen`'s keyword arguments), for the length of a `with` block.

    Outside a terminal's foreground it runs in a process group of its own, and SIGTERM, SIGINT and SIGHUP that
    reach tritonhook meanwhile are sent to that group (one that comes while the command starts, once it has): the
    command and every process it started get them, and tritonhook goes on waiting. In the foreground of a terminal
    the command stays in tritonhook's group, so the terminal's Ctrl-C, Ctrl-Z and reads reach it as without
    tritonhook (a group of its own would be stopped on its first read); there the terminal delivers SIGINT to both,
    and SIGTERM and SIGHUP go to the command's process. Leaving the block waits for the command (after killing its
    group when the block raised); when a signal was passed on, it then raises `Stopped` with the command's status:
    the tritonhook command stops there, as the user asked, with the status the command chose."""

    def __init__(self, command: Sequence[str], settings: ChildSettings, **kwargs):
        self._command, self._settings, self._kwargs = list(command), settings, kwargs
        self.process: subprocess.Popen | None = None
        self.signalled: list[int] = []
        self._unsent: list[int] = []
        self._saved: dict[int, object] = {}
        self._own_group = not _in_terminal_foreground()

    def __enter__(self) -> "Workload":
        if threading.current_thread() is threading.main_thread():  # signal handlers are the main thread's alone
            self._saved = {signum: signal.signal(signum, self._forward) for signum in FORWARDED_SIGNALS}
        try:
            self.process = popen(self._command, self._settings, process_group=0 if self._own_group else None,
                                 **self._kwargs)
        except BaseException:
            self._restore()
            raise
        for signum in self._unsent:  # those that came while it started
            self._send(signum)
        return self

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the command; its status as a shell says it (`exit_status`)."""
        return exit_status(self.process.wait(timeout))

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is not None and self.process.poll() is None:
                self._send(signal.SIGKILL)
            with self.process:  # closes its pipes, then waits
                pass
        finally:
            self._restore()
        if exc_type is None and self.signalled:
            names = ", ".join(dict.fromkeys(signal.Signals(s).name for s in self.signalled))
            raise Stopped(f"{names} passed to {self._command[0]}, which exited with status {self.wait()}",
                          self.wait())

    def _forward(self, signum: int, frame) -> None:
        self.signalled.append(signum)
        if self.process is None:
            self._unsent.append(signum)
        else:
            self._send(signum)

    def _send(self, signum: int) -> None:
        """`signum` to the command's group; outside a group of its own, to its process, except a SIGINT, which the
        terminal delivered to it already."""
        try:
            if self._own_group:
                os.killpg(self.process.pid, signum)
            elif signum != signal.SIGINT:
                self.process.send_signal(signum)
        except ProcessLookupError:
            pass  # it and its group are gone already

    def _restore(self) -> None:
        for signum, handler in self._saved.items():
            signal.signal(signum, handler)
        self._saved = {}


def _in_terminal_foreground() -> bool:
    """Whether tritonhook's process group is the foreground group of its controlling terminal."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False  # no controlling terminal
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)
