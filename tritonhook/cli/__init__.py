"""The `tritonhook` command: a thin layer over the library, one module per command group.

`capture` (run, capture), `inspect` (ls, show, export, store), `binaries` (diff, ptxas-matrix, ptxas, rename),
`ab`, `mem` (memwatch, preflight), `sweep` (sweep, record, replay); `common` holds the options several share. Each group's `add_<command>`
registers a parser and its handler; handlers raise `TritonhookError` for bad input, and `main` prints it as one
line and exits with status 2.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import TritonhookError
from . import ab, binaries, capture, inspect, mem, report, sweep

_COMMANDS = [capture.add_run, capture.add_capture, inspect.add_ls, inspect.add_show, inspect.add_export,
             binaries.add_rename, ab.add_ab, binaries.add_diff, binaries.add_ptxas_matrix, binaries.add_ptxas,
             mem.add_memwatch, mem.add_preflight, inspect.add_store, report.add_report, report.add_demo,
             sweep.add_sweep, sweep.add_record, sweep.add_replay]
"""Every subcommand's parser, in the order `tritonhook --help` lists them."""


def build_parser() -> argparse.ArgumentParser:
    from .._version import __version__

    parser = argparse.ArgumentParser(prog="tritonhook", description="Capture, rename, diff and measure Triton "
                                     "kernels and what ptxas made of them.")
    parser.add_argument("--version", action="version", version=f"tritonhook {__version__}")
    sub = parser.add_subparsers(dest="command_name", metavar="COMMAND")
    sub.required = True
    for add in _COMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args) or 0
    except TritonhookError as exc:
        print(f"tritonhook: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tritonhook: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0

