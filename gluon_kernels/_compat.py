"""Version differences of the Gluon API, kept in one place (Triton 3.6 .. 3.9).

Shared by the Hopper attention kernel and, later, the Blackwell one. Everything a kernel needs that moved between
releases is re-exported here under one stable name; kernels import from this module, never from the versioned
paths directly.

What moved (read from the installed sources of triton 3.6.0 and 3.9.0, ``triton/experimental/gluon``):

* TMA copies. 3.6: ``tma.async_copy_global_to_shared(desc, coord, bar, smem, pred)`` and
  ``tma.async_copy_shared_to_global(desc, coord, smem)``. 3.9: ``tma.async_load`` / ``tma.async_store``; the old
  names still exist but raise ``RuntimeError("... has been removed")`` when traced, so a ``hasattr`` test is not
  enough: prefer the new names whenever they exist.
* ``mbarrier.expect``: the byte-count keyword is ``bytes`` in 3.6 and ``bytes_per_cta`` in 3.9 (a ``from_cta``
  keyword was added). Pass the count positionally: both accept that.
* ``warp_specialize(functions_and_args, worker_num_warps, worker_num_regs)``: ``worker_num_regs`` is required in
  3.6 and optional in 3.9; always pass it.
* ``aggregate`` (a class whose instances a kernel passes as one argument; fields annotated with real types, no
  ``from __future__ import annotations`` in its module, and an ``__init__`` that sets every field): 3.9 exports it as
  ``gluon.aggregate``; 3.6 has the same decorator as ``triton.language.core._aggregate``, which 3.6's own Gluon
  library (``nvidia/blackwell/float2.py``) imports under that name.
* ``GluonASTSource``: in ``triton.experimental.gluon._runtime`` in both (exported in ``__all__`` from 3.9); its
  ``ext`` is "ttgir" in 3.6 and "glir" in 3.9 (the first IR stage's key in ``CompiledKernel.asm``).
* ``TensorDescriptor`` (host side): ``triton.experimental.gluon.nvidia.hopper.TensorDescriptor`` in both; 3.9 adds
  ``round_f32_to_tf32`` and an im2col variant, and checks the swizzle width against the block.
* Kernel-signature spelling of a Gluon TMA descriptor for AOT compiles: ``"tensordesc<DTYPE[B0, B1],LAYOUT_REPR>"``
  (parsed by ``triton.language.str_to_ty``, which ``eval``s the layout repr) in both.
* Blackwell-only items (for the sm_100 kernel that will reuse this module): ``TensorMemoryLayout`` arguments and the
  TMEM register-layout helper changed name/arguments across releases (docs/triton_hooks.md#what-a-plugin-touches-per-release); add shims here when needed.
"""
from __future__ import annotations

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia import hopper as _hopper
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

try:  # 3.5+: present; exported from 3.9
    from triton.experimental.gluon._runtime import GluonASTSource
except ImportError:  # pragma: no cover - older than any supported release
    GluonASTSource = None

aggregate = getattr(gluon, "aggregate", None) or triton.language.core._aggregate


def data_aggregate(cls):
    """``aggregate`` for a class of fields only (shared memory, barriers): its ``__init__`` takes the fields in the
    order they are declared. 3.9 writes that ``__init__`` itself; 3.6 needs one written."""
    names = tuple(cls.__annotations__)

    def __init__(self, *values):
        if len(values) != len(names):
            raise TypeError(f"{cls.__name__} takes its {len(names)} fields ({', '.join(names)}), not {len(values)}")
        for name, value in zip(names, values):
            setattr(self, name, value)

    cls.__init__ = gluon.constexpr_function(__init__)
    return aggregate(cls)

TRITON_VERSION = tuple(int(p) for p in triton.__version__.split("+")[0].split(".")[:2])

tensor_descriptor = tma.tensor_descriptor  # a TMA descriptor argument's type (an aggregate field's annotation)
warpgroup_mma = _hopper.warpgroup_mma
warpgroup_mma_wait = _hopper.warpgroup_mma_wait
fence_async_shared = _hopper.fence_async_shared

# TMA global->shared load / shared->global store, under the 3.7+ names.
if hasattr(tma, "async_load"):
    tma_load = tma.async_load
    tma_store = tma.async_store
else:  # Triton 3.6
    tma_load = tma.async_copy_global_to_shared
    tma_store = tma.async_copy_shared_to_global
tma_store_wait = tma.store_wait

mbarrier_init = mbarrier.init
mbarrier_wait = mbarrier.wait
mbarrier_arrive = mbarrier.arrive
mbarrier_expect = mbarrier.expect  # call with the byte count positional (keyword renamed in 3.9)
mbarrier_invalidate = mbarrier.invalidate
MBarrierLayout = mbarrier.MBarrierLayout

FIRST_IR_STAGE = "glir" if TRITON_VERSION >= (3, 9) else "ttgir"


def tensordesc_signature(dtype: str, block_shape, layout) -> str:
    """Signature string of a Gluon TMA descriptor argument for ``triton.compile`` with no GPU.

    ``dtype`` is Triton's short name ("fp16", "bf16", "fp8e4nv"); ``layout`` an ``NVMMASharedLayout``.
    """
    shape = ", ".join(str(int(s)) for s in block_shape)
    return f"tensordesc<{dtype}[{shape}],{layout!r}>"


def nvmma_shared_layout(block_shape, dtype):
    """The default (widest-swizzle) NVMMA shared layout for a TMA/wgmma tile; same call in 3.6 and 3.9."""
    return gl.NVMMASharedLayout.get_default_for(list(block_shape), dtype)


__all__ = [
    "GluonASTSource", "MBarrierLayout", "TRITON_VERSION", "TensorDescriptor", "FIRST_IR_STAGE", "aggregate",
    "data_aggregate",
    "fence_async_shared",
    "gl", "gluon", "mbarrier", "mbarrier_arrive", "mbarrier_expect", "mbarrier_init", "mbarrier_invalidate",
    "mbarrier_wait", "nvmma_shared_layout", "tensordesc_signature", "tma", "tma_load", "tma_store", "tma_store_wait",
    "tensor_descriptor", "warpgroup_mma", "warpgroup_mma_wait",
]


# ----- Blackwell (sm_100a: tcgen05, TMEM), used by gluon_kernels/blackwell_fa.py ------------------------------
# What moved between 3.6.0 and 3.9.0 (read from triton/experimental/gluon/language/nvidia/blackwell/__init__.py):
# * ``get_tmem_reg_layout(dtype, shape, tmem_layout, num_warps)`` (3.6) is gone in 3.9, replaced by
#   ``tensor_memory_descriptor_type(dtype, shape, layout, alloc_shape).get_reg_layout(num_warps)``; 3.9's layout of a
#   TMEM slice depends on the parent's ``alloc_shape``, 3.6 instead narrows the slice's ``TensorMemoryLayout.block``.
# * ``tensor_memory_descriptor._reinterpret`` (3.6) became the public ``reinterpret`` (3.9).
# * ``TensorMemoryLayout(block, col_stride, cta_split_num, two_ctas)`` (3.6) vs ``(block, col_stride, cga_layout,
#   two_ctas, fp4_padded)`` (3.9): pass ``block`` and ``col_stride=`` only.
# * ``tcgen05_mma`` gained ``multicast=``, ``tcgen05_commit`` gained ``pred``/``descs``; the calls used here are
#   the same.
from triton.experimental.gluon.language.nvidia import blackwell as _blackwell  # noqa: E402

TensorMemoryLayout = _blackwell.TensorMemoryLayout
tensor_memory_descriptor = _blackwell.tensor_memory_descriptor
allocate_tensor_memory = _blackwell.allocate_tensor_memory
tcgen05_mma = _blackwell.tcgen05_mma
tcgen05_commit = _blackwell.tcgen05_commit
TMEM_PUBLIC_REINTERPRET = gl.constexpr(hasattr(_blackwell.tensor_memory_descriptor, "reinterpret"))


@gluon.constexpr_function
def tmem_layout(block, col_stride=1):
    """A TMEM layout of ``block`` = (rows, columns); ``col_stride`` 1 is packed (fp32, or 16/8-bit packed)."""
    block = getattr(block, "value", block)
    return TensorMemoryLayout((int(getattr(block[0], "value", block[0])), int(getattr(block[1], "value", block[1]))),
                              col_stride=int(getattr(col_stride, "value", col_stride)))


@gluon.constexpr_function
def tmem_reg_layout(dtype, shape, layout, num_warps, alloc_shape=None):
    """Register layout for ``tcgen05.ld/st`` (32x32b) of a TMEM view ``shape`` with ``layout``; ``alloc_shape`` is
    the shape of the allocation a slice was cut from (default: ``shape``)."""
    dtype = getattr(dtype, "value", dtype)
    shape = [int(getattr(s, "value", s)) for s in getattr(shape, "value", shape)]
    layout = getattr(layout, "value", layout)
    num_warps = int(getattr(num_warps, "value", num_warps))
    alloc_shape = list(shape) if alloc_shape is None else [int(getattr(s, "value", s))
                                                          for s in getattr(alloc_shape, "value", alloc_shape)]
    if hasattr(_blackwell, "get_tmem_reg_layout"):  # 3.6: a slice narrows the layout's block to its width
        narrowed = TensorMemoryLayout((layout.block[0], min(layout.block[1], shape[-1])), col_stride=layout.col_stride)
        return _blackwell.get_tmem_reg_layout(dtype, shape, narrowed, num_warps)
    ty = _blackwell.tensor_memory_descriptor_type(dtype, shape, layout, alloc_shape)  # 3.9
    return ty.get_reg_layout(num_warps=num_warps)


@gluon.jit
def tmem_reinterpret(mem, dtype: gl.constexpr, shape: gl.constexpr, layout: gl.constexpr):
    """View a TMEM buffer with another dtype/shape/layout (P written over S in the attention kernel)."""
    if TMEM_PUBLIC_REINTERPRET:
        return mem.reinterpret(dtype, shape, layout)
    else:
        return mem._reinterpret(dtype, shape, layout)


__all__ += ["TMEM_PUBLIC_REINTERPRET", "TensorMemoryLayout", "allocate_tensor_memory", "tcgen05_commit", "tcgen05_mma",
            "tensor_memory_descriptor", "tmem_layout", "tmem_reg_layout", "tmem_reinterpret"]
