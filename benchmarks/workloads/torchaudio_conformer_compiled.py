"""An Inductor-compiled speech encoder from a library nobody here wrote: torchaudio's Conformer (the GPU machine has
torchaudio 2.11; `pip install torchaudio`), random weights, under torch.compile (default mode), bf16 autocast, a
training step: forward over a padded batch of feature frames, a mean-squared loss against a target, backward (no
optimizer, the gradients dropped).

What it adds to the transformers here: each layer's convolution module (pointwise convolution, GLU, a depthwise 1-D
convolution of kernel 31, BatchNorm1d in training mode, SiLU), two half-step feed-forward modules, and attention with
a key padding mask from each utterance's length, so Inductor writes batch-norm statistics and their backward, GLU and
masked softmax kernels. The convolutions and matmuls are cuDNN and cuBLAS. Batch 16 x 1024 frames of 512 features,
4 layers, 8 heads, feed-forward 2048, dropout 0.1.

    python benchmarks/workloads/torchaudio_conformer_compiled.py [STEPS]   # default 10
"""

import torch
import torchaudio

from training import run, train_step

BATCH, FRAMES, FEATURES = 16, 1024, 512


def build(device="cuda", compile=True, batch=BATCH, frames=FRAMES, features=FEATURES, layers=4):
    """(model, its compiled, (features, lengths, target)), seeded; lengths from three quarters of `frames` up."""
    torch.manual_seed(0)
    model = torchaudio.models.Conformer(input_dim=features, num_heads=8, ffn_dim=4 * features, num_layers=layers,
                                        depthwise_conv_kernel_size=31, dropout=0.1).to(device).train()
    inputs = torch.randn(batch, frames, features, device=device)
    lengths = torch.randint(frames * 3 // 4, frames + 1, (batch,), device=device)
    lengths[0] = frames  # the longest sets the padded length the model sees
    target = torch.randn(batch, frames, features, device=device)
    return model, torch.compile(model) if compile else model, (inputs, lengths, target)


def step(model, compiled, batch):
    """One training step: forward and loss under bf16 autocast, backward; returns the loss."""
    inputs, lengths, target = batch
    return train_step(model, inputs.device.type,
                      lambda: torch.nn.functional.mse_loss(compiled(inputs, lengths)[0].float(), target))


def main():
    steps, loss = run(build, step)
    print(f"torchaudio {torchaudio.__version__} Conformer (4 layers, 512 features): {steps} steps; "
          f"loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
