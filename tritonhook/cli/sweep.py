"""`tritonhook sweep`, `record` and `replay`: per-kernel A/B of a whole workload (library: `tritonhook.sweep`)."""

from __future__ import annotations

import argparse
import sys
import time

from .. import config, sweep
from ..errors import TritonhookError
from ..format import console, line, show
from ..measure.variants import parse_variants
from ..rename import compile_select
from ..sweep.tune import DEFAULT_SHARE, parse_budget
from .common import apply_arg, command_after_dashes, l2_args, open_store, store_arg


def _replay_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--variants", default="plain,cutlass_",
                        help="comma-separated variants, each a name (plain, strip or a prefix) with an optional "
                             "@VERSION or @/path/to/ptxas, then +opt:OPTION (ptxas codegen options) and "
                             "+acf:FILE (a control file), e.g. plain,cutlass_@13.4+opt:-O2 (docs/variants.md; "
                             "default plain,cutlass_; plain,plain: A/A)")
    parser.add_argument("--ptxas", default="", metavar="P1,P2",
                        help="also assemble every variant with these ptxas binaries (a runtime ptxas matrix)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--top", type=int, default=None, metavar="N", help="replay the N signatures with most GPU time")
    which.add_argument("--select", "--kernel", dest="kernel", default=None, metavar="REGEX",
                       help="replay the kernels whose name matches REGEX")
    parser.add_argument("--rounds", type=int, default=config.sweep.DEFAULT_ROUNDS,
                        help=f"the most interleaved rounds per signature (default {config.sweep.DEFAULT_ROUNDS}); "
                             f"a signature stops sooner once its always-valid interval has decided or is precise "
                             f"enough (rows {config.sweep.ROW_PRECISION * 100:.0f}%% wide, autotune candidates "
                             f"{config.sweep.CANDIDATE_PRECISION * 100:.0f}%% or {config.sweep.CANDIDATE_CAP} rounds)")
    parser.add_argument("--fixed-rounds", action="store_true",
                        help=f"time every signature --rounds rounds (at least {config.ab.MIN_ROUNDS}), the fixed-n "
                             f"interval: for comparisons with the adaptive rule")
    parser.add_argument("--autotune-top", default=str(config.sweep.AUTOTUNE_TOP), metavar="K|all",
                        help=f"per autotuned kernel, replay the K configs fastest in the autotuner's own benchmark "
                             f"and the one the workload ran (default {config.sweep.AUTOTUNE_TOP}; all: every one)")
    l2_args(parser)
    parser.add_argument("--min-effect", type=float, default=config.ab.DEFAULT_MIN_EFFECT, metavar="FRACTION",
                        help="smallest time change called faster/slower (default 0.005)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--gpus", default=None, metavar="all|0,1",
                       help="one replay worker per GPU of this machine, pinned with CUDA_VISIBLE_DEVICES; work "
                            "handed out kernel by kernel (default: one worker on this process's GPU)")
    where.add_argument("--ray", nargs="?", const=True, default=False, metavar="ADDRESS",
                       help="replay as Ray tasks of one GPU each on the cluster at ADDRESS (default: the one this "
                            "machine belongs to, else a new local one); needs pip install 'tritonhook[ray]'")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def _record_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--budget", type=int, default=None, metavar="BYTES",
                        help="input snapshot bytes per signature (default 256 MiB; beyond: synthetic data, and a "
                             "row that misses the fidelity bar on them says the budget that would have kept them)")
    parser.add_argument("--snapshot-budget", type=int, default=None, metavar="BYTES",
                        help="input snapshot bytes per recording process, all signatures together (default 8 GiB; "
                             "beyond: synthetic data, and the replay says how much)")
    parser.add_argument("--sample", type=int, default=None, metavar="K",
                        help="look at about one launch in K after each kernel's first "
                             f"{config.sweep.RECORD_EXACT_FIRST} (default 1: every launch); cheaper for launch-bound "
                             "programs, launch counts per signature become estimates")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- python train.py ARGS...")


def _confirm_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--confirm", type=int, default=None, metavar="N",
                        help="end by confirming the result's decisions in the workload: N runs with them applied "
                             "and N without, ABBA in fresh processes (`tritonhook decisions confirm`)")


def _confirmed(args, store, result, command: list[str] | None) -> int:
    """Show `result`, and with --confirm N what the workload said of its decisions."""
    if args.confirm is None:
        show(result, as_json=args.json)
        return 0
    from ..decisions.confirm import ending
    from .decisions import confirm_progress

    show(ending(store, result, command, args.confirm, progress=confirm_progress), as_json=args.json)
    return 0


def _check_confirm(args) -> None:
    if args.confirm is not None:
        from ..decisions.confirm import check_runs

        check_runs(args.confirm, "--confirm")


def add_sweep(sub) -> None:
    parser = sub.add_parser("sweep", help="record a workload, then time every Triton kernel it launched per "
                                          "variant (plain, cutlass_, other ptxas), kernel by kernel")
    store_arg(parser)
    _replay_args(parser)
    _confirm_arg(parser)
    _record_args(parser)
    parser.set_defaults(handler=_sweep)


def add_record(sub) -> None:
    parser = sub.add_parser("record", help="run a workload recording every Triton launch (arguments, inputs, "
                                           "GPU time) for a later `tritonhook replay`")
    store_arg(parser)
    parser.add_argument("--json", action="store_true", help="print the recording's summary as JSON")
    apply_arg(parser, "while recording (the recorded builds are the applied ones)")
    _record_args(parser)
    parser.set_defaults(handler=_record)


def add_replay(sub) -> None:
    parser = sub.add_parser("replay", help="replay a recording's kernels per variant and compare them")
    store_arg(parser)
    parser.add_argument("--recording", default=None, metavar="ID|FILE",
                        help="the recording: an id in the store or a JSON file (default: the newest)")
    _replay_args(parser)
    parser.set_defaults(handler=_replay)


def _autotune_top(text: str) -> int | None:
    """`--autotune-top`: a whole number of candidates, at least 1, or "all" (None)."""
    if text == "all":
        return None
    if not text.isdigit() or int(text) < 1:
        raise TritonhookError(f"--autotune-top {text}: at least 1, or all")
    return int(text)


def _checked(args):
    variants = parse_variants(args.variants)
    if args.kernel is not None:
        compile_select(args.kernel)
    if args.rounds < config.ab.MIN_ROUNDS:
        raise TritonhookError(f"--rounds {args.rounds}: at least {config.ab.MIN_ROUNDS}")
    sweep.resolve_gpus(args.gpus)  # before a workload runs: a bad --gpus is one line, not a wasted recording
    if args.ray is not False:
        sweep.require_ray()
    return variants, [p for p in args.ptxas.split(",") if p]


def _record_run(args, apply: str | None = None) -> tuple[sweep.RecordResult, object, float]:
    command = command_after_dashes(args.command, args.command_name)
    sweep.check_can_record(command)  # before the store is made: a refused recording leaves nothing behind
    store = open_store(args, create=True)
    began = time.time()
    result = sweep.record_command(command, store, budget=args.budget, sample_every=args.sample,
                                  stdout=sys.stderr if args.json else None, snapshot_budget=args.snapshot_budget,
                                  apply=apply)
    if (failure := result.failure()) is not None:
        print(f"tritonhook {args.command_name}: {failure}", file=sys.stderr)
    return result, store, time.time() - began


def _record(args) -> int:
    result, _, _ = _record_run(args, args.apply)
    recording = result.recording
    summary = {"recording": recording.id if recording else None, "exit_code": result.exit_code,
               "signatures": len(recording.signatures) if recording else 0,
               "launches": sum(s.launches for s in recording.signatures) if recording else 0,
               "gpu_ms": recording.total_gpu_ms if recording else 0.0}
    if args.json:
        from ..format import print_json

        print_json(summary)
    elif recording is None:
        print("tritonhook record: nothing recorded (no Triton kernel launch reached the recording)", file=sys.stderr)
    else:
        console(stderr=True).print(line(f"tritonhook record: recording {summary['recording']}: "
                                         f"{summary['signatures']} signature(s), {summary['launches']:,} launches, "
                                         f"{summary['gpu_ms']:.1f} ms of Triton GPU time"))
    return result.exit_code or (0 if recording else 1)


def _sweep(args) -> int:
    variants, ptxas = _checked(args)
    plan, workers = _plan(args)  # before the workload runs: bad input is one line, not a lost recording
    _check_confirm(args)
    result, store, record_s = _record_run(args)
    if result.recording is None:
        raise TritonhookError("the workload launched no Triton kernel that could be recorded" +
                              (f" (it exited with status {result.exit_code})" if result.exit_code else ""))
    recording = result.recording
    print(f"tritonhook sweep: recorded in {record_s:.1f} s: {len(recording.signatures)} signature(s), "
          f"{sum(1 for s in recording.signatures if s.launches)} launched by the workload; building and replaying",
          file=sys.stderr, flush=True)
    swept = sweep.replay(recording, store, variants, plan, workers=workers, ptxas=ptxas, record_s=record_s)
    return _confirmed(args, store, swept, result.recording.command)


def _replay(args) -> int:
    variants, ptxas = _checked(args)
    plan, workers = _plan(args)
    store = open_store(args, write=True)
    recording = sweep.load(store, args.recording)
    swept = sweep.replay(recording, store, variants, plan, workers=workers, ptxas=ptxas)
    show(swept, as_json=args.json)
    return 0


def _plan(args) -> tuple[sweep.ReplayPlan, sweep.Workers]:
    """What the replay of `sweep` / `replay` times and where, from their common options."""
    plan = sweep.ReplayPlan(kernel=args.kernel, top=args.top, autotune_top=_autotune_top(args.autotune_top),
                            rounds=args.rounds, fixed_rounds=args.fixed_rounds, min_effect=args.min_effect,
                            l2=args.l2, l2_dirt=args.l2_dirt)
    return plan, sweep.Workers.at(args.gpus, args.ray, progress=True)


def add_tune(sub) -> None:
    parser = sub.add_parser("tune", help="search names, ptxas binaries, codegen options and control files for the "
                                         "kernels that make most of a recording's GPU time; confirm each winner")
    store_arg(parser)
    parser.add_argument("--recording", default=None, metavar="ID|FILE",
                        help="the recording: an id in the store or a JSON file (default: the newest)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--top", type=int, default=None, metavar="N", help="tune the N kernels with most GPU time")
    which.add_argument("--select", "--kernel", dest="kernel", default=None, metavar="REGEX",
                       help="tune the kernels whose name matches REGEX")
    which.add_argument("--share", type=float, default=None, metavar="FRACTION",
                       help=f"tune the fewest kernels making this share of the GPU time (default "
                            f"{DEFAULT_SHARE})")
    parser.add_argument("--space", default="names,ptxas,options", metavar="AXES",
                        help="the axes to search, some of names (plain, cutlass_), ptxas (--ptxas, default the "
                             "newest found), options (documented codegen options), acf (--acf files), "
                             "acf-search (control files NVIDIA CompileIQ proposes from --acf-space, pool by pool); "
                             "default names,ptxas,options (docs/variants.md#tune)")
    parser.add_argument("--ptxas", default="", metavar="V1,V2",
                        help="the ptxas binaries of the ptxas axis: versions or paths, as after @ in a variant; "
                             "for acf-search, the one ptxas that builds its control files (13.3.x for CompileIQ's "
                             "13.3 spaces)")
    parser.add_argument("--acf", default="", metavar="FILE[,FILE]", help="the control files of the acf axis")
    parser.add_argument("--acf-space", default=None, metavar="SPACE.bin",
                        help="the CompileIQ search-space file acf-search samples (e.g. ptxas13.3_search_space.bin; "
                             "needs pip install 'tritonhook[tune]')")
    parser.add_argument("--acf-pool", type=int, default=config.sweep.TUNE_ACF_POOL, metavar="N",
                        help=f"control files per acf-search pool, at least 6 (default {config.sweep.TUNE_ACF_POOL})")
    parser.add_argument("--acf-generations", type=int, default=config.sweep.TUNE_ACF_GENERATIONS, metavar="G",
                        help=f"acf-search generations per kernel, each pool proposed from the scores of the ones "
                             f"before (default {config.sweep.TUNE_ACF_GENERATIONS})")
    parser.add_argument("--budget", default=None, metavar="N|Nm",
                        help="stop after N candidates, or after N minutes of search (20m); default all")
    parser.add_argument("--rounds", type=int, default=config.sweep.DEFAULT_ROUNDS,
                        help=f"interleaved rounds a candidate (default {config.sweep.DEFAULT_ROUNDS})")
    parser.add_argument("--confirm-rounds", type=int, default=2 * config.sweep.DEFAULT_ROUNDS,
                        help=f"rounds of the confirming replay (default {2 * config.sweep.DEFAULT_ROUNDS})")
    parser.add_argument("--min-effect", type=float, default=config.ab.DEFAULT_MIN_EFFECT, metavar="FRACTION",
                        help="smallest time change called faster/slower (default 0.005)")
    l2_args(parser)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--gpus", default=None, metavar="all|0,1", help="one replay worker per GPU of this machine")
    where.add_argument("--ray", nargs="?", const=True, default=False, metavar="ADDRESS",
                       help="replay as Ray tasks of one GPU each")
    _confirm_arg(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=_tune)


def _tune(args) -> int:
    for name, rounds in (("--rounds", args.rounds), ("--confirm-rounds", args.confirm_rounds)):
        if rounds < config.ab.MIN_ROUNDS:
            raise TritonhookError(f"{name} {rounds}: at least {config.ab.MIN_ROUNDS}")
    if args.share is not None and not 0 < args.share <= 1:
        raise TritonhookError(f"--share {args.share}: a fraction in (0, 1]")
    if args.kernel is not None:
        compile_select(args.kernel)
    parse_budget(args.budget)
    _check_confirm(args)
    space = sweep.TuneSpace.parse(args.space, ptxas=[p for p in args.ptxas.split(",") if p],
                                  controls=[f for f in args.acf.split(",") if f], acf_space=args.acf_space,
                                  acf_pool=args.acf_pool, acf_generations=args.acf_generations)
    sweep.resolve_gpus(args.gpus)
    if args.ray is not False:
        sweep.require_ray()
    store = open_store(args, write=True)
    recording = sweep.load(store, args.recording)
    tuned = sweep.tune(recording, store, space, share=args.share, top=args.top, kernel=args.kernel,
                       budget=args.budget, rounds=args.rounds, confirm_rounds=args.confirm_rounds,
                       min_effect=args.min_effect, progress=True, gpus=args.gpus, ray=args.ray, l2=args.l2,
                       l2_dirt=args.l2_dirt)
    return _confirmed(args, store, tuned, recording.command)
