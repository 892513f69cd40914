"""Running code right after a module is imported (`after_import`): hooks on packages that a process imports late
or never (Triton at start-up, Inductor's runtime autotuner once a recording runs), without importing them early.

A `sys.meta_path` finder (one per module, for all of its waits) wraps the module's loader: once the module's own
code has run, the finder leaves `sys.meta_path` and each `then(module)` runs. Until then it stays in place, because
`importlib.util.find_spec` probes call it too (torch's `has_triton` probes for Triton so before importing it): a
finder that left after the first call would miss the import that follows, and a torch.compile'd script would never
be captured.

`note` / `noted`: what the processes of a command under `tritonhook run` / `capture` imported (cuTile) or could not
import (Triton), told to the runner through files, so its summary can say what it could not capture.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys

TYPE_CHECKING = False  # importing typing itself costs `import tritonhook` milliseconds; annotations are never evaluated
if TYPE_CHECKING:
    from typing import Callable

# The two classes below implement the protocols of `importlib.abc.Loader` and `MetaPathFinder` without subclassing
# them: importing `importlib.abc` loads `importlib.resources`, tempfile and shutil, and `import tritonhook`
# (every `tritonhook` command) waits here for the capture core's import.


class _LoaderThen:
    """The module's own loader, with `then(module)` after it executed the module."""

    def __init__(self, loader, then: Callable[[object], None]):
        self._loader, self._then = loader, then

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._then(module)

    def __getattr__(self, name):  # get_resource_reader, is_package, get_source, ...
        return getattr(self._loader, name)


class _ImportWait:
    """The finder waiting in `sys.meta_path` for the import of one module, for every `AfterImport` on it: one finder
    per module, since the import system asks the finders in order and the first spec found wins, so a second finder
    for the same module would never be asked (the autotune tracer's wait on Inductor's runtime autotuner hid the
    pinner's, and a recording with a pinned Inductor config ran the autotuner's pick)."""

    def __init__(self, name: str):
        self.name = name
        self.waits: list[AfterImport] = []

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)  # PathFinder does not consult meta_path
        if spec is not None and spec.loader is not None:
            spec.loader = _LoaderThen(spec.loader, self._imported)
        return spec

    def _imported(self, module) -> None:
        self.leave()
        waits, self.waits = self.waits, []
        for wait in waits:  # in the order they were asked for
            wait.then(module)

    def leave(self) -> None:
        sys.meta_path[:] = [finder for finder in sys.meta_path if finder is not self]


class AfterImport:
    """One wait for the import of `name` (see the module docstring); `remove()` gives it up."""

    def __init__(self, finder: _ImportWait, then: Callable[[object], None]):
        self.name, self.then, self._finder = finder.name, then, finder

    def remove(self) -> None:
        if self in self._finder.waits:
            self._finder.waits.remove(self)
        if not self._finder.waits:
            self._finder.leave()


def _waiting(name: str) -> _ImportWait | None:
    return next((f for f in sys.meta_path if isinstance(f, _ImportWait) and f.name == name), None)


def after_import(name: str, then: Callable[[object], None]) -> AfterImport | None:
    """Call `then(module)` once module `name` is imported: now when it already is (None returned), else from the
    import, after the waits asked for before it (the wait returned)."""
    if name in sys.modules:
        then(sys.modules[name])
        return None
    finder = _waiting(name)
    if finder is None:
        finder = _ImportWait(name)
        sys.meta_path.insert(0, finder)
    wait = AfterImport(finder, then)
    finder.waits.append(wait)
    return wait


def waiting_for(name: str) -> bool:
    """Whether an `after_import` waits for the import of `name`."""
    return _waiting(name) is not None


def note(folder: str, name: str, text: str | None = None) -> None:
    """Leave the file `folder`/`name`.PID holding `text` (default: this interpreter's path): how the processes of a
    command under `tritonhook run` / `capture` tell it what they imported (`noted`) or lost (`noted_count`). Never
    raises: a note that cannot be left must not break the command."""
    try:
        with open(os.path.join(folder, f"{name}.{os.getpid()}"), "w", encoding="utf-8") as handle:
            handle.write(sys.executable if text is None else text)
    except OSError:
        pass


def note_lost_captures(count: int) -> None:
    """Tell the `tritonhook run` / `capture` this process runs under, if any, that `count` of its captures could not
    be written: the run then fails, where a warning on stderr alone would leave its exit status 0. Noted at each
    loss, so a process killed later still told."""
    from . import config

    if folder := config.capture.NOTE_IMPORTS.get():
        note(folder, config.capture.NOTED_CAPTURES_LOST, str(count))


def noted(folder: str) -> dict[str, list[str]]:
    """What `note` left in `folder`: name -> the interpreters that noted it (each once, sorted)."""
    found: dict[str, set[str]] = {}
    for entry in os.scandir(folder):
        with open(entry.path, encoding="utf-8") as handle:
            found.setdefault(entry.name.rpartition(".")[0], set()).add(handle.read())
    return {name: sorted(pythons) for name, pythons in found.items()}


def noted_count(folder: str, name: str) -> int:
    """The sum of the counts the processes noted as `name` in `folder`; a note whose count could not be written
    (the disk full there too) counts one."""
    total = 0
    for entry in os.scandir(folder):
        if entry.name.rpartition(".")[0] == name:
            with open(entry.path, encoding="utf-8") as handle:
                text = handle.read().strip()
            total += int(text) if text.isdigit() else 1
    return total
