"""Capture sessions: `enable()`, `disable()`, `session()`.

A session owns one `HookInstallation` (the Triton side) and one `Store` (the disk side) and writes each
compile record into the store. Only one session is active per process; `enable()` while one is active
returns it unchanged (a second call with other settings is an error, so settings are never silently dropped).

Subprocesses: `enable()` also exports `TRITONHOOK_STORE` and puts tritonhook's start-up hook on `PYTHONPATH`,
so that Python processes the script starts (Inductor's compile workers, torchrun ranks) capture into the same
store. `disable()` restores the environment it changed.

Lost captures: a capture that cannot be written (disk full, store removed) must not break the compile, so the hook
warns once and goes on; the session counts the losses and says how many at `disable()` or at exit, and under
`tritonhook run` / `capture` notes them at once for the run, which then fails (`_imports.note_lost_captures`).

Listeners: this is the capture core, and it imports no feature. What a session tells about each capture (preflight's
stack-reservation warning) is registered from above in `LISTENER_FACTORIES`; the package wires preflight there, so
`tritonhook.enable()` and the children of `tritonhook run` warn as before.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from . import config
from ._imports import note_lost_captures
from .errors import TritonhookError
from .store import NewCapture, Store

if TYPE_CHECKING:  # imported where used: `import tritonhook` (and every `tritonhook` command) stays cheap
    from . import _triton, rename as _rename

Listener = Callable[[int, NewCapture], None]
"""Told each capture a session writes, with its id."""
LISTENER_FACTORIES: list[Callable[[], Listener]] = []
"""Each session `enable()` starts gets one new listener from every factory here, so per-session state (which kernels
were already warned about) starts afresh. Features above the capture core append to it (the package adds
preflight's `capture_checker`)."""
APPLIERS: list[Callable[[str, Store], tuple[_triton.PtxTransform, _triton.CubinTransform, str,
                                             _triton.AutotunePinner | None]]] = []
"""What `enable(apply=...)` asks for the transforms applying decisions: `f(source, store) -> (ptx_transform,
cubin_transform, cache_key, autotune pinner or None)`, registered from above like `LISTENER_FACTORIES` (the package
registers `decisions.apply.applier`; the capture core imports no feature)."""


@dataclasses.dataclass
class Session:
    """An active capture: the store it writes to, the hooks it holds, and the ids it has written."""

    store: Store
    hooks: _triton.HookInstallation
    capture_ids: list[int] = dataclasses.field(default_factory=list)
    exported_env: config.scope | None = None
    listeners: list[Listener] = dataclasses.field(default_factory=list)
    pinner: _triton.AutotunePinner | None = None  # the autotune configs its decisions pin, while it is active
    lost: int = 0
    first_loss: str | None = None

    def record(self, capture: NewCapture) -> None:
        try:
            capture_id = self.store.add(capture)
        except Exception as exc:
            self.lost += 1
            self.first_loss = self.first_loss or f"{type(exc).__name__}: {exc}"
            note_lost_captures(self.lost)
            raise  # the hook warns (once) and lets the compile go on
        self.capture_ids.append(capture_id)
        for listener in self.listeners:
            listener(capture_id, capture)

    def captures(self):
        """The captures this session wrote, in order."""
        return self.store.captures(ids=self.capture_ids)

    def report_losses(self) -> None:
        """Say on stderr how many captures could not be written (nothing when none were lost)."""
        if self.lost:
            print(f"tritonhook: {self.lost} capture(s) lost (first error: {self.first_loss})", file=sys.stderr)


_active: Session | None = None


def active_session() -> Session | None:
    return _active


def enable(store: str | os.PathLike | Store | None = None, *, subprocesses: bool = True,
           ptx_transform: _triton.PtxTransform | None = None, cache_key: str = "",
           rename: _rename.Rename | None = None, select: _rename.Selector = None,
           fix_tma_scope: bool | str = False, apply: str | os.PathLike | None = None) -> Session:
    """Start capturing every Triton compile into `store` (default `$TRITONHOOK_STORE` or ./tritonhook-store).

    `rename="cutlass_"` prefixes the selected kernels' names in the PTX stage, `rename=tritonhook.STRIP` removes
    `cutlass` from them; `select` narrows it (regex, list of names, or `(name, metadata) -> bool`).
    `fix_tma_scope=True` rewrites sm_12x TMA loads to CTA scope so that they do not call the driver routine that
    reserves gigabytes of stack (`tma_scope`); a string instead names the arch prefix it applies to ("" = all).
    `apply=` a decisions file or a store directory: each compile whose key matches a decision exactly is built with
    its choice (`tritonhook.decisions`, docs/decisions.md); not with `rename=`, which would rename it again.
    """
    from . import _triton, rename as _rename, tma_scope

    global _active
    transforms, cubin_transform, pinner = [], None, None
    opened = None
    if apply is not None:  # first: a decision's key is the PTX as Triton generated it
        if rename is not None:
            raise TritonhookError("enable(): pass either apply= or rename=, not both (a decision names the rename)")
        opened = Store.of(store)
        apply = str(Path(apply).resolve())
        ptx_apply, cubin_transform, apply_key, pinner = APPLIERS[-1](apply, opened)
        transforms.append((ptx_apply, apply_key))
    if fix_tma_scope is not False:
        transforms.append(tma_scope.make_tma_scope_transform(tma_scope.SM12X if fix_tma_scope is True
                                                             else fix_tma_scope))
    if rename is not None:
        if ptx_transform is not None:
            raise TritonhookError("enable(): pass either rename= or ptx_transform=, not both")
        transforms.append(_rename.make_ptx_transform(rename, select))
    if ptx_transform is not None:
        transforms.append((ptx_transform, cache_key))
    ptx_transform, cache_key = _chain_transforms(transforms)
    if _active is not None:
        if store is not None and Path(getattr(store, "path", store)) != _active.store.path:
            raise TritonhookError(f"tritonhook is already capturing into {_active.store.path}; "
                                  f"call tritonhook.disable() before enabling it for {store}")
        if cache_key != _active.hooks.cache_key:
            raise TritonhookError(f"tritonhook is already capturing with transform {_active.hooks.cache_key!r}; "
                                  f"call tritonhook.disable() before enabling {cache_key!r}")
        return _active
    _triton.check_supported()
    opened = opened or Store.of(store)
    hooks = _triton.HookInstallation(ptx_transform=ptx_transform, cache_key=cache_key,
                                     cubin_transform=cubin_transform)
    session = Session(store=opened, hooks=hooks, listeners=[make() for make in LISTENER_FACTORIES], pinner=pinner)
    hooks.on_compile = session.record
    hooks.install()
    if pinner is not None:
        pinner.install()
    atexit.register(session.report_losses)
    if subprocesses:
        from .launcher import Capture, ChildSettings

        capture = Capture.of(opened.path, rename=rename, select=select, fix_tma_scope=fix_tma_scope, apply=apply)
        session.exported_env = config.scope(ChildSettings(capture=capture).variables())
    _active = session
    return session


def _chain_transforms(transforms: list[tuple[_triton.PtxTransform, str]]) -> tuple[_triton.PtxTransform | None, str]:
    """One PTX-stage transform applying each of `transforms` in order, and their joined cache key."""
    if len(transforms) <= 1:
        return transforms[0] if transforms else (None, "")

    def chained(ptx: str, metadata: dict) -> str:
        for transform, _ in transforms:
            ptx = transform(ptx, metadata)
        return ptx

    return chained, ";".join(key for _, key in transforms)


def disable() -> None:
    """Stop capturing; Triton's hooks and the environment are put back as they were."""
    global _active
    if _active is None:
        return
    session, _active = _active, None
    session.hooks.uninstall()
    if session.pinner is not None:
        session.pinner.uninstall()
    if session.exported_env is not None:
        session.exported_env.close()
    atexit.unregister(session.report_losses)
    session.report_losses()


@contextlib.contextmanager
def session(store: str | os.PathLike | Store | None = None, **options) -> Iterator[Session]:
    """`with tritonhook.session(store="runs/a") as s:` captures inside the block only."""
    started = enable(store, **options)
    try:
        yield started
    finally:
        disable()


# ----- in a child process ----------------------------------------------------------------------------------------
def enable_from_env() -> None:
    """Called at start-up (sitecustomize) when `TRITONHOOK_ENABLE=1`, once Triton is imported."""
    from .launcher import ChildSettings

    capture = ChildSettings.current().capture
    if capture is not None and _active is None:
        enable(capture.store, subprocesses=False, rename=capture.rename, select=capture.select,
               fix_tma_scope=capture.fix_tma_scope, apply=capture.apply)
