"""Linear recurrences on accelerated-scan (Volodymyr Kyrylov's `accelerated-scan` 0.3.1: first-order parallel scans
in Triton, `tl.associative_scan` over blocks of 2,048 time steps, one program per sequence and channel): training
steps of a small recurrent stack, random weights and input, nothing downloaded. Each layer is a gated linear
recurrence `h_t = a_t * h_{t-1} + b_t` with data-dependent gates (sigmoid forget gates, as in HGRN or minGRU) run by
the real scan (`accelerated_scan.scalar.scan`), then a complex-valued diagonal recurrence (the LRU's: a learned
decay and rotation per channel, `accelerated_scan.complex.scan`) mixed back to real. Four Triton kernels: the
scalar and the complex scan's `forward_scan` and `backward_scan`, each launched with `enable_fp_fusion=False` (a
compile option passed at launch: a replay or a rebuild that dropped it would time another kernel), no autotuning;
the rest (linears, gates, norms) is PyTorch's own kernels.

Batch 8 x 4,096 steps, 512 channels, 2 layers; AdamW; fp32 (the scans take fp32 and complex64). Carried wheel
(`.wheels/accelerated_scan`, `carry.sh accelerated_scan`): accelerated-scan alone (it needs torch and Triton).

    python benchmarks/workloads/accelerated_scan_lru.py [STEPS] [--profile OUT.json]

`--profile OUT.json`: `torch.profiler`'s kernel table of the steps after the first two (`steady_profile`).
"""

import functools

import torch
from accelerated_scan import complex as complex_scan
from accelerated_scan import scalar as scalar_scan

import steady_profile

BATCH, STEPS_T, CHANNELS, LAYERS = 8, 4096, 512, 2


class Recurrence(torch.nn.Module):
    """A gated scalar recurrence, then a complex diagonal one, each over time per channel (B, C, T layout)."""

    def __init__(self, channels: int):
        super().__init__()
        self.norm = torch.nn.LayerNorm(channels)
        self.gates = torch.nn.Linear(channels, 2 * channels)
        self.log_decay = torch.nn.Parameter(torch.log(torch.linspace(0.9, 0.999, channels)))
        self.angle = torch.nn.Parameter(torch.linspace(0.0, 3.14, channels))
        self.mix = torch.nn.Linear(2 * channels, channels)

    def forward(self, x):  # x: (B, T, C)
        forget, value = self.gates(self.norm(x)).chunk(2, dim=-1)
        forget = torch.sigmoid(forget)
        gated = scalar_scan.scan(forget.transpose(1, 2).contiguous(),
                                 ((1 - forget) * value).transpose(1, 2).contiguous())
        decay = torch.polar(torch.exp(self.log_decay), self.angle)[None, :, None].expand_as(gated).contiguous()
        rotated = complex_scan.scan(decay, gated.contiguous())
        mixed = torch.cat([rotated.real, rotated.imag], dim=1).transpose(1, 2)
        return x + self.mix(mixed)


def build():
    torch.manual_seed(0)
    model = torch.nn.Sequential(*(Recurrence(CHANNELS) for _ in range(LAYERS))).cuda()
    x = torch.randn(BATCH, STEPS_T, CHANNELS, device="cuda")
    return model, x, torch.optim.AdamW(model.parameters(), lr=1e-4)


def main():
    steady_profile.main(lambda: functools.partial(steady_profile.training_step, *build()))


if __name__ == "__main__":
    main()
