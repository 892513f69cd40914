"""An autotune-heavy Triton library nobody here wrote: FlagGems 5.0.2 (BAAI / FlagOpen, `pip install flag-gems`;
its tuning cache needs SQLAlchemy 2.0.48). 119 of its kernels are autotuned (`@triton.autotune`, or `@libtuner`, its
subclass of triton.runtime.Autotuner); on sm_90 its matmul is the Hopper TMA kernel `mm_kernel_general_host_tma`,
autotuned over 216 configs (162 fit the H100/H200 shared memory). This calls its Python API directly (no aten
override), bf16, on Llama-style shapes (tokens 4096 = 4 x 1024, hidden 2048, 16 heads of 128, FFN 5632, vocab 32000)
and a ResNet-style conv layer. Per step, with each kernel's number of autotune configs (checked on CPU by a dry run
that records which kernels the calls reach):

  GEMMs (forward)  mm [4096,2048]x[2048,6144] -> mm_kernel_general_host_tma (216, 162 fit), addmm + bias
                   [4096,2048]x[2048,2048] (8), bmm [64,1024,128]x[64,128,1024] (12), mv [5632,2048]x[2048] (48)
  attention        scaled_dot_product_attention causal [4,16,1024,128], forward + backward: _attn_fwd (45),
                   _attn_bwd (18)
  norms            layer_norm + layer_norm_backward [4096,2048] (3; 12 and 12); rms_norm fwd+bwd (heuristic, untuned)
  softmax          softmax (untuned) + softmax_backward (5) over [64*1024, 1024]
  activation       silu_and_mul [4096,5632] (FlagGems' generated pointwise code, untuned)
  loss             cross_entropy_loss fwd+bwd [4096, 32000] (9 + 9)
  reductions       var_mean (24), amax (4), vector_norm (4), sum_dim and mean_dim (untuned) over [4096,5632] rows
  conv             conv2d 3x3 fwd+bwd [32,64,56,56]: conv2d_forward_kernel (20; run again for the input gradient),
                   conv2d_backward_kernel_weight (7); batch_norm training forward + backward (3 + 3)

That is 17 autotuned kernels, about 410-430 configs benchmarked on the first step (later steps reuse the picks).

FlagGems keeps every config's timing in an SQLite file under FLAGGEMS_CACHE_DIR (default ~/.flaggems) and reuses
it in later processes; unless FLAGGEMS_CACHE_DIR is set, this script points it at a fresh temporary directory so
that every run autotunes again (set it to a fixed directory to reuse the tuning). GEMS_VENDOR defaults to nvidia
(else FlagGems probes vendors by running their tools). Note: after a kernel's first call FlagGems' `libentry`
launches the cached CompiledKernel itself (flag_gems/utils/libentry.py), not through JITFunction.run.

    python benchmarks/workloads/flaggems_ops.py [STEPS]   # default 5
"""

import atexit
import os
import shutil
import sys
import tempfile

if "FLAGGEMS_CACHE_DIR" not in os.environ:
    os.environ["FLAGGEMS_CACHE_DIR"] = tempfile.mkdtemp(prefix="flaggems-cache-")
    atexit.register(shutil.rmtree, os.environ["FLAGGEMS_CACHE_DIR"], True)
os.environ.setdefault("GEMS_VENDOR", "nvidia")

import flag_gems  # noqa: E402
import torch  # noqa: E402

BATCH, SEQ, HIDDEN, HEADS, HEAD_DIM, FFN, VOCAB = 4, 1024, 2048, 16, 128, 5632, 32000
TOKENS = BATCH * SEQ
CONV_N, CONV_C, CONV_HW = 32, 64, 56


def build(device="cuda"):
    """A dict of seeded bf16 tensors: weights, activations, upstream gradients."""
    torch.manual_seed(0)
    bf16 = torch.bfloat16

    def rnd(*shape, scale=1.0, grad=False):
        t = (torch.randn(shape, device=device) * scale).to(bf16)
        return t.requires_grad_() if grad else t

    return dict(
        x=rnd(TOKENS, HIDDEN, grad=True), rms_w=torch.ones(HIDDEN, device=device, dtype=bf16, requires_grad=True),
        w_qkv=rnd(HIDDEN, 3 * HIDDEN, scale=0.02), w_o=rnd(HIDDEN, HIDDEN, scale=0.02), b_o=rnd(HIDDEN, scale=0.02),
        w_down=rnd(FFN, HIDDEN, scale=0.02), decode_x=rnd(HIDDEN),
        q=rnd(BATCH, HEADS, SEQ, HEAD_DIM, grad=True), k=rnd(BATCH, HEADS, SEQ, HEAD_DIM, grad=True),
        v=rnd(BATCH, HEADS, SEQ, HEAD_DIM, grad=True), d_attn=rnd(BATCH, HEADS, SEQ, HEAD_DIM),
        ln_w=torch.ones(HIDDEN, device=device, dtype=bf16), ln_b=torch.zeros(HIDDEN, device=device, dtype=bf16),
        d_hidden=rnd(TOKENS, HIDDEN), gate=rnd(TOKENS, FFN), up=rnd(TOKENS, FFN), d_probs=rnd(BATCH * HEADS, SEQ, SEQ),
        logits=rnd(TOKENS, VOCAB, grad=True), target=torch.randint(0, VOCAB, (TOKENS,), device=device),
        image=rnd(CONV_N, CONV_C, CONV_HW, CONV_HW, grad=True), conv_w=rnd(CONV_C, CONV_C, 3, 3, scale=0.05, grad=True),
        conv_b=rnd(CONV_C, scale=0.05, grad=True), d_image=rnd(CONV_N, CONV_C, CONV_HW, CONV_HW),
        bn_w=torch.ones(CONV_C, device=device, dtype=bf16), bn_b=torch.zeros(CONV_C, device=device, dtype=bf16),
        bn_mean=torch.zeros(CONV_C, device=device, dtype=bf16), bn_var=torch.ones(CONV_C, device=device, dtype=bf16),
    )


def step(t):
    """One pass over the ops above; returns (loss, checksum) as 0-d tensors. Gradients are dropped."""
    fg = flag_gems
    # RMSNorm forward + backward (FlagGems' autograd Function)
    h = fg.rms_norm(t["x"], [HIDDEN], t["rms_w"], 1e-6)
    h.backward(t["d_hidden"])
    h = h.detach()
    # projections: the Hopper TMA matmul, addmm with bias, the decode GEMV
    qkv = fg.mm(h, t["w_qkv"])
    o = fg.addmm(t["b_o"], qkv[:, :HIDDEN], t["w_o"])
    dec = fg.mv(t["w_down"], t["decode_x"])
    # attention: the fused kernel forward + backward, and the unfused pieces (bmm, softmax, its backward)
    attn = fg.scaled_dot_product_attention(t["q"], t["k"], t["v"], is_causal=True)
    attn.backward(t["d_attn"])
    q, k = t["q"].detach().flatten(0, 1), t["k"].detach().flatten(0, 1)
    scores = fg.bmm(q, k.transpose(1, 2))
    probs = fg.softmax(scores, -1)
    d_scores = fg.softmax_backward(t["d_probs"], probs, -1, torch.bfloat16)
    # LayerNorm forward + backward (aten-style pair)
    y, mean, rstd = fg.layer_norm(o, [HIDDEN], t["ln_w"], t["ln_b"], 1e-5)
    dx, dw, db = fg.layer_norm_backward(t["d_hidden"], o, [HIDDEN], mean, rstd, t["ln_w"], t["ln_b"],
                                        [True, True, True])
    # SwiGLU activation and row reductions over its output
    act = fg.silu_and_mul(t["gate"], t["up"])
    var, mu = fg.var_mean(act, [1], correction=1)
    red = fg.sum_dim(act, [1]).float().sum() + fg.mean_dim(act, [1]).float().sum() \
        + fg.amax(act, [1]).float().sum() + fg.vector_norm(act, 2, [1]).float().sum()
    # cross-entropy forward + backward
    loss = fg.cross_entropy_loss(t["logits"], t["target"])
    loss.backward()
    # conv layer: conv2d forward + backward, batch norm (training) forward + backward
    feat = fg.conv2d(t["image"], t["conv_w"], t["conv_b"], 1, 1)
    feat.backward(t["d_image"])
    bn, save_mean, save_invstd = fg.batch_norm(feat.detach(), t["bn_w"], t["bn_b"], t["bn_mean"], t["bn_var"],
                                               True, 0.1, 1e-5)
    d_bn = fg.batch_norm_backward(t["d_image"], feat.detach(), t["bn_w"], t["bn_mean"], t["bn_var"], save_mean,
                                  save_invstd, True, 1e-5, [True, True, True])
    for name in ("x", "rms_w", "q", "k", "v", "logits", "image", "conv_w", "conv_b"):
        t[name].grad = None
    checksum = sum(v.float().mean() for v in (o, dec, attn.detach(), d_scores, y, dx, dw, db, var, mu, bn, d_bn[0]))
    return loss.detach(), checksum + red


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    tensors = build()
    for _ in range(steps):
        loss, checksum = step(tensors)
    torch.cuda.synchronize()
    # one correctness probe against torch (cuBLAS) on the TMA matmul
    h = tensors["x"].detach()
    err = (flag_gems.mm(h, tensors["w_qkv"]).float() - (h @ tensors["w_qkv"]).float()).abs().max().item()
    print(f"flag_gems {flag_gems.__version__}: {steps} steps; cross-entropy {loss.item():.4f}, "
          f"checksum {checksum.item():.4f}, mm max abs err vs torch {err:.3g}")


if __name__ == "__main__":
    main()
