"""`enable(fix_tma_scope=True)`: real Triton TMA kernels for sm_120a lose the driver call, other targets are untouched.

Each compile is real (Triton's own pipeline and ptxas, no GPU); the cubins are read back with the cubin model and
`preflight` predicts from them, so a rewrite that ptxas rejected or that left the call in place fails here.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import triton

import tritonhook
from tritonhook import _triton, preflight
from tritonhook import binaries as tools
from tritonhook.cubin import Cubin
from tritonhook.samples import compile_sample
from tritonhook.ptx import rewrite_tma_scope
from tritonhook.tma_scope import FIXED_KEY, make_tma_scope_transform

pytestmark = pytest.mark.every_release  # reaches what differs between Triton releases (scripts/test-matrix.sh)

TMA_SAMPLES = ("tma_copy", "tma_copy_host_desc")  # device-side and host-side descriptors
TMA_SYSCALL = "__cuda_syscall_cp_async_bulk_tensor_"
TRITON_EMITS_CLUSTER_TMA = _triton.parse_version(triton.__version__) < (3, 7)
RTX_5090 = preflight.find_gpu("RTX 5090")


def build(sample: str, capability: int, store, **enable_options):
    """Compile `sample` inside a capture session; returns (compiled kernel, its capture)."""
    with tritonhook.session(store, **enable_options) as session:
        kernel = compile_sample(sample, capability)
        (capture,) = session.captures()
    return kernel, capture


def tma_syscalls(kernel) -> list[str]:
    cubin = Cubin.from_bytes(kernel.asm["cubin"], label=kernel.metadata.name)
    return [name for name in cubin.syscalls if name.startswith(TMA_SYSCALL)]


@pytest.mark.skipif(not TRITON_EMITS_CLUSTER_TMA, reason="Triton 3.7+ emits shared::cta TMA loads already")
@pytest.mark.parametrize("sample", TMA_SAMPLES)
def test_sm120a_fix_removes_the_driver_call_and_the_predicted_reservation(sample, tmp_path):
    plain = compile_sample(sample, 120)
    assert tma_syscalls(plain), "Triton 3.6's sm_120a TMA load should call the driver routine"
    fixed, capture = build(sample, 120, tmp_path / "store", fix_tma_scope=True)
    assert "shared::cluster.global" not in fixed.asm["ptx"]
    assert tma_syscalls(fixed) == []
    assert capture.metadata[FIXED_KEY] == 1
    (prediction,) = preflight.predict_cubin(Cubin.from_bytes(fixed.asm["cubin"], label=sample), [RTX_5090])
    assert prediction.reserve_high == 0
    (before,) = preflight.predict_cubin(Cubin.from_bytes(plain.asm["cubin"], label=sample), [RTX_5090])
    assert before.reserve_low > 2**30


@pytest.mark.parametrize("capability", [90, 100])
def test_other_targets_are_untouched(capability, tmp_path):
    plain = compile_sample("tma_copy", capability)
    fixed, capture = build("tma_copy", capability, tmp_path / "store", fix_tma_scope=True)
    assert fixed.asm["ptx"] == plain.asm["ptx"]
    assert FIXED_KEY not in capture.metadata


@pytest.mark.skipif(TRITON_EMITS_CLUSTER_TMA, reason="Triton 3.6 has cluster-scoped loads to rewrite")
def test_nothing_to_rewrite_on_triton_37_and_later(tmp_path):
    plain = compile_sample("tma_copy", 120)
    fixed, capture = build("tma_copy", 120, tmp_path / "store", fix_tma_scope=True)
    assert capture.metadata[FIXED_KEY] == 0
    assert fixed.asm["ptx"] == plain.asm["ptx"]
    assert tma_syscalls(fixed) == []


def multicast_variant(ptx: str) -> str:
    """Triton's sm_90a TMA load PTX with the load turned into a cluster multicast (ctaMask 0b11)."""
    multicast = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
    loads = re.compile(r"cp\.async\.bulk\.tensor\.2d\.shared::(cta|cluster)\.global\.mbarrier::complete_tx::bytes")
    lines = []
    for line in ptx.splitlines():
        if loads.search(line) and line.rstrip().endswith(";"):
            line = loads.sub(multicast, line).rstrip()[:-1] + ", %rs_mask;"
            lines += ["\t.reg .b16 %rs_mask;", "\tmov.b16 %rs_mask, 3;"]
        lines.append(line)
    return "\n".join(lines) + "\n"


def test_multicast_loads_are_left_alone():
    plain = compile_sample("tma_copy", 90)
    multicast = multicast_variant(plain.asm["ptx"])
    assert ".multicast::cluster" in multicast
    tool, _ = _triton.ptxas_for(90)
    tools.assemble(multicast, tool, "sm_90a")  # the multicast PTX is valid: ptxas accepts it
    rewritten, count = rewrite_tma_scope(multicast)
    assert (rewritten, count) == (multicast, 0)


def test_fixed_sm90a_ptx_assembles_when_every_target_is_asked_for(tmp_path):
    """`fix_tma_scope=""` applies it on sm_90a too (both forms assemble there): the GPU check compares outputs."""
    fixed, capture = build("tma_copy", 90, tmp_path / "store", fix_tma_scope="")
    assert capture.metadata[FIXED_KEY] == (1 if TRITON_EMITS_CLUSTER_TMA else 0)
    assert "shared::cta.global.mbarrier" in fixed.asm["ptx"]
    transform, key = make_tma_scope_transform("")
    assert key == "tma-scope:all"


def test_fix_and_rename_compose_and_keep_separate_cache_entries(tmp_path):
    renamed, capture = build("tma_copy", 120, tmp_path / "a", fix_tma_scope=True, rename="cutlass_")
    assert capture.entry == "cutlass_tma_copy_kernel"
    assert "shared::cluster.global" not in renamed.asm["ptx"]
    plain, plain_capture = build("tma_copy", 120, tmp_path / "b")  # same Triton cache: must not get the fixed build
    assert plain_capture.entry == "tma_copy_kernel"
    assert FIXED_KEY not in plain_capture.metadata


def test_run_fix_tma_scope_reaches_the_child_process(tmp_path):
    script = ("from tritonhook.samples import compile_sample\n"
              "compile_sample('tma_copy', 120)\n")
    store = tmp_path / "store"
    subprocess.run([sys.executable, "-m", "tritonhook", "run", "--store", str(store), "--fix-tma-scope", "--",
                    sys.executable, "-c", script], check=True, capture_output=True, text=True)
    (capture,) = tritonhook.Store(store).captures()
    assert capture.metadata[FIXED_KEY] == (1 if TRITON_EMITS_CLUSTER_TMA else 0)


@pytest.mark.gpu
@pytest.mark.parametrize("sample", TMA_SAMPLES)
def test_gpu_fixed_kernel_output_is_bitwise_the_unfixed_one(sample, tmp_path):
    """On sm_90a both forms assemble: the CTA-scoped build must copy exactly what the cluster-scoped one copies."""
    torch = pytest.importorskip("torch")
    from triton.tools.tensor_descriptor import TensorDescriptor

    from tritonhook.samples import tma_copy_host_desc_kernel, tma_copy_kernel

    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    size, block = 1024, 64
    src = torch.randn(size, size, dtype=torch.float16, device="cuda")
    grid = (size // block, size // block)

    def copy():
        dst = torch.full_like(src, float("nan"))
        if sample == "tma_copy":
            compiled = tma_copy_kernel[grid](src, dst, size, size, BLOCK_M=block, BLOCK_N=block)
        else:
            descs = [TensorDescriptor.from_tensor(t, [block, block]) for t in (src, dst)]
            compiled = tma_copy_host_desc_kernel[grid](*descs, BLOCK_M=block, BLOCK_N=block)
        torch.cuda.synchronize()
        return dst, compiled

    plain, plain_kernel = copy()
    with tritonhook.session(tmp_path / "store", fix_tma_scope="") as session:
        fixed, fixed_kernel = copy()
        (capture,) = [c for c in session.captures() if c.kernel == plain_kernel.name]
    assert capture.metadata[FIXED_KEY] == (1 if TRITON_EMITS_CLUSTER_TMA else 0)
    if TRITON_EMITS_CLUSTER_TMA:  # two different builds ran, not one build twice
        assert "shared::cluster.global.mbarrier" in plain_kernel.asm["ptx"]
        assert "shared::cta.global.mbarrier" in fixed_kernel.asm["ptx"]
    assert torch.equal(fixed.view(torch.int16), src.view(torch.int16))
    assert torch.equal(fixed.view(torch.int16), plain.view(torch.int16))
