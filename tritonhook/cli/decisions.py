"""`tritonhook decisions ls|show|rm|export|import|from-result|confirm`: per-kernel decisions (library:
`tritonhook.decisions`; docs/decisions.md)."""

from __future__ import annotations

import argparse
import sys

from ..decisions.confirmation import AGAINST
from ..errors import TritonhookError
from ..format import print_json, show
from .common import command_after_dashes, open_store, positive_count, store_arg


def add_decisions(sub) -> None:
    parser = sub.add_parser("decisions", help="per-kernel decisions made from sweep/replay/tune results: list, "
                                              "show, remove, export to and import from a portable file")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    for name, helptext, arg, handler in (
            ("ls", "list the decisions in the store", None, _ls),
            ("show", "one decision: its key, choice and evidence", "ID", _show),
            ("rm", "remove a decision", "ID", _rm),
            ("export", "write every decision to a portable JSON file (control files inline)", "FILE", _export),
            ("import", "validate a decisions file and keep its valid entries (each refused one is a line)", "FILE",
             _import),
            ("from-result", "make decisions from a sweep, replay or tune result", "RESULT_ID", _from_result)):
        action = actions.add_parser(name, help=helptext)
        store_arg(action)
        if arg:
            action.add_argument("target", metavar=arg)
        action.add_argument("--json", action="store_true", help="print the result as JSON")
        action.set_defaults(handler=handler)
    spread = actions.add_parser("divergence", help="the autotune picks of every process of several recordings "
                                                   "(ranks, runs) per tuning key, and where they differ; --pin: one "
                                                   "pick for every process")
    store_arg(spread)
    spread.add_argument("--recording", action="append", metavar="ID", dest="recordings",
                        help="a recording to read (repeatable; default: every recording in the store)")
    spread.add_argument("--pin", action="store_true",
                        help="pin one pick per tuning key for every rank and run: a divergent key's rival picks "
                             "replayed on this GPU first (as --replay), the one faster beyond doubt, else the fastest "
                             "by the autotuners' own timings (a near-tie broken by a fixed rule); a key every process "
                             "agreed on, at that pick; apply with run --apply STORE")
    spread.add_argument("--replay", action="store_true",
                        help="replay each divergent key's rival picks on this GPU against the fastest, interleaved: "
                             "how far apart they really are (an interval), where the autotuners' timings are draws")
    spread.add_argument("--no-replay", action="store_true",
                        help="with --pin: pin by the autotuners' own timings alone, nothing replayed (no GPU needed; "
                             "at µs scale those timings are each process's draw)")
    spread.add_argument("--top", type=int, default=None, metavar="N",
                        help="with --replay: the N divergent keys whose divergence cost the workload most (default: "
                             "every one)")
    spread.add_argument("--json", action="store_true", help="print the result as JSON")
    spread.set_defaults(handler=_divergence)
    confirm = actions.add_parser("confirm", help="run the workload as it is and with a sweep's or tune's decisions "
                                                 "applied (configs pinned, kernels built as chosen), alternately, "
                                                 "and compare the kernels' in-workload times")
    store_arg(confirm)
    confirm.add_argument("--sweep", "--result", dest="sweep", metavar="ID",
                         help="the sweep, replay or tune result whose decisions to confirm (default: the newest "
                              "sweep in the store)")
    confirm.add_argument("--decision", action="append", metavar="ID", dest="decisions",
                         help="confirm this decision kept in the store instead of a result's (repeatable)")
    confirm.add_argument("--only", metavar="REGEX",
                         help="confirm only the decisions whose kernel and key (KERNEL [TUNING KEY]) or kernel and "
                              "choice this regex finds: a template fusion run the other way, measured by the step, "
                              "alone")
    confirm.add_argument("--runs", type=int, default=3, help="runs per arm (default 3)")
    confirm.add_argument("--against", choices=sorted(AGAINST), default="autotuner",
                         help="what the pinned config is compared with: the workload's autotuner tuning again each "
                              "run (default), or the config the sweep's recorded run picked, pinned too (measures "
                              "the replay's regret as it is where the autotuner's pick is a draw)")
    confirm.add_argument("--cold", action="store_true",
                         help="every run with Inductor's caches off, as a first run compiles (the default where the "
                              "result's recording compiled so, or where a pin turns them off in its arm)")
    confirm.add_argument("--json", action="store_true", help="print the result as JSON")
    confirm.add_argument("command", nargs=argparse.REMAINDER, help="-- python train.py ARGS...")
    confirm.set_defaults(handler=_confirm)


def _divergence(args) -> int:
    from ..decisions.keep import from_divergence
    from ..sweep.divergence import divergence
    from ..sweep.recording import RESULT_KIND, Recording

    if args.no_replay and (args.replay or not args.pin):
        raise TritonhookError("--no-replay: only with --pin, and not with --replay")
    store = open_store(args, write=args.pin)
    if args.recordings:
        found = [store.result(which) for which in args.recordings]
        if bad := [which for which, r in zip(args.recordings, found) if not isinstance(r, Recording)]:
            raise TritonhookError(f"result {bad[0]}: not a recording in {store.path}")
    else:
        found = store.results(RESULT_KIND)
    merged = [r for r in found if not r.label or r.label.endswith("-merged") or not any(
        other.label == f"{r.label}-merged" for other in found)]  # a run's processes once: its merged recording
    report = divergence(merged)
    unreplayed = None
    if args.replay or args.pin and not args.no_replay:
        from ..sweep.replay import Workers
        from ..sweep.rivals import replay_rivals

        try:
            replay_rivals(merged, store, report, Workers.at(progress=True),
                          top=positive_count(args.top, "--top"))
        except TritonhookError as exc:  # asked for: an error; on the way to pins: the pins say so
            if args.replay:
                raise
            unreplayed = str(exc)
    pins = None
    if args.pin:
        gpus = {r.device for r in merged if r.device}
        if len(gpus) > 1:
            raise TritonhookError(f"recordings of {len(gpus)} GPU kinds ({', '.join(sorted(gpus))}); pin one at a "
                                  f"time with --recording")
        pins = from_divergence(store, report, next(iter(gpus), None))
        if unreplayed:
            pins.warnings.insert(0, f"nothing replayed ({unreplayed}): each pin is its key's fastest pick by the "
                                    f"autotuners' own timings")
    if args.json:
        print_json({**report.to_json(), "pins": None if pins is None else pins.to_json()})
        return 0
    show(report)
    if pins is not None:
        show(pins)
    return 0


def _ls(args) -> int:
    from ..decisions import listing

    show(listing(open_store(args), confirmations=True), as_json=args.json)
    return 0


def _show(args) -> int:
    from ..decisions import shown

    show(shown(open_store(args), args.target), as_json=args.json)
    return 0


def _rm(args) -> int:
    from ..decisions import DecisionList, remove

    removed = remove(open_store(args, write=True), args.target)
    show(DecisionList([removed], title="removed"), as_json=args.json)
    return 0


def _export(args) -> int:
    from ..decisions import export

    show(export(open_store(args), args.target), as_json=args.json)
    return 0


def _import(args) -> int:
    from ..decisions import import_file

    result = import_file(open_store(args, create=True), args.target)
    show(result, as_json=args.json)
    return 1 if result.warnings else 0


def _from_result(args) -> int:
    from ..decisions import from_result

    show(from_result(open_store(args, write=True), args.target), as_json=args.json)
    return 0


def _confirm(args) -> int:
    from ..decisions.confirm import confirm

    command = command_after_dashes(args.command, "decisions confirm")
    result = confirm(open_store(args, write=True), args.sweep, command, runs=args.runs, against=args.against,
                     decision_ids=args.decisions, cold=args.cold, only=args.only,
                     progress=confirm_progress)
    show(result, as_json=args.json)
    return 0


def confirm_progress(line: str) -> None:
    """A confirmation's progress, on stderr (stdout holds the result)."""
    print(f"tritonhook decisions confirm: {line}", file=sys.stderr)
