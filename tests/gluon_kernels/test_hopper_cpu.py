"""Every configuration of the Hopper Gluon attention compiles for sm_90a with no GPU, and the PTX/cubin hold what
the design promises: wgmma (fp8: e4m3 operands), TMA bulk tensor copies, mbarriers; every build a table ships
within its spill bound (read from the cubin Triton's own ptxas built), under each release the kernel targets. What
each knob does to the code, shown against builds no table ships, under the release the knobs were designed and
timed with (`UNDER_THE_TUNERS_RELEASE`)."""
from __future__ import annotations

import itertools
import re

import pytest

from gluon_kernels import compile_hopper_attention
from gluon_kernels._compat import TRITON_VERSION
from gluon_kernels.hopper import SM90_SHARED_BYTES
from gluon_kernels.tuning import THREE_OVERLAPPED_FROM, TUNED_WS, TUNED_WS_FP8

from _gluon_reports import UNDER_THE_TUNERS_RELEASE, cubin_report  # noqa: E402

CONFIGS = [
    pytest.param(variant, dtype, d, causal, id=f"{variant}-{dtype}-d{d}-{'causal' if causal else 'full'}")
    for variant, dtype, d, causal in itertools.product(["ws", "simple"], ["fp16", "bf16", "fp8e4nv"], [64, 128],
                                                       [False, True])
]


@pytest.mark.parametrize("variant,dtype,head_dim,causal", CONFIGS)
def test_compiles_for_sm90a_with_wgmma_tma_mbarrier(variant, dtype, head_dim, causal):
    k = compile_hopper_attention(dtype, head_dim, causal, variant, write_lse=causal)
    ptx = k.asm["ptx"]
    assert ".target sm_90a" in ptx
    assert "wgmma.mma_async" in ptx
    mma_types = set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k\d+\.f32\.(\w+)\.(\w+)", ptx))
    if dtype == "fp8e4nv":
        assert mma_types == {("e4m3", "e4m3")}, mma_types
    else:
        ptx_type = {"fp16": "f16", "bf16": "bf16"}[dtype]
        assert mma_types == {(ptx_type, ptx_type)}, mma_types
    assert "cp.async.bulk.tensor" in ptx  # TMA loads
    assert "mbarrier.try_wait" in ptx and "mbarrier.init" in ptx
    assert len(k.asm["cubin"]) > 0
    if variant == "ws":
        assert "setmaxnreg" in ptx  # producer/consumer register rebalancing


# Triton 3.9 assembles sm_90a with its ptxas-blackwell 13.4.59 (3.6: ptxas 12.8.93) and adds --regAllocOptLevel=2.
# Measured (spill stores/loads, bytes): the 3.9 PTX of the fp16 (and bf16) D=128 ws build is 0/0 under ptxas 12.8, 12.9
# and 13.0 with or without the flag, 48/48 under 13.4 without it, 88/88 with it (Triton's cubin); causal fp8 0/0
# without, 96/132 with. So ptxas 13.4 is the cause, the flag makes it worse. The spills (5 STL.64/LDL.64) sat in the
# tile epilogue around the last P V wgmma, once per 128-row tile, not in the K/V loop. The 16-bit builds lost them with
# the TMA-store epilogue (O staged in the Q buffer): 0/0 under Triton 3.9 for every D=128 16-bit ws build, 80-88 B each
# way with `tma_store=False`. fp8 (O staged in a buffer of its own where it fits) keeps some: within their bounds but
# for two D=64 causal builds (SPILLING_ON_39). gluon_kernels/README.md, "Triton 3.9 spills".
SPILLS_ON_39 = pytest.mark.xfail(TRITON_VERSION >= (3, 9), strict=True,
                                 reason="Triton 3.9's ptxas 13.4 for sm_90a spills past the bound in the D=64 causal fp8 "
                                        "builds at S=2048 and S=16384 (3.6 and 3.7.1 within it); every other fp8 build "
                                        "is within it")
SPILLING_ON_39 = {(64, True, 2048), (64, True, 16384)}
"""The fp8 table's builds that still spill past their bound under Triton 3.9 (its ptxas 13.4): strictly expected to
fail there, so that one that stops spilling says so."""


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("seq_len", [None, 1024, 16384])
def test_16bit_d128_ws_has_no_spills_under_every_triton(dtype, seq_len):
    """Non-causal D=128, the default build and the tuned ones: under Triton 3.9 these spilled 80-88 B in the tile
    epilogue until O went out through shared memory and TMA."""
    rep = cubin_report(compile_hopper_attention(dtype, 128, False, "ws", seq_len=seq_len))
    assert rep["registers"] > 0, rep
    assert rep["spill_stores"] == 0 and rep["spill_loads"] == 0, rep


def test_rejects_bad_configuration():
    with pytest.raises(ValueError):
        compile_hopper_attention("fp32", 128)
    with pytest.raises(ValueError):
        compile_hopper_attention("bf16", 96)


@UNDER_THE_TUNERS_RELEASE
@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp8e4nv"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_three_consumer_warpgroups_build_a_192_row_tile_without_spills(dtype, causal):
    """`consumers=3` at D=64: 512 threads (three consumer warpgroups, the producer warp's group), half again the
    two-consumer build's wgmmas (one QK^T and one PV GEMM per warpgroup and block), a Q slot of three tiles, and no
    spills at the 128 registers a thread that 512 threads leave (ptxas 12.8, Triton 3.6)."""
    three = compile_hopper_attention(dtype, 64, causal, "ws", consumers=3)
    two = compile_hopper_attention(dtype, 64, causal, "ws", overlap=False)
    ptx3, ptx2 = three.asm["ptx"], two.asm["ptx"]
    assert ".reqntid 512" in ptx3 and ".reqntid 384" in ptx2
    assert ptx3.count("wgmma.mma_async") * 2 == ptx2.count("wgmma.mma_async") * 3
    rep = cubin_report(three)
    assert rep["registers"] <= 128 and rep["spill_stores"] == rep["spill_loads"] == 0, rep
    assert three.metadata.shared <= SM90_SHARED_BYTES


def kv_steps(build) -> list:
    """The opcode mix of each consumer's K/V step in `build`'s SASS: the inner loops with a block's exponentials
    (64 `MUFU` a thread and more)."""
    from tritonhook.cubin import disassemble, inner_loops, opcode_histogram

    (kernel,) = disassemble(build.asm["cubin"]).values()
    return [mix for mix in map(opcode_histogram, inner_loops(kernel)) if mix["MUFU"] >= 64]


@UNDER_THE_TUNERS_RELEASE
@pytest.mark.parametrize("dtype", ["bf16", "fp8e4nv"])
def test_three_overlapped_consumers_build_fa4s_d64_step(dtype):
    """`consumers=3, overlap=True, masked_first=True` (hopper_attention.py's ws-3wg-ol), FlashAttention-4's D=64
    configuration: 192 x 128 tiles, each warpgroup's softmax beside its previous P V GEMM, and (non-causal) the S
    tail's block first, so the K/V step carries no mask: no compares or selects in any consumer's step (the loop with
    the block's 64 exponentials a thread), and at 160 registers a consumer no spills (ptxas 12.8, Triton 3.6)."""
    build = compile_hopper_attention(dtype, 64, False, "ws", consumers=3, overlap=True, masked_first=True,
                                     seq_len=8192)
    steps = kv_steps(build)
    assert len(steps) == 3 and all(mix["FSEL"] == mix["ISETP"] == 0 for mix in steps), steps
    assert all(mix["STL"] == mix["LDL"] == 0 for mix in steps), steps
    assert build.metadata.shared <= SM90_SHARED_BYTES


@UNDER_THE_TUNERS_RELEASE
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_peeled_diagonal_leaves_the_causal_three_consumer_step_without_mask_or_spills(dtype):
    """`peel_diagonal`: a causal 192-row tile's diagonal spans two 128-key blocks, so the three-consumer overlapped
    build kept the rising order and a mask arm in its K/V step (64 `FSEL` a step, spilling under ptxas 12.8). With
    the knob both diagonal blocks come first, the second peeled off the loop, and every consumer's step carries no
    compare or select (one `ISETP`: the loop's own) and no spill; over the whole kernel ptxas 12.8 (Triton 3.6)
    then spills nothing where it spilled 92 B."""
    knobs = dict(consumers=3, overlap=True, masked_first=True, seq_len=8192)
    kept = compile_hopper_attention(dtype, 64, True, "ws", **knobs)
    peeled = compile_hopper_attention(dtype, 64, True, "ws", peel_diagonal=True, **knobs)
    steps = kv_steps(peeled)
    assert len(steps) == 3, steps
    assert all(mix["FSEL"] == 0 and mix["ISETP"] <= 1 and mix["STL"] == mix["LDL"] == 0 for mix in steps), steps
    before, after = cubin_report(kept), cubin_report(peeled)
    assert before["spill_stores"] > 0 and after["spill_stores"] == after["spill_loads"] == 0, after
    assert peeled.metadata.shared <= SM90_SHARED_BYTES


@UNDER_THE_TUNERS_RELEASE
@pytest.mark.parametrize("head_dim,knobs", [(128, {}), (64, dict(consumers=3, overlap=True, masked_first=True))],
                         ids=["d128-tuned", "d64-three-overlapped"])
def test_thread_row_sums_leave_the_kv_step_the_maxima_shuffles_alone(head_dim, knobs):
    """`thread_rowsum` (FlashAttention-4's row sums): each thread adds only the scores it holds and the quad's four
    shares are added once a tile, so every consumer's K/V step loses the row sums' shuffles (2 rows a thread, 2
    butterfly levels: 4 SHFL and their 4 FADD) and keeps the row maxima's; no more spills than before."""
    def steps(**extra):
        return kv_steps(compile_hopper_attention("bf16", head_dim, False, "ws", seq_len=8192, **knobs, **extra))

    block_sums, thread_sums = steps(thread_rowsum=False), steps(thread_rowsum=True)  # the table may set it
    assert len(block_sums) == len(thread_sums) == (3 if knobs else 2), (block_sums, thread_sums)
    for block, thread in zip(block_sums, thread_sums):
        assert thread["SHFL"] == block["SHFL"] - 4 == 4, (block["SHFL"], thread["SHFL"])
        assert thread["FADD"] == block["FADD"] - 4 and sum(thread.values()) < sum(block.values())
        assert thread["STL"] <= block["STL"] and thread["LDL"] <= block["LDL"]


@UNDER_THE_TUNERS_RELEASE
@pytest.mark.parametrize("causal", [False, True])
def test_a_late_pv_wait_keeps_every_exponential_of_the_kv_step_ahead_of_the_wait(causal):
    """ptxas hoists the overlapped loop's wait for the previous P V GEMM (`WARPGROUP.DEPBAR.LE gsb0,0x0`) above the
    whole softmax of the step, although the PTX waits after it: the D=128 tuned builds issue no exponential before
    it. `late_pv_wait` passes the row sums through a `bar.warp.sync`, which ptxas does not hoist the wait above: all
    66 exponentials of the step then issue first, for two more instructions and no spills (ptxas 12.8, Triton 3.6)."""
    from benchmark_scripts import load_benchmark

    step_row = load_benchmark("hopper_kv_step_sass").step_row

    def step(late: bool) -> dict:
        build = compile_hopper_attention("bf16", 128, causal, "ws", seq_len=8192, late_pv_wait=late)
        return dict(step_row("late" if late else "as tuned", build.asm["cubin"]), **cubin_report(build))

    tuned, late = step(False), step(True)
    assert late["counted"]["MUFU"] == 66 and tuned["exps_before_pv_wait"] == 0 and late["exps_before_pv_wait"] == 66, \
        (tuned["exps_before_pv_wait"], late["exps_before_pv_wait"])
    assert late["instructions"] <= tuned["instructions"] + 4, (tuned["instructions"], late["instructions"])
    assert late["spill_stores"] == tuned["spill_stores"] == 0, (tuned, late)


def test_persistent_is_a_launch_choice_and_the_causal_d128_table_claims_tiles_from_2k():
    """`persistent` sets the grid, not the kernel: one program an SM walking its tiles, or one a tile, which the
    hardware hands out as SMs come free. `dynamic_tiles` is the kernel's (resident programs claim tiles from a
    counter): a table's yields to a caller's persistent=False, a caller's own with it is an error. The causal 16-bit
    D=128 table claims its tiles from 2k on, in sections of 8 heads."""
    from gluon_kernels.hopper import _config

    for S, dynamic in ((1024, False), (2048, True), (4096, True), (8192, True), (16384, True)):
        consts = _config("bf16", 128, "ws", True, S)["constexprs"]
        assert (consts["HEAD_GROUP"], consts["DYNAMIC_TILES"]) == (8, dynamic), S
    one_an_sm, one_a_tile = (_config("bf16", 128, "ws", True, 16384, persistent=p, dynamic_tiles=False)
                             for p in (True, False))
    assert one_an_sm["constexprs"] == one_a_tile["constexprs"] and "PERSISTENT" not in one_a_tile["constexprs"]
    assert (one_an_sm["persistent"], one_a_tile["persistent"]) == (True, False)
    assert not _config("bf16", 128, "ws", True, 16384, persistent=False)["constexprs"]["DYNAMIC_TILES"]
    with pytest.raises(ValueError, match="dynamic_tiles hands tiles to resident programs"):
        _config("bf16", 128, "ws", True, 16384, persistent=False, dynamic_tiles=True)


@UNDER_THE_TUNERS_RELEASE
def test_claimed_tiles_take_one_counter_add_a_claim_and_the_static_build_none():
    """The producer claims a tile with one atomic add on the global counter (one before its loop, one a tile), and
    publishes it in its Q slot's word; the static schedule has no atomic and no counter argument."""
    dynamic = compile_hopper_attention("bf16", 128, True, "ws", seq_len=8192)
    static = compile_hopper_attention("bf16", 128, True, "ws", seq_len=8192, dynamic_tiles=False)
    assert len(re.findall(r"atom\.global\.gpu\.acq_rel\.add\.u32", dynamic.asm["ptx"])) == 2
    assert "atom." not in static.asm["ptx"]
    params = [len(re.findall(r"\.param \.", k.asm["ptx"].split(")")[0])) for k in (dynamic, static)]
    assert params[0] == params[1] + 1, params


@pytest.mark.parametrize("knobs, message", [
    (dict(head_dim=128), "built for head_dim 64"),
    (dict(block_n=256, stages=2), "block_n <= 128"),
    (dict(consumers=4), "consumers must be 2 or 3"),
])
def test_three_consumers_refuse_what_does_not_fit_their_registers(knobs, message):
    knobs = {"consumers": 3, "head_dim": 64, **knobs}
    with pytest.raises(ValueError, match=message):
        compile_hopper_attention("bf16", knobs.pop("head_dim"), False, "ws", **knobs)


@pytest.mark.parametrize("dtype,bound", [("bf16", 0), ("fp8e4nv", 4)])
def test_causal_d128_ws_spills_at_most_its_bound(dtype, bound):
    """bf16 none; fp8's 128-key build 4 B each way with its TMA-store epilogue (0 without it; the epilogue took the
    causal S=1k build from 529 to 619 TFLOPS on the H200, results file in commit c684b4a: benchmarks/results/bench_h200_fp8_tma_store.json)."""
    rep = cubin_report(compile_hopper_attention(dtype, 128, True, "ws"))
    assert rep["spill_stores"] <= bound and rep["spill_loads"] <= bound, rep


@UNDER_THE_TUNERS_RELEASE
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_fp8_p_operand_needs_no_shuffles(causal):
    """fp8 P reaches the PV wgmma's A-operand layout by a register relabelling (keys renumbered within groups of 16,
    V^T's columns likewise) plus cvt/pack: no byte permutes, and no more shuffles than the bf16 build (the row
    max/sum reductions). Before: 512 prmt and 97 shfl in this PTX."""
    # both with direct stores: the TMA-store epilogue's leader election adds shuffles of its own
    fp8 = compile_hopper_attention("fp8e4nv", 128, causal, "ws", tma_store=False).asm["ptx"]
    bf16 = compile_hopper_attention("bf16", 128, causal, "ws", tma_store=False).asm["ptx"]
    assert fp8.count("prmt") == 0
    assert fp8.count("shfl.sync") == bf16.count("shfl.sync")


@UNDER_THE_TUNERS_RELEASE
@pytest.mark.parametrize("dtype,seq_len", [("fp8e4nv", 8192), ("fp8e4nv", 1024), ("bf16", 4096)])
def test_tc_rowsum_moves_the_row_sums_onto_the_tensor_cores(dtype, seq_len):
    """`tc_rowsum`: the softmax step adds no scores (before: one add.f32 a score, 260 in the fp8 PTX; after: the 4
    of each block's sums, 16 in all); the sums come from m64n8 wgmmas against a ones tile, one a K chunk of P V,
    and the extra [8, block_n] tile still fits."""
    # rising K/V order: the row sums move the same either way, and the spill check below is about that order
    plain, tc = (compile_hopper_attention(dtype, 128, False, "ws", seq_len=seq_len, tc_rowsum=on, masked_first=False)
                 for on in (False, True))
    adds = [len(re.findall(r"\badd(?:\.rn)?\.f32\b", k.asm["ptx"])) for k in (plain, tc)]
    assert adds[0] >= 256 and adds[1] <= 16, adds
    n8 = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n8k\d+", tc.asm["ptx"])
    assert n8 and not re.search(r"m64n8k", plain.asm["ptx"])
    assert tc.metadata.shared <= SM90_SHARED_BYTES
    # the fp8 table's builds in rising K/V order; bf16 with it spills 4 B and is not used (slower). In falling order
    # (masked_first, the table's choice) the non-causal build spills (test_every_tuned_fp8_config_compiles_...).
    if dtype == "fp8e4nv":
        rep = cubin_report(tc)
        assert rep["spill_stores"] == 0 and rep["spill_loads"] == 0, rep


@UNDER_THE_TUNERS_RELEASE
@pytest.mark.parametrize("dtype", ["bf16", "fp8e4nv"])
def test_masked_first_puts_the_diagonal_in_the_prologue(dtype):
    """`masked_first` (on at D=128): K/V blocks fall, so the causal diagonal is the prologue's block, masked there
    by a constant, and the loop has no mask at all: half the selects (one masked copy of the softmax, not two), and
    warpgroup 0's exponentials of the half it cannot see fold away (exp2(-inf) = 0 at compile time). With 64-key
    blocks the diagonal spans two blocks, the rising order stays, and the knob changes nothing."""
    def ptx(**knobs):
        return compile_hopper_attention(dtype, 128, True, "ws", seq_len=1024, **knobs).asm["ptx"]

    falling, rising = ptx(masked_first=True), ptx(masked_first=False)
    assert falling.count("selp.f32") * 2 == rising.count("selp.f32"), "one masked softmax, not two"
    assert falling.count("ex2.approx") < rising.count("ex2.approx")
    assert ptx(block_n=64, stages=3, masked_first=True) == ptx(block_n=64, stages=3, masked_first=False)


@UNDER_THE_TUNERS_RELEASE
@pytest.mark.parametrize("dtype", ["bf16", "fp8e4nv"])
def test_diagonal_halves_compare_half_the_diagonal_block(dtype):
    """`diagonal_halves` (on by default): each consumer compares one 64-key half of the causal diagonal block, and
    warpgroup 0 sets the other to -inf without a compare, so the masked step has half the selects (256 `selp.f32`
    over both warpgroups' prologue and loop copies before, 128 after). The split into halves is a register
    relabelling (the kernel's `assert_trivial` layout conversions would fail the compile otherwise). With 64-key
    blocks the diagonal does not span both warpgroups and the knob changes nothing."""
    def selects(**knobs):  # in rising K/V order: the diagonal is masked in the prologue's and the loop's copy
        ptx = compile_hopper_attention(dtype, 128, True, "ws", seq_len=2048, masked_first=False, **knobs).asm["ptx"]
        return len(re.findall(r"\bselp\.f32\b", ptx)), ptx

    (halves, _), (whole, _) = selects(diagonal_halves=True), selects(diagonal_halves=False)
    assert whole >= 256 and halves <= whole // 2, (halves, whole)
    assert selects(block_n=64, stages=3)[1] == selects(block_n=64, stages=3, diagonal_halves=False)[1]


@UNDER_THE_TUNERS_RELEASE
def test_asking_for_the_lse_takes_the_row_sums_off_the_tensor_cores():
    """tc_rowsum's sums are of P rounded to e4m3 (LSE up to 1.6e-2 off on the H200): a build that writes the LSE
    keeps the FMA sums, whatever the knob or the fp8 table says."""
    with_lse = compile_hopper_attention("fp8e4nv", 128, False, "ws", write_lse=True, seq_len=8192, tc_rowsum=True)
    assert not re.search(r"m64n8k", with_lse.asm["ptx"])
    assert re.search(r"m64n8k", compile_hopper_attention("fp8e4nv", 128, False, "ws", seq_len=8192).asm["ptx"])


FP8_TUNED = [pytest.param(*build, id=f"d{build[0]}-{'causal' if build[1] else 'full'}-S{build[2]}",
                          marks=[SPILLS_ON_39] if build in SPILLING_ON_39 else [])
             for build in ((head_dim, causal, min(max_seq_len, 16384))
                           for (causal, head_dim), entries in TUNED_WS_FP8.items() for max_seq_len, _ in entries)]


@pytest.mark.parametrize("head_dim,causal,seq_len", FP8_TUNED)
def test_every_tuned_fp8_config_compiles_for_sm90a_within_its_spill_bound(head_dim, causal, seq_len):
    """The fp8 table's configs (block_n 256: K and V^T stages of 32 KB each) fit sm_90's shared memory. Spills
    under Triton 3.6's ptxas, all in each consumer's tile prologue (the first block's S and softmax, once per
    128-row tile), which the H200 figures in TUNED_WS_FP8 include:
    * D=64 causal block_n 256 at S <= 2k (rising K/V order): 24 B (112 B before tc_rowsum).
    * Non-causal (falling order, `masked_first`): D=128 644 B stored, 684 B loaded; D=64 76 B (64 B without the
      TMA-store epilogue). The last block goes in front of the loop, masked under a run-time flag (a partial S
      tail). D=128 still reads 1-2% faster than the rising order, which spills nothing
      (benchmarks/results/hopper_attention_d128_h200.json), D=64 2-7% (benchmarks/results/hopper_fp8_knobs_d64_h200.json);
      masking that block always spills nothing and loses the gain (results file in commit c684b4a: benchmarks/results/bench_h200_masked_first_always_masked_ab_d128.json).
    * The rest: none (causal block_n 256 in falling order; D=128 spilled 136 B in rising order)."""
    k = compile_hopper_attention("fp8e4nv", head_dim, causal, "ws", seq_len=seq_len)
    assert k.metadata.shared <= SM90_SHARED_BYTES, k.metadata.shared
    rep = cubin_report(k)
    bound = 112 if causal else {128: 700, 64: 80}[head_dim]
    assert rep["spill_stores"] <= bound and rep["spill_loads"] <= bound, rep


TUNED_16BIT = [pytest.param(head_dim, causal, min(max_seq_len, 16384),
                            id=f"d{head_dim}-{'causal' if causal else 'full'}-S{min(max_seq_len, 16384)}")
               for (causal, head_dim), entries in TUNED_WS.items() for max_seq_len, _ in entries]
THREE_CONSUMER_SPILLS = {"12.8": {False: 0, True: 8}, "13.4": {False: 264, True: 972}}
"""causal -> bytes spilled (the larger of stored and loaded) by the 16-bit table's three-consumer builds (D=64 from
`THREE_OVERLAPPED_FROM` on, with their `THREE_OVERLAPPED_TUNED` knobs) under ptxas 12.8 (Triton 3.6) and ptxas 13.4
(Triton 3.7+: 252 B stored non-causal, 432 B causal)."""


@pytest.mark.parametrize("head_dim,causal,seq_len", TUNED_16BIT)
def test_every_tuned_16bit_config_compiles_for_sm90a_within_its_spill_bound(head_dim, causal, seq_len):
    """The 16-bit table's builds (bf16; fp16 takes its code path), as a call that sets no knob gets them, fit sm_90's
    shared memory, and none spills but the three-consumer builds, within `THREE_CONSUMER_SPILLS`."""
    k = compile_hopper_attention("bf16", head_dim, causal, "ws", seq_len=seq_len)
    assert k.metadata.shared <= SM90_SHARED_BYTES, k.metadata.shared
    rep = cubin_report(k)
    three_consumers = seq_len >= THREE_OVERLAPPED_FROM.get((causal, head_dim), 2**31)
    bound = THREE_CONSUMER_SPILLS["13.4" if TRITON_VERSION >= (3, 7) else "12.8"][causal] if three_consumers else 0
    assert max(rep["spill_stores"], rep["spill_loads"]) <= bound, rep


def test_a_data_aggregate_is_built_from_exactly_its_fields():
    """The shared-memory aggregates take their fields in declaration order; a call site that drops or adds one is an
    error naming the fields, not a silently shifted argument (the slot mix-up positional lists allowed)."""
    from gluon_kernels.hopper_fa import WsShared

    with pytest.raises(TypeError, match=r"WsShared takes its 6 fields \(q, k, v, turns, o_bufs, ones\), not 5"):
        WsShared(*range(5))


@pytest.mark.parametrize("build", [
    pytest.param(lambda: compile_hopper_attention("bf16", 64, False, "ws"), id="hopper-ws"),
    pytest.param(lambda: compile_hopper_attention("bf16", 64, False, "simple"), id="hopper-simple"),
    pytest.param(lambda: __import__("gluon_kernels.blackwell", fromlist=["x"]).compile_blackwell_attention(
        "fp16", 128, False), id="blackwell")])
def test_a_launch_passes_every_integer_argument_as_a_value_even_when_it_is_one(build):
    """A launch passes an integer argument equal to 1 as a constant unless the kernel says not to (Triton's
    specialization), and the kernels' aggregates (the tile schedule, a query tile) hold the sequence length and the
    head count as runtime values, which take no constant. Found on an H100: every Hopper warp-specialized launch with
    B*H == 1 failed to compile. So each integer argument of every bundled attention kernel is never specialized."""
    built = build()
    integers = {name for name, kind in built.src.signature.items() if kind in ("i32", "i64")}
    assert integers and integers <= {p.name for p in built.src.fn.params if p.do_not_specialize}
