"""`tritonhook upgrade`: per captured kernel, what a Triton or ptxas upgrade changes in its cubin, split between
Triton's PTX and ptxas (library: `tritonhook.upgrade`; docs/upgrade.md)."""

from __future__ import annotations

from ..format import show
from .common import open_store, store_arg


def add_upgrade(sub) -> None:
    parser = sub.add_parser("upgrade", help="rebuild the captured kernels under another Triton release (and/or "
                                            "assemble them with another ptxas): per kernel, the four cells of old/new "
                                            "PTX x old/new ptxas against today's cubin")
    store_arg(parser)
    parser.add_argument("--to", default=None, metavar="VERSION",
                        help="the Triton release to upgrade to (e.g. 3.9.0), installed on first use in a virtualenv "
                             "of its own under $TRITONHOOK_RELEASES_DIR")
    parser.add_argument("--ptxas", default=None, metavar="PATH_OR_VERSION",
                        help="the new ptxas (a path or a version, as after @ in a variant); alone, without --to: a "
                             "CUDA upgrade under the same Triton")
    parser.add_argument("--recording", default=None, metavar="ID|FILE",
                        help="the kernels a recording launched (default: every Triton build in the store)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=_upgrade)


def _upgrade(args) -> int:
    from ..upgrade import upgrade

    result = upgrade(open_store(args, write=True), to=args.to, ptxas=args.ptxas, recording=args.recording)
    show(result, as_json=args.json)
    return 0
