"""Who is alive: a process named by its pid and start time, so that a later process given the same pid is not
taken for it. Used wherever something a process left on disk must be told from something a live one holds (a
ptxas wrapper installed for a capture run, a store's held blobs); and what a process does before a terminating
signal ends it (`save_before_terminated`)."""

from __future__ import annotations

import contextlib
import os
import signal
from typing import Callable


def identity(pid: int | None = None) -> dict | None:
    """{"pid", "start"} of a live process (default: this one), its start time read from /proc/PID/stat (field 22,
    clock ticks since boot). None when it is gone or a zombie (a killed process its parent has not reaped yet), or
    where /proc cannot say."""
    pid = os.getpid() if pid is None else pid
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()  # after the command name, which may hold spaces
    except (OSError, IndexError):
        return None
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return None
    return {"pid": pid, "start": fields[19].decode()}


def is_dead(recorded: dict) -> bool:
    """Whether the process `identity` recorded as `recorded` has ended (its pid is gone or now another process's)."""
    return identity(recorded["pid"]) != recorded


def host() -> str:
    """This machine's name: a pid means something only on the host that recorded it."""
    import socket  # here: `tritonhook ls` imports the store, which needs no host name to read

    return socket.gethostname()


TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""Signals whose default action ends a process without Python's exit handlers (SIGINT raises KeyboardInterrupt,
which runs them)."""


def save_before_terminated(save: Callable[[], None]) -> Callable[[], None]:
    """Run `save` when a terminating signal ends this process, where the program left that signal to its default
    action: what is kept only at exit (a recording, a memory timeline) survives a job stopped by `timeout` or a
    scheduler (SIGTERM to every process of it: torchrun's workers too). The process then dies of the signal as it
    would have (its status 128 + N). A handler the program sets later replaces this one; one it set earlier is left
    alone. Only in the main thread (where Python allows it). Returns what puts the default back, for a region that
    ends before the process does."""
    def save_and_die(signum, _frame) -> None:
        save()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    installed = []
    with contextlib.suppress(ValueError):  # not the main thread: no handler can be set
        for signum in TERMINATING_SIGNALS:
            if signal.getsignal(signum) is signal.SIG_DFL:
                signal.signal(signum, save_and_die)
                installed.append(signum)

    def restore() -> None:
        for signum in installed:
            if signal.getsignal(signum) is save_and_die:
                signal.signal(signum, signal.SIG_DFL)

    return restore
