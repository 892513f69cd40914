"""`tritonhook bisect`: the first Triton release whose build of a captured kernel differs from the captured one,
and whether its PTX or ptxas moved it (library: `tritonhook.upgrade.bisect`;
docs/upgrade.md#tritonhook-bisect-the-first-release-that-changed-a-kernel)."""

from __future__ import annotations

from .. import config
from ..format import show
from .common import open_store, store_arg


def add_bisect(sub) -> None:
    parser = sub.add_parser("bisect", help="the first Triton release whose build of a captured kernel differs from "
                                           "the captured one (its .text), and whether its PTX or ptxas moved it")
    store_arg(parser)
    parser.add_argument("--kernel", required=True, metavar="REGEX", help="the kernels (name or entry) to bisect")
    parser.add_argument("--from", dest="from_release", required=True, metavar="VERSION",
                        help="the Triton release the kernels were captured under")
    parser.add_argument("--to", dest="to_release", required=True, metavar="VERSION", help="the last release tried")
    parser.add_argument("--releases", default=",".join(config.SUPPORTED_RELEASES), metavar="A,B,...",
                        help="the releases searched, comma-separated (default: %(default)s, the ones tritonhook "
                             "supports), each installed on first use under $TRITONHOOK_RELEASES_DIR")
    parser.add_argument("--recording", default=None, metavar="ID|FILE",
                        help="the kernels a recording launched (default: every Triton build in the store)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=_bisect)


def _bisect(args) -> int:
    from ..upgrade.bisect import bisect

    result = bisect(open_store(args, write=True), kernel=args.kernel, from_release=args.from_release,
                    to_release=args.to_release, releases=[r for r in args.releases.split(",") if r.strip()],
                    recording=args.recording)
    show(result, as_json=args.json)
    return 0
