"""`tritonhook memwatch` and `tritonhook preflight`: device memory measured, and predicted with no GPU."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from .. import memwatch, preflight
from ..cubin import Cubin
from ..errors import Stopped, TritonhookError
from ..files import check_writable
from ..format import show
from .common import command_after_dashes, open_store, store_arg


def add_memwatch(sub) -> None:
    parser = sub.add_parser("memwatch", help="run a Python command and show where its device memory went")
    parser.add_argument("--interval-ms", type=float, default=2.0, help="NVML sampling interval (default 2)")
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    parser.add_argument("--plot", type=Path, help="write the memory timeline to this image (needs matplotlib)")
    parser.add_argument("--store", type=Path, default=None,
                        help="also save the result in this store, for `tritonhook report` (labelled with the "
                             "command, or the --compare name)")
    parser.add_argument("--out", type=Path, metavar="FILE.json",
                        help="also write the result as JSON to this file (`tritonhook report --memwatch` reads it)")
    parser.add_argument("--compare", nargs="+", metavar="NAME=CMD",
                        help='run each command in a fresh process and compare, e.g. tma="python x.py --kernel tma"')
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- python script.py ARGS...")
    parser.set_defaults(handler=_memwatch)


def _memwatch(args) -> int:
    """The store and the output files are checked before any command runs, so that one it cannot write is one
    line, not a lost run."""
    store = None if args.store is None else open_store(args, create=True)
    check_writable(args.out, memwatch.JSON_WHAT)
    check_writable(args.plot, memwatch.PLOT_WHAT)
    if args.compare:
        if args.command or args.plot:
            raise TritonhookError("tritonhook memwatch: --compare takes NAME=CMD pairs only (no -- command, "
                                  "no --plot)")
        results = {name: _watched(command, args, store, name)[1]
                   for name, command in memwatch.parse_compare(args.compare).items()}
        _export(memwatch.MemwatchComparison(results), args)
        return 0
    command = command_after_dashes(args.command, "memwatch")
    try:
        code, result = _watched(command, args, store, shlex.join(command))
    except Stopped as stopped:  # a signal ended the command: what memwatch saw until then is still the report
        if stopped.partial is not None:
            _keep(stopped.partial, store, shlex.join(command))
            _export(stopped.partial, args)
        raise
    _export(result, args)
    if args.plot:
        print(f"plot written to {result.plot(args.plot)}", file=sys.stderr)
    return code


def _watched(command: list[str], args, store, label: str) -> tuple[int, "memwatch.MemwatchResult"]:
    """One command run under memwatch: (its exit status, the result labelled `label`, saved when a store is given)."""
    code, result = memwatch.run_command(command, args.interval_ms)
    return code, _keep(result, store, label)


def _keep(result: "memwatch.MemwatchResult", store, label: str) -> "memwatch.MemwatchResult":
    """The result labelled `label`, saved when a store is given."""
    result.label = label
    if store is not None:
        result.save(store)
    return result


def _export(result, args) -> None:
    """Show the result, and write its JSON to --out when given."""
    show(result, as_json=args.json)
    if args.out:
        print(f"result written to {memwatch.write_json(result, args.out)}", file=sys.stderr)


# ----- preflight -------------------------------------------------------------------------------------------------
def add_preflight(sub) -> None:
    parser = sub.add_parser("preflight", help="predict the driver stack reservation of cubins (no GPU needed)",
                            description="Predict the driver stack reservation of cubins (no GPU needed). Exit "
                                        "status 1 when a capture's cubin cannot be read (it is named; the rest are "
                                        "predicted).")
    store_arg(parser)
    parser.add_argument("target", nargs="?", help="a .cubin file or a capture id; omitted: every capture in --store")
    parser.add_argument("--gpu", help=f"predict for this GPU ({', '.join(g.name for g in preflight.GPUS.values())}); "
                                      f"default: the listed GPUs that can load the cubin")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table (one row per prediction; "
                                                            "a capture whose cubin cannot be read: a row with 'error')")
    parser.set_defaults(handler=_preflight)


def _preflight(args) -> int:
    """Exit status 1 when a capture's cubin could not be read or parsed (the others are still predicted)."""
    gpus = [preflight.find_gpu(args.gpu)] if args.gpu is not None else None
    if args.target and not args.target.isdigit():
        report = preflight.PreflightReport([preflight.SourcedPrediction(None, None, p)
                                            for p in preflight.predict_cubin(Cubin.from_path(args.target), gpus)])
    else:
        store = open_store(args)
        captures = [store.get(args.target)] if args.target else [c for c in store.captures() if "cubin" in c.artifacts]
        report = preflight.predict_captures(store, captures, gpus)
    show(report, as_json=args.json)
    return 0 if report.ok else 1
