"""What the workload scripts share: one training step without an optimizer (`diffusers_unet_compiled.py`,
`hf_causal_lm_compiled.py`, `inductor_transformer.py`, `pyg_gnn_compiled.py`, `timm_compiled.py`,
`torchaudio_conformer_compiled.py`, `torchvision_compiled.py`), and the loop a workload's command line runs (those and
`cce_loss.py`, `sage_attention.py`). Imported as a sibling (a script's folder is first on its path)."""

import sys

import torch


def train_step(model, device_type: str, loss_of):
    """One training step: `loss_of()` (forward and loss) under bf16 autocast, backward, the gradients dropped (no
    optimizer: the kernels are the step's, the weights stay as built); returns the loss."""
    with torch.autocast(device_type, dtype=torch.bfloat16):
        loss = loss_of()
    loss.backward()
    model.zero_grad(set_to_none=True)
    return loss


def run(build, step, default_steps: int = 10):
    """Build the workload, run `step(*built)` STEPS times (the command line's first argument), wait for the GPU;
    returns (steps, the last step's result)."""
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else default_steps
    workload = build()
    for _ in range(steps):
        result = step(*workload)
    torch.cuda.synchronize()
    return steps, result
