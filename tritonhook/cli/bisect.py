"""`tritonhook bisect`: the first Triton release whose build of a captured kernel differs from the captured one
(`--time`: whose build moved the time or outputs of its recorded launches), and whether its PTX or ptxas moved it;
`--ptxas`: the first of several ptxas whose assembly of the captured PTX differs (library: `tritonhook.upgrade.bisect`,
`tritonhook.upgrade.bisect_timing`; docs/upgrade.md#tritonhook-bisect-the-first-release-that-changed-a-kernel)."""

from __future__ import annotations

from .. import config
from ..errors import TritonhookError
from ..format import show
from .common import open_store, store_arg


def add_bisect(sub) -> None:
    parser = sub.add_parser("bisect", help="the first Triton release whose build of a captured kernel differs from "
                                           "the captured one (its .text; with --time: its time or outputs), and "
                                           "whether its PTX or ptxas moved it")
    store_arg(parser)
    parser.add_argument("--kernel", required=True, metavar="REGEX", help="the kernels (name or entry) to bisect")
    parser.add_argument("--from", dest="from_release", default=None, metavar="VERSION",
                        help="the Triton release the kernels were captured under (required but with --ptxas)")
    parser.add_argument("--to", dest="to_release", default=None, metavar="VERSION",
                        help="the last release tried (required but with --ptxas)")
    parser.add_argument("--releases", default=None, metavar="A,B,...",
                        help=f"the releases searched, comma-separated (default: "
                             f"{','.join(config.upgrade.SUPPORTED_RELEASES)}, the ones tritonhook supports), each "
                             f"installed on first use under $TRITONHOOK_RELEASES_DIR")
    parser.add_argument("--ptxas", default=None, metavar="V1,V2,...",
                        help="instead of Triton releases: the first of these ptxas (versions or paths, in this order, "
                             "after the captured build's) whose assembly of the captured PTX differs from the captured "
                             "build (docs/upgrade.md#bisect-ptxas)")
    parser.add_argument("--recording", default=None, metavar="ID|FILE",
                        help="the kernels a recording launched (default: every Triton build in the store)")
    parser.add_argument("--time", action="store_true",
                        help="on a GPU: the first release whose build moved the time (or outputs) of the kernel's "
                             "recorded launches (--recording, default the newest in --store) beyond the interval "
                             "(docs/upgrade.md#bisect-time)")
    parser.add_argument("--cells-store", default=None, metavar="DIR",
                        help="with --time: a store whose upgrade results hold releases' cells of these kernels (e.g. "
                             "built on another machine and copied here); the releases it lacks are rebuilt here")
    parser.add_argument("--rounds", type=int, default=None,
                        help=f"with --time: interleaved rounds per replay (default {config.sweep.DEFAULT_ROUNDS})")
    parser.add_argument("--threshold", type=float, default=None,
                        help=f"with --time: the smallest change of time that moves a kernel, a fraction (default "
                             f"{config.check.THRESHOLD}, the check gate's)")
    parser.add_argument("--moved-by", choices=config.upgrade.BISECT_MOVED_BY, default=None,
                        help="with --time: what moves a kernel: its time or its outputs (either, the default), or "
                             "one alone (a rounding change at one release can hide a slowdown at a later one)")
    parser.add_argument("--autotune-top", type=int, default=None, metavar="K",
                        help="with --time: per autotuned kernel, replay the K configs fastest in the autotuner's own "
                             "benchmark (default all), each release's build at the one its autotuner would pick")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=_bisect)


def _bisect(args) -> int:
    timing = [option for option, value in (("--cells-store", args.cells_store), ("--rounds", args.rounds),
                                           ("--threshold", args.threshold), ("--moved-by", args.moved_by),
                                           ("--autotune-top", args.autotune_top)) if value is not None]
    if args.ptxas is not None:
        return _bisect_ptxas(args, timing)
    missing = [option for option, value in (("--from", args.from_release), ("--to", args.to_release)) if value is None]
    if missing:
        raise TritonhookError(f"{' and '.join(missing)}: required (or --ptxas V1,V2,... to bisect ptxas versions)")
    releases = [r for r in (args.releases or ",".join(config.upgrade.SUPPORTED_RELEASES)).split(",") if r.strip()]
    if args.time:
        return _bisect_time(args, releases)
    if timing:
        raise TritonhookError(f"{', '.join(timing)}: only with --time")
    from ..upgrade.bisect import bisect

    result = bisect(open_store(args, write=True), kernel=args.kernel, from_release=args.from_release,
                    to_release=args.to_release, releases=releases, recording=args.recording)
    show(result, as_json=args.json)
    return 0


def _bisect_time(args, releases: list[str]) -> int:
    from ..store import Store
    from ..sweep import load as load_recording
    from ..upgrade.bisect_timing import bisect_time

    store = open_store(args, write=True)
    result = bisect_time(load_recording(store, args.recording), store, kernel=args.kernel,
                         from_release=args.from_release, to_release=args.to_release, releases=releases,
                         cells_store=Store(args.cells_store, create=False) if args.cells_store else None,
                         rounds=config.sweep.DEFAULT_ROUNDS if args.rounds is None else args.rounds,
                         threshold=config.check.THRESHOLD if args.threshold is None else args.threshold,
                         moved_by=args.moved_by or config.upgrade.BISECT_MOVED_BY[0], autotune_top=args.autotune_top,
                         progress=True)
    show(result, as_json=args.json)
    return 0


def _bisect_ptxas(args, timing: list[str]) -> int:
    from ..upgrade.bisect import bisect_ptxas

    others = [option for option, value in (("--time", args.time or None), ("--from", args.from_release),
                                           ("--to", args.to_release), ("--releases", args.releases)) if value]
    if others + timing:
        raise TritonhookError(f"--ptxas with {', '.join(others + timing)}: --ptxas bisects ptxas versions under the "
                              f"captured Triton, on the CPU; give it alone")
    result = bisect_ptxas(open_store(args, write=True), kernel=args.kernel,
                          ptxas=[v.strip() for v in args.ptxas.split(",") if v.strip()], recording=args.recording)
    show(result, as_json=args.json)
    return 0
