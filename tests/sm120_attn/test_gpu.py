"""GPU tests of sm120_attn (marked gpu: skipped without a CUDA device). On Hopper the BF16 kernels run as built for
sm_90a; the FP8 kernel runs its f16 emulation of kind::f8f6f4 there (the real instruction needs sm_120a/sm_121a)."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("cutlass.cute", reason="needs nvidia-cutlass-dsl")

import gpu_check  # noqa: E402  (tests/sm120_attn/gpu_check.py)

CASES = [(1, 77, 333, 2, 128), (2, 300, 300, 3, 64), (1, 517, 200, 2, 128), (2, 1, 129, 2, 128)]


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["cpasync", "tma", "fp8"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_sdpa_fp32(variant, causal, case):
    torch.manual_seed(1)
    dtype = torch.float8_e4m3fn if variant == "fp8" else torch.bfloat16
    result = gpu_check.check_case(variant, dtype, case, causal)
    assert result["nan_or_unwritten"] == 0
    assert result["rel_err"] < result["bound"], result


@pytest.mark.gpu
def test_fp16_and_fp32_out():
    import sm120_attn

    torch.manual_seed(2)
    assert gpu_check.check_case("cpasync", torch.float16, (1, 200, 300, 2, 128), True)["ok"]
    q, k, v = (torch.randn(1, 130, 2, 64, device="cuda").to(torch.float8_e4m3fn) for _ in range(3))
    out = sm120_attn.attention(q, k, v, variant="fp8", out_dtype=torch.float32)
    assert out.dtype == torch.float32 and not out.isnan().any()
