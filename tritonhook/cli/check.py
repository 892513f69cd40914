"""`tritonhook check`: the regression gate for CI (library: `tritonhook.check`; docs/check.md). Exit status 1 when
a kernel regressed or its outputs changed (or the workload failed), 3 when none did but more of the GPU time than
--max-unchecked was not checked, 0 otherwise, 2 on bad input."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from .. import config
from ..errors import TritonhookError
from ..files import check_writable
from ..format import console, line, show
from .common import apply_arg, command_after_dashes, l2_args, open_store, store_arg


def add_check(sub) -> None:
    parser = sub.add_parser("check", help="the regression gate: replay every kernel signature of a run with the "
                                          "baseline's build of the same kernel and specialization beside the "
                                          "current one; exit 1 on a regression or changed outputs, 3 when "
                                          "more than --max-unchecked of the GPU time was not checked")
    store_arg(parser)
    goal = parser.add_mutually_exclusive_group(required=True)
    goal.add_argument("--baseline", default=None, metavar="RECORDING|FILE",
                      help="what to check against: a baseline file (--save-baseline) or a recording id in --store")
    goal.add_argument("--save-baseline", default=None, metavar="FILE",
                      help="instead of checking, write the run's builds as a portable baseline file")
    parser.add_argument("--current", default=None, metavar="RECORDING",
                        help="the current run: a recording id in --store (or JSON file) instead of a command")
    parser.add_argument("--threshold", type=float, default=config.check.THRESHOLD, metavar="FRACTION",
                        help=f"a kernel regressed when at least this much slower and its interval excludes 1 "
                             f"(default {config.check.THRESHOLD}; docs/check.md#the-rule)")
    parser.add_argument("--max-unchecked", type=float, default=config.check.MAX_UNCHECKED, metavar="FRACTION",
                        help=f"fail (exit 3) when the signatures not checked (unmatched, not replayed) make more "
                             f"than this share of the run's GPU time (default {config.check.MAX_UNCHECKED}; 1: "
                             f"never; docs/check.md#what-is-not-checked)")
    parser.add_argument("--rounds", type=int, default=config.sweep.DEFAULT_ROUNDS,
                        help=f"the most interleaved rounds per signature; each stops once its always-valid "
                             f"interval has decided (default {config.sweep.DEFAULT_ROUNDS})")
    parser.add_argument("--fixed-rounds", action="store_true",
                        help="time every signature --rounds rounds (no early stop; for comparisons)")
    l2_args(parser)
    parser.add_argument("--time-identical", action="store_true",
                        help="time the kernels whose build did not change too (an A/A of the gate itself)")
    apply_arg(parser, "in the current run (does applying them regress against the baseline?)")
    parser.add_argument("--retune", action="store_true",
                        help="let the current run's autotuners pick their own configs; by default it runs the "
                             "baseline's picks, pinned, so that each kernel is built at the config the baseline "
                             "built it at (docs/check.md#the-baselines-picks)")
    parser.add_argument("--junit", default=None, metavar="FILE", help="also write the verdicts as JUnit XML")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- python -m pytest ... (the current run)")
    parser.set_defaults(handler=_check)


def _check(args) -> int:
    from .. import sweep
    from ..check import BASELINE_WHAT, JUNIT_WHAT, Baseline, check, load_baseline
    from ..check.gate import checked_max_unchecked, gate_plan

    if (args.current is None) == (not args.command):
        raise TritonhookError("tritonhook check: give the current run as --current RECORDING or as a command "
                              "after '--', one of the two")
    plan = gate_plan(threshold=args.threshold, rounds=args.rounds, fixed_rounds=args.fixed_rounds, l2=args.l2,
                     l2_dirt=args.l2_dirt)
    checked_max_unchecked(args.max_unchecked)
    check_writable(args.save_baseline, BASELINE_WHAT)  # before the run: an output path it cannot write is one
    check_writable(args.junit, JUNIT_WHAT)  # line, not a lost run
    command = command_after_dashes(args.command, "check") if args.command else None
    # a baseline file is read before anything runs: bad input is one line, not a lost run
    baseline = Baseline.load(args.baseline) if args.baseline and os.path.lexists(args.baseline) else None
    if command is not None:
        sweep.check_can_record(command)  # before the store is made: a refused recording leaves nothing behind
    store = open_store(args, create=command is not None, write=True)
    if args.baseline and baseline is None:  # a recording id in the store
        baseline = load_baseline(args.baseline, store)
    workload_failed = False
    if command is None:
        current = sweep.load(store, args.current)
    else:
        with tempfile.TemporaryDirectory(prefix="tritonhook-check-") as folder:
            apply = args.apply if args.retune or baseline is None else _pinned(baseline, args.apply, store, folder)
            recorded = sweep.record_command(command, store, stdout=sys.stderr if args.json else None, apply=apply)
        if (failure := recorded.failure()) is not None:
            print(f"tritonhook check: {failure}", file=sys.stderr)
            workload_failed = True
        if recorded.recording is None:
            raise TritonhookError("the command launched no Triton kernel that could be recorded")
        current = recorded.recording
    if baseline is None:
        saved = Baseline.from_recording(current, store)
        path = saved.save(args.save_baseline)
        console(stderr=True).print(line(f"tritonhook check: baseline {path}: {len(saved.builds)} build(s) of "
                                        f"recording {current.id}"))
        return 1 if workload_failed else 0
    result = check(baseline, current, store, plan, max_unchecked=args.max_unchecked,
                   time_identical=args.time_identical, progress=True)
    if args.junit:
        result.write_junit(args.junit)
    show(result, as_json=args.json)
    return 1 if workload_failed else result.exit_code


def _pinned(baseline, apply: str | None, store, folder: str) -> str | None:
    """The current run's decisions: the baseline's picks pinned (and `--apply`'s), said in a line."""
    out = console(stderr=True)
    for why in baseline.unpinned:
        out.print(line(f"tritonhook check: {why}"))
    if not baseline.picks:
        return apply
    out.print(line(f"tritonhook check: the current run runs the baseline's autotune picks at {len(baseline.picks)} "
                   f"tuning key(s) (--retune: let it pick)"))
    return baseline.pins_file(folder, apply, store)
