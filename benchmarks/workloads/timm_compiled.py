"""An Inductor-compiled vision model library nobody here wrote: timm 1.0.31 (PyTorch Image Models, `pip install
timm`; it imports torchvision 0.26.0, whose cu130 wheel matches the GPU machine's torch 2.11.0+cu130), random
weights (`pretrained=False`, nothing downloaded), each model under torch.compile (default mode), bf16 autocast:

- ConvNeXt-Tiny (28.6 M parameters), a training step: forward and backward, batch 32 x 3 x 224 x 224,
  channels_last, cross-entropy over 1000 classes, no optimizer (the gradients dropped);
- ViT-B/16 (86.6 M parameters), inference: batch 64 x 3 x 224 x 224 under torch.no_grad.

Every Triton kernel is Inductor's (LayerNorm2d / LayerNorm, GELU, layer scale, residual adds, the loss, their
backward reductions); the convolutions, matmuls and attention are cuDNN / cuBLAS / SDPA. The wheels travel under
.wheels/timm (benchmarks/workloads/carry.sh timm).

    python benchmarks/workloads/timm_compiled.py [STEPS]   # default 10 steps, each one ConvNeXt step + one ViT batch
"""

import timm
import torch

from training import run, train_step

CONV_BATCH, VIT_BATCH, CLASSES = 32, 64, 1000


def build(device="cuda", compile=True):
    """(convnext, its compiled, vit compiled, image batch for each, targets), seeded. `compile=False` (eager) and
    device="cpu" are for checking the step without a GPU."""
    torch.manual_seed(0)
    wrap = torch.compile if compile else (lambda model: model)
    convnext = timm.create_model("convnext_tiny", pretrained=False, num_classes=CLASSES)
    convnext = convnext.to(device).to(memory_format=torch.channels_last).train()
    vit = timm.create_model("vit_base_patch16_224", pretrained=False, num_classes=CLASSES).to(device).eval()
    images = torch.randn(CONV_BATCH, 3, 224, 224, device=device).to(memory_format=torch.channels_last)
    target = torch.randint(0, CLASSES, (CONV_BATCH,), device=device)
    vit_images = torch.randn(VIT_BATCH, 3, 224, 224, device=device)
    return convnext, wrap(convnext), wrap(vit), images, target, vit_images


def step(convnext, convnext_compiled, vit_compiled, images, target, vit_images):
    """One ConvNeXt training step (forward, loss, backward) and one ViT inference batch; (loss, logits' mean)."""
    device = images.device.type
    loss = train_step(convnext, device, lambda: torch.nn.functional.cross_entropy(convnext_compiled(images), target))
    with torch.no_grad(), torch.autocast(device, dtype=torch.bfloat16):
        logits = vit_compiled(vit_images)
    return loss, logits.float().mean()


def main():
    steps, (loss, vit_mean) = run(build, step)
    print(f"timm {timm.__version__}: {steps} steps; convnext_tiny loss {loss.item():.4f}, "
          f"vit_base_patch16_224 logits mean {vit_mean.item():.4f}")


if __name__ == "__main__":
    main()
