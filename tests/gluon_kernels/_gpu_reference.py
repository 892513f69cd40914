"""What the Hopper and Blackwell GPU tests share: seeded inputs, the fp32 reference, the error norm, the shapes.
Imported only by GPU test modules, after their torch / device skips."""
from __future__ import annotations

import torch

CASES = [
    # B, H, S, D
    (1, 1, 128, 64),
    (2, 3, 1000, 128),  # S not a multiple of any tile
    (1, 2, 77, 64),  # shorter than one tile
    (2, 2, 1024, 128),
    (1, 4, 2049, 64),
    (1, 1, 4096, 128),
]


def reference(q, k, v, causal, sm_scale):
    """(O, LSE) in fp32 on the same (rounded) inputs; the causal mask is top-left aligned as SDPA's is_causal."""
    qf, kf, vf = (t.float() for t in (q, k, v))
    s = torch.matmul(qf, kf.transpose(-1, -2)) * sm_scale
    if causal:
        S = q.shape[2]
        mask = torch.ones(S, S, dtype=torch.bool, device=q.device).tril()
        s = s.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    return torch.matmul(torch.softmax(s, dim=-1), vf), lse


def make_inputs(B, H, S, D, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return tuple(torch.randn((B, H, S, D), device="cuda", dtype=torch.float32, generator=g).to(dtype)
                 for _ in range(3))


def rel_err(out, ref):
    return ((out.float() - ref).norm() / ref.norm()).item()
