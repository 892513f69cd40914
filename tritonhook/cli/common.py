"""What several command groups share: the parser class, the store option, the command after `--`, the rename
options, the replay's L2 options, the checks of a count and of a filter."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .. import config
from ..errors import TritonhookError

if TYPE_CHECKING:
    from ..store import Store


class CommandParser(argparse.ArgumentParser):
    """The parser of `tritonhook` and of every subcommand (subparsers take their parent's class): an argument a
    subcommand does not know is that subcommand's error, printed with its own usage (`tritonhook show: error:
    unrecognized arguments: --bogus`). argparse's subparsers parse with `parse_known_args` and hand what they did
    not know to the top-level parser, which would report it with the usage of `tritonhook` itself."""

    def parse_known_args(self, args=None, namespace=None):
        parsed, unknown = super().parse_known_args(args, namespace)
        if unknown:
            self.error(f"unrecognized arguments: {' '.join(unknown)}")
        return parsed, unknown


def store_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", type=Path, default=None,
                        help="capture store directory (default: $TRITONHOOK_STORE or ./tritonhook-store)")


def open_store(args, *, create: bool = False, write: bool = False) -> Store:
    """Commands that write captures create the store; reading commands open it read-only, so a user who may
    read a shared store but not write it can still list and show it."""
    from ..store import Store  # here: `tritonhook --version` needs no store

    return Store.of(args.store, create=create) if create or write else Store.of(args.store, readonly=True)


def command_after_dashes(command: list[str], name: str) -> list[str]:
    """The command after `--`, checked to be runnable, so that a typo is one line here and not a traceback from
    the process start (run, capture, ab and memwatch all start their command through this)."""
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise TritonhookError(f"tritonhook {name}: give the command to run after '--', "
                              f"e.g. tritonhook {name} -- python script.py")
    _check_runnable(command[0])
    return command


def _check_runnable(program: str) -> None:
    """Raise unless `program` names an executable file (a path, or a name found on PATH)."""
    import shutil

    if os.sep not in program:
        if shutil.which(program) is None:
            raise TritonhookError(f"{program}: command not found (not on PATH)")
        return
    if not os.path.exists(program):
        raise TritonhookError(f"{program}: no such file")
    if os.path.isdir(program):
        raise TritonhookError(f"{program}: is a directory, not a program")
    if not os.access(program, os.X_OK):
        raise TritonhookError(f"{program}: not executable (chmod +x it, or run it as: python {program})")



def rename_args(parser: argparse.ArgumentParser, *, default_prefix: str | None) -> None:
    how = parser.add_mutually_exclusive_group()
    default = f" (default {default_prefix})" if default_prefix else ""
    how.add_argument("--prefix", "--rename", dest="prefix", default=default_prefix, metavar="PREFIX",
                     help=f"prefix kernel names with PREFIX{default}")
    how.add_argument("--strip", action="store_true", help="remove 'cutlass' from kernel names instead")


def rename_value(args):
    from ..rename import STRIP, prefixer

    if args.strip:
        return STRIP
    if args.prefix is not None:
        prefixer(args.prefix)  # a bad prefix fails here, not inside the child's compile
    return args.prefix


def rename_selection(args) -> tuple:
    """(rename, select) from --prefix/--strip and --select, checked here: a bad prefix or regex, or --select
    with nothing to narrow, fails before the command starts."""
    from ..rename import compile_select

    rename = rename_value(args)
    if args.select is not None:
        if rename is None:
            raise TritonhookError("--select narrows a rename: give --rename PREFIX or --strip with it")
        compile_select(args.select)
    return rename, args.select


def l2_args(parser: argparse.ArgumentParser) -> None:
    """The replay's L2 rule and the L2's dirt before each call: every command that replays takes both."""
    parser.add_argument("--l2", choices=config.sweep.L2_MODES, default=config.sweep.L2_MODES[0],
                        help="measured (default): inputs rotated, and what the recording's L2 probe found in L2 "
                             "inside the workload brought into L2 before each call; cold: rotated so every call "
                             "reads DRAM; warm: one input set, every call finds in L2 what the previous one read "
                             "and wrote; inputs: rotated, and what the kernel only reads brought into L2 before "
                             "each call, as right after its producer; except under warm, the L2's dirt is set "
                             "before each call first (--l2-dirt)")
    parser.add_argument("--l2-dirt", choices=config.sweep.L2_DIRT, default=config.sweep.L2_DIRT[0],
                        help="how the L2's lines are left before each call: measured (default): dirty (an L2-sized "
                             "write, as a training step leaves them) except where the recording's dirt probe found "
                             "the L2 clean (an L2-sized read; measured is dirty under --l2 cold and inputs); dirty; "
                             "half (half the lines written, interleaved with the read half); clean; none (as the "
                             "previous call left them)")


def allow_lost_arg(parser: argparse.ArgumentParser) -> None:
    """--allow-lost: a run whose command succeeded but lost captures (a full disk) exits 0 rather than failing."""
    parser.add_argument("--allow-lost", action="store_true",
                        help="exit with the command's status even when some captures could not be written (by "
                             "default a run that lost captures fails)")


def apply_arg(parser: argparse.ArgumentParser, what: str) -> None:
    """--apply FILE|STORE: decisions applied at compile time in the command's processes (docs/decisions.md), read
    as decisions while the arguments are parsed, so that a typo is one line before any command starts."""
    parser.add_argument("--apply", default=None, metavar="FILE|STORE", type=_decisions_source,
                        help=f"apply per-kernel decisions at compile time {what}: a decisions file or a store "
                             "directory (docs/decisions.md); each compile whose key matches one exactly is built "
                             "with its choice")


def _decisions_source(text: str) -> str:
    """--apply's value as an absolute path once it reads as decisions; argparse's one line where it does not."""
    from ..decisions.apply import check_source

    try:
        return check_source(text)
    except TritonhookError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def ptxas_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ptxas-arg", action="append", default=[], metavar="ARG",
                        help="extra ptxas codegen option, repeatable; write it as --ptxas-arg=-lineinfo (Triton "
                        "passes -lineinfo and, from 3.9, --regAllocOptLevel=2); the options a variant's opt: "
                        "takes (docs/variants.md#ptxas-options)")


def ptxas_args(args) -> list[str]:
    """--ptxas-arg values, each checked against the one codegen allow-list (`binaries.CODEGEN_OPTIONS`)."""
    from ..binaries import ptxas_option

    return [ptxas_option(arg, where="--ptxas-arg ") for arg in args.ptxas_arg]


def positive_count(value: int | None, option: str) -> int | None:
    """`value` (None: no limit) when it is a count of 1 or more; argparse reads `-n -5` as the number -5, and
    SQLite reads a negative LIMIT as no limit at all."""
    if value is not None and value < 1:
        raise TritonhookError(f"{option} {value}: give a count of 1 or more")
    return value


def non_empty(value: str | None, option: str, example: str) -> str | None:
    """`value` unless it is given and empty (`--arch ''` from an unset shell variable): an empty filter would
    match nothing, or everything."""
    if value is not None and not value.strip():
        raise TritonhookError(f"{option} {value!r}: empty; give {example}")
    return value
