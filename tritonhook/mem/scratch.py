"""Triton's global-scratch requests, recorded by standing in for the `triton.set_allocator` allocator."""

from __future__ import annotations

import contextlib
import threading
import weakref


class _RecordingAllocator:
    """Stands in for the user's `triton.set_allocator` allocator and tells the recorder about every request."""

    def __init__(self, inner, recorder: "ScratchRecorder"):
        self.inner, self.recorder = inner, recorder

    def __call__(self, size: int, alignment: int, stream):
        buffer = self.inner(size, alignment, stream)
        self.recorder.requested(size, buffer)
        return buffer


class ScratchRecorder:
    """Global-scratch requests (grid x num_ctas x metadata.global_scratch_size, asked on every launch).

    Buffers that are torch tensors are already in torch's allocator figures; the others are tracked with weak
    references, so `live` is the scratch outside torch still held (objects that cannot be weakly referenced
    count as held). Only the calling thread's allocator is wrapped: `triton.set_allocator` is a ContextVar.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.live = 0
        self.total = 0
        self.pending: list[tuple[int, bool]] = []
        self._var = self._token = self._original = None

    def install(self) -> None:
        from .. import _triton

        self._var = _triton.allocator_var()
        self._original = self._var.get()
        self._token = self._var.set(_RecordingAllocator(self._original, self))

    def rewrap_if_replaced(self) -> None:
        """The user called triton.set_allocator inside the region: wrap the new allocator too."""
        current = self._var.get() if self._var is not None else None
        if current is not None and not (isinstance(current, _RecordingAllocator) and current.recorder is self):
            self._var.set(_RecordingAllocator(current, self))

    def uninstall(self) -> None:
        """Put the allocator back: the original (reset, so an unset ContextVar is unset again) or the one the
        user set meanwhile. A wrapper somebody else put over ours is left alone."""
        if self._var is None:
            return
        current, var = self._var.get(), self._var
        self._var = None
        if not (isinstance(current, _RecordingAllocator) and current.recorder is self):
            return
        if current.inner is self._original:
            with contextlib.suppress(ValueError, RuntimeError):
                var.reset(self._token)
                return
        var.set(current.inner)

    def requested(self, size: int, buffer) -> None:
        in_torch = type(buffer).__module__.split(".")[0] == "torch"
        with self.lock:
            self.total += size
            self.pending.append((size, in_torch))
            if not in_torch:
                self.live += size
        if not in_torch:
            with contextlib.suppress(TypeError):
                weakref.finalize(buffer, self._released, size)

    def _released(self, size: int) -> None:
        with self.lock:
            self.live -= size

    def take_pending(self) -> list[tuple[int, bool]]:
        """Requests since the last launch: Triton allocates scratch just before it calls the launch hook."""
        with self.lock:
            pending, self.pending = self.pending, []
        return pending

