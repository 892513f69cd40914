"""Compile hooks: every `triton.compile` as a capture record, and the "ptx" stage a transform rewrites.

Separate from the launch and autotune hooks because these are the hooks of the compiler (capture, rename, tma_scope
use them): they hold Triton's two single-slot compile hooks and build a `NewCapture` from what a compile leaves,
which the launch tracer reuses for kernels compiled before capture began (`loaded_event`).

The hook points (see docs/triton_hooks.md#what-a-plugin-touches-per-release):

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

import dataclasses
import functools
import hashlib
import json
import threading
from pathlib import Path
from typing import Callable, Mapping, Sequence

from .. import config
from .. import ptx as _ptx
from ..errors import TritonhookError, warn
from ..store import NewCapture, specialization_label
from .rebuild import rebuild_artifacts
from .version import _plain_json, _WarnOnce, option_names, stage_hook_in_cache_key, triton_version

ORIGINAL_NAME_KEY = "tritonhook_original_name"
"""Metadata key the rename writes, so that cache hits still know the pre-rename entry name."""

PtxTransform = Callable[[str, dict], str]
CubinTransform = Callable[[str, dict, dict, Callable[[], bytes]], bytes]
"""`f(ptx, metadata, ptxas_options, build_plain) -> cubin`: builds the "cubin" stage instead of Triton (a decision's
ptxas, options or control file, `tritonhook.decisions`); `ptxas_options` are the compile's options ptxas sees
(`enable_fp_fusion`, `ptx_options`: what `binaries.triton_ptxas_args` reads), `build_plain()` Triton's own
build."""


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


# ----- whether a child process's compiles can run a variant's ptxas and options (ab's variants) -----------------
_PTXAS_KNOBS = (("ptxas", config.ptxas.TRITON_PTXAS_PATH),
                ("ptxas_blackwell", config.ptxas.TRITON_PTXAS_BLACKWELL_PATH))


def check_ptxas_arm(what: str, ptxas: str | None, args: Sequence[str]) -> None:
    """Refuse, in one line naming `what` and the release, a variant this Triton cannot build as asked: in a child
    process started with `launcher.Ptxas(triton=ptxas, blackwell=ptxas, options=args)` it must compile every
    target with `ptxas` (None: its own) and hand it `args` after the extra options its environment gives already,
    all through its own compile. Triton 3.6-3.9 take the binary from `knobs.nvidia.ptxas` (TRITON_PTXAS_PATH) or,
    for newer targets, `knobs.nvidia.ptxas_blackwell` (TRITON_PTXAS_BLACKWELL_PATH; sm_100+ in 3.6-3.8, sm_90+ in
    3.9): both are set. The options are `knobs.nvidia.ptxas_options` (PTXAS_OPTIONS), the default of the compile option
    `ptx_options`, bound when the NVIDIA backend is imported and split at spaces by `make_cubin`. Neither
    variable is among Triton's cache-invalidating ones, but what they change is in its cache key: the backend's
    hash holds the ptxas's `--version` text, the options' hash `ptx_options`. Refused: a release without these
    knobs, an argument Triton would split."""
    from triton import knobs

    wanted = [knob for knob in _PTXAS_KNOBS if ptxas] + ([("ptxas_options", config.ptxas.PTXAS_OPTIONS)] if args
                                                          else [])
    for name, var in wanted:
        knob = next((vars(cls)[name] for cls in type(knobs.nvidia).__mro__ if name in vars(cls)), None)
        if getattr(knob, "key", None) != var.name:
            raise TritonhookError(f"{what}: Triton {triton_version()} does not read {var.name} "
                                  f"(knobs.nvidia.{name}), so its compile cannot be given this variant's ptxas "
                                  f"{'binary' if var is not config.ptxas.PTXAS_OPTIONS else 'options'}")
    if args and "ptx_options" not in option_names():
        raise TritonhookError(f"{what}: Triton {triton_version()} has no compile option ptx_options, so its "
                              f"compile cannot be given this variant's ptxas options")
    if split := [arg for arg in args if not arg or arg != "".join(arg.split())]:
        raise TritonhookError(f"{what}: {split[0]!r}: Triton {triton_version()} splits its ptxas options at "
                              f"spaces, so an option holding one cannot be passed")


def ptxas_args_of(options: Mapping) -> tuple[str, ...] | None:
    """The extra ptxas arguments a Triton compile ran with, read from the options its capture records (its
    `ptx_options`, split as `make_cubin` splits them); None where none are recorded (not a Triton compile)."""
    if "ptx_options" not in options:
        return None
    return tuple((options["ptx_options"] or "").split())


def ptxases_for(capability: int | None) -> list[str]:
    """The ptxas Triton runs now for `capability`; for None (no GPU known) every one it may run, whichever the
    target (Triton picks by target: below sm_100 and above in 3.6-3.8, below sm_90 and above in 3.9)."""
    capabilities = [capability] if capability is not None else [80, 90, 100]
    return list(dict.fromkeys(path for path, _ in map(ptxas_for, capabilities) if path))


def _times(times) -> dict[str, float]:
    if times is None:
        return {}
    result = {"ir_initialization": times.ir_initialization / 1e6}
    result.update({stage: micros / 1e6 for stage, micros in times.lowering_stages})
    result["store_results"] = times.store_results / 1e6
    return result

def make_event(src, metadata, metadata_group, times, cache_hit, in_memory: dict | None = None) -> NewCapture:
    """One `triton.compile` call (fresh or cache hit), translated out of Triton's objects into a store record;
    `in_memory` (stage -> text or bytes) fills the stages whose cache files cannot be read; the metadata JSON,
    which a replay loads the cubin with and a kernel's `asm` lacks, is written from `metadata` where its file is
    gone (Triton's file is the same dict, `json.dumps`ed)."""
    metadata = _plain_json(dict(metadata))
    artifacts = {"json": json.dumps(metadata).encode(),
                 **{stage: text.encode() if isinstance(text, str) else bytes(text)
                    for stage, text in (in_memory or {}).items()}, **_read_artifacts(metadata_group)}
    frontend, kernel, src_file, src_line = _source_location(src)
    capability = _capability(metadata)
    ptxas_path, ptxas_version = ptxas_for(capability) if capability is not None else (None, None)
    entry = _entry_name(artifacts, metadata)
    names = set(option_names())
    options = {k: v for k, v in metadata.items() if k in names}
    artifacts.update(rebuild_artifacts(src, metadata, options))  # for `tritonhook upgrade`
    return NewCapture(
        event="cache_hit" if cache_hit else "compile", frontend=frontend, kernel=kernel, entry=entry,
        original_entry=metadata.get(ORIGINAL_NAME_KEY) or entry, src_file=src_file, src_line=src_line,
        arch=_arch_name(artifacts, capability), frontend_version=triton_version(),
        ptxas_path=ptxas_path, ptxas_version=ptxas_version, triton_hash=metadata.get("hash"),
        options=options, metadata=metadata, times=_times(times),
        artifacts=artifacts, specialization=_specialization(src),
    )


def loaded_event(kernel) -> NewCapture:
    """The record of a CompiledKernel seen at launch but never captured (compiled before capture began), read
    from the cache files Triton loaded it from, else from the stage outputs the kernel holds (`asm`, read when it
    was loaded: its cache files may be gone since, a temporary cache directory removed); its event is "loaded"."""
    event = make_event(kernel.src, kernel.metadata._asdict(), kernel.metadata_group, None, cache_hit=False,
                       in_memory=dict(kernel.asm))
    return dataclasses.replace(event, event="loaded")


# ----- installing and removing hooks ----------------------------------------------------------------------------
class _Dispatching(threading.local):
    """The events (by `id(metadata_group)`) our listener is handing to the chained listener, in this thread."""

    def __init__(self):
        self.events: set[int] = set()


class HookInstallation:
    """Our listener and stage hook, chained in front of whatever Triton had.

    on_compile:    called with a `NewCapture` record after every compile or cache hit.
    ptx_transform: optional `f(ptx_text, metadata) -> ptx_text` applied to the "ptx" stage output.
    cubin_transform: optional `CubinTransform` that builds the "cubin" stage (it may call Triton's own build).
    cache_key:     a string naming the transform; compiles with different keys never share a cache entry.
    Exceptions in our callbacks are reported once as a warning and never reach the user's compile.
    """

    def __init__(self, on_compile: Callable[[NewCapture], None] | None = None,
                 ptx_transform: PtxTransform | None = None, cache_key: str = "",
                 cubin_transform: CubinTransform | None = None):
        self.on_compile = on_compile
        self.ptx_transform = ptx_transform
        self.cubin_transform = cubin_transform
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
            if self.active and self.cubin_transform is not None:
                _wrap_cubin_stage(args[1], args[2], self.cubin_transform)

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
        warn(f"tritonhook: triton.knobs.compilation was replaced by {knobs.compilation!r} after tritonhook was "
             f"enabled; compiles are no longer captured (disable and enable again)")

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


def _wrap_cubin_stage(stages: dict, options, transform: CubinTransform) -> None:
    """The "cubin" stage built by `transform`, given the compile's options that ptxas sees (Triton 3.6-3.9 close
    over the options object in the stage's lambda; the stage hook receives the same object)."""
    make_cubin = stages.get("cubin")
    if make_cubin is None:
        return
    seen = {"enable_fp_fusion": getattr(options, "enable_fp_fusion", True),
            "ptx_options": getattr(options, "ptx_options", None)}

    def cubin_stage(src, metadata):
        return transform(src, metadata, seen, lambda: make_cubin(src, metadata))

    stages["cubin"] = cubin_stage


def current_hooks() -> dict[str, object]:
    """The objects in Triton's single-slot hooks now (tests compare them before and after)."""
    from triton import knobs

    return {"listener": knobs.compilation.listener,
            "add_stages_inspection_hook": knobs.runtime.add_stages_inspection_hook}


def hook_slots() -> dict[str, list]:
    """Every hook slot of Triton's knobs now ("compilation.listener", "runtime.launch_enter_hook", ...) with the
    callables in it, a chain's in call order ([] when empty), so that `tritonhook doctor` can name the tools that
    share them with us. The runtime slots are read off the knobs class, so a release's new hooks are listed too."""
    from triton import knobs

    slots = {f"{group}.listener": getattr(getattr(knobs, group), "listener", None)
             for group in ("compilation", "autotuning") if hasattr(type(getattr(knobs, group)), "listener")}
    slots |= {f"runtime.{name}": getattr(knobs.runtime, name) for name in sorted(dir(type(knobs.runtime)))
              if name.endswith("_hook")}
    return {slot: list(value.calls) if isinstance(value, knobs.HookChain) else [] if value is None else [value]
            for slot, value in slots.items()}
