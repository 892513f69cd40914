"""CPU (no GPU) tests of sm120_attn: compile with fake tensors, capture into a store, read the cubins.

CuTe DSL compiles take ~1-6 s each on 2 cores, so not the full grid (3 variants x arches x D {64, 128} x causal):
every kernel is compiled once for each arch it supports, head dims and causal alternating so that both values of
each appear per variant (8 compiles), plus one TMA compile without the register cap (the C7508 demonstration).
`benchmarks/sm120_build.py` compiles the whole grid.
"""

import re

import pytest

pytest.importorskip("cutlass.cute", reason="needs nvidia-cutlass-dsl (the [cute] extra)")

# The CuTe DSL compiles with its own MLIR pipeline and the ptxas it links in, not with Triton: the PTX and cubins here
# are the same under every Triton release (their golden PTX is per nvidia-cutlass-dsl release, tests/test_golden_ptx.py)
pytestmark = pytest.mark.release_independent

from sm120_attn import build  # noqa: E402

from _sm120_reports import external_ptxas_log  # noqa: E402

# (variant, arch, head_dim, causal): each variant on each arch it supports
GRID = [
    ("cpasync", "sm_120a", 128, True),
    ("cpasync", "sm_121a", 64, False),
    ("cpasync", "sm_90a", 128, False),
    ("tma", "sm_120a", 128, False),
    ("tma", "sm_121a", 64, True),
    ("tma", "sm_90a", 128, True),
    ("fp8", "sm_120a", 128, True),
    ("fp8", "sm_121a", 64, False),
]

PTX_MUST = {
    "cpasync": [r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32", r"cp\.async\.cg\.shared\.global",
                r"ldmatrix\.sync\.aligned\.m8n8\.x4\.trans\.shared\.b16", r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16"],
    "tma": [r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32", r"cp\.async\.bulk\.tensor\.4d\.",
            r"mbarrier\.try_wait\.parity", r"setmaxnreg\.dec\.sync\.aligned\.u32", r"setmaxnreg\.inc\.sync\.aligned\.u32",
            r"\.minnctapersm\s+1"],
    "fp8": [r"mma\.sync\.aligned\.kind::f8f6f4\.m16n8k32\.row\.col\.f32\.e4m3\.e4m3\.f32",
            r"cvt\.rn\.satfinite\.e4m3x2\.f32", r"cp\.async\.cg\.shared\.global"],
}

_BUILT = {}


def built(variant, arch, head_dim, causal, **kw):
    key = (variant, arch, head_dim, causal, tuple(sorted(kw.items())))
    if key not in _BUILT:
        _BUILT[key] = build.compile_variant(variant, arch, head_dim, causal, **kw)
    return _BUILT[key]


@pytest.mark.parametrize("variant,arch,head_dim,causal", GRID, ids=lambda x: str(x))
def test_compiles_with_fake_tensors(variant, arch, head_dim, causal, tmp_path):
    from tritonhook.cubin import Cubin
    from tritonhook.cute.capture import capture_compiled
    from tritonhook.store import Store

    b = built(variant, arch, head_dim, causal)
    assert re.search(rf"^\s*\.target\s+{arch}\b", b.ptx, re.MULTILINE)
    for pattern in PTX_MUST[variant]:
        assert re.search(pattern, b.ptx), f"{b.label}: no {pattern} in the PTX"
    cubin = Cubin.from_bytes(b.cubin, label=b.label)
    assert cubin.arch == arch
    (kernel,) = cubin.kernels.values()
    assert "cutlass" in kernel.name  # every DSL kernel takes ptxas's cutlass path (docs/ptxas_cutlass.md#the-cutlass-name-path)
    assert kernel.registers and kernel.registers <= 255
    # captured into the store like a Triton kernel: PTX + cubin, frontend "cute"
    store = Store(tmp_path / "store")
    cid = capture_compiled(b.compiled, store=store)
    cap = store.get(cid)
    assert cap.frontend == "cute" and cap.arch == arch
    assert set(cap.artifacts) >= {"ptx", "cubin"}
    assert store.read(cap, "cubin") == b.cubin


def test_fp8_refused_for_sm_90a():
    with pytest.raises(ValueError, match="sm_120a"):
        build.compile_variant("fp8", "sm_90a", 128, False)


def test_setmaxnreg_takes_effect_only_with_the_entry_cap():
    """With .minnctapersm (our launch) ptxas keeps setmaxnreg: EIATTR_REG_RECONFIG in the cubin. Without it (the
    PR #3030 launch) the same setmaxnreg PTX is dropped: no REG_RECONFIG, and an external ptxas says C7508."""
    from tritonhook.cubin import Cubin

    ours = built("tma", "sm_120a", 128, False)
    theirs = built("tma", "sm_120a", 128, False, entry_cap=False)
    for b in (ours, theirs):
        assert re.search(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+56", b.ptx)
        assert re.search(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+224", b.ptx)
    k_ours = next(iter(Cubin.from_bytes(ours.cubin).kernels.values()))
    k_theirs = next(iter(Cubin.from_bytes(theirs.cubin).kernels.values()))
    assert k_ours.uses_setmaxnreg and "EIATTR_REG_RECONFIG" in [e.name for e in k_ours.eiattrs]
    assert not k_theirs.uses_setmaxnreg
    assert k_ours.registers == 168  # 65536 / 384 threads, rounded down to a multiple of 8: the entry budget
    ext = external_ptxas_log(ours.ptx, "sm_120a")
    if ext is None:
        pytest.skip("no external ptxas >= 12.9 to show the log")
    assert "C7508" not in ext[1]
    assert "C7508" in external_ptxas_log(theirs.ptx, "sm_120a")[1]


def test_preflight_tma_sm120a_has_no_driver_syscall():
    """Triton 3.6's TMA (`shared::cluster`) calls __cuda_syscall_cp_async_bulk_tensor_* on sm_120a (docs/tma_stack.md#the-stack-reservation);
    the DSL emits `shared::cta` TMA loads, which ptxas lowers to plain UTMALDG: no syscall, no stack reservation."""
    from tritonhook import preflight
    from tritonhook.cubin import Cubin

    b = built("tma", "sm_120a", 128, False)
    cubin = Cubin.from_bytes(b.cubin, label=b.label)
    if "shared::cluster.global" in b.ptx:  # nvidia-cutlass-dsl 4.4.2 does this: the syscall comes back
        assert any(s.startswith("__cuda_syscall_cp_async_bulk_tensor_4d") for s in cubin.syscalls)
        pytest.skip("this DSL emits shared::cluster TMA: sm_120a cubins call the driver syscall (README)")
    assert "cp.async.bulk.tensor.4d.shared::cta.global" in b.ptx
    assert not cubin.syscalls
    for prediction in preflight.predict_cubin(cubin):
        assert prediction.syscalls == () and prediction.reserve_high == 0


def test_can_implement_against_sm120_smem():
    import cutlass

    from sm120_attn.common import SM120_SMEM_BYTES
    from sm120_attn.fa2_cpasync import FlashAttentionSm120
    from sm120_attn.fa2_fp8 import FlashAttentionSm120Fp8
    from sm120_attn.fa2_tma import FlashAttentionSm120Tma

    assert SM120_SMEM_BYTES == 101_376
    for d in (64, 128):
        assert FlashAttentionSm120.can_implement(cutlass.BFloat16, d)
        assert FlashAttentionSm120Tma.can_implement(cutlass.BFloat16, d)
        assert FlashAttentionSm120Fp8.can_implement(cutlass.Float8E4M3FN, d)
        assert not FlashAttentionSm120.can_implement(cutlass.Float32, d)
    assert not FlashAttentionSm120.can_implement(cutlass.BFloat16, 96)
    # 3 K/V stages of 64 x 128 bf16 do not fit next to a 128 x 128 Q tile in 99 KiB; 2 do
    assert FlashAttentionSm120Tma.smem_bytes(128, stages=2) <= SM120_SMEM_BYTES
    assert not FlashAttentionSm120Tma.can_implement(cutlass.BFloat16, 128, stages=3)
    assert not FlashAttentionSm120.can_implement(cutlass.BFloat16, 128, n_block=256)
