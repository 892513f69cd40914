"""Forward attention for Hopper (sm_90a) written in Gluon: TMA + mbarriers + wgmma + warp specialization.

Written for this project; no upstream Hopper Gluon attention exists (docs/triton_hooks.md#what-a-plugin-touches-per-release). API facts were learned from
Triton's Gluon tutorials at tag v3.6.1 of the upstream mirror (python/tutorials/gluon/04-tma.py, 05-wgmma.py,
07-persistence.py, 08-warp-specialization.py) and from the installed sources of triton 3.6.0 / 3.9.0
(triton/experimental/gluon/language/nvidia/hopper/*.py, _layouts.py, _core.py). The algorithm is FlashAttention-2's
online softmax (Dao, 2023) with FlashAttention-3's producer/consumer split (Shah et al., 2024).

Two kernels share the per-block math:

* ``_attn_fwd_simple``: one program per (query tile, batch*head), all warps do everything; K/V are prefetched
  ``STAGES - 1`` blocks ahead with TMA onto per-stage mbarriers. The baseline.
* ``_attn_fwd_ws``: persistent over (batch*head, query tile), each program taking tiles p, p + P, ... or, with
  ``DYNAMIC_TILES``, claiming each from a global counter (``schedule.TileQueue``; a grid of one program a tile makes
  each walk one);
  warp-specialized into a 1-warp TMA producer and two (or, D=64, three) 4-warp consumer warpgroups, each owning 64
  rows of a 128-row (192-row) query tile and sharing the K/V stages. Optional ping-pong: a token passed round the
  consumers (in mbarriers) orders their GEMMs so that one warpgroup's softmax runs while the others' GEMMs occupy
  the tensor cores (FA3 §3.1).

Layouts: Q, K, V, O are (B, H, S, D) contiguous, viewed as 2-D (B*H*S, D) for TMA; a tile that runs past S reads
the next head's rows (or zeros past the end), which the key mask (col < S) and the masked output store make harmless.
fp8 (e4m3): wgmma takes fp8 B operands only K-major, so the PV GEMM reads V^T; the wrapper makes that transposed
copy, (B*H*D, S_pad) with S padded to 16 for TMA's 16-byte stride rule and the keys renumbered within groups of 16
to match P's free in-register relabelling (``_p_operand``). P is rounded to e4m3 before the PV GEMM (as
FA3 does); the output of an fp8 call is bf16.

This module holds the kernels and the helpers only they use; the helpers they share live by concern in
``wgmma.py`` (GEMMs, layouts), ``masking.py``, ``softmax.py``, ``schedule.py`` (tile order), ``pipeline.py`` (ring
positions and shared-memory channels) and ``epilogue.py`` (O stores). Their host side (configurations, the torch
entry point, the compile helper) is ``hopper.py``, the measured knobs ``tuning.py``.
"""
import math

from ._compat import (
    MBarrierLayout, aggregate, data_aggregate, fence_async_shared, gl, gluon, mbarrier_arrive, mbarrier_expect,
    mbarrier_init, mbarrier_invalidate, mbarrier_wait, tensor_descriptor, tma_load, tma_store_wait, warpgroup_mma,
    warpgroup_mma_wait,
)
from .epilogue import _epilogue, _epilogue_tma, _release_stored, _store_lse
from .pipeline import RingPosition, SmemChannel, ring_start
from .schedule import TileQueue, _kv_block, _kv_bounds, hopper_tiles
from .softmax import (_block_probs, _block_row_sums, _ones, _rescale, _row_sums, _row_sums_after, _rowsum_mma,
                      _softmax, _zero_row_sums)
from .wgmma import _p_operand, _p_operand_layout, _pv, _qk, _qk_async, _scheduling_fence, _wgmma_layout


# ----------------------------------------------------------------------------------------------------------------
# what the helpers share: the compile-time configuration, the shared memory
# ----------------------------------------------------------------------------------------------------------------
@aggregate
class HopperConfig:
    """A kernel's compile-time knobs and the register layouts they imply, built once by the kernel and handed to
    every helper as one argument. The simple kernel leaves the ws knobs (PINGPONG .. KV_FALLING) off."""
    HEAD_DIM: gl.constexpr
    BLOCK_M: gl.constexpr  # query rows of one consumer warpgroup (ws) or of the whole program (simple)
    BLOCK_N: gl.constexpr
    STAGES: gl.constexpr
    CAUSAL: gl.constexpr
    V_TRANSPOSED: gl.constexpr
    WRITE_LSE: gl.constexpr
    PINGPONG: gl.constexpr
    OVERLAP: gl.constexpr
    HEAD_GROUP: gl.constexpr
    TMA_STORE: gl.constexpr
    O_SEPARATE: gl.constexpr
    DEFER_WAIT: gl.constexpr
    TC_ROWSUM: gl.constexpr
    HALVES: gl.constexpr  # DIAGONAL_HALVES where it holds: causal with K/V blocks as wide as the two-warpgroup tile
    KV_FALLING: gl.constexpr  # MASKED_FIRST where it holds (see __init__)
    CONSUMERS: gl.constexpr  # ws: consumer warpgroups sharing a tile of CONSUMERS * BLOCK_M rows (2 or 3)
    THREAD_ROWSUM: gl.constexpr  # the row sums kept as each thread's share until the tile ends (softmax._row_partials)
    PEEL_DIAGONAL: gl.constexpr  # causal, falling, the diagonal over two K/V blocks: the second peeled off the loop
    LATE_PV_WAIT: gl.constexpr  # overlapped loop, row sums on the FMA pipe: the P V wait pinned after the softmax
    DYNAMIC_TILES: gl.constexpr  # ws: tiles claimed from a global counter as programs come free (TileQueue)
    LATE_RELEASE: gl.constexpr  # 16-bit with a deferred store wait: O sits in the tile's Q buffer into the next tile
    s_layout: gl.constexpr  # scores S (wgmma accumulator)
    o_layout: gl.constexpr  # output O
    p_layout: gl.constexpr  # P as the P V GEMM's register operand
    l_layout: gl.constexpr  # TC_ROWSUM's [BLOCK_M, 8] row sums

    @gluon.constexpr_function
    def __init__(self, dtype, num_warps, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, CAUSAL, V_TRANSPOSED, WRITE_LSE,
                 PINGPONG=False, OVERLAP=False, HEAD_GROUP=1, TMA_STORE=False, O_SEPARATE=False, DEFER_WAIT=False,
                 TC_ROWSUM=False, DIAGONAL_HALVES=False, MASKED_FIRST=False, CONSUMERS=2, THREAD_ROWSUM=False,
                 PEEL_DIAGONAL=False, LATE_PV_WAIT=False, DYNAMIC_TILES=False):
        bits = dtype.primitive_bitwidth
        self.HEAD_DIM = gl.constexpr(HEAD_DIM)
        self.BLOCK_M = gl.constexpr(BLOCK_M)
        self.BLOCK_N = gl.constexpr(BLOCK_N)
        self.STAGES = gl.constexpr(STAGES)
        self.CAUSAL = gl.constexpr(CAUSAL)
        self.V_TRANSPOSED = gl.constexpr(V_TRANSPOSED)
        self.WRITE_LSE = gl.constexpr(WRITE_LSE)
        self.PINGPONG = gl.constexpr(PINGPONG)
        self.OVERLAP = gl.constexpr(OVERLAP)
        self.HEAD_GROUP = gl.constexpr(HEAD_GROUP)
        self.TMA_STORE = gl.constexpr(TMA_STORE)
        self.O_SEPARATE = gl.constexpr(O_SEPARATE)
        self.DEFER_WAIT = gl.constexpr(DEFER_WAIT)
        self.TC_ROWSUM = gl.constexpr(TC_ROWSUM)
        self.CONSUMERS = gl.constexpr(CONSUMERS)
        self.THREAD_ROWSUM = gl.constexpr(THREAD_ROWSUM and not TC_ROWSUM)
        self.LATE_PV_WAIT = gl.constexpr(LATE_PV_WAIT and OVERLAP and not TC_ROWSUM)
        self.DYNAMIC_TILES = gl.constexpr(DYNAMIC_TILES)
        self.HALVES = gl.constexpr(DIAGONAL_HALVES and CAUSAL and CONSUMERS == 2 and BLOCK_N == 2 * BLOCK_M)
        # Causal builds keep the rising order unless each tile's diagonal lies in one K/V block (the block width a
        # multiple of the tile's rows), or, with PEEL_DIAGONAL in the overlapped loop, in two: then both come first
        # (the second peeled off the loop, ``_ws_tile_overlapped``) and the first may hold no key of a warpgroup's
        # rows, whose maxima the prologue keeps finite (``_probs``: a first block with no key made 0/0 rows).
        rows = CONSUMERS * BLOCK_M
        self.PEEL_DIAGONAL = gl.constexpr(PEEL_DIAGONAL and MASKED_FIRST and OVERLAP and CAUSAL and BLOCK_N % rows != 0
                                          and rows <= BLOCK_N + math.gcd(rows, BLOCK_N))
        self.KV_FALLING = gl.constexpr(MASKED_FIRST and (not CAUSAL or BLOCK_N % rows == 0 or self.PEEL_DIAGONAL))
        self.LATE_RELEASE = gl.constexpr(TMA_STORE and DEFER_WAIT and not O_SEPARATE)
        self.s_layout = gl.constexpr(_wgmma_layout(BLOCK_N, bits, num_warps))
        self.o_layout = gl.constexpr(_wgmma_layout(HEAD_DIM, bits, num_warps))
        self.p_layout = gl.constexpr(_p_operand_layout(self.o_layout.value, bits))
        self.l_layout = gl.constexpr(_wgmma_layout(8, bits, num_warps))


@data_aggregate
class SimpleShared:
    """The simple kernel's Q tile, its K/V descriptors with where this program's rows start in them (K/V, V^T for
    fp8), and the STAGES-deep K/V ring with one barrier a stage."""
    q_smem: gl.shared_memory_descriptor
    k_desc: tensor_descriptor
    v_desc: tensor_descriptor
    kv_row0: gl.tensor
    vt_row0: gl.tensor
    k_bufs: gl.shared_memory_descriptor
    v_bufs: gl.shared_memory_descriptor
    bars: gl.shared_memory_descriptor


@data_aggregate
class WsShared:
    """The ws kernel's shared memory: the channels from the producer warp to the consumers (Q: 2 slots of
    [CONSUMERS] tiles, slot i's tiles at CONSUMERS * i + warpgroup; K and V: the STAGES stages the consumers share),
    one ping-pong turn barrier a consumer, the consumers' O tiles (fp8 with a TMA store; otherwise Q's buffers) and
    the ones tile of the tensor-core row sums (TC_ROWSUM; otherwise a placeholder)."""
    q: SmemChannel
    k: SmemChannel
    v: SmemChannel
    turns: gl.shared_memory_descriptor
    o_bufs: gl.shared_memory_descriptor
    ones: gl.shared_memory_descriptor


@aggregate
class PingPong:
    """FA3's ping-pong token (§3.1) as consumer warpgroup WG sees it: it takes its turn before issuing a GEMM and
    passes it on to the next warpgroup right after issuing, so that the other warpgroups' softmax overlaps this
    one's GEMM. The token lives in mbarriers (`mine`, `other`): a take waits for the parity of its turns so far.
    With ON false both are no-ops."""
    mine: gl.shared_memory_descriptor
    other: gl.shared_memory_descriptor
    ON: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, mine, other, ON):
        self.mine = mine
        self.other = other
        self.ON = gl.constexpr(ON)

    @gluon.jit
    def take(self, parity):
        if self.ON:
            mbarrier_wait(self.mine, parity)

    @gluon.jit
    def pass_on(self):
        if self.ON:
            mbarrier_arrive(self.other)


@data_aggregate
class TileHandover:
    """What passes between a consumer warpgroup's consecutive tiles in the overlapped loop: the previous tile's Q
    slot, released once its deferred O store has read it (`stored`: it went out by TMA store; LATE_RELEASE)."""
    stored: gl.base_value
    q_empty_prev: gl.shared_memory_descriptor


@data_aggregate
class QueryTile:
    """One tile's query rows as a program (simple kernel) or a consumer warpgroup (ws) holds them: the head, the
    rows and the sequence length (masks, row-masked stores), the softmax scale, the K/V blocks to visit (the first
    `n_full` unmasked) and the Q buffer in shared memory. Fields that derive from the sequence length are
    `base_value`s: an int argument of 1 is specialized to a constexpr."""
    bh: gl.tensor
    rows: gl.tensor
    seq_len: gl.base_value
    qk_scale: gl.tensor
    n_full: gl.base_value
    n_blocks: gl.base_value
    q_smem: gl.shared_memory_descriptor


@data_aggregate
class OnlineSoftmax:
    """The running state of a tile's online softmax: row maxima `m`, row sums `l` and the O accumulator."""
    m: gl.tensor
    l: gl.tensor
    acc: gl.tensor


# ----------------------------------------------------------------------------------------------------------------
# kernel 1: simple (not warp-specialized), one program per (query tile, batch*head)
# ----------------------------------------------------------------------------------------------------------------
@gluon.jit
def _simple_issue(j, n_blocks, mem, cfg):
    """Issue the TMA loads of K/V block j into its stage (predicated off past the last block)."""
    kv_row0 = mem.kv_row0
    vt_row0 = mem.vt_row0
    st = RingPosition(j, cfg.STAGES).index()
    pred = j < n_blocks
    bar = mem.bars.index(st)
    mbarrier_expect(bar, mem.k_desc.block_type.nbytes + mem.v_desc.block_type.nbytes, pred)
    tma_load(mem.k_desc, [kv_row0 + j * cfg.BLOCK_N, 0], bar, mem.k_bufs.index(st), pred)
    if cfg.V_TRANSPOSED:
        tma_load(mem.v_desc, [vt_row0, j * cfg.BLOCK_N], bar, mem.v_bufs.index(st), pred)
    else:
        tma_load(mem.v_desc, [kv_row0 + j * cfg.BLOCK_N, 0], bar, mem.v_bufs.index(st), pred)


@gluon.jit
def _simple_block(j, mem, tile, state, cfg, MASKED: gl.constexpr):
    # block j-1's stage was fully consumed (its wgmmas waited) in the previous step: refill it with j+STAGES-1
    _simple_issue(j + cfg.STAGES - 1, tile.n_blocks, mem, cfg)
    pos = RingPosition(j, cfg.STAGES)
    st = pos.index()
    mbarrier_wait(mem.bars.index(st), pos.phase())
    s = _qk(mem.q_smem, mem.k_bufs.index(st), cfg.s_layout, cfg.BLOCK_M, cfg.BLOCK_N)
    p, m_i, l_i, acc = _softmax(s, state.m, state.l, state.acc, j * cfg.BLOCK_N, MASKED, tile, cfg)
    acc = _pv(p, mem.v_bufs.index(st), acc, cfg.p_layout, cfg.V_TRANSPOSED)
    return OnlineSoftmax(m_i, l_i, acc)


@gluon.jit(do_not_specialize=["seq_len"])  # S == 1 as a constant: QueryTile's runtime fields take none
def _attn_fwd_simple(q_desc, k_desc, v_desc, o_ptr, lse_ptr, qk_scale, seq_len, HEAD_DIM: gl.constexpr,
                     BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                     V_TRANSPOSED: gl.constexpr, WRITE_LSE: gl.constexpr, num_warps: gl.constexpr):
    dtype: gl.constexpr = q_desc.dtype
    cfg = HopperConfig(dtype, num_warps, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, CAUSAL, V_TRANSPOSED, WRITE_LSE)

    pid_m = gl.program_id(0)
    bh = gl.program_id(1)
    off_m = pid_m * BLOCK_M
    q_row0 = bh * seq_len + off_m
    kv_row0 = bh * seq_len
    vt_row0 = bh * HEAD_DIM

    q_smem = gl.allocate_shared_memory(dtype, [BLOCK_M, HEAD_DIM], q_desc.layout)
    k_bufs = gl.allocate_shared_memory(dtype, [STAGES] + k_desc.block_type.shape, k_desc.layout)
    v_bufs = gl.allocate_shared_memory(dtype, [STAGES] + v_desc.block_type.shape, v_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], MBarrierLayout())
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], MBarrierLayout())
    mbarrier_init(q_bar, count=1)
    for i in gl.static_range(STAGES):
        mbarrier_init(bars.index(i), count=1)
    mem = SimpleShared(q_smem, k_desc, v_desc, kv_row0, vt_row0, k_bufs, v_bufs, bars)

    n_full, n_blocks = _kv_bounds(off_m, seq_len, BLOCK_M, BLOCK_N, CAUSAL)
    mbarrier_expect(q_bar, q_desc.block_type.nbytes)
    tma_load(q_desc, [q_row0, 0], q_bar, q_smem)
    for i in gl.static_range(STAGES - 1):
        _simple_issue(i, n_blocks, mem, cfg)

    rows = off_m + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, cfg.s_layout))
    m_i = gl.full([BLOCK_M], -float("inf"), gl.float32, gl.SliceLayout(1, cfg.s_layout))
    l_i = gl.full([BLOCK_M], 0.0, gl.float32, gl.SliceLayout(1, cfg.s_layout))
    acc = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, cfg.o_layout)
    state = OnlineSoftmax(m_i, l_i, acc)
    tile = QueryTile(bh, rows, seq_len, qk_scale, n_full, n_blocks, q_smem)
    mbarrier_wait(q_bar, 0)
    for j in range(0, n_full):
        state = _simple_block(j, mem, tile, state, cfg, False)
    for j in range(n_full, n_blocks):
        state = _simple_block(j, mem, tile, state, cfg, True)
    mbarrier_invalidate(q_bar)
    for i in gl.static_range(STAGES):
        mbarrier_invalidate(bars.index(i))
    _epilogue(state.acc, state.m, state.l, o_ptr, lse_ptr, tile, HEAD_DIM, WRITE_LSE)


# ----------------------------------------------------------------------------------------------------------------
# kernel 2: persistent, warp-specialized (1 producer warp + 2 or 3 consumer warpgroups), optional ping-pong
# ----------------------------------------------------------------------------------------------------------------
@gluon.jit
def _ws_producer(q_desc, k_desc, v_desc, mem, seq_len, num_bh, queue, cfg):
    schedule = hopper_tiles(seq_len, num_bh, cfg.CONSUMERS * cfg.BLOCK_M, cfg.BLOCK_N, cfg.CAUSAL, cfg.HEAD_GROUP)
    kv = ring_start(cfg.STAGES)
    q = ring_start(2)
    if cfg.DYNAMIC_TILES:
        tile = queue.claim()
        while tile < schedule.num_tiles:
            kv, q = _ws_load_tile(tile, kv, q, q_desc, k_desc, v_desc, mem, schedule, queue, seq_len, cfg)
            tile = queue.claim()
        qb = mem.q.acquire_free(q)  # the end: an id past the last tile, on a plain arrive (no Q load)
        queue.publish(qb, schedule.num_tiles)
        mbarrier_arrive(mem.q.ready.index(qb))
    else:
        for tile in range(gl.program_id(0), schedule.num_tiles, gl.num_programs(0)):
            kv, q = _ws_load_tile(tile, kv, q, q_desc, k_desc, v_desc, mem, schedule, queue, seq_len, cfg)


@gluon.jit
def _ws_load_tile(tile, kv, q, q_desc, k_desc, v_desc, mem, schedule, queue, seq_len, cfg):
    """The producer's loads of one tile into the next Q slot, once free (with DYNAMIC_TILES, the tile's id written
    into the slot's word first): its Q rows, then its K/V blocks through the ring; returns the ring positions after
    it."""
    bh, off_m, n_full, n_blocks = schedule.plan(tile)
    kv_row0 = bh * seq_len
    qb = mem.q.acquire_free(q)
    if cfg.DYNAMIC_TILES:
        queue.publish(qb, tile)
    qbar = mem.q.ready.index(qb)
    mbarrier_expect(qbar, cfg.CONSUMERS * q_desc.block_type.nbytes)
    for wg in gl.static_range(cfg.CONSUMERS):  # each consumer's BLOCK_M rows of the tile
        row = kv_row0 + off_m + wg * cfg.BLOCK_M
        tma_load(q_desc, [row, 0], qbar, mem.q.bufs.index(cfg.CONSUMERS * qb + wg))
    for j in range(0, n_blocks):
        pos = kv.advanced(j)
        st = pos.index()
        ph = pos.free_phase()
        kv_off = _kv_block(j, n_blocks, cfg.KV_FALLING) * cfg.BLOCK_N
        mbarrier_wait(mem.k.empty.index(st), ph)
        kbar = mem.k.ready.index(st)
        mbarrier_expect(kbar, k_desc.block_type.nbytes)
        tma_load(k_desc, [kv_row0 + kv_off, 0], kbar, mem.k.bufs.index(st))
        mbarrier_wait(mem.v.empty.index(st), ph)
        vbar = mem.v.ready.index(st)
        mbarrier_expect(vbar, v_desc.block_type.nbytes)
        if cfg.V_TRANSPOSED:
            tma_load(v_desc, [bh * cfg.HEAD_DIM, kv_off], vbar, mem.v.bufs.index(st))
        else:
            tma_load(v_desc, [kv_row0 + kv_off, 0], vbar, mem.v.bufs.index(st))
    return kv.advanced(n_blocks), q.advanced(1)


@gluon.jit
def _gemm_in_turn(a, b, acc, use_acc, freed, pingpong, turn_parity, ones, l_acc):
    """acc (+)= a @ b, waited for, then the shared-memory stage b came from is released through `freed`. With a
    `ones` tile (TC_ROWSUM's P V GEMM; None otherwise) also l_acc += a @ ones (``_rowsum_mma``). Returns
    (acc, l_acc). The GEMMs are issued in this warpgroup's ping-pong turn (``PingPong``; parity `turn_parity`)."""
    TC_ROWSUM: gl.constexpr = ones is not None
    pingpong.take(turn_parity)
    acc = warpgroup_mma(a, b, acc, use_acc=use_acc, is_async=True)
    l_blk = l_acc
    if TC_ROWSUM:
        l_blk = _rowsum_mma(a, ones, l_acc)
    pingpong.pass_on()
    acc, l_blk = _wait_pv(acc, l_blk, 0, TC_ROWSUM)
    if TC_ROWSUM:
        l_acc += l_blk
    mbarrier_arrive(freed)
    return acc, l_acc


@gluon.jit
def _ws_block(pos, tile, mem, pingpong, state, n_off, masked, cfg):
    """One K/V block (ring position `pos`, keys from `n_off`, masked where `masked`) of a consumer warpgroup's
    tile, GEMMs waited for one at a time. Returns the new ``OnlineSoftmax``."""
    st = pos.index()
    phase = pos.phase()
    mem.k.wait_filled(st, phase)
    # Each warpgroup takes the ping-pong token twice per block: the parity waited for is 0 before QK, 1 before PV.
    s, l_i = _gemm_in_turn(tile.q_smem, mem.k.bufs.index(st).permute((1, 0)),
                           gl.zeros([cfg.BLOCK_M, cfg.BLOCK_N], gl.float32, cfg.s_layout), False,
                           mem.k.empty.index(st), pingpong, 0, None, state.l)
    p, m_i, l_i, acc = _softmax(s, state.m, l_i, state.acc, n_off, masked, tile, cfg)
    p_op = _p_operand(p, mem.v.bufs.dtype, cfg.p_layout, cfg.V_TRANSPOSED)
    mem.v.wait_filled(st, phase)
    acc, l_i = _gemm_in_turn(p_op, _v_operand(mem.v.bufs, st, cfg.V_TRANSPOSED), acc, True, mem.v.empty.index(st),
                             pingpong, 1, mem.ones if cfg.TC_ROWSUM else None, l_i)
    return OnlineSoftmax(m_i, l_i, acc)


@gluon.jit
def _v_operand(v_bufs, st, V_TRANSPOSED: gl.constexpr):
    if V_TRANSPOSED:
        return v_bufs.index(st).permute((1, 0))
    else:
        return v_bufs.index(st)


@gluon.jit
def _ws_tile_overlapped(kv, turn, tile, mem, pingpong, handover, state, WG: gl.constexpr, cfg):
    """One query tile with FA3's intra-warpgroup overlap (FA3 §3.2): iteration j issues S_j = Q K_j^T and
    O += P_{j-1} V_{j-1} back to back, waits for S_j only, and runs softmax(S_j) while the PV GEMM is still on the
    tensor cores. With PINGPONG the two consumer warpgroups also take turns issuing their GEMM pairs (FA3 §3.1).

    `kv`: the ring position of the tile's first K/V block. Token bookkeeping: per tile a warpgroup takes the turn
    n_blocks + 1 times (prologue, each loop step, final PV); `turn` counts its takes so far (earlier n_blocks +
    earlier tiles) and the k-th take waits for parity k & 1. `handover` (``TileHandover``): the previous tile's Q
    buffer, released after the prologue where LATE_RELEASE (``_release_stored``). TC_ROWSUM: the row sums `l` are
    [BLOCK_M, 8] (zero on entry) and follow O: each P V step's companion GEMM adds the block's sums, and they are
    rescaled with O. Returns the new ``OnlineSoftmax``.

    KV_FALLING: K/V blocks in falling order (``_kv_block``), so the masked block comes first. Set where a tile has
    at most one (non-causal: the S tail; causal with K/V blocks as wide as the tile: the diagonal): it is the
    prologue's, and the loop is built without a mask branch. PEEL_DIAGONAL: a causal diagonal over two blocks, the
    second taken by a step of its own before the loop (where the tile has a second block), so the loop again has
    no mask.
    """
    m_i = state.m
    l_i = state.l
    acc = state.acc
    n_full = tile.n_full
    n_blocks = tile.n_blocks
    # prologue: S_0, softmax_0 (acc is zero: no rescale needed)
    st = kv.index()
    mem.k.acquire_filled(kv)
    pingpong.take(turn.phase())
    s = _qk_async(tile.q_smem, mem.k.bufs.index(st), cfg.s_layout, cfg.BLOCK_M, cfg.BLOCK_N)
    pingpong.pass_on()
    s = warpgroup_mma_wait(num_outstanding=0, deps=(s, ))
    mem.k.release(st)
    b0 = _kv_block(0, n_blocks, cfg.KV_FALLING)
    # falling: the first block is the causal diagonal or the last (S tail) block, masked whether full or not
    masked0 = True if cfg.KV_FALLING else n_full == 0
    m_i, p = _block_probs(s, None, b0 * cfg.BLOCK_N, masked0, tile, cfg, WG, cfg.HALVES, cfg.PEEL_DIAGONAL)
    if not cfg.TC_ROWSUM:
        l_i = _block_row_sums(p, cfg)
    if cfg.LATE_RELEASE:
        _release_stored(handover.stored, handover.q_empty_prev)
    # P crosses the loop back edge. 16-bit: as the A operand. fp8: as fp32, packed at the top of the next step; an
    # fp8 tensor carried by the loop is split into single bytes and re-packed each step (~450 PRMT in the SASS).
    if cfg.V_TRANSPOSED:
        p_keep = p
    else:
        p_keep = _p_operand(p, mem.v.bufs.dtype, cfg.p_layout, cfg.V_TRANSPOSED)

    j0 = 1
    if cfg.PEEL_DIAGONAL:  # the diagonal's second block, masked, before a loop built without a mask
        if n_blocks > 1:
            m_i, l_i, acc, p_keep = _overlapped_step(1, "always", kv, turn, tile, mem, pingpong, m_i, l_i, acc,
                                                     p_keep, WG, cfg)
        j0 = 2
    for j in range(j0, n_blocks):
        m_i, l_i, acc, p_keep = _overlapped_step(j, "never" if cfg.KV_FALLING else "past_n_full", kv, turn, tile, mem,
                                                 pingpong, m_i, l_i, acc, p_keep, WG, cfg)

    # final PV
    if cfg.V_TRANSPOSED:
        p_op = _p_operand(p_keep, mem.v.bufs.dtype, cfg.p_layout, cfg.V_TRANSPOSED)
    else:
        p_op = p_keep
    last = kv.advanced(n_blocks).previous()
    st = mem.v.acquire_filled(last)
    turn_parity = turn.advanced(n_blocks).phase()
    acc, l_i = _gemm_in_turn(p_op, _v_operand(mem.v.bufs, st, cfg.V_TRANSPOSED), acc, True, mem.v.empty.index(st),
                             pingpong, turn_parity, mem.ones if cfg.TC_ROWSUM else None, l_i)
    return OnlineSoftmax(m_i, l_i, acc)


@gluon.jit
def _overlapped_step(j, MASK: gl.constexpr, kv, turn, tile, mem, pingpong, m_i, l_i, acc, p_keep, WG: gl.constexpr,
                     cfg):
    """Step j of ``_ws_tile_overlapped``: S_j = Q K_j^T and O += P_{j-1} V_{j-1} issued back to back, softmax(S_j)
    while the P V GEMM runs, then its wait and O's rescale. MASK: "always", "never", or "past_n_full" (the block's
    run-time, warp-uniform flag: one of the tile's last blocks, rising order). `p_keep`: P_{j-1} as the loop
    carries it. Returns (m, l, O, P_j as carried)."""
    if cfg.V_TRANSPOSED:
        p_op = _p_operand(p_keep, mem.v.bufs.dtype, cfg.p_layout, cfg.V_TRANSPOSED)
    else:
        p_op = p_keep
    pos = kv.advanced(j)
    st = pos.index()
    prev = pos.previous()
    st_prev = prev.index()
    mem.k.acquire_filled(pos)
    mem.v.acquire_filled(prev)
    pingpong.take(turn.advanced(j).phase())
    s = _qk_async(tile.q_smem, mem.k.bufs.index(st), cfg.s_layout, cfg.BLOCK_M, cfg.BLOCK_N)
    acc = warpgroup_mma(p_op, _v_operand(mem.v.bufs, st_prev, cfg.V_TRANSPOSED), acc, is_async=True)
    l_blk = l_i
    if cfg.TC_ROWSUM:
        l_blk = _rowsum_mma(p_op, mem.ones, l_i)
    pingpong.pass_on()
    # groups retire in order: S_j is done
    s = warpgroup_mma_wait(num_outstanding=2 if cfg.TC_ROWSUM else 1, deps=(s, ))
    mem.k.release(st)
    b = _kv_block(j, tile.n_blocks, cfg.KV_FALLING)
    if MASK == "past_n_full":
        masked = b >= tile.n_full
    else:
        masked = MASK == "always"
    m_new, p = _block_probs(s, m_i, b * cfg.BLOCK_N, masked, tile, cfg, WG, cfg.HALVES)
    alpha = gl.exp2(m_i - m_new)
    if not cfg.TC_ROWSUM:
        l_i = _row_sums_after(l_i, p, alpha, cfg)
    if cfg.LATE_PV_WAIT:  # the row sums follow every exponential of the block, so the wait below follows them too
        l_i = _scheduling_fence(l_i)
    if cfg.V_TRANSPOSED:
        p_next = p
    else:
        p_next = _p_operand(p, mem.v.bufs.dtype, cfg.p_layout, cfg.V_TRANSPOSED)
    acc, l_blk = _wait_pv(acc, l_blk, 0, cfg.TC_ROWSUM)
    if cfg.TC_ROWSUM:
        l_i = _rescale(l_i + l_blk, alpha)
    mem.v.release(st_prev)
    acc = _rescale(acc, alpha)
    return m_new, l_i, acc, p_next


@gluon.jit
def _wait_pv(acc, l_blk, num_outstanding: gl.constexpr, TC_ROWSUM: gl.constexpr):
    """Wait for a P V GEMM (and, TC_ROWSUM, its row-sum companion `l_blk`; otherwise `l_blk` passes through),
    leaving `num_outstanding` later groups in flight."""
    if TC_ROWSUM:
        return warpgroup_mma_wait(num_outstanding=num_outstanding, deps=(acc, l_blk))
    else:
        return warpgroup_mma_wait(num_outstanding=num_outstanding, deps=(acc, )), l_blk


@gluon.jit
def _ws_consumer(WG: gl.constexpr, mem, o_ptr, o_desc, lse_ptr, qk_scale, seq_len, num_bh, queue, cfg):
    BLOCK_M: gl.constexpr = cfg.BLOCK_M
    BLOCK_N: gl.constexpr = cfg.BLOCK_N
    CONSUMERS: gl.constexpr = cfg.CONSUMERS
    BLOCK_M_CTA: gl.constexpr = CONSUMERS * BLOCK_M
    pingpong = PingPong(mem.turns.index(WG), mem.turns.index((WG + 1) % CONSUMERS), cfg.PINGPONG)

    schedule = hopper_tiles(seq_len, num_bh, BLOCK_M_CTA, BLOCK_N, cfg.CAUSAL, cfg.HEAD_GROUP)
    kv = ring_start(cfg.STAGES)
    q = ring_start(2)
    stored = 0  # the previous tile went out by TMA store (with LATE_RELEASE its Q buffer is still held)
    if cfg.DYNAMIC_TILES:
        mbarrier_wait(mem.q.ready.index(0), 0)
        tile_id = queue.take(0)
        while tile_id < schedule.num_tiles:
            kv, q, stored = _ws_consume_tile(tile_id, kv, q, stored, WG, mem, pingpong, schedule, o_ptr, o_desc,
                                             lse_ptr, qk_scale, seq_len, cfg)
            mbarrier_wait(mem.q.ready.index(q.index()), q.phase())
            tile_id = queue.take(q.index())
    else:
        for tile_id in range(gl.program_id(0), schedule.num_tiles, gl.num_programs(0)):
            kv, q, stored = _ws_consume_tile(tile_id, kv, q, stored, WG, mem, pingpong, schedule, o_ptr, o_desc,
                                             lse_ptr, qk_scale, seq_len, cfg)
    if cfg.TMA_STORE and cfg.DEFER_WAIT:  # shared memory must outlive the last store
        tma_store_wait(0)


@gluon.jit
def _ws_consume_tile(tile_id, kv, q, stored, WG: gl.constexpr, mem, pingpong, schedule, o_ptr, o_desc, lse_ptr,
                     qk_scale, seq_len, cfg):
    """Consumer warpgroup WG's share of one tile: its rows' K/V loop and epilogue. Returns the ring positions after
    it and whether its O went out by TMA store."""
    BLOCK_M: gl.constexpr = cfg.BLOCK_M
    BLOCK_N: gl.constexpr = cfg.BLOCK_N
    CONSUMERS: gl.constexpr = cfg.CONSUMERS
    s_layout: gl.constexpr = cfg.s_layout
    bh, off_m, n_full, n_blocks = schedule.plan(tile_id)
    rows = off_m + WG * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, s_layout))
    m_i = gl.full([BLOCK_M], -float("inf"), gl.float32, gl.SliceLayout(1, s_layout))
    l_i = _zero_row_sums(cfg)
    acc = gl.zeros([BLOCK_M, cfg.HEAD_DIM], gl.float32, cfg.o_layout)
    qb = q.index()
    mbarrier_wait(mem.q.ready.index(qb), q.phase())
    q_smem = mem.q.bufs.index(CONSUMERS * qb + WG)
    tile = QueryTile(bh, rows, seq_len, qk_scale, n_full, n_blocks, q_smem)
    state = OnlineSoftmax(m_i, l_i, acc)
    # One loop over all K/V blocks with a uniform run-time branch for the masked ones. (Two loops, unmasked
    # [0, n_full) then masked [n_full, n_blocks), as in the simple kernel, miscomputed inside a warp-specialized
    # partition with Triton 3.6 whenever the first loop had zero trips: wrong output, illegal addresses.)
    if cfg.OVERLAP:
        handover = TileHandover(stored, mem.q.empty.index(1 - qb))
        turn = RingPosition(kv.count + q.count, 1)
        state = _ws_tile_overlapped(kv, turn, tile, mem, pingpong, handover, state, WG, cfg)
    else:
        j0 = 0
        if cfg.KV_FALLING:  # the last block in front of a loop that then needs no mask branch
            # non-causal: masked only if it is a partial S tail (fp8's 256-key builds, H200: +1-2% over always)
            state = _ws_block(kv, tile, mem, pingpong, state, (n_blocks - 1) * BLOCK_N,
                              True if cfg.CAUSAL else n_full < n_blocks, cfg)
            if cfg.LATE_RELEASE:
                _release_stored(stored, mem.q.empty.index(1 - qb))
            j0 = 1
        for j in range(j0, n_blocks):
            b = _kv_block(j, n_blocks, cfg.KV_FALLING)
            state = _ws_block(kv.advanced(j), tile, mem, pingpong, state, b * BLOCK_N,
                              False if cfg.KV_FALLING else b >= n_full, cfg)
            if cfg.LATE_RELEASE and not cfg.KV_FALLING:
                if j == 0:
                    _release_stored(stored, mem.q.empty.index(1 - qb))
    kv = kv.advanced(n_blocks)
    q = q.advanced(1)
    m_i = state.m
    acc = state.acc
    l_i = _row_sums(state.l, m_i, cfg)
    row0 = off_m + WG * BLOCK_M
    if cfg.TMA_STORE and row0 + BLOCK_M <= seq_len:
        if cfg.O_SEPARATE:  # its own O buffer: Q's is free now
            mem.q.release(qb)
            _epilogue_tma(acc, l_i, mem.o_bufs.index(WG), o_desc, bh * seq_len + row0, cfg.DEFER_WAIT)
        else:  # Q's buffer holds O until the store has read it: now, or during the next tile (LATE_RELEASE)
            _epilogue_tma(acc, l_i, q_smem, o_desc, bh * seq_len + row0, cfg.DEFER_WAIT)
            if not cfg.LATE_RELEASE:
                mem.q.release(qb)
        stored = 1
        if cfg.WRITE_LSE:
            _store_lse(m_i, l_i, lse_ptr, tile)
    else:
        mem.q.release(qb)
        stored = 0
        _epilogue(acc, m_i, l_i, o_ptr, lse_ptr, tile, cfg.HEAD_DIM, cfg.WRITE_LSE)
    return kv, q, stored


@gluon.jit(do_not_specialize=["seq_len", "num_bh"])  # S or B*H == 1 as a constant: the aggregates take none
def _attn_fwd_ws(q_desc, k_desc, v_desc, o_ptr, o_desc, lse_ptr, qk_scale, seq_len, num_bh, tile_counter,
                 HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
                 CAUSAL: gl.constexpr, V_TRANSPOSED: gl.constexpr, WRITE_LSE: gl.constexpr, PINGPONG: gl.constexpr,
                 OVERLAP: gl.constexpr, HEAD_GROUP: gl.constexpr, TMA_STORE: gl.constexpr, O_SEPARATE: gl.constexpr,
                 DEFER_WAIT: gl.constexpr, CONSUMER_REGS: gl.constexpr, PRODUCER_REGS: gl.constexpr,
                 TC_ROWSUM: gl.constexpr, DIAGONAL_HALVES: gl.constexpr, MASKED_FIRST: gl.constexpr,
                 CONSUMERS: gl.constexpr, THREAD_ROWSUM: gl.constexpr, PEEL_DIAGONAL: gl.constexpr,
                 LATE_PV_WAIT: gl.constexpr, DYNAMIC_TILES: gl.constexpr, num_warps: gl.constexpr):
    gl.static_assert(num_warps == 4, "the default partition is consumer warpgroup 0: launch with num_warps=4")
    gl.static_assert(CONSUMERS == 2 or CONSUMERS == 3, "two or three consumer warpgroups")
    dtype: gl.constexpr = q_desc.dtype
    cfg = HopperConfig(dtype, 4, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, CAUSAL, V_TRANSPOSED, WRITE_LSE,
                       PINGPONG=PINGPONG, OVERLAP=OVERLAP, HEAD_GROUP=HEAD_GROUP, TMA_STORE=TMA_STORE,
                       O_SEPARATE=O_SEPARATE, DEFER_WAIT=DEFER_WAIT, TC_ROWSUM=TC_ROWSUM,
                       DIAGONAL_HALVES=DIAGONAL_HALVES, MASKED_FIRST=MASKED_FIRST, CONSUMERS=CONSUMERS,
                       THREAD_ROWSUM=THREAD_ROWSUM, PEEL_DIAGONAL=PEEL_DIAGONAL, LATE_PV_WAIT=LATE_PV_WAIT,
                       DYNAMIC_TILES=DYNAMIC_TILES)
    # Q: [2 buffers x CONSUMERS warpgroups] tiles of [BLOCK_M, D]; K/V: STAGES stages shared by the consumers
    q_bufs = gl.allocate_shared_memory(dtype, [2 * CONSUMERS] + q_desc.block_type.shape, q_desc.layout)
    k_bufs = gl.allocate_shared_memory(dtype, [STAGES] + k_desc.block_type.shape, k_desc.layout)
    v_bufs = gl.allocate_shared_memory(dtype, [STAGES] + v_desc.block_type.shape, v_desc.layout)
    if TMA_STORE and O_SEPARATE:  # fp8: O (bf16) cannot be staged in Q's fp8 buffers; one O tile per consumer
        o_bufs = gl.allocate_shared_memory(o_desc.dtype, [CONSUMERS] + o_desc.block_type.shape, o_desc.layout)
    else:
        o_bufs = q_bufs
    if TC_ROWSUM:  # the B operand of the row-sum GEMM (_rowsum_mma): [8, BLOCK_N] ones, read K-major like V^T
        ones_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([8, BLOCK_N], dtype)
        ones = gl.allocate_shared_memory(dtype, [8, BLOCK_N], ones_layout, _ones([8, BLOCK_N], dtype, num_warps))
        fence_async_shared()
    else:
        ones = k_bufs
    q_ready = gl.allocate_shared_memory(gl.int64, [2, 1], MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [2, 1], MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], MBarrierLayout())
    turns = gl.allocate_shared_memory(gl.int64, [CONSUMERS, 1], MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier_init(q_ready.index(i), count=1)
        mbarrier_init(q_empty.index(i), count=CONSUMERS)
        mbarrier_init(turns.index(i), count=1)
    for i in gl.static_range(2, CONSUMERS):  # a third consumer's turn barrier
        mbarrier_init(turns.index(i), count=1)
    for i in gl.static_range(STAGES):
        mbarrier_init(k_ready.index(i), count=1)
        mbarrier_init(k_empty.index(i), count=CONSUMERS)
        mbarrier_init(v_ready.index(i), count=1)
        mbarrier_init(v_empty.index(i), count=CONSUMERS)
    if PINGPONG:
        # warpgroup 0 goes first: complete phase 0 of its turn barrier up front; the token goes round in order
        mbarrier_arrive(turns.index(0))
    mem = WsShared(SmemChannel(q_bufs, q_ready, q_empty), SmemChannel(k_bufs, k_ready, k_empty),
                   SmemChannel(v_bufs, v_ready, v_empty), turns, o_bufs, ones)
    if DYNAMIC_TILES:  # tiles claimed from `tile_counter` (*i32, zeroed), each id published in its Q slot's word
        slots = gl.allocate_shared_memory(gl.int32, [2, 1], gl.SwizzledSharedLayout(1, 1, 1, [0]))
        queue = TileQueue(tile_counter, slots)
    else:  # tiles p, p + P, ...: a queue never used (`tile_counter` is None; partitions take values, not None)
        queue = TileQueue(lse_ptr, turns)

    if CONSUMERS == 2:
        gl.warp_specialize([
            (_ws_consumer, (0, mem, o_ptr, o_desc, lse_ptr, qk_scale, seq_len, num_bh, queue, cfg)),
            (_ws_consumer, (1, mem, o_ptr, o_desc, lse_ptr, qk_scale, seq_len, num_bh, queue, cfg)),
            (_ws_producer, (q_desc, k_desc, v_desc, mem, seq_len, num_bh, queue, cfg)),
        ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])
    else:  # FA3's three consumer warpgroups (§3.1): a 192-row tile, the ping-pong token passed round all three
        gl.warp_specialize([
            (_ws_consumer, (0, mem, o_ptr, o_desc, lse_ptr, qk_scale, seq_len, num_bh, queue, cfg)),
            (_ws_consumer, (1, mem, o_ptr, o_desc, lse_ptr, qk_scale, seq_len, num_bh, queue, cfg)),
            (_ws_consumer, (2, mem, o_ptr, o_desc, lse_ptr, qk_scale, seq_len, num_bh, queue, cfg)),
            (_ws_producer, (q_desc, k_desc, v_desc, mem, seq_len, num_bh, queue, cfg)),
        ], [4, 4, 1], [CONSUMER_REGS, CONSUMER_REGS, PRODUCER_REGS])
