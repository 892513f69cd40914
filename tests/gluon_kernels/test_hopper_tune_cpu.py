"""The tuning grid of benchmarks/hopper_attention_tune.py and the HEAD_GROUP knob, checked with no GPU: every
config the tuner will time compiles for sm_90a and spills nothing where the family's default spills nothing
(read from the cubin Triton's own ptxas built), so the lead's H200 minutes are not spent on a build that cannot
win; HEAD_GROUP changes the causal kernel's tile order and nothing of the non-causal one."""
from __future__ import annotations

import pytest

from gluon_kernels import compile_hopper_attention
from _gluon_reports import UNDER_THE_TUNERS_RELEASE, cubin_report  # noqa: E402
from benchmark_scripts import load_benchmark

tune = load_benchmark("hopper_attention_tune")

# a family's configs run on one pytest-xdist worker (`WORKER_GROUPS` in the repository's conftest.py): each compares
# against the family's default build (and fp8's against its shortest-S build); the tuner's GPU minutes are spent
# under the release the tables are tuned with, so that is the one release whose grid is checked
GRID_CONFIGS = [pytest.param(dtype, D, causal, knobs, marks=[UNDER_THE_TUNERS_RELEASE],
                             id=f"{dtype}-d{D}-{'causal' if causal else 'full'}-{tune.label(knobs)}")
                for dtype, grids in (("bf16", tune.GRID), ("fp8e4nv", tune.GRID_FP8))
                for (D, causal), grid in grids.items() for knobs in grid[1:]]


def _spills(rep):
    return rep["spill_stores"] + rep["spill_loads"]


@pytest.mark.parametrize("dtype,head_dim,causal,knobs", GRID_CONFIGS)
def test_every_tuning_config_compiles_without_spills_where_the_default_has_none(dtype, head_dim, causal, knobs):
    """fp8: no more than the build the table ships at the shortest S tuned, which at 256 keys spills (~600 B under
    ptxas 12.8, docs/hopper_attention.md#line-info-changes-the-register-allocation) and is among the configs."""
    default = cubin_report(compile_hopper_attention(dtype, head_dim, causal, "ws"))
    k = compile_hopper_attention(dtype, head_dim, causal, "ws", **knobs)
    assert ".target sm_90a" in k.asm["ptx"] and "setmaxnreg" in k.asm["ptx"]
    assert k.metadata.shared <= 232448, k.metadata.shared  # sm_90's opt-in shared memory per block
    if _spills(default) == 0:
        allowed = 0
        if dtype == "fp8e4nv":
            allowed = _spills(cubin_report(compile_hopper_attention(dtype, head_dim, causal, "ws",
                                                                    seq_len=min(tune.SEQLENS))))
        rep = cubin_report(k)
        assert _spills(rep) <= allowed, rep


@pytest.mark.parametrize("grids", [tune.GRID, tune.GRID_FP8], ids=["bf16", "fp8"])
def test_grid_stays_small_and_starts_with_the_default(grids):
    assert all(grid[0] == {} and len(grid) <= 8 for grid in grids.values())
    assert len({tune.label(k) for grid in grids.values() for k in grid}) == len(
        {tuple(sorted(k.items())) for grid in grids.values() for k in grid})


def test_the_fp8_grid_holds_the_shipped_entry_it_tunes_around():
    """An fp8 family is tuned around what TUNED_WS_FP8 ships at its shortest S, so the table's own choice is among
    the arms timed (the tuner's "table" arm is that build; this one is it built from the defaults)."""
    from gluon_kernels.tuning import TUNED_WS_FP8

    for (D, causal), grid in tune.GRID_FP8.items():
        assert TUNED_WS_FP8[(causal, D)][0][1] in grid


@UNDER_THE_TUNERS_RELEASE
def test_head_group_reorders_causal_tiles_only():
    def ptx(causal, **knobs):
        return compile_hopper_attention("bf16", 128, causal, "ws", **knobs).asm["ptx"]

    assert ptx(True, head_group=8) != ptx(True)
    assert ptx(False, head_group=8) == ptx(False)  # non-causal keeps its head-major order


@pytest.mark.parametrize("dtype,head_dim,causal", [("bf16", *family) for family in sorted(tune.GRID)]
                         + [("fp8e4nv", *family) for family in sorted(tune.GRID_FP8)])
def test_tuner_times_every_knob_set_over_the_defaults_not_the_table(dtype, head_dim, causal):
    """The wrapper applies the knobs it is given over the TUNED_WS (TUNED_WS_FP8) entry of S; the tuner must not:
    each of its knob sets, at every S, builds exactly what that set asks of the untuned kernel (as
    `compile_hopper_attention` with no S builds it)."""
    from gluon_kernels.hopper import _config

    fp8 = dtype == "fp8e4nv"
    for knobs in (tune.GRID_FP8 if fp8 else tune.GRID)[(head_dim, causal)]:
        untuned = _config(dtype, head_dim, "ws", causal, None, **knobs)
        for seq_len in tune.SEQLENS:
            assert _config(dtype, head_dim, "ws", causal, seq_len, **tune.over_defaults(head_dim, knobs, fp8)) \
                == untuned


def test_unknown_knob_is_refused():
    """hopper_attention passes its keyword arguments to _config: a misspelt knob must not be dropped silently."""
    from gluon_kernels.hopper import _config

    with pytest.raises(ValueError, match="head_groups"):
        _config("bf16", 128, "ws", True, 2048, head_groups=8)
    with pytest.raises(ValueError, match="head_group"):
        compile_hopper_attention("bf16", 128, True, "simple", head_group=8)


@UNDER_THE_TUNERS_RELEASE
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_16bit_ws_kernels_store_full_tiles_of_o_by_tma(dtype):
    """The 16-bit ws kernel stages O in the tile's own Q buffer and writes it with one TMA store per consumer (the
    row-masked direct store stays for tiles that reach past S); `tma_store=False` gives the direct stores alone."""
    def ptx(**knobs):
        return compile_hopper_attention(dtype, 128, False, "ws", seq_len=1024, **knobs).asm["ptx"]

    assert ptx().count(BULK_STORE) == 2  # one per consumer warpgroup
    assert BULK_STORE not in ptx(tma_store=False)


@UNDER_THE_TUNERS_RELEASE
def test_deferred_store_wait_waits_in_the_next_tile_and_before_exit():
    """`defer_wait` (the default) leaves O's TMA store in flight: each consumer waits for it after the next tile's
    first block (to hand Q's buffer back), before writing O again and once before the kernel ends; 3 waits per
    consumer instead of the 1 right after the store. Without a TMA store there is nothing to wait for."""
    def ptx(**knobs):
        return compile_hopper_attention("bf16", 128, False, "ws", seq_len=1024, **knobs).asm["ptx"]

    assert ptx().count(STORE_WAIT) == 6
    assert ptx(defer_wait=False).count(STORE_WAIT) == 2
    assert ptx(tma_store=False) == ptx(tma_store=False, defer_wait=False)


@UNDER_THE_TUNERS_RELEASE
def test_fp8_stores_o_by_tma_where_its_own_o_buffer_fits_in_shared_memory():
    """fp8 stages O (bf16) in a buffer of its own: the 128-key causal S <= 1k build and the 2-stage 256-key
    builds of the table have room (and use it), a 3-stage 256-key build does not (default off; asked for, a clear
    error with the byte count)."""
    from gluon_kernels.hopper import SM90_SHARED_BYTES

    for causal, seq_len in ((True, 1024), (False, 4096), (True, 8192)):
        roomy = compile_hopper_attention("fp8e4nv", 128, causal, "ws", seq_len=seq_len)
        assert roomy.asm["ptx"].count(BULK_STORE) == 2 and roomy.metadata.shared <= SM90_SHARED_BYTES
    assert BULK_STORE not in compile_hopper_attention("fp8e4nv", 128, True, "ws", seq_len=8192, stages=3).asm["ptx"]
    with pytest.raises(ValueError, match=r"tma_store: fp8 needs its own O buffer.*\d+ B of shared memory"):
        compile_hopper_attention("fp8e4nv", 128, True, "ws", seq_len=8192, stages=3, tma_store=True)


BULK_STORE = "cp.async.bulk.tensor.2d.global.shared"
STORE_WAIT = "cp.async.bulk.wait_group.read"
