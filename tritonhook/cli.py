"""The `tritonhook` command: a thin layer over the library.

Each subcommand is registered by one `_add_<name>` function (parser plus handler). Handlers raise
`TritonhookError` for bad input; `main` prints it as one line and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from . import report
from .errors import TritonhookError
from .store import Capture, Store, default_store_path

IR_STAGES = ("source", "ttir", "ttgir", "llir", "ptx")


def _store_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", type=Path, default=None,
                        help="capture store directory (default: $TRITONHOOK_STORE or ./tritonhook-store)")


def _open_store(args, *, create: bool = False) -> Store:
    return Store(args.store if args.store is not None else default_store_path(), create=create)


def _command_after_dashes(command: list[str], name: str) -> list[str]:
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise TritonhookError(f"tritonhook {name}: give the command to run after '--', "
                              f"e.g. tritonhook {name} -- python script.py")
    return command


# ----- run -------------------------------------------------------------------------------------------------------
def _add_run(sub) -> None:
    parser = sub.add_parser("run", help="run a command with capture enabled in every Python process it starts")
    _store_arg(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    parser.set_defaults(handler=_run)


def _run(args) -> int:
    from .ptx_capture import child_env

    command = _command_after_dashes(args.command, "run")
    store = _open_store(args, create=True)  # fails here, before the script starts, if unwritable
    before = len(store.captures())
    try:
        completed = subprocess.run(command, env=child_env(store.path))
    except FileNotFoundError:
        raise TritonhookError(f"{command[0]}: command not found") from None
    after = len(store.captures())
    print(f"tritonhook: {after - before} capture(s) written to {store.path}", file=sys.stderr)
    return completed.returncode


# ----- ls --------------------------------------------------------------------------------------------------------
def _add_ls(sub) -> None:
    parser = sub.add_parser("ls", help="list captures")
    _store_arg(parser)
    parser.add_argument("--kernel", help="regex matched against the kernel and entry names")
    parser.add_argument("--arch", help="only this target, e.g. sm_90a")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(handler=_ls)


def _ls(args) -> int:
    captures = _open_store(args).captures(kernel=args.kernel, arch=args.arch)
    if args.json:
        report.print_json([c.to_json() for c in captures])
        return 0
    if not captures:
        print("no captures")
        return 0
    rows = [(c.id, time.strftime("%H:%M:%S", time.localtime(c.created)), c.event, c.frontend, c.kernel,
             c.entry if not c.renamed else f"{c.entry} (was {c.original_entry})", c.arch, c.triton_version,
             c.ptxas_version or "-", _size(c, "ptx"), _size(c, "cubin"), f"{sum(c.times.values()):.2f}")
            for c in captures]
    report.print_table(("id", "time", "event", "frontend", "kernel", "entry", "arch", "triton", "ptxas", "ptx",
                        "cubin", "compile s"), rows, right_align=("id", "ptx", "cubin", "compile s"))
    return 0


def _size(capture: Capture, stage: str) -> str:
    artifact = capture.artifacts.get(stage)
    return report.human_bytes(artifact.size) if artifact else "-"


# ----- show ------------------------------------------------------------------------------------------------------
def _add_show(sub) -> None:
    parser = sub.add_parser("show", help="print one capture's summary or one of its artifacts")
    _store_arg(parser)
    parser.add_argument("id", help="capture id (see `tritonhook ls`)")
    what = parser.add_mutually_exclusive_group()
    for stage in IR_STAGES:
        what.add_argument(f"--{stage}", dest="stage", action="store_const", const=stage,
                          help=f"print the {stage} text")
    what.add_argument("--sass", dest="stage", action="store_const", const="sass",
                      help="disassemble the cubin with nvdisasm")
    what.add_argument("--meta", dest="stage", action="store_const", const="meta",
                      help="print the capture record and Triton's metadata as JSON")
    parser.add_argument("--nvdisasm", help="nvdisasm binary for --sass (default: the one Triton bundles)")
    parser.set_defaults(handler=_show, stage=None)


def _show(args) -> int:
    store = _open_store(args)
    capture = store.get(args.id)
    if args.stage in IR_STAGES:
        sys.stdout.write(store.read(capture, args.stage).decode("utf-8", errors="replace"))
    elif args.stage == "sass":
        from .cubin import sass_text

        sys.stdout.write(sass_text(store.read(capture, "cubin"), nvdisasm=args.nvdisasm,
                                   label=f"capture {capture.id}"))
    elif args.stage == "meta":
        report.print_json(capture.to_json())
    else:
        _print_summary(capture)
    return 0


def _print_summary(capture: Capture) -> None:
    where = f"{capture.src_file}:{capture.src_line}" if capture.src_file else "-"
    rows = [("kernel", capture.kernel), ("entry", capture.entry), ("original entry", capture.original_entry),
            ("event", capture.event), ("frontend", capture.frontend), ("source", where), ("arch", capture.arch),
            ("triton", capture.triton_version), ("ptxas", f"{capture.ptxas_version} ({capture.ptxas_path})"),
            ("num_warps / num_stages", f"{capture.options.get('num_warps')} / {capture.options.get('num_stages')}"),
            ("shared memory", report.human_bytes(capture.metadata.get("shared"))),
            ("stage times", ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in capture.times.items()))]
    rows += [(f"artifact {a.stage}", f"{report.human_bytes(a.size)}  sha256 {a.sha256[:16]}")
             for a in capture.artifacts.values()]
    report.print_table(("field", "value"), rows, title=f"capture {capture.id}")


# ----- export ----------------------------------------------------------------------------------------------------
def _add_export(sub) -> None:
    parser = sub.add_parser("export", help="write a capture's artifacts and record into a directory")
    _store_arg(parser)
    parser.add_argument("id")
    parser.add_argument("dir", type=Path)
    parser.set_defaults(handler=_export)


def _export(args) -> int:
    store = _open_store(args)
    capture = store.get(args.id)
    try:
        args.dir.mkdir(parents=True, exist_ok=True)
        for stage in capture.artifacts:
            (args.dir / f"{capture.entry}.{stage}").write_bytes(store.read(capture, stage))
        (args.dir / f"{capture.entry}.capture.json").write_text(json.dumps(capture.to_json(), indent=2,
                                                                           default=str))
    except OSError as exc:
        raise TritonhookError(f"{args.dir}: cannot write the export ({exc.strerror or exc})") from None
    print(f"exported capture {capture.id} ({len(capture.artifacts)} artifacts) to {args.dir}")
    return 0


# ----- main ------------------------------------------------------------------------------------------------------
_COMMANDS = [_add_run, _add_ls, _add_show, _add_export]


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

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
