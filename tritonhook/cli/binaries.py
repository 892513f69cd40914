"""Commands on binaries and PTX: `diff`, `ptxas-matrix`, `ptxas list/install/uninstall/status`, `rename`."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from .. import config
from ..errors import TritonhookError
from ..files import read_input, write_file
from ..format import print_json, show
from ..format import print_table
from ..rename import DEFAULT_PREFIX
from .common import ptxas_arg, ptxas_args, rename_args, rename_value, store_arg


def add_rename(sub) -> None:
    parser = sub.add_parser("rename", help="rename the kernels of a PTX file (e.g. to take ptxas's cutlass path)")
    parser.add_argument("ptx", type=Path, help="input .ptx file")
    rename_args(parser, default_prefix=DEFAULT_PREFIX)
    parser.add_argument("--entry", help="rename only this .entry (default: every entry)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="output .ptx file")
    parser.add_argument("--json", action="store_true", help="print the renamed entries as JSON")
    parser.set_defaults(handler=_rename)


def _rename(args) -> int:
    from ..rename import STRIP, ptx_entries, rename_ptx, strip_ptx

    try:
        text = read_input(args.ptx, "PTX").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TritonhookError(f"{args.ptx}: cannot read the PTX ({exc})") from None
    entries = ptx_entries(text)
    if not entries:
        raise TritonhookError(f"{args.ptx}: no .entry in this file (is it PTX?)")
    rename = rename_value(args)
    renamed = strip_ptx(text, entry=args.entry) if rename is STRIP else rename_ptx(text, rename, entry=args.entry)
    write_file(args.output, renamed, "renamed PTX")
    pairs = [{"before": a, "after": b} for a, b in zip(entries, ptx_entries(renamed))]
    if args.json:
        print_json({"input": str(args.ptx), "output": str(args.output), "entries": pairs})
    else:
        changed = [f"{p['before']} -> {p['after']}" for p in pairs if p["before"] != p["after"]]
        print(f"{args.output}: {', '.join(changed) if changed else 'no entry needed renaming'}")
    return 0



def add_diff(sub) -> None:
    parser = sub.add_parser("diff", help="compare two cubins, PTX files (assembled here) or captures")
    store_arg(parser)
    parser.add_argument("a", help="cubin, fatbin or PTX file, or a capture id")
    parser.add_argument("b", help="cubin, fatbin or PTX file, or a capture id")
    parser.add_argument("--sass", action="store_true", help="also diff opcode histograms and normalized SASS "
                        "(runs nvdisasm)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--ptxas", help="ptxas for PTX inputs (default: the one Triton uses for the target)")
    ptxas_arg(parser)
    parser.add_argument("--variants", metavar="A_SPEC,B_SPEC",
                        help="build PTX input A as the first variant and B as the second (docs/variants.md), e.g. "
                             "plain,cutlass_@13.4+opt:--maxrregcount=128 (diff one PTX file against itself)")
    parser.add_argument("--gpu-name", help="target for PTX inputs (default: the PTX .target)")
    parser.add_argument("--nvdisasm", help="nvdisasm for --sass (default: the one Triton bundles)")
    parser.add_argument("--prefix", default=DEFAULT_PREFIX, help="rename prefix ignored when pairing kernels")
    parser.add_argument("--pair", action="append", default=[], metavar="A_NAME=B_NAME",
                        help="compare kernel A_NAME of A with B_NAME of B (repeatable); otherwise kernels pair by "
                        "name modulo --prefix, and a lone kernel on each side pairs with the other")
    parser.add_argument("--elf-order", action="store_true",
                        help="list sections in ELF order instead of largest change first")
    parser.set_defaults(handler=_diff)


def _diff(args) -> int:
    from .. import diff
    from ..measure.variants import parse_variants, refuse_configs

    variants = parse_variants(args.variants) if args.variants is not None else [None, None]
    refuse_configs(variants, "tritonhook diff")
    if len(variants) != 2:
        raise TritonhookError(f"--variants {args.variants}: give two, one for A and one for B")
    extra = ptxas_args(args)
    a, b = (diff.load_input(spec, ptxas=args.ptxas, ptxas_args=extra, gpu_name=args.gpu_name, store=args.store,
                            variant=variant) for spec, variant in zip((args.a, args.b), variants))
    sass_a, sass_b = diff.disassemble_both(a, b, nvdisasm=args.nvdisasm) if args.sass else (None, None)
    result = diff.diff_cubins(a.cubin, b.cubin, prefix=args.prefix, pairs=diff.parse_pairs(args.pair),
                              sass_a=sass_a, sass_b=sass_b, elf_order=args.elf_order)
    if args.json:
        print_json({**result.to_json(), "origin_a": a.origin, "origin_b": b.origin})
    else:
        show(result)
    return 0


def add_ptxas_matrix(sub) -> None:
    parser = sub.add_parser("ptxas-matrix", help="assemble a PTX file plain and renamed with several ptxas")
    parser.add_argument("ptx", type=Path)
    parser.add_argument("--ptxas", action="append", help="a ptxas binary (repeat; default: one of each version "
                        "`tritonhook ptxas list` finds)")
    parser.add_argument("--rename", default=DEFAULT_PREFIX,
                        help=f"prefix for the renamed build (default {DEFAULT_PREFIX})")
    parser.add_argument("--gpu-name", help="target (default: the PTX .target)")
    ptxas_arg(parser)
    parser.add_argument("--options", metavar="SPEC", default=None,
                        help="opt: and acf: parts of the variant grammar for every build, e.g. "
                             "opt:--maxrregcount=128+acf:FILE.acf (docs/variants.md); a ptxas that cannot read the "
                             "control file is skipped, with the reason")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(handler=_ptxas_matrix)


def _ptxas_matrix(args) -> int:
    from ..ptxas_matrix import ptxas_matrix
    from ..measure.variants import build_options
    from ..binaries import find_ptxas, one_per_version

    options, controls = build_options(args.options, "--options") if args.options is not None else ((), None)
    ptx = read_input(args.ptx, "PTX").decode("utf-8", errors="replace")
    paths = args.ptxas or [binary.path for binary in one_per_version(find_ptxas())]
    matrix = ptxas_matrix(ptx, paths, gpu_name=args.gpu_name, prefix=args.rename, label=str(args.ptx),
                          extra_args=[*ptxas_args(args), *options], controls=controls)
    show(matrix, as_json=args.json)
    return 0


def add_ptxas(sub) -> None:
    parser = sub.add_parser("ptxas", help="ptxas binaries on this machine")
    actions = parser.add_subparsers(dest="ptxas_action", metavar="ACTION")
    actions.required = True
    listing = actions.add_parser("list", help="list the ptxas binaries found, with their versions")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listing.set_defaults(handler=_ptxas_list)
    _add_ptxas_wrapper_actions(actions)


def _ptxas_list(args) -> int:
    from ..binaries import find_ptxas

    found = find_ptxas()
    if args.json:
        print_json([dataclasses.asdict(binary) for binary in found])
    elif not found:
        print(f"no ptxas found; install one (pip install nvidia-cuda-nvcc-cu12==12.8.93) or list paths in "
              f"${config.ptxas.PTXAS.name}")
    else:
        print_table(("version", "origin", "path"), [(b.version, b.origin, b.path) for b in found])
    return 0


# ----- ptxas install / uninstall / status, capture -------------------------------------------------------------
_WRAPPER_ACTIONS = {"install": "put a recording wrapper in place of ptxas (a second install is a no-op)",
                    "uninstall": "put the real ptxas back (also after an interrupted install or uninstall)",
                    "status": "say whether each ptxas is wrapped, plain, or left half way"}


def _add_ptxas_wrapper_actions(actions) -> None:
    for name, help_text in _WRAPPER_ACTIONS.items():
        parser = actions.add_parser(name, help=help_text)
        parser.add_argument("--ptxas", action="append", metavar="PATH",
                            help="a ptxas binary (repeat; default: Triton's bundled ones, $CUDA_HOME, "
                                 "/usr/local/cuda*, PATH)")
        if name == "install":
            store_arg(parser)
            parser.add_argument("--yes", action="store_true",
                                help="wrap the default binaries in place (needed when --ptxas is not given)")
            parser.add_argument("--dry-run", action="store_true", help="list what install would wrap; change nothing")
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
        parser.set_defaults(handler=_ptxas_wrapper)


def _ptxas_wrapper(args) -> int:
    from ..ptxas import wrapper

    install = args.ptxas_action == "install"
    targets = args.ptxas or (wrapper.default_targets() if install else wrapper.status_targets())
    if not targets:
        raise TritonhookError("no ptxas found (Triton, $CUDA_HOME, /usr/local/cuda*, PATH, pip wheels); "
                              "pass --ptxas PATH")
    if install and args.dry_run:
        results = [wrapper.status(path) for path in targets]
    elif install:
        if not (args.ptxas or args.yes):
            raise TritonhookError(f"tritonhook ptxas install would wrap in place: {', '.join(targets)}; "
                                  f"pass --yes to do so, or --ptxas PATH for one binary (--dry-run lists them)")
        results = [wrapper.install(path, store=args.store) for path in targets]
    elif args.ptxas_action == "uninstall":
        results = [wrapper.uninstall(path) for path in targets]
    else:
        results = [wrapper.status(path) for path in targets]
        if args.ptxas and (missing := [r.path for r in results if r.state == wrapper.MISSING]):
            raise TritonhookError(f"{', '.join(missing)}: no such file (no ptxas there, nor one a wrapper moved aside)")
        if args.ptxas and (wrong := [r for r in results if r.state == wrapper.NOT_PTXAS]):
            raise TritonhookError(f"{wrong[0].path}: {wrong[0].detail}")
    if args.json:
        print_json([r.to_json() for r in results])
    else:
        title = "dry run: install would wrap these (state now)" if install and args.dry_run else None
        print_table(("ptxas", "state", "detail"), [(r.path, r.state, r.detail) for r in results], title=title)
    return 0

