"""Running a Python command under memwatch, in a fresh process: the parent side (`run_command`, `--compare`)
and the child side (`child_main`, what `python -m tritonhook.mem` runs)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from ..errors import Stopped, TritonhookError
from ..launcher import ChildSettings, run_workload
from .result import MemwatchResult, load_result
from .watch import MemWatch

_INTERPRETER_FLAGS = {"-u", "-O", "-OO", "-B", "-E", "-s", "-S", "-I", "-q"}


NOT_STARTED = "memwatch_not_started"
"""Key of the file the in-process runner writes instead of a result when memwatch could not start."""


def wrap_python_command(command: list[str], out: Path, interval_ms: float) -> list[str]:
    """`python [flags] script.py args` -> `python [flags] -m tritonhook.mem --out F ... -- script.py args`.

    memwatch must run inside the process (context limits, torch, Triton hooks are per process), so the command
    has to be a Python interpreter running a script or a module.
    """
    interpreter = Path(command[0]).name
    if not re.fullmatch(r"python[\d.]*", interpreter) and command[0] != sys.executable:
        raise TritonhookError(f"{command[0]}: memwatch runs Python commands only (python script.py, python -m "
                              f"module, python -c code), since it measures from inside the process")
    index = 1
    while index < len(command) and command[index] in _INTERPRETER_FLAGS:
        index += 1
    target = command[index:]
    if not target or (target[0].startswith("-") and target[0] not in ("-m", "-c")):
        raise TritonhookError(f"{' '.join(command)}: give a script or -m module after the interpreter and its "
                              f"flags ({', '.join(sorted(_INTERPRETER_FLAGS))})")
    return [*command[:index], "-m", "tritonhook.mem", *_child_options(out, interval_ms), *target]


def _child_options(out: Path | str, interval_ms: float) -> list[str]:
    """What the parent tells the child, in the one layout `child_main` reads back."""
    return ["--out", str(out), "--interval-ms", str(interval_ms), "--"]


def _run_target(target: list[str]) -> None:
    import runpy

    if target[0] in ("-m", "-c") and len(target) < 2:
        raise TritonhookError(f"{target[0]}: give a {'module name' if target[0] == '-m' else 'program'}")
    if target[0] == "-m":
        sys.argv = [target[1], *target[2:]]
        runpy.run_module(target[1], run_name="__main__", alter_sys=True)
    elif target[0] == "-c":
        sys.argv = ["-c", *target[2:]]
        exec(compile(target[1], "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102 - python -c
    else:
        sys.argv = list(target)
        sys.path.insert(0, str(Path(target[0]).resolve().parent))
        runpy.run_path(target[0], run_name="__main__")


def child_main(argv: list[str] | None = None) -> int:
    """The child side of `run_command`: `python -m tritonhook.mem --out F --interval-ms N -- script.py args`.

    The options are the parent's own (`_child_options`), never a user's, so they are read by position."""
    argv = sys.argv[1:] if argv is None else argv
    width = len(_child_options("", 0))
    layout = _child_options("", 0)[::2]
    if len(argv) <= width or argv[:width:2] != layout:
        print("python -m tritonhook.mem is the child side of `tritonhook memwatch`; run: tritonhook memwatch "
              "-- python script.py", file=sys.stderr)
        return 2
    out, interval_ms, target = Path(argv[1]), float(argv[3]), argv[width:]
    # written as the watch stops, a signal's stop too: the process then dies of the signal before any `finally`
    watch = MemWatch(interval_ms=interval_ms, keep=lambda result: out.write_text(json.dumps(result.to_json())))
    try:
        watch.__enter__()
    except TritonhookError as exc:  # the command never ran: the parent says why memwatch could not start
        out.write_text(json.dumps({NOT_STARTED: str(exc)}))
        return 2
    code = 0
    try:
        try:
            _run_target(target)
        finally:
            watch.__exit__(None, None, None)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except TritonhookError as exc:
        print(f"tritonhook memwatch: error: {exc}", file=sys.stderr)
        return 2
    return code


def run_command(command: list[str], interval_ms: float) -> tuple[int, MemwatchResult]:
    """Run a Python command in a fresh process under memwatch; (its exit status, what memwatch recorded)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tritonhook-memwatch-") as tmp:
        out = Path(tmp) / "result.json"
        # Inductor's static launcher off from the command's first line (the in-process memwatch switches it off
        # too, but only from its start; this also covers what the command runs before and the processes it starts)
        try:
            completed = run_workload(wrap_python_command(command, out, interval_ms),
                                     ChildSettings(inductor_through_triton=True))
        except Stopped as stopped:  # the command's process wrote its timeline as the signal ended it
            if out.exists() and NOT_STARTED not in json.loads(out.read_text()):
                stopped.partial = load_result(out)
            raise
        if not out.exists():
            raise TritonhookError(f"{' '.join(command)}: exited with status {completed.returncode} before "
                                  f"memwatch wrote its result (see its output above)")
        not_started = json.loads(out.read_text()).get(NOT_STARTED)
        if not_started:
            raise TritonhookError(f"memwatch could not start, so {' '.join(command)} was not run: {not_started}")
        return completed.returncode, load_result(out)


def parse_compare(specs: list[str]) -> dict[str, list[str]]:
    """['tma=python x.py --kernel tma', ...] -> {'tma': ['python', 'x.py', '--kernel', 'tma'], ...}."""
    import shlex

    runs = {}
    for spec in specs:
        name, sep, command = spec.partition("=")
        if not sep or not name or not command.strip():
            raise TritonhookError(f"--compare {spec!r}: write NAME=\"COMMAND\", e.g. tma=\"python x.py\"")
        if name in runs:
            raise TritonhookError(f"--compare: the name {name!r} is given twice")
        runs[name] = shlex.split(command)
    return runs


