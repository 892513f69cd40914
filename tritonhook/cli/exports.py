"""`tritonhook export-trace` and `export-tritonparse`: a recording's timeline for Perfetto, captures for TritonParse
(`tritonhook.exports`; docs/exports.md)."""

from __future__ import annotations

from pathlib import Path

from ..errors import TritonhookError
from ..format import show
from ..store import result_kind_text
from .common import open_store, store_arg


def add_export_trace(sub) -> None:
    parser = sub.add_parser("export-trace", help="write a recording's kernel timeline (and a replay's times beside "
                                                 "it) as a Chrome trace for Perfetto")
    store_arg(parser)
    parser.add_argument("--recording", default=None, metavar="ID|FILE",
                        help="the recording: an id in the store or a JSON file (default: the replay's, else the "
                             "newest)")
    parser.add_argument("--replay", default=None, metavar="RESULT_ID",
                        help="a sweep or replay result: each variant's per-round times on tracks of their own")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="FILE", help="the trace JSON to write")
    parser.add_argument("--json", action="store_true", help="print what was written as JSON")
    parser.set_defaults(handler=_export_trace)


def _export_trace(args) -> int:
    from ..exports import write_chrome_trace
    from ..sweep import SweepResult, load

    store = open_store(args)
    replay = None
    if args.replay is not None:
        replay = store.result(args.replay)
        if not isinstance(replay, SweepResult):
            raise TritonhookError(f"{store.path}: result {args.replay} is {result_kind_text(replay)}, not a sweep or "
                                  f"replay result")
    which = args.recording
    if which is None and replay is not None:
        if replay.recording_id is None:
            raise TritonhookError(f"sweep result {replay.id} names no recording; give --recording")
        which = str(replay.recording_id)
    show(write_chrome_trace(args.output, load(store, which), replay), as_json=args.json)
    return 0


def add_export_tritonparse(sub) -> None:
    parser = sub.add_parser("export-tritonparse", help="write captures (and a recording's launches) as "
                                                       "TritonParse NDJSON for its parser and web viewer",
                            description="Write captures (and a recording's launches) as TritonParse NDJSON. Exit "
                                        "status 1 when a capture's stages cannot be read (it is named and left "
                                        "out; the rest are written).")
    store_arg(parser)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("ids", nargs="*", default=[], metavar="ID", help="capture ids (default: every capture)")
    which.add_argument("--recording", default=None, metavar="ID|FILE",
                       help="the captures of a recording's kernels, and a launch event per signature")
    parser.add_argument("-o", "--output", type=Path, default=None, metavar="FILE|DIR",
                        help="the NDJSON to write; a directory gets dedicated_log_triton_trace_tritonhook_.ndjson "
                             "(the default: that file here)")
    parser.add_argument("--json", action="store_true", help="print what was written as JSON")
    parser.set_defaults(handler=_export_tritonparse)


def _export_tritonparse(args) -> int:
    from ..exports import TRITONPARSE_FILE, recording_captures, write_tritonparse
    from ..sweep import load

    store = open_store(args)
    recording = None
    if args.recording is not None:
        recording = load(store, args.recording)
        captures = recording_captures(store, recording)
    elif args.ids:
        captures = [store.get(capture_id) for capture_id in args.ids]
    else:
        captures = store.captures()
        if not captures:
            raise TritonhookError(f"{store.path}: no captures to export")
    written = write_tritonparse(args.output or Path(TRITONPARSE_FILE), store, captures, recording)
    show(written, as_json=args.json)
    return 1 if written.left_out else 0
