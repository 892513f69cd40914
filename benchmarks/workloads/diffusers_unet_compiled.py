"""An Inductor-compiled diffusion model from a library nobody here wrote: Hugging Face diffusers 0.42.1'
`UNet2DConditionModel` (Stable Diffusion's denoiser; `pip install diffusers`), built from a config with random
weights (nothing downloaded), under torch.compile (default mode), bf16 autocast, a training step: the noise
prediction for noisy latents at random timesteps with text-encoder states, the MSE loss against the noise, backward
(no optimizer, the gradients dropped).

The UNet is Stable Diffusion 1.x's layout at a small size: three down and three up blocks of 128, 256 and 256
channels (cross-attention in the first two and their up twins), two ResNet blocks each, 8 heads, 32 GroupNorm
groups, latents 4 x 64 x 64, 77 text tokens of 768, batch 8. Inductor writes its Triton kernels: GroupNorm and
LayerNorm forward and backward reductions with their fused SiLU, the timestep embedding, GEGLU, the residual adds
and the loss; convolutions are cuDNN, the matmuls cuBLAS, attention SDPA.

    python benchmarks/workloads/diffusers_unet_compiled.py [STEPS]   # default 10 steps
"""

import diffusers
import torch

from training import run, train_step

BATCH, LATENT, TEXT_TOKENS, TEXT_WIDTH = 8, 64, 77, 768


def build(device="cuda", compile=True, batch=BATCH, latent=LATENT, channels=(128, 256, 256)):
    """(model, its compiled, (latents, timesteps, text states), noise), seeded; smaller `channels` and `latent`
    check the step on a CPU."""
    torch.manual_seed(0)
    model = diffusers.UNet2DConditionModel(
        sample_size=latent, in_channels=4, out_channels=4, layers_per_block=2, block_out_channels=channels,
        down_block_types=("CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=TEXT_WIDTH, attention_head_dim=8, norm_num_groups=32).to(device).train()
    latents = torch.randn(batch, 4, latent, latent, device=device)
    timesteps = torch.randint(0, 1000, (batch,), device=device)
    text = torch.randn(batch, TEXT_TOKENS, TEXT_WIDTH, device=device)
    noise = torch.randn_like(latents)
    return model, torch.compile(model) if compile else model, (latents + noise, timesteps, text), noise


def step(model, compiled, inputs, noise):
    """One training step: the noise prediction and its MSE under bf16 autocast, backward; returns the loss."""
    return train_step(model, noise.device.type,
                      lambda: torch.nn.functional.mse_loss(compiled(*inputs).sample.float(), noise))


def main():
    steps, loss = run(build, step)
    print(f"diffusers {diffusers.__version__} UNet2DConditionModel (128/256/256, latents 64x64, batch {BATCH}): "
          f"{steps} steps; loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
