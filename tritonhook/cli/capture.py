"""`tritonhook run` and `tritonhook capture`: a command under capture (library: `tritonhook.run`)."""

from __future__ import annotations

import argparse
import sys

from .. import run
from ..format import print_json
from .common import allow_lost_arg, apply_arg, command_after_dashes, rename_args, rename_selection, store_arg


def add_run(sub) -> None:
    parser = sub.add_parser("run", help="run a command with capture enabled in every Python process it starts")
    store_arg(parser)
    rename_args(parser, default_prefix=None)
    parser.add_argument("--select", help="rename only kernels whose name matches this regex")
    parser.add_argument("--fix-tma-scope", action="store_true",
                        help="rewrite sm_12x TMA loads to CTA scope (no driver call, no stack reservation)")
    apply_arg(parser, "in every process the command starts")
    allow_lost_arg(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    parser.set_defaults(handler=_run)


def _run(args) -> int:
    command = command_after_dashes(args.command, "run")
    rename, select = rename_selection(args)
    result = run.run_command(command, args.store, rename=rename, select=select, fix_tma_scope=args.fix_tma_scope,
                             apply=args.apply)
    return _summary(result, result.summary(frontends=False), args.allow_lost)


def add_capture(sub) -> None:
    parser = sub.add_parser("capture", help="run a command with capture for every frontend reachable without "
                                            "installing anything: Triton, its ptxas calls, CuTe DSL (and cuTile "
                                            "with --wheel-ptxas)")
    store_arg(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    parser.add_argument("--wheel-ptxas", action="store_true",
                        help="also wrap the pip-wheel ptxas binaries in place while the command runs (what cuTile's "
                             "tileiras runs; only this command's processes are recorded)")
    allow_lost_arg(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    parser.set_defaults(handler=_capture)


def _capture(args) -> int:
    command = command_after_dashes(args.command, "capture")
    # with --json, stdout carries the summary alone: the command's own output goes to stderr
    result = run.capture_command(command, args.store, stdout=sys.stderr if args.json else None,
                                 wheel_ptxas=args.wheel_ptxas)
    if args.json:
        print_json(result.to_json())
    return _summary(result, None if args.json else result.summary(), args.allow_lost)


def _summary(result: run.RunResult, text: str | None, allow_lost: bool) -> int:
    """The summary line (None: none), the result's hints and what was lost, on stderr, each one line whatever its
    length (a rich console wraps at its width); returns the run's exit status."""
    lost = result.lost_line(allowed=allow_lost)
    for shown in ([text] if text else []) + result.hints + ([lost] if lost else []):
        print(shown, file=sys.stderr)
    return result.status(allow_lost=allow_lost)
