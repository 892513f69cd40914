"""Give TMA loads a CTA-scoped destination so that sm_120a kernels stop calling the driver's TMA routine.

Why (docs/tma_stack.md#the-stack-reservation): Triton 3.4-3.6 emit every TMA load as
`cp.async.bulk.tensor.<N>d.shared::cluster.global.mbarrier::complete_tx::bytes`. For sm_120a ptxas lowers that
form to a call of `__cuda_syscall_cp_async_bulk_tensor_<N>d_tile_unicast`, whose ~14.6 KB/thread stack frame makes
the driver raise `CU_LIMIT_STACK_SIZE` and reserve ~3.7 GiB on an RTX 5090 for the life of the context. Triton 3.7+
emit `shared::cta.global` instead, which ptxas lowers to the TMA instruction itself.

A load that is not multicast writes only the issuing CTA's shared memory, and a CTA's own shared address is a valid
address in both state spaces, so rewriting the destination space is exact for those loads. Multicast loads really
address other CTAs of the cluster and are left alone. `shared::cta` as the destination needs PTX ISA 8.6, which
Triton 3.6 already emits (8.7 for sm_90a, 8.8 for sm_120a).

`ptx.rewrite_tma_scope` is the pure text transform; `make_tma_scope_transform` is the compile-stage
callback that `tritonhook.enable(fix_tma_scope=True)` installs (sm_12x targets only, since elsewhere there is nothing
to gain).
"""

from __future__ import annotations


from ._triton import PtxTransform
from .ptx import rewrite_tma_scope, target as ptx_target

FIXED_KEY = "tritonhook_tma_scope_fixed"
"""Metadata key the transform writes: how many TMA loads it rewrote (0 when it looked and found none)."""

SM12X = "sm_12"
"""Consumer Blackwell (sm_120/sm_121 and their a/f variants): where ptxas turns the cluster form into a call."""


def make_tma_scope_transform(arch_prefix: str = SM12X) -> tuple[PtxTransform, str]:
    """`(transform, cache_key)` for `HookInstallation`: rewrites the "ptx" stage output of kernels whose PTX
    `.target` starts with `arch_prefix` ("" for every target: on sm_90a both forms assemble, which lets a Hopper
    GPU check that the rewrite keeps results bitwise) and records the count under `metadata[FIXED_KEY]`."""

    def fix_stage(ptx: str, metadata: dict) -> str:
        if not ptx_target(ptx).startswith(arch_prefix):
            return ptx
        fixed, count = rewrite_tma_scope(ptx)
        metadata[FIXED_KEY] = count
        return fixed

    return fix_stage, f"tma-scope:{arch_prefix or 'all'}"
