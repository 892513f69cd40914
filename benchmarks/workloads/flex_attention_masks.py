"""A training step whose attention is PyTorch's FlexAttention under `torch.compile(mode="max-autotune-no-cudagraphs")`:
Inductor writes the attention forward and backward from its flex templates and, while compiling, benchmarks their
configs to choose one (`select_algorithm`). Two layers, each with its own block mask and score_mod, so that two
templates of one name differ in their code:

- layer 1: a document mask (4 documents of uneven length a sequence) inside causal, no score_mod;
- layer 2: a causal sliding window of 256 tokens and a tanh soft-cap of the scores at 30 (as Gemma 2's logits).

Each layer is projections (cuBLAS: `max_autotune_gemm_backends="ATEN"`, so the compile-time choice is the flex
templates'), the attention, an RMSNorm and a SiLU-gated MLP; bf16, batch 4 x 8 heads x 2,048 tokens x 64; AdamW.

    python benchmarks/workloads/flex_attention_masks.py [STEPS] [--profile OUT.json]

`--profile OUT.json`: `torch.profiler`'s kernel table of the steps after the first two (`steady_profile`).
"""

import functools

import torch
import torch._inductor.config as inductor_config
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

import steady_profile

BATCH, HEADS, TOKENS, HEAD_DIM = 4, 8, 2048, 64
WIDTH = HEADS * HEAD_DIM
WINDOW, SOFT_CAP = 256, 30.0
DOCUMENT_ENDS = (300, 1100, 1500, TOKENS)


def document_of_tokens() -> torch.Tensor:
    """Each token's document number (uneven documents: DOCUMENT_ENDS)."""
    ids = torch.zeros(TOKENS, dtype=torch.int32, device="cuda")
    for end in DOCUMENT_ENDS[:-1]:
        ids[end:] += 1
    return ids


def masks():
    documents = document_of_tokens()

    def causal_in_document(b, h, q, kv):
        return (kv <= q) & (documents[q] == documents[kv])

    def causal_window(b, h, q, kv):
        return (kv <= q) & (q - kv < WINDOW)

    return (create_block_mask(causal_in_document, None, None, TOKENS, TOKENS),
            create_block_mask(causal_window, None, None, TOKENS, TOKENS))


def soft_cap(score, b, h, q, kv):
    return SOFT_CAP * torch.tanh(score / SOFT_CAP)


class Layer(torch.nn.Module):
    def __init__(self, block_mask, score_mod):
        super().__init__()
        self.block_mask, self.score_mod = block_mask, score_mod
        self.qkv = torch.nn.Linear(WIDTH, 3 * WIDTH, bias=False)
        self.out = torch.nn.Linear(WIDTH, WIDTH, bias=False)
        self.norm = torch.nn.RMSNorm(WIDTH)
        self.gate_up = torch.nn.Linear(WIDTH, 8 * WIDTH, bias=False)
        self.down = torch.nn.Linear(4 * WIDTH, WIDTH, bias=False)

    def forward(self, x):
        q, k, v = self.qkv(x).view(BATCH, TOKENS, 3, HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)
        attended = flex_attention(q, k, v, score_mod=self.score_mod, block_mask=self.block_mask)
        x = x + self.out(attended.transpose(1, 2).reshape(BATCH, TOKENS, WIDTH))
        gate, up = self.gate_up(self.norm(x)).chunk(2, dim=-1)
        return x + self.down(torch.nn.functional.silu(gate) * up)


def build():
    torch.manual_seed(0)
    document_mask, window_mask = masks()
    model = torch.nn.Sequential(Layer(document_mask, None), Layer(window_mask, soft_cap)).cuda().to(torch.bfloat16)
    x = torch.randn(BATCH, TOKENS, WIDTH, device="cuda", dtype=torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    return torch.compile(model, mode="max-autotune-no-cudagraphs"), x, optimizer


def step(compiled, x, optimizer):
    compiled(x).float().square().mean().backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def main():
    with inductor_config.patch({"max_autotune_gemm_backends": "ATEN"}):
        steady_profile.main(lambda: functools.partial(step, *build()))


if __name__ == "__main__":
    main()
