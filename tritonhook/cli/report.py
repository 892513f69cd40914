"""`tritonhook report` and `tritonhook demo`: thin over `tritonhook.page` (write_report, run_demo)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..page import DEFAULT_REPORT, summary_lines, write_report
from ..page.demo import run_demo
from ..format import print_json
from .common import open_store


def add_report(sub) -> None:
    parser = sub.add_parser("report", help="write one self-contained HTML page about a store")
    parser.add_argument("--store", type=Path, default=None,
                        help="capture store directory (default: $TRITONHOOK_STORE or ./tritonhook-store)")
    parser.add_argument("-o", "--output", type=Path, default=Path(DEFAULT_REPORT),
                        help=f"the HTML file to write (default {DEFAULT_REPORT})")
    parser.add_argument("--memwatch", action="append", default=[], metavar="FILE.json",
                        help="a memwatch result file to show besides those in the store (`tritonhook memwatch "
                             "--out FILE.json`; repeatable)")
    parser.add_argument("--no-sass", dest="sass", action="store_false",
                        help="skip nvdisasm: no opcode histograms or SASS diffs")
    parser.add_argument("--open", action="store_true", help="open the page in a web browser")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(handler=_report)


def add_demo(sub) -> None:
    demo = sub.add_parser("demo", help="the main job on this machine: capture, rename, diff, ptxas matrix, preflight "
                                       "(and with a GPU a sweep and a memwatch), then a report")
    demo.add_argument("--out", type=Path, default=Path("tritonhook-demo"),
                      help="directory for the store, the caches and report.html (default ./tritonhook-demo)")
    demo.add_argument("--samples", help="comma-separated sample kernels (default: all of tritonhook.samples)")
    demo.add_argument("--no-attention", dest="attention", action="store_false",
                      help="skip the bundled Gluon attention kernels (the slowest compiles)")
    demo.add_argument("--json", action="store_true", help="print the summary as JSON")
    demo.set_defaults(handler=_demo)


def _report(args: argparse.Namespace) -> int:
    store = open_store(args)
    path, data = write_report(store, args.output, memwatch_files=args.memwatch, sass=args.sass)
    lines = summary_lines(path, data)
    if args.json:
        print_json({"report": str(path.resolve()), "summary": lines, "problems": [p.__dict__ for p in data.problems]})
    else:
        print("\n".join(lines))
    if args.open:
        import webbrowser

        webbrowser.open(path.resolve().as_uri())
    return 0


def _demo(args: argparse.Namespace) -> int:

    samples = [name.strip() for name in args.samples.split(",")] if args.samples is not None else None
    result = run_demo(args.out, samples=samples, attention=args.attention, progress=not args.json)
    if args.json:
        print_json({"report": str(result.report.resolve()), "summary": result.summary, "skipped": result.skipped})
    else:
        print("\n".join(result.summary))
        for line in result.skipped:
            print(f"not run: {line}")
    return 0
