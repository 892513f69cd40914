"""memwatch's implementation: where did the device memory go, and which kernel took it.

Its public module is `tritonhook.memwatch` (`memwatch.watch(device=0, interval_ms=2)` and the names of its
`__all__`); this package exports nothing itself. `python -m tritonhook.mem` is the child side of `tritonhook memwatch`.

Why this exists: a CUDA context's memory grows in ways PyTorch cannot see. The largest is the driver's
local-memory (stack) reservation: when a kernel needs more stack than `CU_LIMIT_STACK_SIZE`, the driver raises the
limit at launch and reserves limit x SMs x max threads per SM for the rest of the context's life; Triton 3.4-3.6's
TMA kernels on an RTX 5090 take gigabytes that way (docs/tma_stack.md#the-stack-reservation). So memwatch
records, side by side:

* a timeline from a sampler process (`sampler`, so the watched program keeps its GIL): NVML v2 device `used` /
  `reserved` and this process's `usedGpuMemory`;
* snapshots before and after the region and around every Triton kernel launch and module load (`watch`, through
  Triton's runtime hook chains): NVML, the context's stack / printf FIFO / heap limits (`device`), the torch
  caching allocator, and the global scratch Triton asks `triton.set_allocator`'s allocator for (`scratch`);

and `attribute()` (`attribution`), a pure function of the snapshots, splits the growth into parts, each with its
formula. `result` holds what a region recorded and renders it; `runner` runs a Python command under memwatch in a
fresh process. Nothing here creates a CUDA context or raises into the user's program: a failing reading is a
warning.
"""
