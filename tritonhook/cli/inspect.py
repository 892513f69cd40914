"""`tritonhook ls`, `show`, `export` and `store verify`: reading and looking after a capture store."""

from __future__ import annotations

import os
import sys
from inspect import getblock
from pathlib import Path

from ..captures import CaptureListing, CaptureSummary
from .. import config
from ..errors import TritonhookError
from ..files import read_input
from ..format import show
from ..store import Capture, Store
from .common import non_empty, open_store, positive_count, store_arg

IR_STAGES = ("source", "ttir", "ttgir", "llir", "ptx")


def add_ls(sub) -> None:
    parser = sub.add_parser("ls", help="list the newest captures")
    store_arg(parser)
    parser.add_argument("--kernel", help="regex matched against the kernel and entry names")
    parser.add_argument("--arch", help="only this target; sm_90 also matches sm_90a")
    parser.add_argument("--event", choices=("compile", "cache_hit", "loaded"), help="only fresh compiles, cache hits, or kernels captured late at a launch (sweep record)")
    count = parser.add_mutually_exclusive_group()
    count.add_argument("-n", "--limit", type=int, default=config.capture.LS_DEFAULT_LIMIT, metavar="N",
                       help=f"show N captures: the newest, or those next to --after/--before (default "
                            f"{config.capture.LS_DEFAULT_LIMIT})")
    count.add_argument("--all", dest="limit", action="store_const", const=None, help="show every capture")
    page = parser.add_mutually_exclusive_group()
    page.add_argument("--after", type=int, metavar="ID",
                      help="the page after capture ID: the N oldest captures above it (keyset paging; stderr names "
                           "the next page's --after)")
    page.add_argument("--before", type=int, metavar="ID",
                      help="the page before capture ID: the N newest captures below it")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(handler=_ls)


def _ls(args) -> int:
    """A table on a terminal (rich), aligned plain text elsewhere (`format.show`); either way only the page shown
    is read, and the total only when the page is full."""
    positive_count(args.limit, "-n/--limit")
    filters = {"kernel": non_empty(args.kernel, "--kernel", "a regular expression such as '^matmul'"),
               "arch": non_empty(args.arch, "--arch", "a target such as sm_90a"), "event": args.event}
    for option, value in (("--after", args.after), ("--before", args.before)):
        if value is not None and value < 0:
            raise TritonhookError(f"{option} {value}: give a capture id (0 or more)")
    keys = {"after": args.after, "before": args.before}
    store = open_store(args)
    captures = store.page(**filters, **keys, limit=args.limit)
    full = args.limit is not None and len(captures) == args.limit
    empty_note = "" if captures else _where_note(args) + _did_you_mean(store, args.arch)
    show(CaptureListing(captures, total=store.page_count(**filters, **keys) if full and not args.json else None,
                        empty_note=empty_note, **keys), as_json=args.json)
    return 0


def _where_note(args) -> str:
    """" after id 100" / " before id 100" for the empty page of a keyset."""
    if args.after is not None:
        return f" after id {args.after}"
    return "" if args.before is None else f" before id {args.before}"


def _did_you_mean(store: Store, arch: str | None) -> str:
    """For `ls --arch sm_90` on a store of sm_90a captures: the targets present with the same number."""
    if arch is None:
        return ""
    number = "".join(filter(str.isdigit, arch))
    near = [a for a in store.archs() if "".join(filter(str.isdigit, a)) == number]
    return f" for {arch}; did you mean {' or '.join(near)}?" if near else f" for {arch}"


# ----- show ------------------------------------------------------------------------------------------------------
def add_show(sub) -> None:
    parser = sub.add_parser("show", help="print one capture's summary or one of its artifacts")
    store_arg(parser)
    parser.add_argument("id", help="capture id (see `tritonhook ls`)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--source", dest="stage", action="store_const", const="python",
                      help="print the kernel's Python source (read now from the file and line captured)")
    what.add_argument("--source-ir", dest="stage", action="store_const", const="source",
                      help="print Triton's MLIR before its passes (--ttir: after them)")
    for stage in IR_STAGES[1:]:
        what.add_argument(f"--{stage}", dest="stage", action="store_const", const=stage,
                          help=f"print the {stage} text")
    what.add_argument("--sass", dest="stage", action="store_const", const="sass",
                      help="disassemble the cubin with nvdisasm")
    what.add_argument("--meta", dest="stage", action="store_const", const="meta",
                      help="print the capture record and Triton's metadata as JSON")
    parser.add_argument("--nvdisasm", help="nvdisasm binary for --sass (default: the one Triton bundles)")
    parser.set_defaults(handler=_show, stage=None)


def _show(args) -> int:
    store = open_store(args)
    capture = store.get(args.id)
    if args.stage == "python":
        sys.stdout.write(_python_source(capture))
    elif args.stage in IR_STAGES:
        sys.stdout.write(store.read(capture, args.stage).decode("utf-8", errors="replace"))
    elif args.stage == "sass":
        from ..cubin import sass_text

        sys.stdout.write(sass_text(store.read(capture, "cubin"), nvdisasm=args.nvdisasm,
                                   label=f"capture {capture.id}"))
    else:
        show(CaptureSummary(capture), as_json=args.stage == "meta")
    return 0


def _python_source(capture: Capture) -> str:
    """The decorated kernel function as it stands now in the file the capture recorded, from its first line
    (the decorator) to the end of its body."""
    if capture.src_file is None or capture.src_line is None:
        raise TritonhookError(f"capture {capture.id}: no Python source recorded for this {capture.frontend} "
                              f"capture (see --ptx)")
    if not os.path.lexists(capture.src_file):
        raise TritonhookError(f"{capture.src_file}: the kernel's source file is gone (capture {capture.id} "
                              f"was compiled from line {capture.src_line}); --ttir shows Triton's IR")
    try:
        lines = read_input(capture.src_file, "kernel's source").decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError as exc:
        raise TritonhookError(f"{capture.src_file}: cannot read the kernel's source ({exc})") from None
    if not 1 <= capture.src_line <= len(lines):
        raise TritonhookError(f"{capture.src_file}: has {len(lines)} lines, the kernel was at line "
                              f"{capture.src_line}; the file changed since capture {capture.id}")
    return "".join(getblock(lines[capture.src_line - 1:]))


# ----- export ----------------------------------------------------------------------------------------------------
def add_export(sub) -> None:
    parser = sub.add_parser("export", help="write a capture's artifacts and record into a directory")
    store_arg(parser)
    parser.add_argument("id")
    parser.add_argument("dir", type=Path)
    parser.set_defaults(handler=_export)


def _export(args) -> int:
    """Every artifact that can be read is written; one that cannot is named (with its blob) and the command fails,
    so a partial export never looks complete (`exports.export_capture`)."""
    from ..exports import export_capture

    store = open_store(args)
    capture = store.get(args.id)
    written = export_capture(store, capture, args.dir)
    print(f"exported capture {capture.id} ({written} artifacts) to {args.dir}")
    return 0


def add_store(sub) -> None:
    parser = sub.add_parser("store", help="look after a capture store")
    actions = parser.add_subparsers(dest="store_action", metavar="ACTION")
    actions.required = True
    verify = actions.add_parser("verify", help="check every blob's hash and every row's blob; find orphan blobs "
                                               "and temporary files left by killed writers")
    store_arg(verify)
    verify.add_argument("--repair", action="store_true",
                        help="remove orphan blobs and temporary files older than a minute")
    verify.add_argument("--json", action="store_true", help="print JSON instead of a table")
    verify.set_defaults(handler=_store_verify)


def _store_verify(args) -> int:
    """Exit status 1 when captured content is damaged or missing (orphans alone are no damage)."""
    store = open_store(args, write=args.repair)
    result = store.verify(repair=args.repair)
    show(result, as_json=args.json)
    return 0 if result.ok else 1

