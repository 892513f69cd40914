"""Everything that touches Triton internals lives here (Triton 3.6 through 3.9).

The hook points (see docs/notes.md §2):

* `knobs.compilation.listener(*, src, metadata, metadata_group, times, cache_hit)`: called after every
  `triton.compile`, also for disk-cache hits. `metadata_group` maps file names to the cached stage outputs, so
  one listener sees every artifact of both fresh compiles and cache hits.
* `knobs.runtime.add_stages_inspection_hook`: called as `hook(backend, stages, options, language, capability)`
  at the end of `CUDABackend.add_stages`, where a stage function may be wrapped (the rename does that to the
  "ptx" stage). From 3.7 it is also called with no arguments and must return `(key, hash)`, which enters both
  the disk cache key and the in-memory JIT cache key. On 3.6 neither cache sees it, so a transform's key is
  appended by wrapping `get_cache_key` (disk) and `compute_cache_key` (JIT) instead.

Both slots hold one callable. We chain: the hook that was there before keeps receiving every call, and
`uninstall()` puts the very same objects back. If somebody installed a stage hook over ours meanwhile, we cannot
take ours out of their chain; ours then turns into a pass-through so theirs keeps working.

The listener slot is also assigned outright by other tools after we installed (TritonParse's `init`, Triton's own
warm-up tracing): that would silently end capture. So while installed, `knobs.compilation` is given a subclass of
its class whose `listener` property always yields our listener and files an assignment as the listener we chain
to (assigning our own listener back, the save/restore idiom, restores the one filed before it). Both tools then
see every event in either order, and `uninstall()` leaves in the slot whatever the other tool last assigned.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import random
import re
import sys
import threading
import types
import warnings
from pathlib import Path
from typing import Callable, Hashable, Iterator

from .. import config
from .. import ptx as _ptx
from .._imports import AfterImport, after_import
from ..errors import TritonhookError
from ..store import NewCapture, specialization_label

MIN_VERSION = (3, 6)
MAX_VERSION = (3, 9)
ORIGINAL_NAME_KEY = "tritonhook_original_name"
"""Metadata key the rename writes, so that cache hits still know the pre-rename entry name."""

PtxTransform = Callable[[str, dict], str]


# ----- versions ------------------------------------------------------------------------------------------------
def parse_version(text: str) -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", text)
    if not match:
        raise TritonhookError(f"triton.__version__ {text!r}: cannot read a major.minor version from it")
    return int(match.group(1)), int(match.group(2))


def triton_version() -> str:
    import triton

    return triton.__version__


def check_supported() -> tuple[int, int]:
    """Import Triton and check its version; raise a clear error otherwise."""
    try:
        import triton  # noqa: F401
        from triton import knobs  # noqa: F401
    except ImportError as exc:
        raise TritonhookError(f"cannot import triton ({exc}): install Triton: pip install "
                              f"'triton>={_fmt(MIN_VERSION)},<{MAX_VERSION[0]}.{MAX_VERSION[1] + 1}'") from None
    version = parse_version(triton_version())
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise TritonhookError(f"Triton {triton_version()} is not supported: tritonhook works with Triton "
                              f"{_fmt(MIN_VERSION)} to {_fmt(MAX_VERSION)}.x (the stage inspection hook it "
                              f"needs appeared in 3.6)")
    return version


def stage_hook_in_cache_key() -> bool:
    """From 3.7 Triton asks the stage hook for a cache-key contribution."""
    return parse_version(triton_version()) >= (3, 7)


def _fmt(version: tuple[int, int]) -> str:
    return ".".join(map(str, version))


# ----- what one compile looks like to tritonhook ----------------------------------------------------------------
def _source_location(src) -> tuple[str, str, str | None, int | None]:
    """(frontend, source-level name, file, first line) of an ASTSource / GluonASTSource / IRSource."""
    kind = type(src).__name__
    fn = getattr(src, "fn", None)
    if fn is not None:
        python_fn = getattr(fn, "fn", fn)
        code = getattr(python_fn, "__code__", None)
        frontend = "gluon" if "Gluon" in kind else "triton"
        name = getattr(python_fn, "__name__", None) or getattr(src, "name", "?")
        return frontend, name, code.co_filename if code else None, code.co_firstlineno if code else None
    path = getattr(src, "path", None)
    return "ir", getattr(src, "name", None) or Path(str(path)).stem, str(path) if path else None, None


def _specialization(src) -> str:
    """The argument types and constexpr values this compile was specialized for (empty for IR sources)."""
    fn = getattr(src, "fn", None)
    arg_names = getattr(fn, "arg_names", None) or []
    constexprs = {}
    for path, value in (getattr(src, "constants", None) or {}).items():
        index = path[0] if isinstance(path, tuple) and path else path
        name = arg_names[index] if isinstance(index, int) and index < len(arg_names) else str(path)
        constexprs[name] = value
    return specialization_label(dict(getattr(src, "signature", None) or {}), constexprs)


def _read_artifacts(metadata_group: dict) -> dict[str, bytes]:
    """Stage outputs from the cache files: 'add.ptx' -> {'ptx': b'...'}."""
    artifacts = {}
    for filename, path in metadata_group.items():
        stage = filename.rsplit(".", 1)[-1]
        try:
            artifacts[stage] = Path(path).read_bytes()
        except OSError:
            continue  # a cache manager that does not keep this file locally; record what is there
    return artifacts


def _capability(metadata: dict) -> int | None:
    target = metadata.get("target")
    if isinstance(target, dict):
        return target.get("arch")
    if isinstance(target, (list, tuple)) and len(target) >= 2:
        return target[1]
    return getattr(target, "arch", None)


def _arch_name(artifacts: dict[str, bytes], capability: int | None) -> str:
    """The PTX `.target` (it carries the "a" suffix Triton chose), else sm_<capability>."""
    try:
        return _ptx.target(artifacts.get("ptx", b""))
    except TritonhookError:
        return f"sm_{capability}" if capability is not None else "unknown"


def _entry_name(artifacts: dict[str, bytes], metadata: dict) -> str:
    entries = _ptx.entries(artifacts.get("ptx", b""))
    return entries[0] if entries else str(metadata.get("name", "?"))


def ptxas_for(capability: int) -> tuple[str | None, str | None]:
    """(path, version) of the ptxas Triton uses for this compute capability now: asked at every compile, since
    the answer changes within a process (importing torch's Inductor points TRITON_PTXAS_PATH at torch's own
    ptxas, and Triton then also writes a newer PTX ISA; a capture naming the ptxas of before could not be
    re-assembled). Triton caches each tool's version by path."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas

        tool = get_ptxas(capability)
        return tool.path, tool.version
    except Exception:  # no ptxas available: still record the capture  # noqa: BLE001
        return None, None


def triton_ptxas(gpu_name: str) -> str:
    """The ptxas Triton itself would use for `gpu_name` ('sm_90a'; honours TRITON_PTXAS_PATH and friends)."""
    from triton.backends.nvidia.compiler import get_ptxas

    return get_ptxas(_ptx.sm_number(gpu_name)).path


@functools.lru_cache(maxsize=None)
def option_names() -> tuple[str, ...]:
    try:
        from triton.backends.nvidia.compiler import CUDAOptions

        return tuple(field.name for field in dataclasses.fields(CUDAOptions))
    except Exception:  # noqa: BLE001
        return ()


def _times(times) -> dict[str, float]:
    if times is None:
        return {}
    result = {"ir_initialization": times.ir_initialization / 1e6}
    result.update({stage: micros / 1e6 for stage, micros in times.lowering_stages})
    result["store_results"] = times.store_results / 1e6
    return result


def _plain_json(value) -> dict:
    """Metadata as plain JSON types (GPUTarget becomes a dict, tuples become lists)."""
    return json.loads(json.dumps(value, default=_to_json_type))


def _to_json_type(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "_asdict"):
        return value._asdict()
    return repr(value)


def make_event(src, metadata, metadata_group, times, cache_hit) -> NewCapture:
    """One `triton.compile` call (fresh or cache hit), translated out of Triton's objects into a store record."""
    metadata = _plain_json(dict(metadata))
    artifacts = _read_artifacts(metadata_group)
    frontend, kernel, src_file, src_line = _source_location(src)
    capability = _capability(metadata)
    ptxas_path, ptxas_version = ptxas_for(capability) if capability is not None else (None, None)
    entry = _entry_name(artifacts, metadata)
    names = set(option_names())
    return NewCapture(
        event="cache_hit" if cache_hit else "compile", frontend=frontend, kernel=kernel, entry=entry,
        original_entry=metadata.get(ORIGINAL_NAME_KEY) or entry, src_file=src_file, src_line=src_line,
        arch=_arch_name(artifacts, capability), frontend_version=triton_version(),
        ptxas_path=ptxas_path, ptxas_version=ptxas_version, triton_hash=metadata.get("hash"),
        options={k: v for k, v in metadata.items() if k in names}, metadata=metadata, times=_times(times),
        artifacts=artifacts, specialization=_specialization(src),
    )


def loaded_event(kernel) -> NewCapture:
    """The record of a CompiledKernel seen at launch but never captured (compiled before capture began), read
    from the cache files Triton loaded it from; its event is "loaded"."""
    event = make_event(kernel.src, kernel.metadata._asdict(), kernel.metadata_group, None, cache_hit=False)
    return dataclasses.replace(event, event="loaded")


# ----- installing and removing hooks ----------------------------------------------------------------------------
class _WarnOnce:
    def __init__(self):
        self.warned = False

    def __call__(self, what: str, exc: BaseException) -> None:
        if not self.warned:
            self.warned = True
            warnings.warn(f"tritonhook: {what} failed ({type(exc).__name__}: {exc}); compiling goes on, "
                          f"further failures are counted and reported at exit", RuntimeWarning, stacklevel=3)


class _Dispatching(threading.local):
    """The events (by `id(metadata_group)`) our listener is handing to the chained listener, in this thread."""

    def __init__(self):
        self.events: set[int] = set()


class HookInstallation:
    """Our listener and stage hook, chained in front of whatever Triton had.

    on_compile:    called with a `NewCapture` record after every compile or cache hit.
    ptx_transform: optional `f(ptx_text, metadata) -> ptx_text` applied to the "ptx" stage output.
    cache_key:     a string naming the transform; compiles with different keys never share a cache entry.
    Exceptions in our callbacks are reported once as a warning and never reach the user's compile.
    """

    def __init__(self, on_compile: Callable[[NewCapture], None] | None = None,
                 ptx_transform: PtxTransform | None = None, cache_key: str = ""):
        self.on_compile = on_compile
        self.ptx_transform = ptx_transform
        self.cache_key = cache_key
        self.active = False
        self._warn = _WarnOnce()
        self._saved: dict[str, object] = {}
        self._filed_before: list = []  # listeners assigned before the one we chain to now (save/restore idiom)
        self._dispatching = _Dispatching()
        self._warned_replaced = False
        self._listener = self._make_listener()
        self._stage_hook = self._make_stage_hook()
        self._guarded_class: type | None = None

    # The callables Triton will hold. Built once so `uninstall` can recognise them by identity.
    def _make_listener(self):
        def tritonhook_listener(*, src, metadata, metadata_group, times, cache_hit):
            dispatching = self._dispatching.events
            if id(metadata_group) in dispatching:
                return  # a listener that chained to the slot's listener (us) calls us back with the same event
            previous = self._saved.get("listener")
            if previous is not None:
                dispatching.add(id(metadata_group))
                try:
                    previous(src=src, metadata=metadata, metadata_group=metadata_group, times=times,
                             cache_hit=cache_hit)
                finally:
                    dispatching.discard(id(metadata_group))
            if self.active and self.on_compile is not None:
                try:
                    self.on_compile(make_event(src, metadata, metadata_group, times, cache_hit))
                except Exception as exc:  # noqa: BLE001 - capture must never break a compile
                    self._warn("capture", exc)

        return tritonhook_listener

    def _make_stage_hook(self):
        def tritonhook_stage_hook(*args):
            previous = self._saved.get("stage_hook")
            if not args:  # Triton 3.7+: cache-key query
                key, digest = previous() if previous is not None else ("", "")
                if self.active and self.cache_key:
                    key = f"{key}-tritonhook:{self.cache_key}"
                    digest = hashlib.sha256(f"{digest}{key}".encode()).hexdigest()
                return key, digest
            if previous is not None:
                previous(*args)
            self._check_listener_slot()
            if self.active and self.ptx_transform is not None:
                _wrap_ptx_stage(args[1], self.ptx_transform)

        return tritonhook_stage_hook

    def install(self) -> None:
        from triton import knobs

        if self.active:
            return
        self._guard_listener_slot(knobs.compilation)
        self._saved["stage_hook"] = knobs.runtime.add_stages_inspection_hook
        knobs.runtime.add_stages_inspection_hook = self._stage_hook
        if self.cache_key and not stage_hook_in_cache_key():
            self._patch_cache_keys_36()
        self.active = True

    def uninstall(self) -> None:
        from triton import knobs

        if not self.active:
            return
        self.active = False
        self._unguard_listener_slot()
        if knobs.runtime.add_stages_inspection_hook is self._stage_hook:
            knobs.runtime.add_stages_inspection_hook = self._saved.pop("stage_hook")
        # else: someone chained over us; we stay in their chain as a pass-through (self.active is False)
        self._unpatch_cache_keys_36()

    # ----- the listener slot, guarded against being assigned over ---------------------------------------------
    def _guard_listener_slot(self, compilation) -> None:
        """Chain the listener found, then give `compilation` a class whose `listener` is ours (see module doc)."""
        found_class = type(compilation)
        self._saved["listener"] = compilation.listener
        self._saved["compilation"] = compilation, found_class
        vars(compilation).pop("listener", None)
        self._guarded_class = type(found_class.__name__, (found_class,), {
            "__module__": found_class.__module__, "__qualname__": found_class.__qualname__,
            "listener": property(lambda _: self._listener, lambda _, value: self._file_listener(value),
                                 doc="tritonhook's listener; an assignment is chained behind it"),
        })
        compilation.__class__ = self._guarded_class

    def _file_listener(self, value) -> None:
        """Somebody assigned `knobs.compilation.listener`: chain to `value` instead of being displaced."""
        if value is self._listener:  # `old = listener; listener = mine; ...; listener = old`: `old` is us
            if self._filed_before:
                self._saved["listener"] = self._filed_before.pop()
            return
        self._filed_before.append(self._saved.get("listener"))
        self._saved["listener"] = value

    def _unguard_listener_slot(self) -> None:
        compilation, found_class = self._saved.pop("compilation")
        if type(compilation) is not self._guarded_class:
            return  # another guard went over ours; we stay its pass-through to the listener filed with us
        compilation.__class__ = found_class
        last_assigned = self._saved.pop("listener")
        self._filed_before.clear()
        if last_assigned is None:
            vars(compilation).pop("listener", None)
        else:
            compilation.listener = last_assigned

    def _check_listener_slot(self) -> None:
        """A compile is under way: warn once if our listener is no longer the one Triton calls."""
        from triton import knobs

        if not self.active or self._warned_replaced or knobs.compilation.listener is self._listener:
            return
        self._warned_replaced = True
        warnings.warn(f"tritonhook: triton.knobs.compilation was replaced by {knobs.compilation!r} after "
                      f"tritonhook was enabled; compiles are no longer captured (disable and enable again)",
                      RuntimeWarning, stacklevel=2)

    # ----- Triton 3.6: cache keys by wrapping the key functions ---------------------------------------------
    def _patch_cache_keys_36(self) -> None:
        import triton.compiler.compiler as compiler_module
        import triton.runtime.jit as jit_module

        suffix = f"-tritonhook:{self.cache_key}"
        disk_key, jit_key = compiler_module.get_cache_key, jit_module.compute_cache_key
        self._saved["get_cache_key"], self._saved["compute_cache_key"] = disk_key, jit_key

        @functools.wraps(disk_key)
        def get_cache_key(*args, **kwargs):
            return disk_key(*args, **kwargs) + suffix

        @functools.wraps(jit_key)
        def compute_cache_key(*args, **kwargs):
            return jit_key(*args, **kwargs) + suffix

        compiler_module.get_cache_key = get_cache_key
        jit_module.compute_cache_key = compute_cache_key

    def _unpatch_cache_keys_36(self) -> None:
        import triton.compiler.compiler as compiler_module
        import triton.runtime.jit as jit_module

        if "get_cache_key" in self._saved:
            compiler_module.get_cache_key = self._saved.pop("get_cache_key")
            jit_module.compute_cache_key = self._saved.pop("compute_cache_key")


def _wrap_ptx_stage(stages: dict, transform: PtxTransform) -> None:
    make_ptx = stages.get("ptx")
    if make_ptx is None:
        return

    def ptx_stage(src, metadata):
        return transform(make_ptx(src, metadata), metadata)

    stages["ptx"] = ptx_stage


def current_hooks() -> dict[str, object]:
    """The objects in Triton's single-slot hooks now (tests compare them before and after)."""
    from triton import knobs

    return {"listener": knobs.compilation.listener,
            "add_stages_inspection_hook": knobs.runtime.add_stages_inspection_hook}


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
    (`{arg: type}`, "constexpr" for compile-time arguments) and the constexpr values, by argument name."""

    triton_hash: str
    name: str
    arg_names: list[str]
    signature: dict[str, str]
    constexprs: dict[str, object]

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
                      constexprs)


LaunchCallback = Callable[[LaunchSpec, tuple[int, int, int], tuple, int, object], object]
KeyFunction = Callable[[tuple], Hashable]
SignatureKey = tuple[int, ...] | KeyFunction
"""How a kernel's launches are keyed (see `LaunchTracer`'s `signature_key`): the positions of the arguments whose
values are the key (the C path takes them from the argument array itself), or a function of the arguments."""


def signature_key_of(key: SignatureKey, args: tuple) -> Hashable:
    """The key of a launch with arguments `args`, as the C path computes it."""
    return tuple(args[at] for at in key) if isinstance(key, tuple) else key(args)


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
                 autotune: "AutotuneTracer | None" = None):
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
        many arguments; the first such pair is the one the C path uses."""
        arity = len(args)
        if arity not in seen.by_arity:
            seen.by_arity[arity] = (self.signature_key(args), {})
            if seen.arity < 0:
                seen.arity = arity
                seen.key_function, seen.signatures = seen.by_arity[arity]
        key_function, signatures = seen.by_arity[arity]
        key = (tuple(grid), signature_key_of(key_function, args))
        signature = signatures.get(key)
        if signature is None:
            signature = signatures[key] = self._native.SignatureSeen()
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


def inductor_launches_through_triton_env() -> dict[str, str]:
    """The variable that switches Inductor's static CUDA launcher off in a process that imports torch later (a
    child process, or this one before `torch._inductor.config` is loaded)."""
    return config.to_env({config.TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER: "0"})


@contextlib.contextmanager
def inductor_launches_through_triton() -> Iterator[None]:
    """Inductor's static CUDA launcher (on by default in torch 2.11 and 2.13) calls the cubin directly, past
    `CompiledKernel.launch_metadata` and Triton's launch hooks: a `LaunchTracer` never sees those launches. Switch
    it off for the block: the variable for what imports torch later, torch's config where it is loaded already
    (`use_static_cuda_launcher`; torch 2.13 also reads it as `use_static_triton_launcher`, an alias). Inductor
    reads the config when it builds a kernel's launcher, so kernels built before the block keep theirs."""
    inductor_config = sys.modules.get("torch._inductor.config")
    saved = getattr(inductor_config, "use_static_cuda_launcher", None)
    with config.scope(inductor_launches_through_triton_env()):
        if inductor_config is not None:
            inductor_config.use_static_cuda_launcher = False
        try:
            yield
        finally:
            if inductor_config is not None:
                inductor_config.use_static_cuda_launcher = saved


def _host_descriptor_classes() -> dict[str, type]:
    """The host-side TMA descriptor classes of this Triton, by the name a recording keeps for each: Triton's
    (`triton.tools.tensor_descriptor`), Gluon's (`gluon.nvidia.hopper`; `gluon.nvidia.blackwell` re-exports the
    same class in 3.6 and 3.9) and Gluon's im2col one (3.9)."""
    classes = {}
    with contextlib.suppress(ImportError):
        from triton.tools.tensor_descriptor import TensorDescriptor

        classes["triton"] = TensorDescriptor
    with contextlib.suppress(ImportError):
        from triton.experimental.gluon.nvidia import hopper

        classes["gluon"] = hopper.TensorDescriptor
        if hasattr(hopper, "TensorDescriptorIm2Col"):
            classes["gluon_im2col"] = hopper.TensorDescriptorIm2Col
    return classes


def tensor_descriptor_fields(arg) -> dict | None:
    """A host-side TMA descriptor argument as plain data (its base tensor kept as the object); None for anything
    else. `descriptor` names its class; every other field of the dataclass is kept (3.9 added
    `round_f32_to_tf32`), a Gluon descriptor's shared-memory layout as its class name and fields."""
    kind = next((name for name, cls in _host_descriptor_classes().items() if type(arg) is cls), None)
    if kind is None:
        return None
    fields = {"descriptor": kind}
    for field in dataclasses.fields(arg):
        fields[field.name] = _descriptor_field(getattr(arg, field.name)) if field.name != "base" else arg.base
    return fields


def _descriptor_field(value):
    if dataclasses.is_dataclass(value):  # a Gluon layout (NVMMASharedLayout): frozen, its fields plain data
        return {"class": type(value).__name__, **dataclasses.asdict(value)}
    if isinstance(value, (list, tuple)):  # shape and strides come as torch.Size / tuples of ints
        return [int(x) for x in value]
    return value


def make_tensor_descriptor(base, fields: dict):
    """The descriptor `tensor_descriptor_fields` described (`fields`: what it returned but the base), over `base`.
    Recordings older than the `descriptor` field hold Triton's descriptors."""
    kind = fields.get("descriptor", "triton")
    cls = _host_descriptor_classes().get(kind)
    names = [field.name for field in dataclasses.fields(cls)] if cls is not None else []
    recorded = [name for name in fields if name != "descriptor"]
    if cls is None or set(recorded) - set(names):
        raise TritonhookError(f"a {kind} host TMA descriptor with fields {sorted(recorded)}: Triton "
                              f"{triton_version()} cannot rebuild it (recorded with another Triton version?)")
    values = {name: fields[name] for name in recorded}
    if isinstance(values.get("layout"), dict):
        values["layout"] = _make_layout(values["layout"])
    return cls(base, **values)


def _make_layout(data: dict):
    from triton.experimental.gluon import language as gl

    layout_class = getattr(gl, data["class"], None)
    if not isinstance(layout_class, type):
        raise TritonhookError(f"Gluon layout {data['class']!r}: not in Triton {triton_version()}'s gluon.language")
    return layout_class(**{key: value for key, value in data.items() if key != "class"})


class _ReplaySource:
    """What Triton's launcher reads from a kernel's source (`signature`, `constants` by position, `fn.arg_names`),
    rebuilt from a `LaunchSpec` without the Python function."""

    def __init__(self, spec: LaunchSpec):
        # the launcher maps arguments by the signature's order: put it back in argument order (a JSON round trip
        # through the store sorts the keys)
        self.signature = {name: spec.signature[name] for name in spec.arg_names if name in spec.signature}
        self.fn = types.SimpleNamespace(arg_names=list(spec.arg_names))
        self.constants = {(spec.arg_names.index(name),): value for name, value in spec.constexprs.items()
                          if name in spec.arg_names}


def load_kernel(directory: str | Path, spec: LaunchSpec, metadata_json: bytes, cubin: bytes, name: str):
    """A CompiledKernel from a metadata JSON and a cubin, launched by Triton's own launcher (global scratch, TMA
    descriptors, clusters and PDL handled as for a kernel Triton compiled): `kernel[grid](*args)`.

    `name` is the entry the cubin holds: the metadata's `name` (what `cuModuleGetFunction` looks up) follows it,
    so a renamed cubin loads under its new name. The files are written into `directory` once: loading the same
    kernel again there (the replay loads each variant afresh every round) only reads them."""
    from triton.compiler.compiler import CompiledKernel

    metadata = json.loads(metadata_json)
    metadata["name"] = name
    directory = Path(directory)
    json_path, cubin_path = directory / f"{name}.json", directory / f"{name}.cubin"
    if not (json_path.exists() and cubin_path.exists()):
        directory.mkdir(parents=True, exist_ok=True)
        cubin_path.write_bytes(cubin)
        json_path.write_text(json.dumps(metadata))
    return CompiledKernel(_ReplaySource(spec), {json_path.name: str(json_path), cubin_path.name: str(cubin_path)},
                          metadata.get("hash", ""))


def launch(kernel, grid: tuple[int, int, int], args: list) -> None:
    """Launch a `load_kernel` kernel on the current stream."""
    kernel[tuple(grid)](*args)


# ----- autotuning (tritonhook.sweep) ------------------------------------------------------------------------------
INDUCTOR_AUTOTUNER_MODULE = "torch._inductor.runtime.triton_heuristics"
"""Where Inductor's runtime autotuner (`CachingAutotuner`) lives, in torch 2.11 and 2.13."""

@dataclasses.dataclass(frozen=True)
class AutotuneCandidate:
    """A config an autotuner is benchmarking now, in this thread: its decision (`group`, numbered per tracer: one
    `triton.autotune` Autotuner and tuning key, or one Inductor kernel) and the config as plain data
    (`Config.all_kwargs()`: its constexprs and num_warps, num_stages, num_ctas, maxnreg where set)."""

    group: int
    config: dict


@dataclasses.dataclass(frozen=True)
class AutotuneDecision:
    """What one autotune decision chose, and the autotuner's own benchmark of every config it tried
    (`timings`: [config, [median, p20, p80] ms] from `triton.autotune`, [config, [ms]] from Inductor; None for a
    config that failed to compile or run, or that Inductor skipped). Inductor's decisions have no `key` (one per
    kernel) and no `bench_s`."""

    group: int
    kernel: str
    key: list[str]
    chosen: dict
    timings: list
    bench_s: float | None


def autotune_config(config) -> dict:
    """A `triton.Config` as plain data (the kwargs `Autotuner.run` passes for it)."""
    return _plain_json(config.all_kwargs())


def _finite_ms(timing) -> list[float | None]:
    """The autotuner's timing of one config (a float or [median, p20, p80]) as JSON numbers, None for inf."""
    values = list(timing) if isinstance(timing, (list, tuple)) else [timing]
    return [float(v) if v is not None and v != float("inf") else None for v in values]


class AutotuneTracer:
    """Which launches are an autotuner benchmarking a candidate config, and which config won: `triton.autotune`'s,
    and Inductor's runtime autotuner (`CachingAutotuner`).

    Wraps `Autotuner.run` (a call that benchmarks is one decision: the tuning key was not cached) and
    `Autotuner._bench` (one candidate config; every launch inside it is that candidate's) on the class, in Triton
    3.6 through 3.9 alike; and Inductor's `CachingAutotuner.benchmark_all_configs` (one decision) and `bench` (one
    candidate) once torch imports that module (`_imports.after_import`: a recording must not import torch).
    Inductor benchmarks the configs of its pointwise and reduction kernels at their first call when its cache has no
    winner yet, on a fresh machine a hundred launches and more per config: without this they counted as the
    workload's launches, and a signature's timed launches were the benchmark's. `uninstall()` puts the very same
    functions back, or turns ours into pass-throughs when another tool wrapped over them. `current()` is the
    candidate being benchmarked in this thread (None outside a benchmark: the launch of the chosen config that
    follows is the workload's own). `on_decided(decision)` runs when a benchmarking call returns. Decisions read
    from an autotune cache benchmark nothing and are not seen; nor is Inductor's coordinate-descent tuning (off by
    default), which benchmarks outside `benchmark_all_configs`. `benchmarking` counts the candidate benchmarks
    running in all threads: a `LaunchTracer` hands every launch in full while it is not 0.
    """

    def __init__(self, on_decided: Callable[[AutotuneDecision], None]):
        self.on_decided = on_decided
        self.active = False
        self._warn = _WarnOnce()
        self._groups = 0
        self.benchmarking = 0             # candidate benchmarks running now, all threads together (a cheap test)
        self._frames = threading.local()
        self._originals: dict[str, Callable] = {}
        self._wrappers: dict[str, Callable] = {}
        self._inductor: tuple | None = None       # (CachingAutotuner, originals, wrappers) once wrapped
        self._inductor_wait: AfterImport | None = None

    def current(self) -> AutotuneCandidate | None:
        frames = getattr(self._frames, "stack", None)
        return frames[-1]["candidate"] if frames else None

    def install(self) -> None:
        from triton.runtime.autotuner import Autotuner

        if self.active:
            return
        self._originals = {"run": Autotuner.__dict__["run"], "_bench": Autotuner.__dict__["_bench"]}
        self._wrappers = {"run": self._wrap_run(self._originals["run"]),
                          "_bench": self._wrap_bench(self._originals["_bench"])}
        for name, wrapper in self._wrappers.items():
            setattr(Autotuner, name, wrapper)
        self.active = True
        self._inductor_wait = after_import(INDUCTOR_AUTOTUNER_MODULE, self._wrap_inductor)

    def uninstall(self) -> None:
        from triton.runtime.autotuner import Autotuner

        if not self.active:
            return
        self.active = False
        for name, wrapper in self._wrappers.items():
            if Autotuner.__dict__.get(name) is wrapper:
                setattr(Autotuner, name, self._originals[name])
        if self._inductor_wait is not None:
            self._inductor_wait.remove()
            self._inductor_wait = None
        if self._inductor is not None:
            tuner, originals, wrappers = self._inductor
            for name, wrapper in wrappers.items():
                if tuner.__dict__.get(name) is wrapper:
                    setattr(tuner, name, originals[name])
            self._inductor = None

    def _wrap_inductor(self, module) -> None:
        """Wrap Inductor's `CachingAutotuner` (torch 2.11 and 2.13 alike), once its module is imported."""
        self._inductor_wait = None
        tuner = getattr(module, "CachingAutotuner", None)
        if not self.active or tuner is None or self._inductor is not None:
            return
        names = ("benchmark_all_configs", "bench")
        originals = {name: tuner.__dict__[name] for name in names if name in tuner.__dict__}
        if len(originals) < len(names):
            missing = ", ".join(name for name in names if name not in originals)
            self._warn("Inductor autotune recording", TritonhookError(f"CachingAutotuner has no {missing}"))
            return
        wrappers = {"benchmark_all_configs": self._wrap_inductor_decision(originals["benchmark_all_configs"]),
                    "bench": self._wrap_inductor_candidate(originals["bench"])}
        for name, wrapper in wrappers.items():
            setattr(tuner, name, wrapper)
        self._inductor = (tuner, originals, wrappers)

    def _wrap_run(self, original):
        tracer = self

        @functools.wraps(original)
        def run(autotuner, *args, **kwargs):
            if not tracer.active:
                return original(autotuner, *args, **kwargs)
            frame = {"group": None, "candidate": None, "known": set(getattr(autotuner, "cache", {}))}
            try:
                with tracer._deciding(frame):
                    return original(autotuner, *args, **kwargs)
            finally:  # a decision made stays made when the launch that follows it raises
                if frame["group"] is not None:
                    tracer._decided(autotuner, frame)

        return run

    def _wrap_bench(self, original):
        tracer = self

        @functools.wraps(original)
        def _bench(autotuner, *args, config, **meta):
            stack = getattr(tracer._frames, "stack", None)
            if not tracer.active or not stack:
                return original(autotuner, *args, config=config, **meta)
            frame = stack[-1]
            if frame["group"] is None:
                frame["group"], tracer._groups = tracer._groups, tracer._groups + 1
            with tracer._candidate(frame, autotune_config(config)):
                return original(autotuner, *args, config=config, **meta)

        return _bench

    @contextlib.contextmanager
    def _deciding(self, frame: dict) -> Iterator[None]:
        """While one decision (`frame`) benchmarks, in this thread: its candidates are tagged with its group."""
        stack = self._frames.__dict__.setdefault("stack", [])
        stack.append(frame)
        try:
            yield
        finally:
            stack.pop()

    @contextlib.contextmanager
    def _candidate(self, frame: dict, config: dict) -> Iterator[None]:
        """While one candidate config of `frame`'s decision is benchmarked: `current()` says which."""
        frame["candidate"] = AutotuneCandidate(frame["group"], config)
        self.benchmarking += 1
        try:
            yield
        finally:
            frame["candidate"] = None
            self.benchmarking -= 1

    def _wrap_inductor_decision(self, original):
        tracer = self

        @functools.wraps(original)
        def benchmark_all_configs(autotuner, *args, **kwargs):
            if not tracer.active:
                return original(autotuner, *args, **kwargs)
            frame = {"group": tracer._groups, "candidate": None}
            tracer._groups += 1
            with tracer._deciding(frame):
                timings = original(autotuner, *args, **kwargs)
            tracer._inductor_decided(autotuner, frame, timings)
            return timings

        return benchmark_all_configs

    def _wrap_inductor_candidate(self, original):
        tracer = self

        @functools.wraps(original)
        def bench(autotuner, launcher, *args, **kwargs):
            stack = getattr(tracer._frames, "stack", None)
            if not tracer.active or not stack:
                return original(autotuner, launcher, *args, **kwargs)
            try:
                config = autotune_config(launcher.config)
            except Exception as exc:  # noqa: BLE001 - recording must never break the workload's tuning
                tracer._warn("Inductor autotune recording", exc)
                return original(autotuner, launcher, *args, **kwargs)
            with tracer._candidate(stack[-1], config):
                return original(autotuner, launcher, *args, **kwargs)

        return bench

    def _inductor_decided(self, autotuner, frame, timings) -> None:
        """Inductor keeps the fastest of `timings` (launcher -> ms), as `CachingAutotuner.autotune_to_one_config`
        does."""
        try:
            if not timings:
                return
            chosen = min(timings, key=timings.get)
            name = (getattr(autotuner, "inductor_meta", None) or {}).get("kernel_name") or \
                getattr(getattr(autotuner, "fn", None), "__name__", "?")
            self.on_decided(AutotuneDecision(
                frame["group"], name, [], autotune_config(chosen.config),
                [[autotune_config(launcher.config), _finite_ms(timing)] for launcher, timing in timings.items()],
                None))
        except Exception as exc:  # noqa: BLE001 - recording must never break the workload
            self._warn("Inductor autotune recording", exc)

    def _decided(self, autotuner, frame) -> None:
        try:
            keys = [key for key in autotuner.cache if key not in frame["known"]]
            if not keys:  # the benchmark itself failed: nothing was decided
                return
            timings = getattr(autotuner, "configs_timings", None) or {}
            self.on_decided(AutotuneDecision(
                frame["group"], getattr(autotuner.base_fn, "__name__", "?"), [str(part) for part in keys[0]],
                autotune_config(autotuner.cache[keys[0]]),
                [[autotune_config(config), _finite_ms(timing)] for config, timing in timings.items()],
                getattr(autotuner, "bench_time", None)))
        except Exception as exc:  # noqa: BLE001 - recording must never break the workload
            self._warn("autotune recording", exc)
