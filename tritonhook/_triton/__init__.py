"""Everything that touches Triton internals lives here (Triton 3.6 through 3.9).

One module per hook family, so that each feature's Triton side reads on its own; each imports only modules above
it in this list (the launch tracer asks the autotune tracer whether a benchmark runs, and builds late capture
records the compile hooks' way):

* `version`:  release detection and the support check, and the helpers every family shares (warning once about
  a failing hook, Triton's metadata as plain JSON).
* `compile`:  the compile listener and the stage inspection hook (capture records, the "ptx" stage transforms of
  rename and tma_scope, the 3.6 cache keys), the ptxas and options Triton compiles with, what every hook slot
  holds (`hook_slots`, for doctor).
* `template_fusion`: Inductor's GEMM templates fused with their neighbours or not, as decisions (the autotune
  tracer records them, the pinner pins them).
* `autotune`: `AutotuneTracer`, which launches are `triton.autotune`'s or Inductor's benchmark of a config.
* `launches`: `LaunchTracer` (every launch with its arguments, the C path in `_launchpath.c`), Triton's runtime
  hook chains and scratch allocator (memwatch), and switching Inductor's static launcher off while tracing.
* `replay`:   host TMA descriptors as data and back, a compiled kernel loaded from its files and launched.
* `rebuild`:  what a capture keeps to rebuild its kernel under another release (the module text, the
  specialization as JSON, the modules of the JIT helpers it calls), read back into Triton's objects, and that
  rebuild under the running release.

The names below are the adapter's interface: the rest of tritonhook imports them from here (`_triton.LaunchTracer`),
never from a submodule.
"""

from __future__ import annotations

from .autotune import (COMPILE, COORDINATE_DESCENT, INDUCTOR_AUTOTUNER_MODULE, INDUCTOR_CACHE, INDUCTOR_RUNTIME,
                       PINNED, SELECT_ALGORITHM, TRITON_AUTOTUNE, AutotuneCandidate, AutotuneDecision,
                       AutotunePinner, AutotuneTracer, CompiledAhead, autotune_config, config_matches,
                       inductor_benchmark_process, inductor_tuning_key, is_inductor_kernel_key, pick_identity,
                       pins_turn_inductor_caches_off, tuning_key)
from .compile import (ORIGINAL_NAME_KEY, CubinTransform, HookInstallation, PtxTransform, current_hooks, hook_slots,
                      loaded_event, ptxas_args_of, check_ptxas_arm, ptxas_for, ptxases_for, triton_ptxas)
from .launches import (RUNTIME_HOOK_CHAINS, LaunchSpec, LaunchTracer, add_runtime_hooks, allocator_var,
                       inductor_launches_through_triton, launch_spec,
                       remove_runtime_hooks, signature_key_of)
from .rebuild import (HELPERS_STAGE, PYTHON_STAGE, REBUILD_STAGE, RebuiltKernel, compile_rebuilt, specialized_on,
                      helper_modules)
from .replay import launch, load_kernel, make_tensor_descriptor, tensor_descriptor_fields
from .template_fusion import FUSED, TEMPLATE_FUSION
from .version import REQUIREMENT, check_supported, parse_version, triton_version

__all__ = [
    # version
    "REQUIREMENT", "check_supported", "parse_version", "triton_version",
    # compile
    "ORIGINAL_NAME_KEY", "CubinTransform", "HookInstallation", "PtxTransform", "current_hooks", "hook_slots",
    "loaded_event", "ptxas_args_of", "check_ptxas_arm", "ptxas_for", "ptxases_for", "triton_ptxas",
    # autotune
    "COMPILE", "COORDINATE_DESCENT", "INDUCTOR_RUNTIME", "PINNED", "SELECT_ALGORITHM", "TRITON_AUTOTUNE",
    "inductor_benchmark_process",
    "INDUCTOR_AUTOTUNER_MODULE", "INDUCTOR_CACHE", "AutotuneCandidate", "AutotuneDecision", "AutotuneTracer",
    "CompiledAhead", "autotune_config", "AutotunePinner", "config_matches", "inductor_tuning_key",
    "is_inductor_kernel_key", "pick_identity", "pins_turn_inductor_caches_off", "tuning_key",
    # template_fusion
    "FUSED", "TEMPLATE_FUSION",
    # launches
    "RUNTIME_HOOK_CHAINS", "LaunchSpec", "LaunchTracer", "add_runtime_hooks", "allocator_var",
    "inductor_launches_through_triton", "launch_spec",
    "remove_runtime_hooks", "signature_key_of",
    # replay
    "launch", "load_kernel", "make_tensor_descriptor", "tensor_descriptor_fields",
    # rebuild
    "HELPERS_STAGE", "PYTHON_STAGE", "REBUILD_STAGE", "RebuiltKernel", "compile_rebuilt", "helper_modules",
    "specialized_on",
]
