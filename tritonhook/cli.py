"""The `tritonhook` command: a thin layer over the library.

Each subcommand is registered by one `_add_<name>` function (parser plus handler). Handlers raise
`TritonhookError` for bad input; `main` prints it as one line and exits with status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from . import report
from .errors import TritonhookError
from .preflight import named_gpu
from .rename import DEFAULT_PREFIX
from .store import Capture, Store, default_store_path

IR_STAGES = ("source", "ttir", "ttgir", "llir", "ptx")
LS_DEFAULT_LIMIT = 50  # `ls` shows the newest this many, like `git log -n`; a store can hold 100,000


def _store_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", type=Path, default=None,
                        help="capture store directory (default: $TRITONHOOK_STORE or ./tritonhook-store)")


def _open_store(args, *, create: bool = False, write: bool = False) -> Store:
    """Commands that write captures create the store; reading commands open it read-only, so a user who may
    read a shared store but not write it can still list and show it."""
    path = args.store if args.store is not None else default_store_path()
    return Store(path, create=create) if create or write else Store(path, readonly=True)


def _command_after_dashes(command: list[str], name: str) -> list[str]:
    """The command after `--`, checked to be runnable, so that a typo is one line here and not a traceback from
    the process start (run, capture, ab and memwatch all start their command through this)."""
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise TritonhookError(f"tritonhook {name}: give the command to run after '--', "
                              f"e.g. tritonhook {name} -- python script.py")
    _check_runnable(command[0])
    return command


def _check_runnable(program: str) -> None:
    """Raise unless `program` names an executable file (a path, or a name found on PATH)."""
    import shutil

    if os.sep not in program:
        if shutil.which(program) is None:
            raise TritonhookError(f"{program}: command not found (not on PATH)")
        return
    if not os.path.exists(program):
        raise TritonhookError(f"{program}: no such file")
    if os.path.isdir(program):
        raise TritonhookError(f"{program}: is a directory, not a program")
    if not os.access(program, os.X_OK):
        raise TritonhookError(f"{program}: not executable (chmod +x it, or run it as: python {program})")


def _start(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run, with a start failure the check above cannot foresee (a #! interpreter that does not
    exist, say) as one line."""
    try:
        return subprocess.run(command, **kwargs)
    except OSError as exc:
        raise TritonhookError(f"{command[0]}: cannot start it ({exc.strerror or exc})") from None


# ----- run -------------------------------------------------------------------------------------------------------
def _add_run(sub) -> None:
    parser = sub.add_parser("run", help="run a command with capture enabled in every Python process it starts")
    _store_arg(parser)
    _rename_args(parser, default_prefix=None)
    parser.add_argument("--select", help="rename only kernels whose name matches this regex")
    parser.add_argument("--fix-tma-scope", action="store_true",
                        help="rewrite sm_12x TMA loads to CTA scope (no driver call, no stack reservation)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    parser.set_defaults(handler=_run)


def _run(args) -> int:
    from .ptx_capture import child_env
    from .tma_scope import FIX_TMA_SCOPE_ENV

    command = _command_after_dashes(args.command, "run")
    named_gpu()  # a bad $TRITONHOOK_GPU fails here, not in the command's compiles
    store = _open_store(args, create=True)  # fails here, before the script starts, if unwritable
    before = store.last_id()
    completed = _start(command, env={**child_env(store.path), **_rename_env(args),
                                     FIX_TMA_SCOPE_ENV: "1" if args.fix_tma_scope else ""})
    print(f"tritonhook: {len(store.captures(after=before))} capture(s) written to {store.path}", file=sys.stderr)
    return completed.returncode


# ----- ls --------------------------------------------------------------------------------------------------------
def _add_ls(sub) -> None:
    parser = sub.add_parser("ls", help="list the newest captures")
    _store_arg(parser)
    parser.add_argument("--kernel", help="regex matched against the kernel and entry names")
    parser.add_argument("--arch", help="only this target; sm_90 also matches sm_90a")
    parser.add_argument("--event", choices=("compile", "cache_hit"), help="only fresh compiles or cache hits")
    count = parser.add_mutually_exclusive_group()
    count.add_argument("-n", "--limit", type=int, default=LS_DEFAULT_LIMIT, metavar="N",
                       help=f"show the newest N captures (default {LS_DEFAULT_LIMIT})")
    count.add_argument("--all", dest="limit", action="store_const", const=None, help="show every capture")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(handler=_ls)


def _ls(args) -> int:
    store = _open_store(args)
    filters = {"kernel": args.kernel, "arch": args.arch, "event": args.event}
    captures = store.captures(**filters, limit=args.limit)
    if args.json:
        report.print_json([c.to_json() for c in captures])
        return 0
    if not captures:
        print(f"no captures{_did_you_mean(store, args.arch)}")
        return 0
    rows = [(c.id, time.strftime("%H:%M:%S", time.localtime(c.created)), c.event, c.frontend,
             c.entry if not c.renamed else f"{c.entry} (was {c.original_entry})", c.specialization or "-", c.arch,
             c.triton_version, c.ptxas_version or "-", _size(c, "ptx"), _size(c, "cubin"),
             f"{sum(c.times.values()):.2f}") for c in captures]
    report.print_table(("id", "time", "event", "frontend", "kernel (PTX entry)", "specialization", "arch", "triton",
                        "ptxas", "ptx", "cubin", "compile s"), rows, right_align=("id", "ptx", "cubin", "compile s"))
    if args.limit is not None and len(captures) == args.limit:
        total = store.count(**filters)
        if total > len(captures):
            print(f"showing newest {len(captures):,} of {total:,}; --all for every row", file=sys.stderr)
    return 0


def _did_you_mean(store: Store, arch: str | None) -> str:
    """For `ls --arch sm_90` on a store of sm_90a captures: the targets present with the same number."""
    if arch is None:
        return ""
    number = "".join(filter(str.isdigit, arch))
    near = [a for a in store.archs() if "".join(filter(str.isdigit, a)) == number]
    return f" for {arch}; did you mean {' or '.join(near)}?" if near else f" for {arch}"


def _size(capture: Capture, stage: str) -> str:
    artifact = capture.artifacts.get(stage)
    return report.human_bytes(artifact.size) if artifact else "-"


# ----- show ------------------------------------------------------------------------------------------------------
def _add_show(sub) -> None:
    parser = sub.add_parser("show", help="print one capture's summary or one of its artifacts")
    _store_arg(parser)
    parser.add_argument("id", help="capture id (see `tritonhook ls`)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--source", dest="stage", action="store_const", const="python",
                      help="print the kernel's Python source (read now from the file and line captured)")
    what.add_argument("--source-ir", dest="stage", action="store_const", const="source",
                      help="print Triton's MLIR before its passes (--ttir: after them)")
    for stage in IR_STAGES[1:]:
        what.add_argument(f"--{stage}", dest="stage", action="store_const", const=stage,
                          help=f"print the {stage} text")
    what.add_argument("--sass", dest="stage", action="store_const", const="sass",
                      help="disassemble the cubin with nvdisasm")
    what.add_argument("--meta", dest="stage", action="store_const", const="meta",
                      help="print the capture record and Triton's metadata as JSON")
    parser.add_argument("--nvdisasm", help="nvdisasm binary for --sass (default: the one Triton bundles)")
    parser.set_defaults(handler=_show, stage=None)


def _show(args) -> int:
    store = _open_store(args)
    capture = store.get(args.id)
    if args.stage == "python":
        sys.stdout.write(_python_source(capture))
    elif args.stage in IR_STAGES:
        sys.stdout.write(store.read(capture, args.stage).decode("utf-8", errors="replace"))
    elif args.stage == "sass":
        from .cubin import sass_text

        sys.stdout.write(sass_text(store.read(capture, "cubin"), nvdisasm=args.nvdisasm,
                                   label=f"capture {capture.id}"))
    elif args.stage == "meta":
        report.print_json(capture.to_json())
    else:
        _print_summary(capture)
    return 0


def _python_source(capture: Capture) -> str:
    """The decorated kernel function as it stands now in the file the capture recorded, from its first line
    (the decorator) to the end of its body."""
    import inspect

    if capture.src_file is None or capture.src_line is None:
        raise TritonhookError(f"capture {capture.id}: no Python source recorded for this {capture.frontend} "
                              f"capture (see --ptx)")
    try:
        lines = Path(capture.src_file).read_text(encoding="utf-8").splitlines(keepends=True)
    except FileNotFoundError:
        raise TritonhookError(f"{capture.src_file}: the kernel's source file is gone (capture {capture.id} "
                              f"was compiled from line {capture.src_line}); --ttir shows Triton's IR") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TritonhookError(f"{capture.src_file}: cannot read the kernel's source "
                              f"({getattr(exc, 'strerror', None) or exc})") from None
    if not 1 <= capture.src_line <= len(lines):
        raise TritonhookError(f"{capture.src_file}: has {len(lines)} lines, the kernel was at line "
                              f"{capture.src_line}; the file changed since capture {capture.id}")
    return "".join(inspect.getblock(lines[capture.src_line - 1:]))


def _print_summary(capture: Capture) -> None:
    from .tma_scope import FIXED_KEY

    where = f"{capture.src_file}:{capture.src_line}" if capture.src_file else "-"
    rows = [("kernel", capture.kernel), ("entry", capture.entry), ("original entry", capture.original_entry),
            ("event", capture.event), ("frontend", capture.frontend), ("source", where), ("arch", capture.arch),
            ("triton", capture.triton_version), ("ptxas", f"{capture.ptxas_version} ({capture.ptxas_path})"),
            ("num_warps / num_stages", f"{capture.options.get('num_warps')} / {capture.options.get('num_stages')}"),
            ("shared memory", report.human_bytes(capture.metadata.get("shared"))),
            ("TMA loads rewritten to CTA scope", capture.metadata.get(FIXED_KEY, "-")),
            ("stage times", ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in capture.times.items()))]
    rows += [(f"artifact {a.stage}", f"{report.human_bytes(a.size)}  sha256 {a.sha256[:16]}")
             for a in capture.artifacts.values()]
    report.print_table(("field", "value"), rows, title=f"capture {capture.id}")


# ----- export ----------------------------------------------------------------------------------------------------
def _add_export(sub) -> None:
    parser = sub.add_parser("export", help="write a capture's artifacts and record into a directory")
    _store_arg(parser)
    parser.add_argument("id")
    parser.add_argument("dir", type=Path)
    parser.set_defaults(handler=_export)


def _export(args) -> int:
    """Every artifact that can be read is written; one that cannot is named (with its blob) and the command fails,
    so a partial export never looks complete."""
    store = _open_store(args)
    capture = store.get(args.id)
    contents, unreadable = {}, []
    for stage in capture.artifacts:
        try:
            contents[f"{capture.entry}.{stage}"] = store.read(capture, stage)
        except TritonhookError as exc:
            unreadable.append(str(exc))
    contents[f"{capture.entry}.capture.json"] = json.dumps(capture.to_json(), indent=2, default=str).encode()
    try:
        args.dir.mkdir(parents=True, exist_ok=True)
        for name, data in contents.items():
            (args.dir / name).write_bytes(data)
    except OSError as exc:
        raise TritonhookError(f"{args.dir}: cannot write the export ({exc.strerror or exc})") from None
    written = len(contents) - 1
    if unreadable:
        raise TritonhookError(f"exported {written} of {len(capture.artifacts)} artifacts of capture {capture.id} to "
                              f"{args.dir}; not written: {'; '.join(unreadable)}")
    print(f"exported capture {capture.id} ({written} artifacts) to {args.dir}")
    return 0


# ----- rename ----------------------------------------------------------------------------------------------------
def _rename_args(parser: argparse.ArgumentParser, *, default_prefix: str | None) -> None:
    how = parser.add_mutually_exclusive_group()
    default = f" (default {default_prefix})" if default_prefix else ""
    how.add_argument("--prefix", "--rename", dest="prefix", default=default_prefix, metavar="PREFIX",
                     help=f"prefix kernel names with PREFIX{default}")
    how.add_argument("--strip", action="store_true", help="remove 'cutlass' from kernel names instead")


def _rename_value(args):
    from .rename import STRIP, prefixer

    if args.strip:
        return STRIP
    if args.prefix is not None:
        prefixer(args.prefix)  # a bad prefix fails here, not inside the child's compile
    return args.prefix


def _rename_env(args) -> dict[str, str]:
    from .rename import compile_select, rename_env

    rename = _rename_value(args)
    if args.select is not None:
        if rename is None:
            raise TritonhookError("--select narrows a rename: give --rename PREFIX or --strip with it")
        compile_select(args.select)
    return rename_env(rename, args.select)


def _add_rename(sub) -> None:
    parser = sub.add_parser("rename", help="rename the kernels of a PTX file (e.g. to take ptxas's cutlass path)")
    parser.add_argument("ptx", type=Path, help="input .ptx file")
    _rename_args(parser, default_prefix=DEFAULT_PREFIX)
    parser.add_argument("--entry", help="rename only this .entry (default: every entry)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="output .ptx file")
    parser.add_argument("--json", action="store_true", help="print the renamed entries as JSON")
    parser.set_defaults(handler=_rename)


def _rename(args) -> int:
    from .rename import STRIP, ptx_entries, rename_ptx, strip_ptx

    try:
        text = args.ptx.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TritonhookError(f"{args.ptx}: cannot read the PTX ({getattr(exc, 'strerror', None) or exc})") from None
    entries = ptx_entries(text)
    if not entries:
        raise TritonhookError(f"{args.ptx}: no .entry in this file (is it PTX?)")
    rename = _rename_value(args)
    renamed = strip_ptx(text, entry=args.entry) if rename is STRIP else rename_ptx(text, rename, entry=args.entry)
    try:
        args.output.write_text(renamed, encoding="utf-8")
    except OSError as exc:
        raise TritonhookError(f"{args.output}: cannot write ({exc.strerror or exc})") from None
    pairs = [{"before": a, "after": b} for a, b in zip(entries, ptx_entries(renamed))]
    if args.json:
        report.print_json({"input": str(args.ptx), "output": str(args.output), "entries": pairs})
    else:
        changed = [f"{p['before']} -> {p['after']}" for p in pairs if p["before"] != p["after"]]
        print(f"{args.output}: {', '.join(changed) if changed else 'no entry needed renaming'}")
    return 0


# ----- ab --------------------------------------------------------------------------------------------------------
def _add_ab(sub) -> None:
    parser = sub.add_parser("ab", help="A/B-time kernel name variants: run a benchmark script per variant, "
                                       "interleaved, in fresh processes")
    _store_arg(parser)
    parser.add_argument("--variants", default="plain,cutlass_",
                        help="comma-separated: plain, strip, or a prefix (default plain,cutlass_; plain,plain: A/A)")
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
    from . import ab
    from .rename import compile_select

    if args.list:
        return _ab_list(_open_store(args), as_json=args.json)
    command = _command_after_dashes(args.command, "ab")
    named_gpu()
    variants = ab.parse_variants(args.variants)
    if args.select is not None:
        compile_select(args.select)
    store = _open_store(args, create=True)
    result = ab.run_interleaved(command, variants, rounds=args.rounds, store=store, select=args.select,
                                check=None if args.check == "none" else args.check,
                                min_effect=ab.DEFAULT_MIN_EFFECT if args.min_effect is None else args.min_effect,
                                progress=not args.json)
    if args.json:
        report.print_json(result.to_json())
    else:
        ab.print_report(result)
    mismatched = [b.name for b in result.benchmarks if b.correctness == "MISMATCH"]
    if mismatched:
        print(f"tritonhook ab: outputs differ between variants for {', '.join(mismatched)}; if the script draws "
              f"random inputs, seed the generator so that every process computes on the same inputs",
              file=sys.stderr)
    return 1 if mismatched else 0


def _ab_list(store: Store, *, as_json: bool) -> int:
    """Every saved A/B result, one row per benchmark and compared variant, with the captures it links."""
    results = store.ab_results()
    if as_json:
        report.print_json(results)
        return 0
    rows = []
    for result in results:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(result["created"]))
        for bench in result["benchmarks"]:
            for variant in bench["variants"][1:]:
                interval = f"{variant['ratio']:.4f} [{variant['ci_low']:.4f}, {variant['ci_high']:.4f}]"
                pair = f"{variant['label']} vs {bench['variants'][0]['label']}"
                same_sass = {True: "yes", False: "no"}.get(result.get("sass_identical"), "-")
                rows.append((result["id"], when, bench["name"], pair, interval, variant["verdict"],
                             bench["correctness"], same_sass))
    if not rows:
        print("no A/B results")
        return 0
    report.print_table(("id", "time", "benchmark", "variants", "time ratio [95% CI]", "verdict", "outputs",
                        "same SASS"), rows, right_align=("id",))
    return 0


# ----- diff / ptxas ----------------------------------------------------------------------------------------------
def _ptxas_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ptxas-arg", action="append", default=[], metavar="ARG",
                        help="extra ptxas argument, repeatable; write it as --ptxas-arg=-lineinfo (Triton passes "
                        "-lineinfo and, from 3.9, --regAllocOptLevel=2)")


def _add_diff(sub) -> None:
    parser = sub.add_parser("diff", help="compare two cubins, PTX files (assembled here) or captures")
    _store_arg(parser)
    parser.add_argument("a", help="cubin, fatbin or PTX file, or a capture id")
    parser.add_argument("b", help="cubin, fatbin or PTX file, or a capture id")
    parser.add_argument("--sass", action="store_true", help="also diff opcode histograms and normalized SASS "
                        "(runs nvdisasm)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--ptxas", help="ptxas for PTX inputs (default: the one Triton uses for the target)")
    _ptxas_arg(parser)
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
    from . import diff

    a, b = (diff.load_input(spec, ptxas=args.ptxas, ptxas_args=args.ptxas_arg, gpu_name=args.gpu_name,
                            store=args.store) for spec in (args.a, args.b))
    sass_a, sass_b = diff.disassemble_both(a, b, nvdisasm=args.nvdisasm) if args.sass else (None, None)
    result = diff.diff_cubins(a.cubin, b.cubin, prefix=args.prefix, pairs=diff.parse_pairs(args.pair),
                              sass_a=sass_a, sass_b=sass_b, elf_order=args.elf_order)
    if args.json:
        report.print_json({**result.to_json(), "origin_a": a.origin, "origin_b": b.origin})
    else:
        diff.render(result)
    return 0


def _add_ptxas_matrix(sub) -> None:
    parser = sub.add_parser("ptxas-matrix", help="assemble a PTX file plain and renamed with several ptxas")
    parser.add_argument("ptx", type=Path)
    parser.add_argument("--ptxas", action="append", help="a ptxas binary (repeat; default: one of each version "
                        "`tritonhook ptxas list` finds)")
    parser.add_argument("--rename", default=DEFAULT_PREFIX,
                        help=f"prefix for the renamed build (default {DEFAULT_PREFIX})")
    parser.add_argument("--gpu-name", help="target (default: the PTX .target)")
    _ptxas_arg(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(handler=_ptxas_matrix)


def _ptxas_matrix(args) -> int:
    from .cubin import read_input
    from .ptxas import find_ptxas, one_per_version, ptxas_matrix

    ptx = read_input(args.ptx).decode("utf-8", errors="replace")
    paths = args.ptxas or [binary.path for binary in one_per_version(find_ptxas())]
    matrix = ptxas_matrix(ptx, paths, gpu_name=args.gpu_name, prefix=args.rename, label=str(args.ptx),
                          extra_args=args.ptxas_arg)
    if args.json:
        report.print_json(matrix.to_json())
    else:
        matrix.render()
    return 0


def _add_ptxas(sub) -> None:
    parser = sub.add_parser("ptxas", help="ptxas binaries on this machine")
    actions = parser.add_subparsers(dest="ptxas_action", metavar="ACTION")
    actions.required = True
    listing = actions.add_parser("list", help="list the ptxas binaries found, with their versions")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listing.set_defaults(handler=_ptxas_list)
    _add_ptxas_wrapper_actions(actions)


def _ptxas_list(args) -> int:
    from .ptxas import PTXAS_ENV, find_ptxas

    found = find_ptxas()
    if args.json:
        report.print_json([dataclasses.asdict(binary) for binary in found])
    elif not found:
        print(f"no ptxas found; install one (pip install nvidia-cuda-nvcc-cu12==12.8.93) or list paths in "
              f"${PTXAS_ENV}")
    else:
        report.print_table(("version", "origin", "path"), [(b.version, b.origin, b.path) for b in found])
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
            _store_arg(parser)
            parser.add_argument("--yes", action="store_true",
                                help="wrap the default binaries in place (needed when --ptxas is not given)")
            parser.add_argument("--dry-run", action="store_true", help="list what install would wrap; change nothing")
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
        parser.set_defaults(handler=_ptxas_wrapper)


def _ptxas_wrapper(args) -> int:
    from . import ptxas_wrapper as wrapper

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
    if args.json:
        report.print_json([r.to_json() for r in results])
    else:
        title = "dry run: install would wrap these (state now)" if install and args.dry_run else None
        report.print_table(("ptxas", "state", "detail"), [(r.path, r.state, r.detail) for r in results], title=title)
    return 0


def _add_capture(sub) -> None:
    parser = sub.add_parser("capture", help="run a command with capture for every frontend reachable without "
                                            "installing anything: Triton, its ptxas calls, CuTe DSL, cuTile "
                                            "(pip-wheel ptxas binaries are wrapped for the command's duration)")
    _store_arg(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    parser.set_defaults(handler=_capture)


def _capture(args) -> int:
    import collections
    import tempfile

    from .cute.capture import collect_dump_dir, keep_env
    from .ptx_capture import child_env
    from .ptxas_wrapper import capture_env, wheel_ptxas_wrapped

    command = _command_after_dashes(args.command, "capture")
    named_gpu()
    store = _open_store(args, create=True)
    before = store.last_id()
    with tempfile.TemporaryDirectory(prefix="tritonhook-capture-") as work, wheel_ptxas_wrapped(store.path):
        dump = os.environ.get("CUTE_DSL_DUMP_DIR") or os.path.join(work, "cute-dump")
        env = {**child_env(store.path), **capture_env(work, store.path), **keep_env(dump)}
        start = time.time()
        # with --json, stdout carries the summary alone: the command's own output goes to stderr
        completed = _start(command, env=env, stdout=sys.stderr if args.json else None)
        collect_dump_dir(dump, store, since=start)
    new = store.captures(after=before)
    counts = dict(collections.Counter(c.frontend for c in new))
    if args.json:
        report.print_json({"store": str(store.path), "exit_code": completed.returncode,
                           "captures": [c.id for c in new], "by_frontend": counts})
    else:
        split = ", ".join(f"{frontend} {n}" for frontend, n in sorted(counts.items()))
        print(f"tritonhook: {len(new)} capture(s) written to {store.path}{f' ({split})' if split else ''}",
              file=sys.stderr)
    return completed.returncode


# ----- memwatch --------------------------------------------------------------------------------------------------
def _add_memwatch(sub) -> None:
    parser = sub.add_parser("memwatch", help="run a Python command and show where its device memory went")
    parser.add_argument("--interval-ms", type=float, default=2.0, help="NVML sampling interval (default 2)")
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    parser.add_argument("--plot", type=Path, help="write the memory timeline to this image (needs matplotlib)")
    parser.add_argument("--compare", nargs="+", metavar="NAME=CMD",
                        help='run each command in a fresh process and compare, e.g. tma="python x.py --kernel tma"')
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- python script.py ARGS...")
    parser.set_defaults(handler=_memwatch)


def _memwatch(args) -> int:
    from . import memwatch

    if args.compare:
        if args.command or args.plot:
            raise TritonhookError("tritonhook memwatch: --compare takes NAME=CMD pairs only (no -- command, "
                                  "no --plot)")
        results = {name: memwatch.run_command(command, args.interval_ms)[1]
                   for name, command in memwatch.parse_compare(args.compare).items()}
        if args.json:
            report.print_json({name: result.to_json() for name, result in results.items()})
        else:
            memwatch.print_comparison(results)
        return 0
    code, result = memwatch.run_command(_command_after_dashes(args.command, "memwatch"), args.interval_ms)
    if args.json:
        report.print_json(result.to_json())
    else:
        result.report()
    if args.plot:
        print(f"plot written to {result.plot(args.plot)}", file=sys.stderr)
    return code


# ----- preflight -------------------------------------------------------------------------------------------------
def _add_preflight(sub) -> None:
    from .preflight import GPUS

    parser = sub.add_parser("preflight", help="predict the driver stack reservation of cubins (no GPU needed)")
    _store_arg(parser)
    parser.add_argument("target", nargs="?", help="a .cubin file or a capture id; omitted: every capture in --store")
    parser.add_argument("--gpu", help=f"predict for this GPU ({', '.join(g.name for g in GPUS.values())}); "
                                      f"default: the listed GPUs that can load the cubin")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(handler=_preflight)


def _preflight(args) -> int:
    from . import preflight
    from .cubin import Cubin

    gpus = [preflight.find_gpu(args.gpu)] if args.gpu else None
    if args.target and not args.target.isdigit():
        sources = [("-", "-", Cubin.from_path(args.target))]
    else:
        store = _open_store(args)
        captures = [store.get(args.target)] if args.target else [c for c in store.captures() if "cubin" in c.artifacts]
        sources = [(c.id, c.specialization or "-", Cubin.from_bytes(store.read(c, "cubin"), label=f"capture {c.id}"))
                   for c in captures]
    found = [(capture_id, spec, p) for capture_id, spec, cubin in sources
             for p in preflight.predict_cubin(cubin, gpus)]
    if args.json:
        report.print_json([{**p.to_json(), "capture_id": None if capture_id == "-" else capture_id,
                            "specialization": spec} for capture_id, spec, p in found])
        return 0
    rows = []
    for capture_id, spec, prediction in found:
        kernel, *rest = preflight.table_row(prediction)
        rows.append((capture_id, kernel, spec, *rest))
    report.print_table(("capture", "kernel", "specialization", "arch", "GPU", "driver calls", "ptxas stack",
                        "predicted limit", "reserve"), rows,
                       title="preflight: predicted stack reservation (a prediction; see the basis below)",
                       right_align=("capture", "ptxas stack", "predicted limit", "reserve"))
    for basis in dict.fromkeys(p.basis for _, _, p in found):
        print(f"basis: {basis}")
    return 0


# ----- store -----------------------------------------------------------------------------------------------------
def _add_store(sub) -> None:
    parser = sub.add_parser("store", help="look after a capture store")
    actions = parser.add_subparsers(dest="store_action", metavar="ACTION")
    actions.required = True
    verify = actions.add_parser("verify", help="check every blob's hash and every row's blob; find orphan blobs "
                                               "and temporary files left by killed writers")
    _store_arg(verify)
    verify.add_argument("--repair", action="store_true",
                        help="remove orphan blobs and temporary files older than a minute")
    verify.add_argument("--json", action="store_true", help="print JSON instead of a table")
    verify.set_defaults(handler=_store_verify)


def _store_verify(args) -> int:
    """Exit status 1 when captured content is damaged or missing (orphans alone are no damage)."""
    store = _open_store(args, write=args.repair)
    result = store.verify(repair=args.repair)
    if args.json:
        report.print_json(result.to_json())
    else:
        result.render()
    return 0 if result.ok else 1


# ----- main ------------------------------------------------------------------------------------------------------
_COMMANDS = [_add_run, _add_capture, _add_ls, _add_show, _add_export, _add_rename, _add_ab, _add_diff,
             _add_ptxas_matrix, _add_ptxas, _add_memwatch, _add_preflight, _add_store]


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="tritonhook", description="Capture, rename, diff and measure Triton "
                                     "kernels and what ptxas made of them.")
    parser.add_argument("--version", action="version", version=f"tritonhook {__version__}")
    sub = parser.add_subparsers(dest="command_name", metavar="COMMAND")
    sub.required = True
    for add in _COMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args) or 0
    except TritonhookError as exc:
        print(f"tritonhook: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tritonhook: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
