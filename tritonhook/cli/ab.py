"""`tritonhook ab`: A/B-time kernel variants (names, ptxas, options, control files) in fresh processes (library:
`tritonhook.ab`)."""

from __future__ import annotations

import argparse
import sys

from .. import ab, config
from ..format import show
from ..measure.variants import parse_variants, refuse_configs
from ..preflight import named_gpu
from ..rename import compile_select
from .common import command_after_dashes, open_store, store_arg


def add_ab(sub) -> None:
    parser = sub.add_parser("ab", help="A/B-time kernel name variants: run a benchmark script per variant, "
                                       "interleaved, in fresh processes")
    store_arg(parser)
    parser.add_argument("--variants", default="plain,cutlass_",
                        help="comma-separated: plain, strip, or a prefix, each with optional @VERSION|@PATH (ptxas), "
                             "+opt:OPTION, +acf:FILE (docs/variants.md; default plain,cutlass_; plain,plain: A/A)")
    parser.add_argument("--select", help="rename only kernels whose name matches this regex")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds, at least 5 (default 7)")
    parser.add_argument("--check", choices=("allclose", "bitwise", "none"), default="allclose",
                        help="how the variants' recorded outputs must agree (default allclose)")
    parser.add_argument("--min-effect", type=float, default=None, metavar="FRACTION",
                        help="smallest time change called faster/slower (default 0.005)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--list", action="store_true", help="list the A/B results saved in the store instead")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- python bench.py ARGS...")
    parser.set_defaults(handler=_ab)


def _ab(args) -> int:
    if args.list:
        show(ab.saved_results(open_store(args)), as_json=args.json)
        return 0
    command = command_after_dashes(args.command, "ab")
    named_gpu()
    variants = parse_variants(args.variants)
    refuse_configs(variants, "tritonhook ab")
    if args.select is not None:
        compile_select(args.select)
    store = open_store(args, create=True)
    result = ab.run_interleaved(command, variants, rounds=args.rounds, store=store, select=args.select,
                                check=None if args.check == "none" else args.check,
                                min_effect=config.ab.DEFAULT_MIN_EFFECT if args.min_effect is None else args.min_effect,
                                progress=True)
    show(result, as_json=args.json)
    mismatched = [b.name for b in result.benchmarks if b.correctness == "MISMATCH"]
    if mismatched:
        print(f"tritonhook ab: outputs differ between variants for {', '.join(mismatched)}; if the script draws "
              f"random inputs, seed the generator so that every process computes on the same inputs",
              file=sys.stderr)
    return 1 if mismatched else 0
