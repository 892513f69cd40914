"""Forward attention for Blackwell (sm_100a) written in Gluon: TMA, tcgen05 MMAs into tensor memory (TMEM),
mbarriers, warp specialization and persistent scheduling. The subject of the ptxas ``cutlass`` name effect
(docs/ptxas_cutlass.md#the-cutlass-name-path): the kernel's own name is plain; the ``cutlass_`` variant comes from tritonhook's rename.

STATUS: compiled for sm_100a and inspected (PTX, cubin) on machines with no Blackwell GPU; never run. See
docs/blackwell_attention.md.

Written for this project. The design (one loader warp, one MMA-issuer warp, softmax and correction warps talking
through mbarriers; S in TMEM, P written over S in TMEM and fed to the PV MMA from there; persistent tile loop) was
learned from Triton's Gluon tutorials 04-tma, 06-tcgen05, 07-persistence and 08-warp-specialization and from its
example python/examples/gluon/01-attention-forward.py, all at tag v3.6.1 of the facebookexperimental/triton mirror,
and from the installed Gluon sources of triton 3.6.0 and 3.9.0. No line is copied from them; this kernel is simpler
(one 128-row query tile per CTA and one softmax warpgroup instead of two ping-ponged ones, no FADD2/FMUL2 packing,
no conditional rescale) and adds what the example leaves out: masked tails for any sequence length.

Per tile (128 query rows of one batch*head) and per K/V block j of 128 keys:

    load (1 warp)        Q once, then K_j, V_j into a ring of KV_STAGES shared-memory slots (TMA + expect-tx)
    mma (1 warp)         S_{j+1} = Q K_{j+1}^T  -> s_tmem[(j+1) % 2]   (issued before PV_j, so softmax(j+1)
                         O += P_j V_j           -> o_tmem               overlaps the PV MMA of block j)
    softmax (4 warps)    S_j from TMEM, masks, running max m, alpha = 2^(m_old - m_new) sent to the correction
                         warps, P_j = 2^(S_j*scale - m) written as fp16/bf16/fp8 over S_j in TMEM, running sum l
    correction (4 warps, the default partition)
                         O *= alpha once PV_{j-1} is done, before PV_j is issued; at the end O / l, masked store

Barriers (all count 1): q_ready/q_empty, kv_ready[s]/kv_empty[s] (TMA ring), s_ready[b] (S_b written),
p_ready[b] (P_b written, S_b consumed), o_ready (a PV MMA finished), o_free (O corrected, next PV may go),
a_ready[b]/a_empty[b] (alpha or final l handed to the correction warps through shared memory). Producers start
waiting "empty" barriers with the flipped phase, so fresh barriers count as free. tcgen05 MMAs issued by one thread
run in order; the PV MMA that reads P_j is issued before the QK MMA that overwrites that TMEM buffer.

Tensors are (B, H, S, D) contiguous, viewed as 2-D (B*H*S, D) for TMA. A tile running past S reads the next head's
rows (zeros past the end): keys >= S get -inf scores (P = 0), and rows >= S are not stored.
fp8 (e4m3 / e5m2): both GEMMs are tcgen05 ``kind::f8f6f4``; P is rounded to the input's fp8 format, the output
is bf16.

This module holds the device code only, but for its tile order (``_tile``, in ``schedule.py`` beside Hopper's) and
the ring positions and shared-memory channels both families synchronize through (``pipeline.py``); its host side
(configurations, the torch entry point, the compile helper) is ``blackwell.py``.
"""
from ._compat import (
    MBarrierLayout, aggregate, allocate_tensor_memory, data_aggregate, gl, gluon, mbarrier_arrive, mbarrier_expect,
    mbarrier_init, mbarrier_invalidate, mbarrier_wait, tcgen05_commit, tcgen05_mma, tensor_memory_descriptor, tma_load,
    tmem_layout, tmem_reg_layout, tmem_reinterpret,
)
from .pipeline import SmemChannel, ring_start
from .schedule import blackwell_tiles


# ----------------------------------------------------------------------------------------------------------------
# what the partitions share: the compile-time configuration, the channels between them
# ----------------------------------------------------------------------------------------------------------------
@aggregate
class BlackwellConfig:
    """The kernel's compile-time knobs and the TMEM and register layouts they imply, built once by the kernel and
    handed to every partition as one argument."""
    dtype: gl.constexpr
    BLOCK_M: gl.constexpr
    BLOCK_N: gl.constexpr
    HEAD_DIM: gl.constexpr
    KV_STAGES: gl.constexpr
    O_SPLIT: gl.constexpr
    CAUSAL: gl.constexpr
    s_tl: gl.constexpr  # TMEM layouts of S, O and P (P packed: 2 (16-bit) or 4 (8-bit) elements a 32-bit column)
    o_tl: gl.constexpr
    p_tl: gl.constexpr
    s_layout: gl.constexpr  # register layouts of tcgen05.ld/st: S, P, and one of O's O_SPLIT column slices
    p_layout: gl.constexpr
    o_layout: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, dtype, BLOCK_M, BLOCK_N, HEAD_DIM, KV_STAGES, O_SPLIT, CAUSAL, num_warps):
        self.dtype = gl.constexpr(dtype)
        self.BLOCK_M = gl.constexpr(BLOCK_M)
        self.BLOCK_N = gl.constexpr(BLOCK_N)
        self.HEAD_DIM = gl.constexpr(HEAD_DIM)
        self.KV_STAGES = gl.constexpr(KV_STAGES)
        self.O_SPLIT = gl.constexpr(O_SPLIT)
        self.CAUSAL = gl.constexpr(CAUSAL)
        s_tl = tmem_layout((BLOCK_M, BLOCK_N))
        o_tl = tmem_layout((BLOCK_M, HEAD_DIM))
        p_tl = tmem_layout((BLOCK_M, BLOCK_N))
        self.s_tl = gl.constexpr(s_tl)
        self.o_tl = gl.constexpr(o_tl)
        self.p_tl = gl.constexpr(p_tl)
        self.s_layout = gl.constexpr(tmem_reg_layout(gl.float32, [BLOCK_M, BLOCK_N], s_tl, num_warps))
        self.p_layout = gl.constexpr(tmem_reg_layout(dtype, [BLOCK_M, BLOCK_N], p_tl, num_warps))
        self.o_layout = gl.constexpr(tmem_reg_layout(gl.float32, [BLOCK_M, HEAD_DIM // O_SPLIT], o_tl, num_warps,
                                                     [BLOCK_M, HEAD_DIM]))


@data_aggregate
class ScoreChannel:
    """S in two TMEM buffers between the MMA warp and the softmax warps, P written over each: s_ready[b] completes
    when S_b is written, p_ready[b] when P_b is (S_b consumed). Both sides walk the buffers with a 2-slot
    ``RingPosition``."""
    s_tmem: tensor_memory_descriptor
    s_ready: gl.shared_memory_descriptor
    p_ready: gl.shared_memory_descriptor

    @gluon.jit
    def wait_scores(self, pos):
        """Softmax side: wait until S at `pos` is written; returns its buffer."""
        return pos.wait(self.s_ready)

    @gluon.jit
    def wait_probs(self, pos):
        """MMA side: wait until P at `pos` is written; returns its buffer."""
        return pos.wait(self.p_ready)

    @gluon.jit
    def probs(self, b, cfg):
        """Buffer b as P: the input dtype, packed (``BlackwellConfig.p_tl``)."""
        return tmem_reinterpret(self.s_tmem.index(b), cfg.dtype, [cfg.BLOCK_M, cfg.BLOCK_N], cfg.p_tl)

    @gluon.jit
    def write_probs(self, b, p, cfg):
        """Softmax side: P_b over S_b, rounded to the input dtype, then p_ready[b]."""
        self.probs(b, cfg).store(gl.convert_layout(p.to(cfg.dtype), cfg.p_layout))
        mbarrier_arrive(self.p_ready.index(b), count=1)


@data_aggregate
class KVRing:
    """What the load warp fills for the MMA warp: Q's single buffer with its ready/empty barriers, and the K/V
    channel of KV_STAGES slots (K_j and V_j in consecutive slots)."""
    q_smem: gl.shared_memory_descriptor
    q_ready: gl.shared_memory_descriptor
    q_empty: gl.shared_memory_descriptor
    kv: SmemChannel


@data_aggregate
class OAccumulator:
    """O in TMEM between the MMA warp, whose P V MMAs accumulate into it (`ready` completes with each), and the
    correction warps, which rescale it in between and then let the next P V MMA go (`free`). Both barriers are
    single: their phase is the parity of a ``RingPosition`` of 1 slot."""
    tmem: tensor_memory_descriptor
    ready: gl.shared_memory_descriptor
    free: gl.shared_memory_descriptor

    @gluon.jit
    def wait_free(self, pv):
        """MMA side: wait until O is corrected for P V MMA number `pv`."""
        mbarrier_wait(self.free, pv.phase())

    @gluon.jit
    def wait_done(self, pos):
        """Correction side: wait for the P V MMA at `pos` to finish."""
        mbarrier_wait(self.ready, pos.phase())

    @gluon.jit
    def release(self):
        """Correction side: O is corrected, the next P V MMA may go."""
        mbarrier_arrive(self.free, count=1)


@data_aggregate
class SoftmaxRows:
    """The softmax warps' query rows of a tile: their indices, the sequence length (masks) and the softmax scale."""
    rows: gl.tensor
    seq_len: gl.base_value
    qk_scale: gl.base_value


@data_aggregate
class RowStats:
    """A tile's running softmax statistics: row maxima `m` and row sums `l`."""
    m: gl.tensor
    l: gl.tensor


# ----------------------------------------------------------------------------------------------------------------
# partitions
# ----------------------------------------------------------------------------------------------------------------
@gluon.jit
def _load_kv(channel, pos, desc, row0, j, cfg):
    """Block j of `desc` (K or V) into the channel's slot at `pos`, once free; returns the next position."""
    KV_BYTES: gl.constexpr = cfg.BLOCK_N * cfg.HEAD_DIM * cfg.dtype.primitive_bitwidth // 8
    slot = channel.acquire_free(pos)
    mbarrier_expect(channel.ready.index(slot), KV_BYTES)
    tma_load(desc, [row0 + j * cfg.BLOCK_N, 0], channel.ready.index(slot), channel.bufs.index(slot))
    return pos.advanced(1)


@gluon.jit
def _load_partition(q_desc, k_desc, v_desc, ring, seq_len, num_bh, cfg):
    Q_BYTES: gl.constexpr = cfg.BLOCK_M * cfg.HEAD_DIM * cfg.dtype.primitive_bitwidth // 8
    schedule = blackwell_tiles(seq_len, num_bh, cfg)
    kv = ring_start(cfg.KV_STAGES)
    tiles = ring_start(1)
    for tile in range(gl.program_id(0), schedule.num_tiles, gl.num_programs(0)):
        bh, m_blk, n_full, n_blocks = schedule.plan(tile)
        row0 = bh * seq_len
        # Q: single buffer, freed by the MMA warp's commit after the tile's last QK MMA
        mbarrier_wait(ring.q_empty, tiles.free_phase())
        mbarrier_expect(ring.q_ready, Q_BYTES)
        tma_load(q_desc, [row0 + m_blk * cfg.BLOCK_M, 0], ring.q_ready, ring.q_smem)
        for j in range(n_blocks):  # K_j then V_j, each in the next slot of the ring
            kv = _load_kv(ring.kv, kv, k_desc, row0, j, cfg)
            kv = _load_kv(ring.kv, kv, v_desc, row0, j, cfg)
        tiles = tiles.advanced(1)


@gluon.jit
def _issue_qk(ring, slot, scores, buf):
    """S_buf = Q K^T, K in ring slot `slot`; its completion marks S_buf written and frees the slot."""
    tcgen05_mma(ring.q_smem, ring.kv.bufs.index(slot).permute((1, 0)), scores.s_tmem.index(buf), use_acc=False,
                mbarriers=[scores.s_ready.index(buf), ring.kv.empty.index(slot)])


@gluon.jit
def _mma_partition(ring, scores, o_acc, seq_len, num_bh, cfg):
    schedule = blackwell_tiles(seq_len, num_bh, cfg)
    kv = ring_start(cfg.KV_STAGES)  # K/V ring slots consumed
    s_pos = ring_start(2)  # S/P buffers used
    pv = ring_start(1)  # PV MMAs issued (o_free phase)
    tiles = ring_start(1)
    for tile in range(gl.program_id(0), schedule.num_tiles, gl.num_programs(0)):
        bh, m_blk, n_full, n_blocks = schedule.plan(tile)
        mbarrier_wait(ring.q_ready, tiles.phase())
        # S_0 = Q K_0^T
        slot = ring.kv.acquire_filled(kv)
        buf = s_pos.index()
        _issue_qk(ring, slot, scores, buf)
        kv = kv.advanced(1)
        for j in range(n_blocks):
            v_pos = kv
            kv = kv.advanced(1)
            if j + 1 < n_blocks:
                # S_{j+1} = Q K_{j+1}^T into the other buffer; the PV MMA that read P_{j-1} from it is already
                # issued, and tcgen05 MMAs of one thread execute in order
                slot = ring.kv.acquire_filled(kv)
                nbuf = s_pos.advanced(1).index()
                _issue_qk(ring, slot, scores, nbuf)
                kv = kv.advanced(1)
            # O (+)= P_j V_j once P_j is in TMEM and the correction warps have rescaled O
            vslot = ring.kv.acquire_filled(v_pos)
            buf = scores.wait_probs(s_pos)
            o_acc.wait_free(pv)
            p_tmem = scores.probs(buf, cfg)
            tcgen05_mma(p_tmem, ring.kv.bufs.index(vslot), o_acc.tmem, use_acc=j > 0,
                        mbarriers=[o_acc.ready, ring.kv.empty.index(vslot)])
            pv = pv.advanced(1)
            s_pos = s_pos.advanced(1)
        # Q may be overwritten once every MMA of this tile has completed
        tcgen05_commit(ring.q_empty)
        tiles = tiles.advanced(1)


@gluon.jit
def _softmax_block(j, s_pos, a_pos, stats, tile, scores, alphas, cfg, MASKED: gl.constexpr):
    """Block j of a tile: the new row maxima, alpha handed to the correction warps, P over S in TMEM, the row sums.
    Returns the next S/P and alpha positions and the new ``RowStats``."""
    buf = scores.wait_scores(s_pos)
    s = scores.s_tmem.index(buf).load(cfg.s_layout)
    if MASKED:
        cols = j * cfg.BLOCK_N + gl.arange(0, cfg.BLOCK_N, layout=gl.SliceLayout(0, cfg.s_layout))
        valid = gl.expand_dims(cols < tile.seq_len, 0)
        if cfg.CAUSAL:
            valid = valid & (gl.expand_dims(cols, 0) <= gl.expand_dims(tile.rows, 1))
        s = gl.where(valid, s, -float("inf"))
    m_new = gl.maximum(stats.m, gl.max(s, axis=1) * tile.qk_scale)
    alpha = gl.exp2(stats.m - m_new)
    # hand alpha to the correction warps first, so that they rescale O while P is computed
    alphas.send(a_pos, alpha)
    p = gl.exp2(s * tile.qk_scale - gl.expand_dims(m_new, 1))
    scores.write_probs(buf, p, cfg)
    l_i = stats.l * alpha + gl.sum(p, axis=1)
    return s_pos.advanced(1), a_pos.advanced(1), RowStats(m_new, l_i)


@gluon.jit
def _softmax_partition(scores, alphas, qk_scale, seq_len, num_bh, cfg):
    row_layout: gl.constexpr = gl.SliceLayout(1, cfg.s_layout)
    schedule = blackwell_tiles(seq_len, num_bh, cfg)
    s_pos = ring_start(2)
    a_pos = ring_start(2)
    for tile in range(gl.program_id(0), schedule.num_tiles, gl.num_programs(0)):
        bh, m_blk, n_full, n_blocks = schedule.plan(tile)
        rows = SoftmaxRows(m_blk * cfg.BLOCK_M + gl.arange(0, cfg.BLOCK_M, layout=row_layout), seq_len, qk_scale)
        stats = RowStats(gl.full([cfg.BLOCK_M], -float("inf"), gl.float32, row_layout),
                         gl.full([cfg.BLOCK_M], 0.0, gl.float32, row_layout))
        for j in range(0, n_full):  # blocks every key of which is visible to every row
            s_pos, a_pos, stats = _softmax_block(j, s_pos, a_pos, stats, rows, scores, alphas, cfg, False)
        for j in range(n_full, n_blocks):  # the causal diagonal and the tail past seq_len
            s_pos, a_pos, stats = _softmax_block(j, s_pos, a_pos, stats, rows, scores, alphas, cfg, True)
        # the row sums go through the same channel as the alphas
        alphas.send(a_pos, stats.l)
        a_pos = a_pos.advanced(1)


@gluon.jit
def _correction_partition(o_acc, o_ptr, alphas, seq_len, num_bh, cfg):
    """The default partition: rescales O in TMEM between PV MMAs, then normalizes and stores it."""
    SUB: gl.constexpr = cfg.HEAD_DIM // cfg.O_SPLIT
    row_layout: gl.constexpr = gl.SliceLayout(1, cfg.o_layout)
    col_layout: gl.constexpr = gl.SliceLayout(0, cfg.o_layout)
    schedule = blackwell_tiles(seq_len, num_bh, cfg)
    a_pos = ring_start(2)
    o_pos = ring_start(1)  # o_ready completions waited for
    for tile in range(gl.program_id(0), schedule.num_tiles, gl.num_programs(0)):
        bh, m_blk, n_full, n_blocks = schedule.plan(tile)
        for j in range(n_blocks):
            alpha = alphas.receive(a_pos, row_layout)
            a_pos = a_pos.advanced(1)
            if j > 0:  # PV_0 starts from zero (use_acc=False): nothing to rescale
                o_acc.wait_done(o_pos)
                o_pos = o_pos.advanced(1)
                for i in gl.static_range(cfg.O_SPLIT):
                    o_part = o_acc.tmem.slice(i * SUB, SUB)
                    o_part.store(o_part.load(cfg.o_layout) * gl.expand_dims(alpha, 1))
            o_acc.release()
        # epilogue: O / l, rows past seq_len belong to the next head (or to nothing) and are not written
        a_buf = alphas.acquire_filled(a_pos)  # not ``receive``: 1 / l is taken before the slot is released
        inv_l = 1.0 / alphas.bufs.index(a_buf).load(row_layout)
        alphas.release(a_buf)
        a_pos = a_pos.advanced(1)
        o_acc.wait_done(o_pos)
        o_pos = o_pos.advanced(1)
        rows = m_blk * cfg.BLOCK_M + gl.arange(0, cfg.BLOCK_M, layout=row_layout)
        row_off = gl.expand_dims((bh * seq_len + rows).to(gl.int64) * cfg.HEAD_DIM, 1)
        row_ok = gl.expand_dims(rows < seq_len, 1)
        for i in gl.static_range(cfg.O_SPLIT):
            o = o_acc.tmem.slice(i * SUB, SUB).load(cfg.o_layout) * gl.expand_dims(inv_l, 1)
            cols = i * SUB + gl.arange(0, SUB, layout=col_layout)
            gl.store(o_ptr + row_off + gl.expand_dims(cols, 0), o.to(o_ptr.dtype.element_ty), mask=row_ok)


# ----------------------------------------------------------------------------------------------------------------
# the kernel
# ----------------------------------------------------------------------------------------------------------------
# seq_len and num_bh are not specialized: one build per configuration serves every shape (and a length of 1 is not
# turned into a constant)
@gluon.jit(do_not_specialize=["seq_len", "num_bh"])
def blackwell_attention_kernel(q_desc, k_desc, v_desc, o_ptr, qk_scale, seq_len, num_bh,
                               HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                               KV_STAGES: gl.constexpr, O_SPLIT: gl.constexpr, CAUSAL: gl.constexpr,
                               SOFTMAX_REGS: gl.constexpr, WORKER_REGS: gl.constexpr, num_warps: gl.constexpr):
    dtype: gl.constexpr = q_desc.dtype
    gl.static_assert(num_warps == 4, "one warpgroup per 128-row tile: TMEM lane i is row i")
    gl.static_assert(BLOCK_M == 128)
    cfg = BlackwellConfig(dtype, BLOCK_M, BLOCK_N, HEAD_DIM, KV_STAGES, O_SPLIT, CAUSAL, num_warps)

    q_smem = gl.allocate_shared_memory(dtype, [BLOCK_M, HEAD_DIM], q_desc.layout)
    kv_smem = gl.allocate_shared_memory(dtype, [KV_STAGES, BLOCK_N, HEAD_DIM], k_desc.layout)
    a_smem = gl.allocate_shared_memory(gl.float32, [2, BLOCK_M], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    # TMEM: 2 x BLOCK_N columns of S (P aliased over it) + HEAD_DIM columns of O  (<= 512)
    s_tmem = allocate_tensor_memory(gl.float32, [2, BLOCK_M, BLOCK_N], cfg.s_tl)
    o_tmem = allocate_tensor_memory(gl.float32, [BLOCK_M, HEAD_DIM], cfg.o_tl)

    q_ready = gl.allocate_shared_memory(gl.int64, [1], MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [1], MBarrierLayout())
    o_ready = gl.allocate_shared_memory(gl.int64, [1], MBarrierLayout())
    o_free = gl.allocate_shared_memory(gl.int64, [1], MBarrierLayout())
    kv_ready = gl.allocate_shared_memory(gl.int64, [KV_STAGES, 1], MBarrierLayout())
    kv_empty = gl.allocate_shared_memory(gl.int64, [KV_STAGES, 1], MBarrierLayout())
    s_ready = gl.allocate_shared_memory(gl.int64, [2, 1], MBarrierLayout())
    p_ready = gl.allocate_shared_memory(gl.int64, [2, 1], MBarrierLayout())
    a_ready = gl.allocate_shared_memory(gl.int64, [2, 1], MBarrierLayout())
    a_empty = gl.allocate_shared_memory(gl.int64, [2, 1], MBarrierLayout())
    mbarrier_init(q_ready, count=1)
    mbarrier_init(q_empty, count=1)
    mbarrier_init(o_ready, count=1)
    mbarrier_init(o_free, count=1)
    for i in gl.static_range(KV_STAGES):
        mbarrier_init(kv_ready.index(i), count=1)
        mbarrier_init(kv_empty.index(i), count=1)
    for i in gl.static_range(2):
        mbarrier_init(s_ready.index(i), count=1)
        mbarrier_init(p_ready.index(i), count=1)
        mbarrier_init(a_ready.index(i), count=1)
        mbarrier_init(a_empty.index(i), count=1)

    scores = ScoreChannel(s_tmem, s_ready, p_ready)
    alphas = SmemChannel(a_smem, a_ready, a_empty)
    ring = KVRing(q_smem, q_ready, q_empty, SmemChannel(kv_smem, kv_ready, kv_empty))
    o_acc = OAccumulator(o_tmem, o_ready, o_free)
    gl.warp_specialize([
        (_correction_partition, (o_acc, o_ptr, alphas, seq_len, num_bh, cfg)),
        (_softmax_partition, (scores, alphas, qk_scale, seq_len, num_bh, cfg)),
        (_mma_partition, (ring, scores, o_acc, seq_len, num_bh, cfg)),
        (_load_partition, (q_desc, k_desc, v_desc, ring, seq_len, num_bh, cfg)),
    ], [4, 1, 1], [SOFTMAX_REGS, WORKER_REGS, WORKER_REGS])

    mbarrier_invalidate(q_ready)
    mbarrier_invalidate(q_empty)
    mbarrier_invalidate(o_ready)
    mbarrier_invalidate(o_free)
    for i in gl.static_range(KV_STAGES):
        mbarrier_invalidate(kv_ready.index(i))
        mbarrier_invalidate(kv_empty.index(i))
    for i in gl.static_range(2):
        mbarrier_invalidate(s_ready.index(i))
        mbarrier_invalidate(p_ready.index(i))
        mbarrier_invalidate(a_ready.index(i))
        mbarrier_invalidate(a_empty.index(i))

