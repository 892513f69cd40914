"""Correctness of the Blackwell Gluon attention on a compute-capability 10.x GPU (B200/GB200), against attention
in fp32 (the reference test_hopper_gpu.py uses, _gpu_reference.py).

NEVER RUN by this project (no Blackwell GPU was available); written to be ready for anyone with one. Skipped on any
other machine.

Tolerances are relative error norms ||out - ref|| / ||ref|| over the whole output, as in test_hopper_gpu.py:
* fp16 / bf16: 1e-2 (the kernel rounds P to the input dtype before the PV MMA and O to the output dtype).
* fp8 e4m3: 5e-2 (P rounded to e4m3, 3 mantissa bits); fp8 e5m2: 1e-1 (P rounded to e5m2, 2 mantissa bits).
  The reference gets the same fp8-rounded Q, K, V upcast to fp32; indexing, masking or race bugs give errors of
  order 1.
The output buffer is filled with NaN and passed in, so an element the kernel fails to write stays NaN and fails the
finiteness check; rows past S of the last (batch, head) would land outside the tensor, which the guard rows of a
larger poisoned buffer catch.
"""
from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 10:
    pytest.skip("needs a compute capability 10.x (sm_100) GPU", allow_module_level=True)

from gluon_kernels import blackwell_attention  # noqa: E402
from _gpu_reference import CASES as HOPPER_CASES  # noqa: E402
from _gpu_reference import make_inputs, rel_err  # noqa: E402
from _gpu_reference import reference as fp32_reference  # noqa: E402

pytestmark = pytest.mark.gpu

TOL = {torch.float16: 1e-2, torch.bfloat16: 1e-2, torch.float8_e4m3fn: 5e-2, torch.float8_e5m2: 1e-1}
DTYPES = list(TOL)
CASES = [(1, 1, 1, 64), *HOPPER_CASES, (3, 5, 333, 128)]  # B, H, S, D; + a single key, + odd B*H


def reference(q, k, v, causal, sm_scale):
    return fp32_reference(q, k, v, causal, sm_scale)[0]


def out_dtype(dtype):
    return torch.bfloat16 if dtype in (torch.float8_e4m3fn, torch.float8_e5m2) else dtype


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).split(".")[-1])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("B,H,S,D", CASES)
def test_attention_matches_sdpa_fp32(B, H, S, D, causal, dtype):
    seed = hash((B, H, S, D, causal, str(dtype))) % (2**31)
    q, k, v = make_inputs(B, H, S, D, dtype, seed)
    sm_scale = 1.0 / math.sqrt(D)
    # one extra (batch, head) of guard rows after the output: a store past the end of S would hit them
    backing = torch.full((B * H + 1) * S * D, float("nan"), dtype=out_dtype(dtype), device="cuda")
    out = backing[:B * H * S * D].view(B, H, S, D)
    res = blackwell_attention(q, k, v, causal=causal, sm_scale=sm_scale, out=out)
    torch.cuda.synchronize()
    assert res.data_ptr() == out.data_ptr()
    assert torch.isfinite(out).all(), "unwritten (NaN) output elements"
    assert torch.isnan(backing[B * H * S * D:]).all(), "the kernel wrote past the output"
    err = rel_err(out, reference(q, k, v, causal, sm_scale))
    assert err < TOL[dtype], f"relative error {err:.3e}"


def test_default_scale_and_fresh_output():
    q, k, v = make_inputs(2, 2, 300, 64, torch.float16, 0)
    out = blackwell_attention(q, k, v)
    assert out.dtype == torch.float16 and out.shape == q.shape
    assert rel_err(out, reference(q, k, v, False, 1 / 8)) < TOL[torch.float16]


def test_plain_and_cutlass_builds_agree(tmp_path, monkeypatch):
    """The renamed (cutlass_) build computes the same result (ptxas reschedules; the math is the same)."""
    import tritonhook
    from gluon_kernels.blackwell_fa import blackwell_attention_kernel

    q, k, v = make_inputs(1, 4, 1000, 128, torch.float8_e4m3fn, 1)
    plain = blackwell_attention(q, k, v)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))  # 3.6: a renamed build shares the plain key
    blackwell_attention_kernel.device_caches.clear()
    tritonhook.enable(tmp_path / "store", rename="cutlass_", subprocesses=False)
    try:
        renamed = blackwell_attention(q, k, v)
        torch.cuda.synchronize()
    finally:
        tritonhook.disable()
        blackwell_attention_kernel.device_caches.clear()
    from tritonhook.store import Store
    entries = {c.entry for c in Store(tmp_path / "store", create=False).captures(kernel="blackwell_attention")}
    assert "cutlass_blackwell_attention_kernel" in entries, entries
    torch.testing.assert_close(renamed, plain, atol=2e-2, rtol=0)
