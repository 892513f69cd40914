"""Tile scheduling: which (batch*head, query tile) a persistent program works on next and which K/V blocks it
visits, in which order, and which of them need a mask.

Hopper: ``_kv_bounds`` / ``_kv_block`` (K/V block range and rising/falling order), ``_snake`` and ``_tile_plan``
(the persistent order: head-major, or longest-first for causal with head groups and snake waves). Blackwell:
``_tile``. Every partition of a warp-specialized kernel walks the same plan, so the order must be a pure function
of the tile id; keeping it in one module makes the producer/consumer agreement easy to check. ``TileSchedule``
carries a launch's tiles and plans each (``hopper_tiles`` / ``blackwell_tiles`` make one per family), so that no
partition counts the tiles or spells the plan's arguments itself.
"""

from ._compat import aggregate, gl, gluon


@gluon.jit
def _kv_bounds(off_m, seq_len, BLOCK_M_CTA: gl.constexpr, BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr):
    """(n_full, n_blocks): K/V blocks [0, n_full) need no mask, [n_full, n_blocks) do (causal diagonal, S tail)."""
    if CAUSAL:
        hi = gl.minimum(off_m + BLOCK_M_CTA, seq_len)
        n_full = off_m // BLOCK_N
    else:
        hi = seq_len
        n_full = seq_len // BLOCK_N
    n_blocks = gl.cdiv(hi, BLOCK_N)
    return n_full, n_blocks


@gluon.jit
def _kv_block(j, n_blocks, KV_FALLING: gl.constexpr):
    """The K/V block a tile visits at step j: rising, or with KV_FALLING falling, so that the masked blocks
    [n_full, n_blocks) come first (FlashAttention-3's order). Producer and consumers must agree."""
    if KV_FALLING:
        return n_blocks - 1 - j
    else:
        return j


@gluon.jit
def _snake(tile, total):
    """Boustrophedon order over the waves of P tiles: odd waves are handed out in reverse, so that a program that
    took a wave's costliest tile takes the next wave's cheapest. The last wave, when partial, keeps its order (its
    tiles are the cheapest; reversed, some would lie past `total`). A bijection on [0, total): the producer and
    the consumers, which all walk `_tile_plan`, still agree. With tiles in falling cost (causal, all heads at
    once), the busiest program's K/V blocks at S = 4k-16k go from 1.06x the mean to 1.01x (a count over the
    schedule, D=128 and 64, FA3's shapes)."""
    P = gl.num_programs(0)
    wave = tile // P
    flip = ((wave % 2) == 1) & ((wave + 1) * P <= total)
    return tile + flip.to(gl.int32) * (2 * wave * P + P - 1 - 2 * tile)


@gluon.jit
def _tile_plan(tile, num_m, num_bh, seq_len, BLOCK_M_CTA: gl.constexpr, BLOCK_N: gl.constexpr,
               CAUSAL: gl.constexpr, HEAD_GROUP: gl.constexpr):
    """Where persistent tile `tile` lies: (batch*head, first query row, KV blocks without mask, KV blocks).

    Program p takes tiles p, p + P, p + 2P, ... (static round-robin); producer and consumers walk the same plan.
    Non-causal: head-major (all query tiles of one head are neighbours: they share K/V in L2); every tile costs
    the same. Causal: a tile's cost grows with its query index, and head-major order hands some programs only long
    rows (measured: 0.77x cuDNN at S=16k). So order by query tile, longest first, heads innermost: each wave of P
    tiles holds tiles of nearly equal cost (longest-processing-time first).

    HEAD_GROUP (causal): 0 puts all heads in that order at once; n > 0 applies it within sections of n heads, one
    section after the other, as FlashAttention-3's LPT scheduler does with as many heads as fit their K/V in L2.
    With all heads at once, a wave at short S reads the K/V of as many heads as it has tiles and L2 reuses
    little (bf16 D=128 causal S=2k, H200: 398 TFLOPS against 437 for the earlier head-major order,
    results file in commit c684b4a: benchmarks/results/bench_h200_before_causal_schedule.json); sections keep the balance and the reuse.

    HEAD_GROUP 0 also snakes (``_snake``): within a wave the cost still falls from the first program to the last,
    and round-robin gave program 0 the costliest tile of every wave, 6% above the mean at S >= 4k."""
    if CAUSAL:
        if HEAD_GROUP == 0:
            tile = _snake(tile, num_m * num_bh)
            bh = tile % num_bh
            mt = num_m - 1 - tile // num_bh
        else:
            first_bh = tile // (HEAD_GROUP * num_m) * HEAD_GROUP
            heads = gl.minimum(num_bh - first_bh, HEAD_GROUP)  # the last section may hold fewer heads
            r = tile - first_bh * num_m
            bh = first_bh + r % heads
            mt = num_m - 1 - r // heads
    else:
        bh = tile // num_m
        mt = tile % num_m
    off_m = mt * BLOCK_M_CTA
    n_full, n_blocks = _kv_bounds(off_m, seq_len, BLOCK_M_CTA, BLOCK_N, CAUSAL)
    return bh, off_m, n_full, n_blocks


@gluon.jit
def _tile(tile, num_m, seq_len, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr):
    """(batch*head, query block, first masked K block, number of K blocks) of a tile id. Causal: the longest
    (last) query blocks of a head come first, which evens out the persistent CTAs' work."""
    bh = tile // num_m
    m_blk = tile % num_m
    if CAUSAL:
        m_blk = num_m - 1 - m_blk
        hi = gl.minimum((m_blk + 1) * BLOCK_M, seq_len)
        # block j needs no mask when its last key (j+1)*BLOCK_N-1 <= the tile's first row and < seq_len
        n_full = gl.minimum(seq_len // BLOCK_N, (m_blk * BLOCK_M + 1) // BLOCK_N)
    else:
        hi = seq_len
        n_full = seq_len // BLOCK_N
    n_blocks = gl.cdiv(hi, BLOCK_N)
    n_full = gl.minimum(n_full, n_blocks)
    return bh, m_blk, n_full, n_blocks


@aggregate
class TileSchedule:
    """The persistent tiles of one launch: `num_tiles` of them (`num_m` query tiles of `BLOCK_M` rows for each of
    `num_bh` heads), program p taking tiles p, p + P, ...; `plan(tile)` is where a tile lies, in the `FAMILY`'s
    order: Hopper's ``_tile_plan`` (with its HEAD_GROUP), Blackwell's ``_tile``. The counts are computed once, before
    the loop, as each partition computed them."""
    num_m: gl.base_value
    num_tiles: gl.base_value
    num_bh: gl.base_value
    seq_len: gl.base_value
    BLOCK_M: gl.constexpr
    BLOCK_N: gl.constexpr
    CAUSAL: gl.constexpr
    HEAD_GROUP: gl.constexpr
    FAMILY: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, num_m, num_tiles, num_bh, seq_len, BLOCK_M, BLOCK_N, CAUSAL, HEAD_GROUP, FAMILY):
        self.num_m = num_m
        self.num_tiles = num_tiles
        self.num_bh = num_bh
        self.seq_len = seq_len
        self.BLOCK_M = gl.constexpr(BLOCK_M)
        self.BLOCK_N = gl.constexpr(BLOCK_N)
        self.CAUSAL = gl.constexpr(CAUSAL)
        self.HEAD_GROUP = gl.constexpr(HEAD_GROUP)
        self.FAMILY = gl.constexpr(FAMILY)

    @gluon.jit
    def plan(self, tile):
        """(batch*head, the tile's query position, K/V blocks without mask, K/V blocks): Hopper's position is its
        first row, Blackwell's its query block."""
        if self.FAMILY == "blackwell":
            return _tile(tile, self.num_m, self.seq_len, self.BLOCK_M, self.BLOCK_N, self.CAUSAL)
        else:
            return _tile_plan(tile, self.num_m, self.num_bh, self.seq_len, self.BLOCK_M, self.BLOCK_N, self.CAUSAL,
                              self.HEAD_GROUP)


@gluon.jit
def hopper_tiles(seq_len, num_bh, BLOCK_M_CTA: gl.constexpr, BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr,
                 HEAD_GROUP: gl.constexpr):
    """The schedule of a Hopper launch: query tiles of BLOCK_M_CTA rows (both consumer warpgroups' rows)."""
    num_m = gl.cdiv(seq_len, BLOCK_M_CTA)
    return TileSchedule(num_m, num_m * num_bh, num_bh, seq_len, BLOCK_M_CTA, BLOCK_N, CAUSAL, HEAD_GROUP, "hopper")


@gluon.jit
def blackwell_tiles(seq_len, num_bh, cfg):
    """The schedule of a Blackwell launch: query tiles of cfg.BLOCK_M rows."""
    num_m = gl.cdiv(seq_len, cfg.BLOCK_M)
    return TileSchedule(num_m, num_m * num_bh, num_bh, seq_len, cfg.BLOCK_M, cfg.BLOCK_N, cfg.CAUSAL, 0, "blackwell")


@aggregate
class TileQueue:
    """The tiles of a dynamic persistent launch (Hopper ws, ``DYNAMIC_TILES``), as FlashAttention-3's dynamic
    scheduler hands them out: the producer claims the next tile id from a global counter (zeroed by the host before
    each launch) once it has loaded the last one's K/V, and publishes it in the Q slot's word of `slots` before
    arming that slot's barrier, so a consumer reads it after the Q wait it makes anyway. Every program stays
    resident (the prologue of one tile under the epilogue of the last), yet the tiles in flight are the next P
    claimed, a window of consecutive ones: with head sections, few heads' K/V in L2. An id of `num_tiles` or more
    ends the programs (the producer publishes one, on a plain arrive, when the counter runs out)."""
    counter: gl.tensor  # *i32 in global memory
    slots: gl.shared_memory_descriptor  # [2, 1] i32, one word a Q slot

    @gluon.constexpr_function
    def __init__(self, counter, slots):
        self.counter = counter
        self.slots = slots

    @gluon.jit
    def claim(self):
        return gl.atomic_add(self.counter, 1)

    @gluon.jit
    def publish(self, slot, tile):
        """From the producer warp: the tile id for Q slot `slot`, before the slot's barrier is armed."""
        self.slots.index(slot).store(gl.full([1], tile, gl.int32, gl.BlockedLayout([1], [32], [1], [0])))

    @gluon.jit
    def take(self, slot):
        """From a consumer warpgroup, after the slot's Q wait: the tile id published there."""
        return gl.max(self.slots.index(slot).load(gl.BlockedLayout([1], [32], [4], [0])), axis=0)
