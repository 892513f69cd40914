"""What the partitions of the Gluon kernels synchronize through, as aggregates with behaviour (Triton's example
``python/examples/gluon/01-attention-forward.py`` gives its barrier counters and channels theirs likewise): a
position in a ring of mbarrier-guarded buffers that derives its slot and phase, waits on them and advances itself
(``RingPosition``), and a channel of shared-memory buffers with ready/empty barriers that producers and consumers
acquire, fill and release (``SmemChannel``). Both kernel families use them.

The methods emit the same operations, in the same order, as the hand-written index and phase arithmetic they
replaced: the golden PTX (tests/test_golden_ptx.py) changes when even two independent integer operations swap.
"""
from ._compat import aggregate, data_aggregate, gl, gluon, mbarrier_arrive, mbarrier_wait


@aggregate
class RingPosition:
    """How far a partition has got through a ring of SLOTS buffers, or through the uses of one barrier (SLOTS 1):
    the running count of slots passed. The slot is count % SLOTS, the parity of the slot's barrier phase
    (count // SLOTS) & 1. Triton's example carries (index, phase) and rolls them over with selects; deriving both
    from the count keeps the one integer the loops carry, and with it the PTX. The count may be a compile-time
    int (a ``static_range`` prologue)."""
    count: gl.base_value
    SLOTS: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, count, SLOTS):
        self.count = count if isinstance(count, gl.base_value) else gl.constexpr(count)
        self.SLOTS = gl.constexpr(SLOTS)

    @gluon.jit
    def index(self):
        return self.count % self.SLOTS

    @gluon.jit
    def phase(self):
        """The phase parity a consumer waits for on the slot's ready barrier."""
        return (self.count // self.SLOTS) & 1

    @gluon.jit
    def free_phase(self):
        """The phase parity a producer waits for on the slot's empty barrier: flipped, so that a fresh barrier
        reads as free on the first pass through the ring."""
        return self.phase() ^ 1

    @gluon.jit
    def wait(self, bars):
        """Wait until the slot's barrier in `bars` (one a slot) has completed this pass's phase; returns the slot."""
        i = self.index()
        mbarrier_wait(bars.index(i), self.phase())
        return i

    @gluon.jit
    def wait_free(self, bars):
        """``wait`` for a producer on the slot's empty barrier (``free_phase``); returns the slot."""
        i = self.index()
        mbarrier_wait(bars.index(i), self.free_phase())
        return i

    @gluon.jit
    def advanced(self, n):
        """The position `n` slots further on."""
        return RingPosition(self.count + n, self.SLOTS)

    @gluon.jit
    def previous(self):
        return RingPosition(self.count - 1, self.SLOTS)


@gluon.jit
def ring_start(SLOTS: gl.constexpr):
    """A partition's position before its first slot."""
    return RingPosition(gl.to_tensor(0), SLOTS)


@data_aggregate
class SmemChannel:
    """A ring of shared-memory buffers from a producer partition to its consumers: slot i's `ready` barrier
    completes when its contents have landed, its `empty` barrier when every consumer has released it."""
    bufs: gl.shared_memory_descriptor
    ready: gl.shared_memory_descriptor
    empty: gl.shared_memory_descriptor

    @gluon.jit
    def acquire_free(self, pos):
        """Producer side: wait until the slot at `pos` is free; returns its index."""
        return pos.wait_free(self.empty)

    @gluon.jit
    def acquire_filled(self, pos):
        """Consumer side: wait until the slot at `pos` is filled; returns its index."""
        return pos.wait(self.ready)

    @gluon.jit
    def wait_filled(self, i, phase):
        """Consumer side: wait until slot `i` is filled (its ready barrier's `phase`), for channels that share one
        ring position and derive its slot and phase once (a block's K and V)."""
        mbarrier_wait(self.ready.index(i), phase)

    @gluon.jit
    def release(self, i):
        """Consumer side: this consumer is done with slot `i`."""
        mbarrier_arrive(self.empty.index(i))

    @gluon.jit
    def send(self, pos, value):
        """Producer side, for a channel that threads fill (no TMA): store `value` in the slot at `pos` once it is
        free, then mark it filled."""
        i = self.acquire_free(pos)
        self.bufs.index(i).store(value)
        mbarrier_arrive(self.ready.index(i))

    @gluon.jit
    def receive(self, pos, layout: gl.constexpr):
        """Consumer side of ``send``: the value in the slot at `pos`, in `layout`, once filled; the slot is
        released."""
        i = self.acquire_filled(pos)
        value = self.bufs.index(i).load(layout)
        self.release(i)
        return value
