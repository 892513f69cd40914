"""Every configuration of the Blackwell Gluon attention compiles for sm_100a with no GPU, and the PTX/cubin hold what
the design promises: tcgen05 MMAs of the right kind (f16 for fp16/bf16, f8f6f4 for e4m3/e5m2), TMEM alloc/ld/st,
TMA bulk tensor loads, mbarriers, setmaxnreg for the warp-specialized partitions; registers and spills read from the
cubin (tritonhook.cubin, through _gluon_reports.py) are recorded, and the plain fp16 D=128 build does not spill. The
kernel name is plain; the ``cutlass_`` variant comes from tritonhook's rename. The full grid (4 dtypes x 2 head dims x causal/non-causal) runs
here: ~1 s per compile with Triton 3.6, ~2.5 s with 3.9, on 2 cores."""
from __future__ import annotations

import itertools
import re

import pytest

from gluon_kernels.blackwell import (
    DTYPES, HEAD_DIMS, KERNEL_NAME, compile_blackwell_attention, config, normalize_dtype,
)

from _gluon_reports import cubin_report  # noqa: E402

CONFIGS = [
    pytest.param(dtype, d, causal, id=f"{dtype}-d{d}-{'causal' if causal else 'full'}")
    for dtype, d, causal in itertools.product(DTYPES, HEAD_DIMS, [False, True])
]
MMA_KIND = {"fp16": "f16", "bf16": "f16", "fp8e4nv": "f8f6f4", "fp8e5": "f8f6f4"}


@pytest.mark.parametrize("dtype,head_dim,causal", CONFIGS)
def test_compiles_for_sm100a_with_tcgen05_tmem_tma_mbarrier(dtype, head_dim, causal, record_property):
    k = compile_blackwell_attention(dtype, head_dim, causal)
    ptx = k.asm["ptx"]
    assert ".target sm_100a" in ptx
    assert re.search(rf"\.entry\s+{KERNEL_NAME}\b", ptx) and k.metadata.name == KERNEL_NAME
    assert "cutlass" not in ptx
    kinds = set(re.findall(r"tcgen05\.mma\.cta_group::1\.kind::(\w+)", ptx))
    assert kinds == {MMA_KIND[dtype]}, kinds
    assert "tcgen05.alloc" in ptx and "tcgen05.dealloc" in ptx  # TMEM
    assert re.search(r"tcgen05\.ld\.sync\.aligned\.32x32b", ptx)  # S and O read from TMEM
    assert re.search(r"tcgen05\.st\.sync\.aligned\.32x32b", ptx)  # P written over S, O rescaled in place
    assert "tcgen05.commit" in ptx  # MMA completion -> mbarrier
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.\S*global\.mbarrier::complete_tx::bytes", ptx)  # TMA loads
    assert "mbarrier.init" in ptx and "mbarrier.try_wait.parity" in ptx and "mbarrier.arrive" in ptx
    assert "setmaxnreg" in ptx  # warp specialization with register rebalancing
    rep = cubin_report(k)
    assert rep["name"] == KERNEL_NAME and rep["uses_tcgen05"] and rep["uses_setmaxnreg"]
    assert rep["registers"] and rep["text_size"] > 0 and rep["capmerc_size"] > 0
    assert rep["shared"] <= 232448  # sm_100 dynamic shared memory per block
    for key in ("registers", "spill_stores", "spill_loads", "text_size", "capmerc_size", "cubin_size", "shared"):
        record_property(key, rep[key])
    print(f"{dtype} D={head_dim} causal={causal}: {rep}")


def test_fp16_d128_plain_build_has_no_spills():
    rep = cubin_report(compile_blackwell_attention("fp16", 128, False))
    assert rep["spill_stores"] == 0 and rep["spill_loads"] == 0, rep


def test_rename_gives_the_cutlass_variant_of_the_same_source(tmp_path, monkeypatch):
    """tritonhook's rename (PTX stage) turns the plain kernel into cutlass_<name>; the launcher's name follows."""
    import tritonhook

    plain = compile_blackwell_attention("fp8e4nv", 128, False)  # the grid's build, from the shared kernel cache
    # the renamed build in a cache of its own: under 3.6 renamed and plain builds share the key, so in the shared
    # cache the plain build would be a hit here
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "renamed-cache"))
    tritonhook.enable(tmp_path / "store", rename="cutlass_", subprocesses=False)
    try:
        renamed = compile_blackwell_attention("fp8e4nv", 128, False)
    finally:
        tritonhook.disable()
    assert renamed.metadata.name == "cutlass_" + KERNEL_NAME
    assert re.search(rf"\.entry\s+cutlass_{KERNEL_NAME}\b", renamed.asm["ptx"])
    assert cubin_report(renamed)["name"] == "cutlass_" + KERNEL_NAME
    assert plain.metadata.name == KERNEL_NAME
    # the same PTX apart from the name
    assert plain.asm["ptx"].replace(KERNEL_NAME, "cutlass_" + KERNEL_NAME) == renamed.asm["ptx"]


def test_rename_ptx_then_assemble(tmp_path):
    from tritonhook._triton import triton_ptxas
    from tritonhook.binaries import assemble
    from tritonhook.rename import rename_ptx
    from tritonhook.cubin import Cubin

    ptx = compile_blackwell_attention("fp8e5", 64, True).asm["ptx"]
    out = assemble(rename_ptx(ptx, "cutlass_"), triton_ptxas("sm_100a"), "sm_100a")
    assert list(Cubin.from_bytes(out.cubin).kernels) == ["cutlass_" + KERNEL_NAME]


def test_configuration_checks():
    assert normalize_dtype("float8_e5m2") == "fp8e5" and normalize_dtype("e4m3") == "fp8e4nv"
    with pytest.raises(ValueError):
        compile_blackwell_attention("fp32", 128)
    with pytest.raises(ValueError):
        compile_blackwell_attention("fp16", 96)
    with pytest.raises(ValueError):
        config("fp16", 128, kv_stages=1)
    c = config("fp8e4nv", 64)["constexprs"]
    assert c["BLOCK_M"] == 128 and c["KV_STAGES"] >= 2


def test_module_imports_without_torch():
    import subprocess
    import sys
    code = "import sys, gluon_kernels.blackwell; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
