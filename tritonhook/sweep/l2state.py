"""Which part of a launch's buffers the L2 held when the launch ran, estimated from the traffic recorded before it.

Why: a replay decides where a kernel's buffers are when it starts. Rotated through copies spanning 4x the L2
("cold"), a small memory-bound kernel reads DRAM and runs 10-30% slower than inside the workload, where its producer
has just written its inputs; with every input read into L2 first ("inputs"), kernels whose inputs were written long
ago (weights cast to bf16, copies of old activations) run 10-25% faster than inside the workload (H200, the
transformer + Liger recording; docs/notes.md sections 8 and 9). The workload's L2 state lies between, per kernel.

The model: an L2 that keeps the most recently touched bytes (least-recently-used, of the GPU's L2 size). Memory is
cut into chunks; each chunk remembers when it was last touched, measured on a clock that counts the bytes the
recorded launches touched, and by which allocation (the tensor's storage). A chunk is resident when fewer than
`l2_bytes` were touched after it and the allocation there now is the one that touched it. A launch touches its
tensors' spans in argument order, each chunk stamped as the bytes before it in the launch pass, so the last
`l2_bytes` a large kernel wrote are resident after it, not all of it.

Why the allocation: a buffer freed and allocated again since a recorded launch touched it holds what a kernel the
recorder cannot see wrote there (cuBLAS, cuDNN, torch's own): the model cannot tell where that traffic went, and
such inputs behaved as cold on the H200 (the transposes that take SDPA backward's gradients read 0.78-0.87x their
in-workload time replayed with their inputs in L2, 0.94-1.05x cold; docs/notes.md section 10).

What it cannot see: the traffic of kernels that are not Triton's (cuBLAS, cuDNN, torch's own), of launches the
recorder passed over (counted on the clock by their signature's bytes, with the addresses of the signature's
launch that was seen), and whether a kernel touches the whole span of a tensor. Its figures are estimates, and a
replay uses them only to choose how much of each buffer to read into L2 before each call (`--l2 recorded`).

Pure: works on (address, bytes, owner) triples, owners compared by equality; `tensor_regions` turns a launch's
arguments into them (owner: a weak reference to the tensor's storage, equal for views of one live allocation).
"""

from __future__ import annotations

from typing import Hashable, Iterable, Sequence

from .recording import is_tensor, span_elements

CHUNKS_IN_L2 = 256
"""Chunk size is the L2 size over this (about 200 KB on an H100/H200), at least `MIN_CHUNK_BYTES`: fine enough to
tell apart tensors that share an allocator segment, coarse enough to stamp a launch's chunks in microseconds."""
MIN_CHUNK_BYTES = 4096
Region = tuple[int, int, Hashable]
"""(address, bytes, owner): a span of memory a launch touches, and the allocation it belongs to."""
MAX_STAMPED = 4 * CHUNKS_IN_L2
"""A region touches at most its last this-many chunks: what lies before them cannot be resident after the launch,
and unstamped chunks read as never touched (not resident), so the estimate holds for regions far larger than L2."""


class L2Traffic:
    """The model's state: the traffic clock and each chunk's last touch (see the module docstring)."""

    def __init__(self, l2_bytes: int):
        if l2_bytes <= 0:
            raise ValueError(f"L2 size {l2_bytes} bytes: must be positive")
        self.l2_bytes = l2_bytes
        self.chunk_bytes = max(MIN_CHUNK_BYTES, l2_bytes // CHUNKS_IN_L2)
        self.clock = 0.0
        self.stamps: dict[int, tuple[float, Hashable]] = {}   # chunk -> (clock when last touched, by which owner)

    def resident(self, regions: Sequence[Region]) -> list[float]:
        """Per region: the fraction of its chunks the L2 holds now, before the launch runs."""
        fractions = []
        for address, nbytes, owner in regions:
            chunks = self._chunks(address, nbytes)
            hits = sum(1 for chunk in chunks if self._holds(chunk, owner))
            fractions.append(hits / len(chunks) if chunks else 0.0)
        return fractions

    def _holds(self, chunk: int, owner: Hashable) -> bool:
        stamp = self.stamps.get(chunk)
        return stamp is not None and self.clock - stamp[0] < self.l2_bytes and stamp[1] == owner

    def touch(self, regions: Sequence[Region], launches: int = 1) -> None:
        """A launch touches `regions`; `launches` > 1 counts that many launches of the same signature, those the
        recorder passed over being put on the clock before the one seen (their addresses are not known)."""
        self.clock += (launches - 1) * sum(nbytes for _, nbytes, _ in regions)
        for address, nbytes, owner in regions:
            chunks = self._chunks(address, nbytes)
            if not chunks:
                continue
            stamped = chunks[-MAX_STAMPED:]
            share = nbytes / len(chunks)   # a small tensor puts its own bytes on the clock, not a chunk's
            self.clock += (len(chunks) - len(stamped)) * share
            for chunk in stamped:
                self.clock += share
                self.stamps[chunk] = (self.clock, owner)

    def _chunks(self, address: int, nbytes: int) -> range:
        if nbytes <= 0:
            return range(0)
        return range(address // self.chunk_bytes, (address + nbytes - 1) // self.chunk_bytes + 1)


def tensor_regions(args: Iterable) -> list[Region]:
    """(address, bytes, owner) of every tensor argument's span, a host TMA descriptor's base included, in argument
    order (the order `recording.tensors_of` lists their descriptions in). The owner is a weak reference to the
    tensor's storage: equal for every view of one allocation while it lives; while the reference lives, no new
    storage can take its identity, so a reallocated buffer never passes for the old one."""
    from torch.multiprocessing.reductions import StorageWeakRef

    regions = []
    for value in args:
        tensor = value if is_tensor(value) else getattr(value, "base", None)
        if is_tensor(tensor):
            span = span_elements(tensor.shape, tensor.stride())
            owner = StorageWeakRef(tensor.untyped_storage())
            regions.append((tensor.data_ptr(), span * tensor.element_size(), owner))
    return regions


def median_fractions(samples: Sequence[Sequence[float]]) -> list[float] | None:
    """Per region, the median of the fractions estimated at each timed launch (None when none was estimated)."""
    if not samples:
        return None
    columns = zip(*samples)
    return [sorted(column)[len(column) // 2] for column in map(list, columns)]
