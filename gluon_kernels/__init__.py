"""Gluon kernels bundled with tritonhook as real subjects: a Hopper (sm_90a) forward attention.

torch is imported lazily: the AOT compile helper works on a machine with Triton and no torch/GPU.
"""
from .hopper import VARIANTS, compile_hopper_attention, hopper_attention, transpose_v_for_fp8
from .blackwell import blackwell_attention, compile_blackwell_attention  # sm_100a; compiled and inspected, never run

__all__ = ["VARIANTS", "compile_hopper_attention", "hopper_attention", "transpose_v_for_fp8"]
__all__ += ["blackwell_attention", "compile_blackwell_attention"]
