"""Who is alive: a process named by its pid and start time, so that a later process given the same pid is not
taken for it. Used wherever something a process left on disk must be told from something a live one holds (a
ptxas wrapper installed for a capture run, a store's held blobs)."""

from __future__ import annotations

import os


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
