"""The Hopper ws kernel's knobs, their defaults, and the knobs measured best per (causal, head dim, S).

Tables hold ``((max_seq_len, {knob: value}), ...)`` per (causal, head_dim) in rising max_seq_len; the first entry
with S <= max_seq_len applies over ``ws_defaults``, under any knob the caller passes. All were measured on the H200
with Triton 3.6 (how, and the runs behind each entry: gluon_kernels/README.md). A (causal, head_dim) without an
entry runs the defaults.
"""
from __future__ import annotations

TUNED_WITH_TRITON = (3, 6)
"""The Triton release every table entry was measured with (benchmarks/hopper_attention_tune.py on the H200)."""

WS_KNOBS = {"block_n": "BLOCK_N", "stages": "STAGES", "pingpong": "PINGPONG", "overlap": "OVERLAP",
            "head_group": "HEAD_GROUP", "tma_store": "TMA_STORE", "defer_wait": "DEFER_WAIT",
            "consumer_regs": "CONSUMER_REGS", "producer_regs": "PRODUCER_REGS", "tc_rowsum": "TC_ROWSUM",
            "diagonal_halves": "DIAGONAL_HALVES", "masked_first": "MASKED_FIRST", "consumers": "CONSUMERS",
            "thread_rowsum": "THREAD_ROWSUM", "peel_diagonal": "PEEL_DIAGONAL", "late_pv_wait": "LATE_PV_WAIT",
            "persistent": None, "dynamic_tiles": "DYNAMIC_TILES"}
"""Tuning knobs of the ws kernel (keyword arguments of ``hopper_attention`` / ``compile_hopper_attention``) ->
the constexpr each sets; None for a knob of the launch alone (``persistent``: one program an SM, or one a tile).
``dynamic_tiles`` is the kernel's: resident programs claim their tiles from a counter (``schedule.TileQueue``).
The simple kernel takes ``block_n`` and ``stages``."""

_ANY_S = 2**31 - 1

TUNED_WS: dict[tuple[bool, int], tuple[tuple[int, dict], ...]] = {
    # 16-bit, from `benchmarks/hopper_attention_tune.py --emit-table`, every knob set timed over the defaults
    (False, 64): ((_ANY_S, {"pingpong": False}),),  # one warpgroup's softmax is short: ping-pong only waits
    # likewise; from 2k each thread's share of the row sums (1.3-2.5% on two H200 machine starts); from 8k the
    # previous P V GEMM's wait held after the softmax (0.4-1.4% on three starts;
    # docs/hopper_attention.md#the-goals-at-the-close)
    (False, 128): ((1024, {"pingpong": False}), (4096, {"pingpong": False, "thread_rowsum": True}),
                   (_ANY_S, {"pingpong": False, "thread_rowsum": True, "late_pv_wait": True})),
    # short S: 16-head sections keep K/V in L2 (few tiles a wave); from 2k claimed from a counter (1-2%)
    (True, 64): ((1024, {"head_group": 16, "pingpong": False}),
                 (4096, {"head_group": 16, "pingpong": False, "dynamic_tiles": True}), (_ANY_S, {"pingpong": False})),
    # sections of 8 heads; ping-pong only helps the shortest tiles (each thread's row sums from 8k: 0.5-1.3% on two
    # H200 machine starts; below they cost up to 3.7%). From 2k the tiles are claimed from a counter
    # (`dynamic_tiles`): programs stay resident, and the tiles in flight are consecutive ones, so few heads' K/V
    # (persistent over all heads read 1.3-1.45 GB of DRAM at 16k, FA4 0.24; one program a tile, as FA4 launches,
    # fixed that but paid each tile's prologue; docs/hopper_attention.md#tiles-claimed-from-a-counter)
    (True, 128): ((1024, {"head_group": 8}), (4096, {"head_group": 8, "pingpong": False, "dynamic_tiles": True}),
                  (_ANY_S, {"head_group": 8, "pingpong": False, "thread_rowsum": True, "dynamic_tiles": True})),
}
"""Measured ws knobs for 16-bit inputs (two consumer warpgroups)."""

THREE_OVERLAPPED = {"consumers": 3, "overlap": True, "masked_first": True}
"""FlashAttention-4's D=64 configuration: 192-row tiles over three consumer warpgroups, each overlapping its softmax
with its previous P V GEMM, the ping-pong token passed round all three; non-causal, the S tail's block first, so the
K/V step carries no mask (causal keeps the rising order: its 192-row tile's diagonal spans two 128-key blocks)."""

THREE_OVERLAPPED_FROM: dict[tuple[bool, int], int] = {(False, 64): 2048, (True, 64): 8192}
"""(causal, head dim) -> the S from which the tuned 16-bit build is ``THREE_OVERLAPPED`` (bf16 on the H200,
`hopper_attention.py --variants ws,ws-3wg-ol`, docs/hopper_attention.md). A whole configuration: taken only by a
call that sets no knob; with any knob, the two-consumer ``TUNED_WS`` entry under the caller's knobs."""

_FP8_BN256 = {"block_n": 256, "stages": 3, "overlap": False, "pingpong": False, "defer_wait": False}
"""FlashAttention-3's fp8 tile width: a step's fixed work over twice the keys; overlap spills with it."""
_FP8_BN256_ST2 = {**_FP8_BN256, "stages": 2}
"""2 stages: room for fp8's own O buffer, so the TMA-store epilogue."""
_FP8_DYNAMIC = {"dynamic_tiles": True, "head_group": 4}
"""Causal fp8 from 4k: tiles claimed from a counter in sections of 4 heads (persistent over all heads it read 4.7x
its inputs from DRAM; one program a tile cost it 10-29%)."""

TUNED_WS_FP8: dict[tuple[bool, int], tuple[tuple[int, dict], ...]] = {
    # 256 keys in 2 stages with the row sums on the tensor cores: 1.44-1.54x our bf16 at every S
    (False, 128): ((_ANY_S, {**_FP8_BN256_ST2, "tc_rowsum": True}),),
    # S <= 4k: 128-key tiles (head groups of 4 up to 2k); above, 256 keys in 2 stages (1.9-3.6% over 3 at 8k-16k);
    # from 4k tiles claimed from a counter in sections of 4 heads
    (True, 128): ((2048, {"tc_rowsum": True, "head_group": 4, "pingpong": False}),
                  (4096, {"tc_rowsum": True, "pingpong": False, **_FP8_DYNAMIC}),
                  (_ANY_S, {**_FP8_BN256_ST2, "tc_rowsum": True, **_FP8_DYNAMIC})),
    # 256 keys, falling K/V order; above 1k without the TMA-store epilogue
    (False, 64): ((1024, {**_FP8_BN256, "tc_rowsum": True, "masked_first": True}),
                  (_ANY_S, {**_FP8_BN256, "tc_rowsum": True, "tma_store": False, "masked_first": True})),
    # S <= 1k: 128-key overlapped tiles in 16-head sections; above, 256 keys (falling order past 2k)
    (True, 64): ((1024, {"tc_rowsum": True, "head_group": 16, "tma_store": False, "masked_first": True}),
                 (2048, {**_FP8_BN256, "tma_store": False, "tc_rowsum": True}),
                 (_ANY_S, {**_FP8_BN256, "tma_store": False, "tc_rowsum": True, "masked_first": True})),
}
"""``TUNED_WS`` for fp8 (e4m3) inputs."""


THREE_OVERLAPPED_TUNED: dict[tuple[bool, int], dict] = {
    (False, 64): {"thread_rowsum": True},  # 1.1-1.8% from 2k
    # 1.5-3.5% at 8k and 16k; tiles claimed from a counter in sections of 4 heads (persistent over all heads it read
    # 1.47 GB of DRAM at 16k, FA4 0.27)
    (True, 64): {"thread_rowsum": True, "peel_diagonal": True, "dynamic_tiles": True, "head_group": 4},
}
"""What ``THREE_OVERLAPPED`` runs with per (causal, head dim), each knob faster over it on two H200 machine starts
(bf16, `hopper_attention.py --variants ws,ws-3wg-ol-thread,ws-3wg-ol-peel-thread`, docs/hopper_attention.md)."""


def tuned_knobs(causal: bool, head_dim: int, seq_len: int | None, fp8: bool = False, whole: bool = False) -> dict:
    """The table entry for S = ``seq_len`` (none for None: the defaults). ``whole``: the caller sets no knob, so a
    whole configuration (``THREE_OVERLAPPED``) may be the answer."""
    start = THREE_OVERLAPPED_FROM.get((bool(causal), head_dim))
    if whole and not fp8 and start is not None and seq_len is not None and seq_len >= start:
        return {**THREE_OVERLAPPED, **THREE_OVERLAPPED_TUNED.get((bool(causal), head_dim), {})}
    for max_seq_len, knobs in (TUNED_WS_FP8 if fp8 else TUNED_WS).get((bool(causal), head_dim), ()):
        if seq_len is not None and seq_len <= max_seq_len:
            return knobs
    return {}


def ws_defaults(head_dim: int, fp8: bool = False, consumers: int = 2) -> dict:
    """Every ``WS_KNOBS`` value of the ws kernel before any ``TUNED_WS`` entry. A caller that passes all of them
    (the tuner: ``{**ws_defaults(D), **knob_set}``) measures its knob set over these defaults, not over whatever
    the table holds for that S. ``tma_store`` None (fp8): on where its own O buffer fits (``hopper._config``).
    ``consumer_regs`` / ``producer_regs``: what ``setmaxnreg`` gives each consumer and leaves the producer within
    the SM's 64K registers (3 x 128 threads x 160 + 128 x 24 <= 65,536 for three consumers). Three consumers take
    the plain loop, since the overlapped one spills in the causal builds' K/V step (``THREE_OVERLAPPED_FROM`` runs
    it where it was faster). ``masked_first`` is on at D=128 only, and the knobs off here slowed the builds they
    were timed on; the tables turn them on where they won (figures: docs/hopper_attention.md#what-bounds-it and
    #tiles-claimed-from-a-counter)."""
    return dict(block_n=128, stages=2 if (head_dim == 128 and not fp8) else 3, pingpong=True, overlap=consumers == 2,
                head_group=0, tma_store=None if fp8 else True, defer_wait=True,
                consumer_regs=240 if consumers == 2 else 160, producer_regs=24, tc_rowsum=False,
                diagonal_halves=True, masked_first=head_dim == 128, consumers=consumers, thread_rowsum=False,
                peel_diagonal=False, late_pv_wait=False, persistent=True, dynamic_tiles=False)
