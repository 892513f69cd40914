"""The `tritonhook` command: a thin layer over the library, one module per command group.

`capture` (run, capture), `inspect` (ls, show, export, store), `binaries` (diff, ptxas-matrix, ptxas, rename),
`exports` (export-trace, export-tritonparse), `ab`, `mem` (memwatch, preflight), `sweep` (sweep, record, replay, tune), `upgrade`, `decisions`, `check`, `doctor`; `common` holds the
options several share. Each group's `add_<command>` registers a parser and its handler; handlers raise
`TritonhookError` for bad input, and `main` prints it as one line and exits with status 2; a signal passed on to a
command tritonhook runs ends tritonhook with that command's status (`errors.Stopped`).
"""

from __future__ import annotations

import importlib
import os
import sys

from pathlib import Path

from .. import config
from ..errors import Stopped, TritonhookError
from ..files import disk_full_reason

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

_COMMANDS = {"run": ("capture", "add_run"), "capture": ("capture", "add_capture"), "ls": ("inspect", "add_ls"),
             "show": ("inspect", "add_show"), "export": ("inspect", "add_export"),
             "export-trace": ("exports", "add_export_trace"),
             "export-tritonparse": ("exports", "add_export_tritonparse"),
             "rename": ("binaries", "add_rename"), "ab": ("ab", "add_ab"), "diff": ("binaries", "add_diff"),
             "ptxas-matrix": ("binaries", "add_ptxas_matrix"), "ptxas": ("binaries", "add_ptxas"),
             "memwatch": ("mem", "add_memwatch"), "preflight": ("mem", "add_preflight"),
             "store": ("inspect", "add_store"), "report": ("report", "add_report"), "demo": ("report", "add_demo"),
             "sweep": ("sweep", "add_sweep"), "record": ("sweep", "add_record"), "replay": ("sweep", "add_replay"),
             "tune": ("sweep", "add_tune"), "upgrade": ("upgrade", "add_upgrade"), "bisect": ("bisect", "add_bisect"),
             "decisions": ("decisions", "add_decisions"), "check": ("check", "add_check"),
             "doctor": ("doctor", "add_doctor")}
"""Every subcommand: the module of its group and the function registering its parser, in `tritonhook --help`
order. A command line naming one command imports that group alone, and `--version` none: importing every group
(and the library behind it) would cost every command a noticeable part of a second before it starts."""


def build_parser(commands=None) -> argparse.ArgumentParser:
    """The parser with the subcommands in `commands` (default: all)."""
    from .._version import __version__
    from .common import CommandParser  # here: `tritonhook --version` needs no parser (see `main`)

    parser = CommandParser(prog="tritonhook", description="Capture, rename, diff and measure Triton "
                           "kernels and what ptxas made of them.")
    parser.add_argument("--version", action="version", version=f"tritonhook {__version__}")
    sub = parser.add_subparsers(dest="command_name", metavar="COMMAND")
    sub.required = True
    for name, (module, add) in _COMMANDS.items():
        if commands is None or name in commands:
            getattr(importlib.import_module(f".{module}", __name__), add)(sub)
    return parser


def _commands_needed(argv: list[str]) -> set[str] | None:
    """The subcommands a command line needs parsed: the one it names, none for `--version` alone, else all (help,
    a typo: the usage lists them)."""
    named = next((arg for arg in argv if not arg.startswith("-")), None)
    if named in _COMMANDS:
        return {named}
    if named is None and argv and not {"-h", "--help"} & set(argv):
        return set()
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--version"]:  # what argparse prints for it, without its help formatter's imports
        from .._version import __version__

        print(f"tritonhook {__version__}")
        return 0
    args = build_parser(_commands_needed(argv)).parse_args(argv)
    stdout, sys.stdout = sys.stdout, _Stdout(sys.stdout)
    try:
        if unreadable := config.unreadable():  # before the command: its child processes would each fail on it
            raise TritonhookError("; ".join(unreadable))
        status = args.handler(args) or 0
        sys.stdout.flush()  # here, not at exit: a full disk under the last buffered lines is the command's error
        return status
    except TritonhookError as exc:
        print(f"tritonhook: error: {exc}", file=sys.stderr)
        return 2
    except Stopped as exc:
        print(f"tritonhook: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        print("tritonhook: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _discard(stdout)
        return 0
    finally:
        sys.stdout = stdout


class _Stdout:
    """sys.stdout while a command runs: a write or flush that fails (a full disk, /dev/full, a quota) is one
    `TritonhookError` naming standard output and where it goes, from every writer at once (print, json.dump, rich,
    a PTX listing); a closed pipe stays a `BrokenPipeError`, which ends the command quietly as `head` expects.
    The lines it could not write are dropped, so the interpreter's flush at exit does not fail again."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._guarded(self._stream.write, text)

    def flush(self) -> None:
        self._guarded(self._stream.flush)

    def _guarded(self, call, *args):
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            failure = _stdout_failure(self._stream, exc)
            _discard(self._stream)
            raise failure from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _stdout_failure(stream, exc: OSError) -> TritonhookError:
    """The one line for a failed write of standard output, naming the file it goes to, and the disk under it where
    that is full."""
    try:
        where = Path(os.readlink(f"/proc/self/fd/{stream.fileno()}"))
    except (OSError, ValueError, AttributeError):
        where = None
    reason = disk_full_reason(where, exc) if where is not None else None
    return TritonhookError(f"standard output{f' ({where})' if where else ''}: cannot write "
                           f"({reason or exc.strerror or exc})")


def _discard(stream) -> None:
    """Point `stream`'s descriptor at /dev/null, so what is still buffered in it goes nowhere instead of failing
    again when the interpreter flushes it at exit."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError, AttributeError):
        pass

