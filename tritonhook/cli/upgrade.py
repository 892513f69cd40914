"""`tritonhook upgrade`: per captured kernel, what a Triton or ptxas upgrade changes in its cubin, split between
Triton's PTX and ptxas (library: `tritonhook.upgrade`; docs/upgrade.md)."""

from __future__ import annotations

from .. import config
from ..errors import TritonhookError
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
    parser.add_argument("--time", default=None, metavar="UPGRADE_ID",
                        help="on a GPU: replay the recording (--recording, default the newest in --store) with each "
                             "kernel's four cells of this upgrade result as its variants, and split each kernel's "
                             "change into Triton codegen, ptxas and their interaction (docs/upgrade.md#timing)")
    parser.add_argument("--cells-store", default=None, metavar="DIR",
                        help="with --time: the store holding the upgrade result and its cells (default: --store), "
                             "e.g. built on another machine and copied here")
    parser.add_argument("--rounds", type=int, default=config.sweep.DEFAULT_ROUNDS,
                        help=f"with --time: interleaved rounds per kernel (default {config.sweep.DEFAULT_ROUNDS})")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=_upgrade)


def _upgrade(args) -> int:
    from ..upgrade import upgrade

    if args.time is not None:
        return _time(args)
    result = upgrade(open_store(args, write=True), to=args.to, ptxas=args.ptxas, recording=args.recording)
    show(result, as_json=args.json)
    return 0


def _time(args) -> int:
    from ..store import Store
    from ..sweep import load as load_recording
    from ..upgrade import UpgradeResult
    from ..upgrade.timing import time_cells

    store = open_store(args, write=True)
    # create=False: a mistyped --cells-store is one line naming it, not a new empty store that holds no upgrade
    cells_store = Store(args.cells_store, create=False) if args.cells_store else store
    upgraded = cells_store.result(args.time)
    if not isinstance(upgraded, UpgradeResult):
        raise TritonhookError(f"{cells_store.path}: result {args.time} is no upgrade result")
    timing = time_cells(load_recording(store, args.recording), store, upgraded, cells_store, rounds=args.rounds,
                        progress=True)
    show(timing, as_json=args.json)
    return 0
