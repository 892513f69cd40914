"""Mamba-2's SSD scan, all Triton and heavily autotuned, from a library nobody here has used: mamba-ssm (state-spaces/
mamba), built without its CUDA extensions at upstream commit e9594ce (2.3.2.post1 plus 3 commits; every PyPI release
imports the extension `selective_scan_cuda` from `mamba_ssm/__init__`, #977 made it optional: see carry.sh). Per
step, per shape, bf16, forward and backward:

1. `mamba_chunk_scan_combined(x, dt, A, B, C, chunk_size=256, D, dt_bias, dt_softplus=True)`, z = None as in Mamba2
   with its gated norm: 14 `@triton.autotune` kernels, no config pruning; configs (key): forward _chunk_cumsum_fwd 7
   (chunk_size, nheads), _chunk_state_fwd 9 (hdim, dstate, chunk_size), _state_passing_fwd 6 (dim), _bmm_chunk_fwd 9
   (chunk_size, K, IS_CAUSAL), _chunk_scan_fwd 11 (chunk_size, hdim, dstate, IS_CAUSAL); backward (recomputes those
   but the last) _chunk_scan_bwd_dstates 9, _state_passing_bwd 6, _chunk_scan_chunk_state_bwd_dx 9 (pre_hook zeroes
   ddt, dD), _chunk_state_bwd_db 8, _chunk_scan_bwd_dc 8, _chunk_scan_bwd_dcb 6, _bmm_chunk_bwd 9 (twice: dB, dC),
   _chunk_scan_bwd_ddAcs_stable 6, _chunk_cumsum_bwd 7: 110 configs.
2. Mamba2's gated RMSNorm, `layernorm_gated.rmsnorm_fn(y, w, z=z, group_size=d_inner // ngroups,
   norm_before_gate=False)`: NOT autotuned (@triton.heuristics; num_warps from the row size).
3. The Block's fused residual add + RMSNorm, `layer_norm.rms_norm_fn(h, w, residual=r, prenorm=True,
   residual_in_fp32=True)`, here at width d_inner (no out_proj, so no cuBLAS in the step): _layer_norm_fwd_1pass_kernel
   and _layer_norm_bwd_kernel, 6 configs each (num_warps 1-32, key N, ...; config_prune keeps all 6 on CUDA).

16 autotuned kernels, 122 configs, tuned on the first step. Triton adds each tensor argument's dtype to the key, and
only the cumsum (nheads) and layer_norm (N) kernels key on the shape: 29 (kernel, key) tunings in all, the check's
included (_state_passing_fwd twice: bf16 states out in forward, fp32 in the backward's recompute). Shapes (batch,
seqlen, heads, groups; headdim 64, d_state 128): mamba2-130m (4, 4096, 24, 1), mamba2-2.7b (2, 2048, 80, 1), and
(2, 4096, 64, 8), 8 groups as in Nemotron-H / Codestral Mamba. Checked once at (2, 512, 8, 2), output and every input
gradient, against fp32 torch: the paper's `ssd_minimal_discrete` plus dt_bias/softplus/D, both norms' `rms_norm_ref`.
On an H100, cold Triton cache: first step 178-188 s (autotuning), the next 9 0.25 s; max rel err 6.5e-3 (ddt).

    python benchmarks/workloads/mamba_ssd.py [STEPS [SHAPES]]   # default 10 steps, all three shapes
                                                                # (SHAPES: comma-separated names, e.g. 2.7b)
"""

import importlib.metadata
import math
import sys
import time

import torch
import torch.nn.functional as F

from mamba_ssm.ops.triton import layer_norm, layernorm_gated
from mamba_ssm.modules.ssd_minimal import ssd_minimal_discrete
from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined

from autotuned import autotuned  # benchmarks/workloads/autotuned.py

HEADDIM, DSTATE, CHUNK, EPS = 64, 128, 256, 1e-5
SHAPES = {"130m": (4, 4096, 24, 1), "2.7b": (2, 2048, 80, 1), "64h-8g": (2, 4096, 64, 8)}  # b, L, heads, groups
CHECK_SHAPE = (2, 512, 8, 2)
NAMES = ("x", "dt", "A", "B", "C", "D", "dt_bias", "z", "norm_w", "w", "res")


def build(batch, seqlen, nheads, ngroups, device="cuda"):
    """Leaf tensors as Mamba2 makes them (A in [-16, -1], dt_bias = softplus^-1 of dt in [1e-3, 0.1]), and grads."""
    d_inner, rand = nheads * HEADDIM, lambda *shape: torch.randn(*shape, device=device)
    dt0 = torch.exp(torch.rand(nheads, device=device) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
    t = dict(x=rand(batch, seqlen, nheads, HEADDIM).bfloat16(), dt=rand(batch, seqlen, nheads).bfloat16(),
             A=-torch.empty(nheads, device=device).uniform_(1, 16), B=rand(batch, seqlen, ngroups, DSTATE).bfloat16(),
             C=rand(batch, seqlen, ngroups, DSTATE).bfloat16(), D=torch.ones(nheads, device=device),
             dt_bias=dt0 + torch.log(-torch.expm1(-dt0)), z=rand(batch, seqlen, d_inner).bfloat16(),
             norm_w=torch.ones(d_inner, device=device), w=torch.ones(d_inner, device=device).bfloat16(),
             res=rand(batch, seqlen, d_inner))
    return {k: v.requires_grad_() for k, v in t.items()}, [rand(batch, seqlen, d_inner).bfloat16(),
                                                           rand(batch, seqlen, d_inner)]


def ssd_ref(x, dt, A, B, C, chunk, D, dt_bias, dt_softplus):
    """mamba_chunk_scan_combined in torch (ssd_chunk_scan_combined_ref has NaN grads: exp(+large), then masked)."""
    dt = F.softplus(dt + dt_bias) if dt_softplus else dt + dt_bias
    heads = lambda t: t.repeat_interleave(x.shape[2] // t.shape[2], dim=2)  # noqa: E731  (groups -> heads)
    return ssd_minimal_discrete(x * dt[..., None], A * dt, heads(B), heads(C), chunk)[0] + x * D[:, None]


def forward(f, ngroups, ref=False):
    """SSD scan -> gated RMSNorm -> residual add + RMSNorm: (out, residual_out). ref: the torch references."""
    batch, seqlen, nheads, _ = f["x"].shape
    scan = ssd_ref if ref else mamba_chunk_scan_combined
    y = scan(f["x"], f["dt"], f["A"], f["B"], f["C"], CHUNK, D=f["D"], dt_bias=f["dt_bias"], dt_softplus=True)
    gated_norm = layernorm_gated.rms_norm_ref if ref else layernorm_gated.rmsnorm_fn
    y = gated_norm(y.reshape(batch, seqlen, nheads * HEADDIM), f["norm_w"], None, z=f["z"], eps=EPS,
                   group_size=nheads * HEADDIM // ngroups, norm_before_gate=False)
    if ref:
        return layer_norm.rms_norm_ref(y, f["w"], None, residual=f["res"], eps=EPS, prenorm=True, upcast=True)
    return layer_norm.rms_norm_fn(y, f["w"], None, residual=f["res"], eps=EPS, prenorm=True, residual_in_fp32=True)


def train_step(t, grads, ngroups):
    """Forward, backward with fixed output gradients; returns (outputs, input grads) and clears the grads."""
    outs = forward(t, ngroups)
    torch.autograd.backward(outs, grads)
    input_grads = [t[k].grad for k in NAMES]
    for v in t.values():
        v.grad = None
    return outs, input_grads


def check():
    """(largest relative error over output and input grads, its name) against the fp32 torch references."""
    torch.manual_seed(1)
    t, grads = build(*CHECK_SHAPE)
    outs, got = train_step(t, grads, CHECK_SHAPE[3])
    f = {k: v.detach().float().requires_grad_() for k, v in t.items()}  # fp32 leaves: fp32 reference grads
    ref = forward(f, CHECK_SHAPE[3], ref=True)
    torch.autograd.backward(ref, [g.float() for g in grads])
    pairs = [("out", outs[0], ref[0]), ("res_out", outs[1], ref[1])] + [(f"d{k}", g, f[k].grad)
                                                                       for k, g in zip(NAMES, got)]
    errs = {n: ((a.float() - b).abs().max() / b.abs().max()).item() for n, a, b in pairs}
    return max(errs.values()), max(errs, key=errs.get)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    shapes = {name: SHAPES[name] for name in sys.argv[2].split(",")} if len(sys.argv) > 2 else SHAPES
    torch.manual_seed(0)
    work = {name: (build(*shape), shape[3]) for name, shape in shapes.items()}
    times, finite = [], torch.ones((), dtype=torch.bool, device="cuda")
    for _ in range(steps):
        start = time.perf_counter()
        for (t, grads), ngroups in work.values():
            outs, input_grads = train_step(t, grads, ngroups)
            finite &= torch.stack([v.isfinite().all() for v in (*outs, *input_grads)]).all()  # no host sync
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    err, worst = check()
    tuned = autotuned("mamba_ssm.ops.triton.")
    print(f"mamba-ssm {importlib.metadata.version('mamba_ssm')}: {steps} steps x {len(shapes)} shapes {shapes} "
          f"fwd+bwd; first step (autotune) {times[0]:.1f} s, rest {sum(times[1:]):.2f} s; max rel err {err:.3g} "
          f"({worst}); outputs and grads {'finite' if finite.item() else 'NOT finite (NaN/inf)'}; autotuned "
          f"{len(tuned)} kernels, {sum(tuned.values())} keys")


if __name__ == "__main__":
    main()
