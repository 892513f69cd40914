"""An Inductor-compiled model library nobody here wrote: torchvision 0.26.0's own models (`pip install
torchvision`; its cu130 wheel matches the GPU machine's torch 2.11.0+cu130, carried under .wheels/timm), random
weights (`weights=None`, nothing downloaded), each under torch.compile (default mode), bf16 autocast, a training
step (forward, cross-entropy over 1000 classes, backward; no optimizer, the gradients dropped):

- Swin-T (28.3 M parameters), batch 32 x 3 x 224 x 224: shifted-window attention, so Inductor writes the window
  partition / roll / mask and relative-position-bias kernels, LayerNorms, GELU and their backward reductions;
- EfficientNet-B0 (5.3 M parameters), batch 64 x 3 x 224 x 224, channels_last: BatchNorm in training mode, SiLU,
  squeeze-and-excitation (global pools and sigmoid gates) and their backward reductions;
- MobileNetV3-Large (5.5 M parameters), batch 128 x 3 x 224 x 224, channels_last: BatchNorm in training mode,
  hardswish / hardsigmoid, squeeze-and-excitation, depthwise convolutions' neighbours;
- MaxViT-T (30.9 M parameters), batch 32 x 3 x 224 x 224: MBConv blocks, block and grid attention (window
  partitions and their inverses), relative-position bias, LayerNorm and BatchNorm, GELU, stochastic depth.

Every Triton kernel is Inductor's; convolutions, matmuls and attention's matmuls are cuDNN / cuBLAS.

    python benchmarks/workloads/torchvision_compiled.py [STEPS [MODELS]]   # default 10 steps of Swin-T and
                                                                          # EfficientNet-B0 (MODELS: comma-
                                                                          # separated, e.g. maxvit_t)
"""

import sys

import torch
import torchvision

from training import run, train_step

CLASSES = 1000
MODELS = (("swin_t", 32, torch.contiguous_format), ("efficientnet_b0", 64, torch.channels_last),
          ("mobilenet_v3_large", 128, torch.channels_last), ("maxvit_t", 32, torch.contiguous_format))
DEFAULT_MODELS = ("swin_t", "efficientnet_b0")


def build(device="cuda", compile=True, models=MODELS):
    """[(model, its compiled, images, targets)] per model of `models`, seeded. `compile=False` and device="cpu" are
    for checking the step without a GPU."""
    torch.manual_seed(0)
    built = []
    for name, batch, layout in models:
        model = torchvision.models.get_model(name, weights=None, num_classes=CLASSES)
        model = model.to(device).to(memory_format=layout).train()
        images = torch.randn(batch, 3, 224, 224, device=device).to(memory_format=layout)
        target = torch.randint(0, CLASSES, (batch,), device=device)
        built.append((model, torch.compile(model) if compile else model, images, target))
    return built


def step(built) -> list[float]:
    """One training step of each model; their losses."""
    return [train_step(model, images.device.type,
                       lambda: torch.nn.functional.cross_entropy(compiled(images), target))
            for model, compiled, images, target in built]


def main():
    names = sys.argv[2].split(",") if len(sys.argv) > 2 else DEFAULT_MODELS
    models = [m for m in MODELS if m[0] in names]
    if len(models) != len(names):
        raise SystemExit(f"models {sys.argv[2]}: each one of {', '.join(name for name, _, _ in MODELS)}")
    steps, losses = run(lambda: [build(models=models)], step)
    print(f"torchvision {torchvision.__version__}: {steps} steps; losses " +
          ", ".join(f"{name} {loss.item():.4f}" for (name, _, _), loss in zip(models, losses)))


if __name__ == "__main__":
    main()
