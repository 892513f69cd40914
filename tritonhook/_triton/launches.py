"""Launch hooks: every launch of a compiled kernel with its grid and arguments (`LaunchTracer`), and Triton's
runtime hook chains that memwatch and the tracer join.

Separate because launches are hooked at run time, by other features than compiles are (the sweep's recording,
memwatch, ab: memwatch traces launches without capturing a compile); the per-launch path itself is C
(`tritonhook/_launchpath.c`), loaded here. Inductor's static CUDA launcher bypasses every hook a `LaunchTracer`
sets, so the switch that turns it off for a tracing block lives here too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import random
import sys
import threading
from typing import Callable, Hashable, Iterator

from .. import config
from ..store import NewCapture
from .autotune import AutotuneTracer
from .compile import loaded_event
from .version import _plain_json, _WarnOnce

# ----- runtime hooks and the scratch allocator (memwatch) --------------------------------------------------------
RUNTIME_HOOK_CHAINS = ("launch_enter_hook", "launch_exit_hook", "kernel_load_start_hook", "kernel_load_end_hook")


@dataclasses.dataclass
class RuntimeHooksAdded:
    """Where `add_runtime_hooks` put each hook: the chain it joined, and what the slot held before when that was
    not a `HookChain` (a plain hook or None that another tool assigned), so removal can put that object back."""

    chains: dict[str, object]
    replaced: dict[str, object]


def add_runtime_hooks(hooks: dict[str, Callable]) -> RuntimeHooksAdded:
    """Chain `hooks` (slot name -> callable) into Triton's runtime launch / load hook slots.

    A slot holding a `HookChain` is joined with `.add`, which keeps Proton's (and anybody's) hooks in place.
    A slot another tool assigned outright (TritonParse's launch tracing puts its own callable there; its
    `clear_logging_config` puts None) gets a new chain of that callable followed by ours.
    """
    from triton import knobs

    added = RuntimeHooksAdded(chains={}, replaced={})
    for name, hook in hooks.items():
        chain = getattr(knobs.runtime, name)
        if not isinstance(chain, knobs.HookChain):
            added.replaced[name] = chain
            chain = knobs.HookChain(reversed=getattr(type(knobs.runtime), name).reversed)
            if added.replaced[name] is not None:
                chain.add(added.replaced[name])
            setattr(knobs.runtime, name, chain)
        chain.add(hook)
        added.chains[name] = chain
    return added


def remove_runtime_hooks(added: RuntimeHooksAdded, hooks: dict[str, Callable]) -> None:
    """Take our hooks out of the chains they joined (even if somebody assigned a new chain meanwhile), and put
    back the very object a slot held where we had to build a chain around it."""
    from triton import knobs

    for name, hook in hooks.items():
        added.chains[name].remove(hook)
        if name in added.replaced and getattr(knobs.runtime, name) is added.chains[name]:
            setattr(knobs.runtime, name, added.replaced[name])


def allocator_var():
    """The ContextVar behind `triton.set_allocator` (read it to wrap the user's allocator, reset it to unwrap)."""
    from triton.runtime import _allocation

    return _allocation._allocator


# ----- launches with their arguments (tritonhook.sweep) -----------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class LaunchSpec:
    """What the launcher of one compiled kernel needs besides its binary: the source signature Triton specialized
    (`{arg: type}`, "constexpr" for compile-time arguments) and the constexpr values, by argument name. `source`: its
    Python function's `JITFunction.cache_key` (a hash of its source and what it calls, "" where unknown), which tells
    apart two kernels of one name (Inductor names its kernels per graph: two graphs can both have a
    `triton_poi_fused_..._6`) and is the same for every config of one autotuned kernel, in every run."""

    triton_hash: str
    name: str
    arg_names: list[str]
    signature: dict[str, str]
    constexprs: dict[str, object]
    source: str = ""

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "constexprs": _plain_json(self.constexprs)}


def launch_spec(kernel) -> LaunchSpec:
    """The `LaunchSpec` of a CompiledKernel (JIT, Gluon and Inductor kernels are all ASTSources)."""
    src = kernel.src
    arg_names = list(getattr(getattr(src, "fn", None), "arg_names", None) or [])
    constexprs = {}
    for path, value in (getattr(src, "constants", None) or {}).items():
        index = path[0] if isinstance(path, tuple) and len(path) == 1 else path
        constexprs[arg_names[index] if isinstance(index, int) and index < len(arg_names) else str(path)] = value
    return LaunchSpec(kernel.hash, kernel.name, arg_names, {str(k): str(v) for k, v in src.signature.items()},
                      constexprs, str(getattr(getattr(src, "fn", None), "cache_key", "") or ""))


LaunchCallback = Callable[[LaunchSpec, tuple[int, int, int], tuple, int, object], object]
KeyFunction = Callable[[tuple], Hashable]
SignatureKey = tuple[int, ...] | KeyFunction
"""How a kernel's launches are keyed (see `LaunchTracer`'s `signature_key`): the positions of the arguments whose
values are the key (the C path takes them from the argument array itself), or a function of the arguments."""


def signature_key_of(key: SignatureKey, args: tuple) -> Hashable:
    """The key of a launch with arguments `args`, as the C path computes it."""
    return tuple(args[at] for at in key) if isinstance(key, tuple) else key(args)


class FreshScalars:
    """Launches of one kernel (and argument count) that each made a new signature, at one grid, differing from the
    previous one at the same scalar positions: a dropout seed, a random-number offset or a step count takes a new
    value at every launch, and keyed by it every launch would be a signature of its own, launched once, never timed
    (the first launch of a signature is not) and snapshotted anew. After `config.sweep.RECORD_FRESH_SCALARS` such
    launches in a row, `made` names those positions (indices into the key), and the kernel is keyed without them;
    a launch of a signature seen before (`repeated`) ends a run, as a kernel cycling through a few sizes does.
    `dropped`: the argument positions dropped, `streak`: the SignatureSeen of the launches of the run, each
    launched once, for the recording to count as the merged signature's. The key is the kernel's, so the scalars
    are dropped at every grid: a seed at one grid is a seed at all."""

    def __init__(self):
        self.last_key: tuple | None = None
        self.differing: frozenset | None = None
        self.streak: list = []
        self.dropped: tuple[int, ...] = ()

    def repeated(self) -> None:
        if not self.dropped:  # once dropped, `streak` is what the recording folds
            self.last_key, self.differing, self.streak = None, None, []

    def made(self, key: tuple, signature) -> frozenset | None:
        """A launch made signature `signature` under `key` (grid, scalar values): the key positions that vary,
        once enough launches in a row did so, else None."""
        last, self.last_key = self.last_key, key
        if last is None or last[0] != key[0] or len(last[1]) != len(key[1]):
            self.differing, self.streak = None, [signature]
            return None
        differing = frozenset(i for i, (a, b) in enumerate(zip(last[1], key[1])) if a != b)
        if differing != self.differing:
            self.differing, self.streak = differing, self.streak[-1:]
        self.streak.append(signature)
        if len(self.streak) < config.sweep.RECORD_FRESH_SCALARS:
            return None
        return differing


def _launchpath():
    """The tracer's per-launch path in C (`tritonhook/_launchpath.c`): its `LaunchMetadata` wrapper, and the state it
    reads, `KernelSeen` (a kernel: its spec, launches seen in full, sampling's `skip` and `weight`, and per argument
    count its key function and signatures in `by_arity`, the fast path's pair in `arity`, `key_function`,
    `signatures`) and `SignatureSeen` (see `LaunchTracer`)."""
    from .. import _native

    return _native.load("_launchpath")


class LaunchTracer:
    """Every launch of a Triton kernel, with its grid and arguments, whichever launcher made it.

    Why not TritonParse's way (a `launch_metadata` function set on each JITFunction from `jit_post_compile_hook`):
    that hook is a single slot, it does not fire for kernels compiled before it was set, and Inductor calls it
    only under `torch._inductor.config.run_jit_post_compile_hook` and only in the process that compiled (its
    compile workers), not in the parent that launches. Every launch path that runs the hooks (the JIT's `run`,
    `compiled[grid](...)`, Inductor's generated launcher) first calls `CompiledKernel.launch_metadata(grid, stream,
    *args)` with the full argument list; wrapping that method on the class sees them all, with `self` (the
    kernel: its hash and source signature). The wrapper is C (`_launchpath`): it calls Triton's method with the
    same argument array, and handles the launches this tracer passes over (sampling's, a signature's `pass_next`)
    without entering Python; every other launch goes to `_seen`. `uninstall()` puts the very same function back;
    if another tool wrapped it over ours meanwhile, ours turns into a pass-through. Inductor's static CUDA launcher
    calls none of this: a recording and memwatch switch it off for their duration
    (`inductor_launches_through_triton`).

    on_launch(spec, grid, args, weight, signature) runs before the kernel is queued, before Triton's launcher
    allocates the kernel's global scratch; what it returns (the token; None, as for most launches of a recording:
    nothing more for this launch) is handed to on_entered(token) from the launch-enter hook, after the scratch
    allocation, and to on_launched(token) from the launch-exit hook, right after the kernel is queued (CUDA events
    go around it). The exit hook joins Triton's chain only while a token waits: a launch-bound loop pays for it on
    the sampled launches alone (the chain object itself stays in its slot: Inductor binds it into the launchers it
    generates). on_new_kernel(spec, loaded) runs at the first launch of each kernel this tracer sees; `loaded()`
    builds the kernel's capture record from the files Triton loaded it from, for kernels compiled before capture
    began.

    Signatures (`signature_key`, for a recording): a kernel's launches are told apart by (grid, key), the key as
    `signature_key(args)` says for the kernel's first launch (for launches with as many arguments): positions or a
    function (`SignatureKey`). Each signature is a `SignatureSeen` handed to on_launch, which may set `pass_next`:
    that many of the signature's next launches cost a key and a dictionary lookup, and count in `passed` (none is
    passed over while `triton.autotune` benchmarks a config: `autotune`, an installed `AutotuneTracer`, says when).
    Without it `signature` is None.

    Sampling (`sample_every` K > 1): after a kernel's first `exact_first` launches, only about one launch in K is
    seen in full (gaps drawn at random, mean K, so that no periodic pattern of the program aliases with them); the
    others cost a dictionary lookup and a decrement, not even a key. A launch the gap does not pass over may still
    be passed over by its signature's `pass_next`. Each launch seen in full carries its `weight`: itself plus the
    launches passed over before it. `passed_over()` gives the launches passed over since each kernel's last full
    one, so that per-kernel totals stay exact.
    """

    def __init__(self, on_launch: LaunchCallback, on_launched: Callable[[object], None] | None = None,
                 on_new_kernel: Callable[[LaunchSpec, Callable[[], NewCapture]], None] | None = None, *,
                 on_entered: Callable[[object], None] | None = None, sample_every: int = 1, exact_first: int = 0,
                 signature_key: Callable[[tuple], SignatureKey] | None = None,
                 autotune: AutotuneTracer | None = None):
        self.on_launch = on_launch
        self.on_entered = on_entered
        self.on_launched = on_launched
        self.on_new_kernel = on_new_kernel
        self.sample_every, self.exact_first = sample_every, exact_first
        self.signature_key, self.autotune = signature_key, autotune
        self.active = False
        self._warn = _WarnOnce()
        self._kernels: dict = {}          # Triton hash -> KernelSeen
        self._gaps = random.Random(0)
        self._pending = threading.local()
        self._waiting = 0                 # tokens queued on any thread and not yet handed to on_launched
        self._original = None
        self._wrapper = None
        self._native = None               # the `_launchpath` module, from install on
        self._added: RuntimeHooksAdded | None = None
        self.fresh_scalars: dict[tuple[str, int], FreshScalars] = {}  # (Triton hash, argument count) -> its run

    def install(self) -> None:
        from triton.compiler.compiler import CompiledKernel

        if self.active:
            return
        original = CompiledKernel.__dict__["launch_metadata"]
        self._native = _launchpath()
        wrapper = self._native.LaunchMetadata(original, self._seen, self._kernels, self.autotune)
        functools.update_wrapper(wrapper, original)
        self._original, self._wrapper = original, wrapper
        CompiledKernel.launch_metadata = wrapper
        # the launchers build launch metadata only while an enter hook is set (Inductor decides when it generates a
        # launcher), and call the exit chain they were given: ours are in both chains, the exit hook taken out
        # again until a launch hands it a token
        self._added = add_runtime_hooks({"launch_enter_hook": self._entered, "launch_exit_hook": self._exited})
        self._added.chains["launch_exit_hook"].remove(self._exited)
        if self.on_entered is None:  # the chain object is what launchers test; our function only costs a call
            self._added.chains["launch_enter_hook"].remove(self._entered)
        self.active = True

    def uninstall(self) -> None:
        from triton.compiler.compiler import CompiledKernel

        if not self.active:
            return
        self.active = self._wrapper.active = False
        if CompiledKernel.__dict__.get("launch_metadata") is self._wrapper:
            CompiledKernel.launch_metadata = self._original
        remove_runtime_hooks(self._added, {"launch_enter_hook": self._entered, "launch_exit_hook": self._exited})

    def passed_over(self) -> dict[str, int]:
        """Triton hash -> launches passed over since that kernel's last launch seen in full (sampling)."""
        return {digest: seen.weight - 1 - seen.skip for digest, seen in self._kernels.items()
                if seen.weight - 1 - seen.skip}

    def _seen(self, kernel, seen, grid, args: tuple) -> None:
        """A launch the C path did not pass over (`seen`: the kernel's `KernelSeen`, None at its first launch)."""
        try:
            if seen is None:
                seen = self._kernels[kernel.hash] = self._native.KernelSeen(launch_spec(kernel))
                if self.on_new_kernel is not None:
                    self.on_new_kernel(seen.spec, functools.partial(loaded_event, kernel))
            weight, seen.weight = seen.weight, 1
            seen.seen += 1
            if self.sample_every > 1 and seen.seen >= self.exact_first:
                seen.skip = self._gaps.randrange(2 * self.sample_every - 1)
                seen.weight = seen.skip + 1
            signature = self._signature(seen, grid, args) if self.signature_key is not None else None
            if signature is not None:
                weight, signature.passed = weight + signature.passed, 0
            if len(grid) != 3:
                grid = tuple(grid) + (1,) * (3 - len(grid))
            token = self.on_launch(seen.spec, grid, args, weight, signature)
        except Exception as exc:  # noqa: BLE001 - recording must never break a launch
            self._warn("launch recording", exc)
            return
        if token is not None:
            self._pending.token = token
            self._waiting += 1
            self._added.chains["launch_exit_hook"].add(self._exited)

    def _signature(self, seen, grid, args: tuple):
        """The launch's signature, made at its first launch. A kernel's key is made at its first launch with this
        many arguments; the first such pair is the one the C path uses. Where scalars of the key take a new value at
        every launch (`FreshScalars`), the kernel is keyed without them from this launch on."""
        arity = len(args)
        if arity not in seen.by_arity:
            seen.by_arity[arity] = (self.signature_key(args), {})
            if seen.arity < 0:
                seen.arity = arity
                seen.key_function, seen.signatures = seen.by_arity[arity]
        key_function, signatures = seen.by_arity[arity]
        key = (tuple(grid), signature_key_of(key_function, args))
        signature = signatures.get(key)
        fresh = self.fresh_scalars.get((seen.spec.triton_hash, arity))
        if signature is not None:  # the common launch: no run of new values to track unless one is under way
            if fresh is not None:
                fresh.repeated()
            return signature
        if fresh is None:
            fresh = self.fresh_scalars[(seen.spec.triton_hash, arity)] = FreshScalars()
        signature = signatures[key] = self._native.SignatureSeen()
        varying = fresh.made(key, signature) if isinstance(key_function, tuple) and not fresh.dropped else None
        if varying:
            kept = tuple(at for index, at in enumerate(key_function) if index not in varying)
            seen.by_arity[arity] = (kept, {(key[0], tuple(args[at] for at in kept)): signature})
            if seen.arity == arity:
                seen.key_function, seen.signatures = seen.by_arity[arity]
            fresh.dropped = tuple(key_function[index] for index in sorted(varying))
        return signature

    def _entered(self, launch_metadata) -> None:
        """In the enter chain so that launchers build launch metadata (see install), and for `on_entered`."""
        token = getattr(self._pending, "token", None)
        if token is not None and self.on_entered is not None:
            try:
                self.on_entered(token)
            except Exception as exc:  # noqa: BLE001
                self._warn("launch entry", exc)

    def _exited(self, launch_metadata) -> None:
        token = getattr(self._pending, "token", None)
        if token is None:  # another thread's launch while this hook waits for that thread's token
            return
        self._pending.token = None
        self._waiting -= 1
        if self._waiting <= 0:
            self._waiting = 0
            self._added.chains["launch_exit_hook"].remove(self._exited)
        if self.on_launched is None:
            return
        try:
            self.on_launched(token)
        except Exception as exc:  # noqa: BLE001
            self._warn("launch timing", exc)



# ----- Inductor's static launcher, switched off while launches are traced ------------------------------------------
@contextlib.contextmanager
def inductor_launches_through_triton() -> Iterator[None]:
    """Inductor's static CUDA launcher (on by default in torch 2.11 and 2.13) calls the cubin directly, past
    `CompiledKernel.launch_metadata` and Triton's launch hooks: a `LaunchTracer` never sees those launches. Switch
    it off for the block: the variable for what imports torch later in this process (a child process gets it from
    `launcher.ChildSettings.inductor_through_triton`), torch's config where it is loaded already
    (`use_static_cuda_launcher`; torch 2.13 also reads it as `use_static_triton_launcher`, an alias). Inductor
    reads the config when it builds a kernel's launcher, so kernels built before the block keep theirs."""
    inductor_config = sys.modules.get("torch._inductor.config")
    saved = getattr(inductor_config, "use_static_cuda_launcher", None)
    with config.scope({config.memwatch.TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER.name: "0"}):
        if inductor_config is not None:
            inductor_config.use_static_cuda_launcher = False
        try:
            yield
        finally:
            if inductor_config is not None:
                inductor_config.use_static_cuda_launcher = saved
