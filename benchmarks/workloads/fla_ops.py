"""Linear-attention layers from a library nobody here has used: flash-linear-attention's kernels (`fla-core` 0.6.0,
fla-org; `pip install fla-core`, pure Python over torch and Triton; 172 `@triton.autotune` decorators). Per step, per
op, bf16 inputs at (batch 2, seqlen 4096, 16 heads, head dim 128), forward and backward against a random output
gradient:

1. `gdn`: `chunk_gated_delta_rule(q, k, v, g, beta)`, the gated delta rule of Gated DeltaNet and Qwen3-Next; q and k
   unit rows, g = logsigmoid (log decay a head and token), beta = sigmoid.
2. `gla`: `chunk_gla(q, k, v, g)`, gated linear attention with a decay a key channel, g = logsigmoid / 16 as fla's
   tests make it.
3. `sgla`: `chunk_simple_gla(q, k, v, g_gamma=...)`, one constant decay a head (RetNet's log(1 - 2^(-5-h))).

fla refuses the gated backward (`chunk_bwd_dqkwg` with a per-token gate: #640, wrong results under Triton 3.4 to
3.7.0 on Hopper), which the gated delta rule's backward takes; there `gdn` runs forward only and the summary says so.
The per-token-gate form of simple GLA takes that backward too, so `sgla` uses the constant decay, which does not.

Checked once at (1, 256, 2, 64) in fp32 against fla's own naive recurrent references (`naive_recurrent_*`): output
and the q, k, v gradients, max relative error printed with the op that gave it.

    python benchmarks/workloads/fla_ops.py [STEPS [OPS]]   # default 10 steps, all three (OPS: e.g. gdn,sgla)
"""

import importlib.metadata
import sys
import time

import torch
import torch.nn.functional as F

from fla.ops.gated_delta_rule import chunk_gated_delta_rule
from fla.ops.gated_delta_rule.naive import naive_recurrent_gated_delta_rule
from fla.ops.gla import chunk_gla
from fla.ops.gla.naive import naive_recurrent_gla
from fla.ops.simple_gla import chunk_simple_gla
from fla.ops.simple_gla.naive import naive_recurrent_simple_gla

from fla.utils import IS_NVIDIA_HOPPER, TRITON_ABOVE_3_7_1

from autotuned import autotuned  # benchmarks/workloads/autotuned.py

OPS = ("gdn", "gla", "sgla")
SHAPE = (2, 4096, 16, 128)  # batch, seqlen, heads, head dim (keys and values)
CHECK_SHAPE = (1, 256, 2, 64)


def build(op, batch, seqlen, heads, dim, dtype=torch.bfloat16, device="cuda"):
    """The op's leaf tensors (q, k, v, gate[, beta]), seeded by the caller, and an output gradient."""
    rand = lambda *shape: torch.randn(*shape, device=device)  # noqa: E731 - one line per tensor below
    q, k, v = rand(batch, seqlen, heads, dim), rand(batch, seqlen, heads, dim), rand(batch, seqlen, heads, dim)
    if op == "gdn":
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        extra = [F.logsigmoid(rand(batch, seqlen, heads)), torch.sigmoid(rand(batch, seqlen, heads))]
    elif op == "gla":
        extra = [F.logsigmoid(rand(batch, seqlen, heads, dim)) / 16]
    else:
        extra = [torch.log1p(-torch.exp2(-5.0 - torch.arange(heads, device=device)))]  # constant: no gradient
    leaves = [t.to(dtype).requires_grad_() for t in (q, k, v)] + [t.float().requires_grad_(op != "sgla") for t in extra]
    return leaves, rand(batch, seqlen, heads, dim).to(dtype)


def forward_only(op):
    """Whether fla refuses this op's backward on this GPU and Triton (the gated `chunk_bwd_dqkwg`, #640)."""
    return op == "gdn" and IS_NVIDIA_HOPPER and not TRITON_ABOVE_3_7_1


def forward(op, leaves, naive=False):
    """The op's output [B, T, H, V] (naive: fla's recurrent reference)."""
    if op == "gdn":
        q, k, v, g, beta = leaves
        if naive:
            return naive_recurrent_gated_delta_rule(q, k, v, beta, g)[0]
        return chunk_gated_delta_rule(q, k, v, g, beta)[0]
    if op == "gla":
        return (naive_recurrent_gla if naive else chunk_gla)(*leaves)[0]
    q, k, v, g_gamma = leaves
    if naive:
        return naive_recurrent_simple_gla(q, k, v, g_gamma.expand(*q.shape[:3]))[0]
    return chunk_simple_gla(q, k, v, g_gamma=g_gamma)[0]


def train_step(op, leaves, grad_out):
    """Forward, backward against `grad_out` (unless `forward_only`); returns (output, the q, k, v gradients: none
    forward only), the gradients dropped."""
    if forward_only(op):
        with torch.no_grad():
            return forward(op, leaves), []
    out = forward(op, leaves)
    out.backward(grad_out)
    grads = [t.grad for t in leaves[:3]]
    for t in leaves:
        t.grad = None
    return out, grads


def check(ops, device="cuda"):
    """(max relative error of output and q, k, v gradients against the naive references in fp32, where)."""
    worst = (0.0, "")
    for op in ops:
        torch.manual_seed(1)
        leaves, grad_out = build(op, *CHECK_SHAPE, dtype=torch.float32, device=device)
        got = train_step(op, leaves, grad_out)
        backward = not forward_only(op)
        with torch.set_grad_enabled(backward):
            ref_out = forward(op, leaves, naive=True)
        if backward:
            ref_out.backward(grad_out)
        ref = (ref_out, [t.grad for t in leaves[:3]] if backward else [])
        for name, a, b in zip(("o", "dq", "dk", "dv"), (got[0], *got[1]), (ref[0], *ref[1])):
            err = ((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-6)).item()
            worst = max(worst, (err, f"{op} {name}"))
    return worst


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    ops = sys.argv[2].split(",") if len(sys.argv) > 2 else OPS
    unknown = sorted(set(ops) - set(OPS))
    if unknown:
        sys.exit(f"unknown op(s) {unknown}; known: {', '.join(OPS)}")
    torch.manual_seed(0)
    work = {op: build(op, *SHAPE) for op in ops}
    times, finite = [], torch.ones((), dtype=torch.bool, device="cuda")
    for _ in range(steps):
        start = time.perf_counter()
        for op, (leaves, grad_out) in work.items():
            out, grads = train_step(op, leaves, grad_out)
            finite &= torch.stack([t.isfinite().all() for t in (out, *grads)]).all()  # no host sync
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    err, where = check(ops)
    tuned = autotuned("fla.")
    passes = ", ".join(f"{op} {'fwd' if forward_only(op) else 'fwd+bwd'}" for op in ops)
    print(f"fla-core {importlib.metadata.version('fla-core')}: {steps} steps x {passes} at {SHAPE}; first step "
          f"(autotune) {times[0]:.1f} s, rest {sum(times[1:]):.2f} s; max rel err {err:.3g} "
          f"({where}); outputs and grads {'finite' if finite.item() else 'NOT finite (NaN/inf)'}; autotuned "
          f"{len(tuned)} kernels, {sum(tuned.values())} keys")


if __name__ == "__main__":
    main()
