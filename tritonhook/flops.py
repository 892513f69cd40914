"""FLOP counts for throughput figures (`flops=` of `ab.bench` / `ab.compare`)."""


def attention_flops(batch: int, heads: int, seq: int, dim: int, causal: bool = False) -> float:
    """FLOPs of one attention forward pass, the count `flops=` expects for an attention kernel: two GEMMs
    (Q K^T and P V), 4 * B * H * S^2 * D, halved when causal (FlashAttention's convention)."""
    return 4.0 * batch * heads * seq * seq * dim / (2 if causal else 1)

