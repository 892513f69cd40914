"""FlashAttention-4's Hopper forward (`flash-attn-4`, CuTe DSL) as arms of benchmarks/hopper_attention.py, and the
name A/B on its own kernel.

Two arms, the same kernel and configuration, compiled separately in one process:
- `fa4`: as FA4 ships it. CuTe DSL puts `cutlass` in every kernel name it generates (`kernel_cutlass_...`).
- `fa4-nocutlass`: the kernel compiled after `FlashAttentionForwardSm90.kernel.set_name_prefix("",
  remove_cutlass_symbol=True)` (CuTe DSL >= 4.6.2), which drops that component and nothing else.

`tritonhook ab` cannot take this A/B: CuTe DSL links ptxas into the process, so no variant of tritonhook's reaches
its kernels (docs/capture_beyond_triton.md#cute-dsl-as-it-behaves). The arms time it in-process instead, with the
same timer and statistics as every other arm. Each arm has its own in-memory compile cache, swapped in before each
call: FA4 keys compiled kernels by configuration, not by name, so one shared cache would time one build twice.
Its persistent cache (`FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED=1`) is never used for the same reason.

`dump_env(DIR)` makes the DSL write each compiled kernel's PTX and cubin into DIR (set it before the DSL is
imported); `name_cubins(DIR)` then says what the name changed in the cubin (`tritonhook.cubin.CubinDelta`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

NAME_OPTIONS = {"fa4": {"name": ""}, "fa4-nocutlass": {"name": "", "remove_cutlass_symbol": True}}
"""Arm -> `set_name_prefix` keywords. An empty prefix with the defaults restores CuTe DSL's default naming."""
ARMS = tuple(NAME_OPTIONS)
NAMED_FUNCTIONS = ("kernel", "__call__")
"""The forward's device kernel, whose name ptxas sees, and its host launcher, whose name the DSL gives the dumped
PTX and cubin files: renamed alike, the two arms' dumps do not overwrite each other."""


def _named_arms(classes: list, cache_functions: tuple[str, ...], call) -> dict[str, tuple]:
    """{arm: (context, call)}: entering an arm's context names `classes`' kernels (and host functions) as the arm
    says (`NAME_OPTIONS`) and swaps in the arm's own compile cache for each of `interface`'s `cache_functions`."""
    from flash_attn.cute import interface
    from flash_attn.cute.cache_utils import JITCache

    caches = {arm: {function: JITCache() for function in cache_functions} for arm in ARMS}

    def context(arm: str):
        @contextlib.contextmanager
        def named():
            for cls in classes:
                for function in NAMED_FUNCTIONS:  # the host function too: its name names the dumped files
                    getattr(cls, function).set_name_prefix(**NAME_OPTIONS[arm])
            for function in cache_functions:
                getattr(interface, function).compile_cache = caches[arm][function]
            yield

        return named

    return {arm: (context(arm), call) for arm in ARMS}


def fa4_calls(causal: bool) -> dict[str, tuple]:
    """{arm: (context, call)} for `tritonhook.measure.timing.bench_interleaved`. A call takes the benchmark's inputs and uses
    the last three, FA4's (batch, seqlen, heads, head_dim) copies of q, k and v (`bshd`)."""
    from flash_attn.cute import interface
    from flash_attn.cute.flash_fwd_sm90 import FlashAttentionForwardSm90

    def call(*inputs):
        out = interface.flash_attn_func(*inputs[-3:], causal=causal)
        return out[0] if isinstance(out, tuple) else out

    return _named_arms([FlashAttentionForwardSm90], ("_flash_attn_fwd",), call)


BACKWARD_CLASSES = (("flash_attn.cute.flash_bwd_sm90", "FlashAttentionBackwardSm90"),
                    ("flash_attn.cute.flash_bwd_preprocess", "FlashAttentionBackwardPreprocess"),
                    ("flash_attn.cute.flash_bwd_postprocess", "FlashAttentionBackwardPostprocess"))
"""The Hopper backward's three kernels (dO·O row sums, the dQ/dK/dV main loop, dQ's fp32 accumulator converted)."""
BACKWARD_CACHES = ("_flash_attn_bwd", "_bwd_preprocess", "_bwd_postprocess_convert")
"""`flash_attn.cute.interface`'s functions whose `compile_cache` holds the backward's compiled kernels."""


def fa4_backward_calls(causal: bool) -> dict[str, tuple]:
    """{arm: (context, call)}: FA4's Hopper backward alone, its three kernels named per arm as the forward's are in
    `fa4_calls`, each arm with its own compile caches. A call takes (q, k, v, out, dout, lse) in FA4's layout (the
    forward's `out` and `lse`, computed once) and returns dQ."""
    import importlib

    from flash_attn.cute import interface

    def call(q, k, v, out, dout, lse):
        return interface._flash_attn_bwd(q, k, v, out, dout, lse, causal=causal)[0]

    classes = [getattr(importlib.import_module(module), name) for module, name in BACKWARD_CLASSES]
    return _named_arms(classes, BACKWARD_CACHES, call)


def fa4_forward_for_backward(q, k, v, causal: bool) -> tuple:
    """(out, lse) of FA4's forward, as its autograd function saves them for the backward."""
    from flash_attn.cute import interface

    out, lse, *_ = interface._flash_attn_fwd(q, k, v, causal=causal, return_lse=True)
    return out, lse


def bshd(*tensors):
    """FA4's layout, (batch, seqlen, heads, head_dim), contiguous, of the benchmark's (batch, heads, seqlen, D)."""
    return tuple(t.transpose(1, 2).contiguous() for t in tensors)


def dump_env(dump_dir: str) -> dict[str, str]:
    """The variables that make CuTe DSL dump every compiled kernel's PTX and cubin into `dump_dir` (written as a
    child process of tritonhook's would get them)."""
    from tritonhook.cute.capture import keep_settings
    from tritonhook.launcher import ChildSettings

    return ChildSettings(cute_keep=keep_settings(dump_dir)).variables()


def name_cubins(dump_dir: str) -> list[dict]:
    """Every dumped kernel whose name carries `cutlass`, paired with its twin compiled without it: the same file
    and entry names once the `cutlass_` component is taken out of both (the DSL names each configuration's files
    after its host function, and every configuration's kernel entry alike). Per pair: both entries and what the
    name changed (`CubinDelta.cell`: "SASS identical" when it changed nothing)."""
    from tritonhook.cubin import Cubin, CubinDelta

    def key(name: str) -> str:
        return name.replace("cutlass_", "", 1)

    kernels = {}  # (file, entry) -> cubin bytes
    for path in sorted(Path(dump_dir).glob("*.cubin")):
        data = path.read_bytes()
        kernels.update({(path.name, entry): data for entry in Cubin.from_bytes(data, label=str(path)).kernels})
    named = {(key(file), key(entry)): (file, entry) for file, entry in kernels if "cutlass" in entry}
    rows = []
    for file, entry in kernels:
        if "cutlass" in entry or (twin := named.get((key(file), entry))) is None:
            continue
        delta = CubinDelta.between(kernels[twin], kernels[(file, entry)], twin[1], entry)
        rows.append(dict(file=file, with_name=twin[1], without=entry, why=delta.cell(), delta=delta.to_json()))
    return rows
