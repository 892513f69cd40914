"""The autotuners (`triton.autotune`'s `Autotuner` and Inductor's `CachingAutotuner`): tracing which launches are
an autotuner benchmarking a candidate config and which config won (`AutotuneTracer`, the sweep's recording), and
running a config a decision pins without benchmarking (`AutotunePinner`, decisions applied).

Separate because it wraps other classes than the launch hooks do (the autotuners', Inductor's once torch imports
it); a `LaunchTracer` reads the tracer's `benchmarking` count.
"""

from __future__ import annotations

import atexit
import collections.abc
import contextlib
import copy
import dataclasses
import functools
import hashlib
import os
import sys
import threading
import time
import weakref
from typing import Callable, Iterator

from .. import config
from .._imports import AfterImport, after_import
from ..errors import TritonhookError, warn
from .template_fusion import (FUSED, INDUCTOR_IR_MODULE, INDUCTOR_SCHEDULER_MODULE, TEMPLATE_FUSION, FusionTimes,
                              fused_templates, fusion_key, is_fusion_config, lowering_instance, multi_templates,
                              no_fusion, template_buffer, template_instance)
from .version import _plain_json, _WarnOnce

INDUCTOR_AUTOTUNER_MODULE = "torch._inductor.runtime.triton_heuristics"
"""Where Inductor's runtime autotuner (`CachingAutotuner`) lives, in torch 2.11 and 2.13."""
INDUCTOR_CONFIG_MODULE = "torch._inductor.config"
"""Inductor's switches (`force_disable_caches`, torch 2.11 and 2.13)."""
INDUCTOR_CACHE = "Inductor's autotune cache"
"""Who held the pick of an Inductor kernel built untuned (`AutotuneTracer.on_held_pick`)."""
INDUCTOR_KEY_PREFIX = "source:"
"""How an Inductor kernel's tuning key begins (`inductor_tuning_key`)."""
INDUCTOR_SELECTOR_MODULE = "torch._inductor.select_algorithm"
"""Where Inductor's compile-time choice among GEMM templates and extern kernels lives (`AlgorithmSelectorCache`:
`benchmark_in_current_process`, `benchmark_in_sub_process`, `benchmark_choice`; torch 2.11 and 2.13)."""
INDUCTOR_COMPILE_MODULE = "torch._inductor.compile_fx"
"""Where Inductor compiles a graph (`_compile_fx_inner`, looked up by name at each compile in torch 2.11 and 2.13):
whatever a compile launches (its template benchmarks, its fusion benchmarks) is not the workload."""
INDUCTOR_BENCHMARK_MAIN = "__autotune_main__.py"
"""The script of Inductor's benchmark subprocesses (`autotune_in_subproc`): every launch there is a benchmark."""
TRITON_AUTOTUNE, SELECT_ALGORITHM, COORDINATE_DESCENT, INDUCTOR_RUNTIME, COMPILE, PINNED = (
    "triton.autotune", "select_algorithm", "coordinate descent", "Inductor's runtime autotuner", "Inductor compile",
    "pinned")
"""Who made a decision (`AutotuneDecision.tuner`): how a pin reaches it differs (`AutotunePinner`), and what the
workload runs after it; a GEMM template's end in Inductor's scheduler is `template_fusion.TEMPLATE_FUSION`'s.
`PINNED`: a pin ran in place of the autotuner (`AutotuneTracer.note_pinned`): the process's pick at that key, with
no timings."""

@dataclasses.dataclass(frozen=True)
class AutotuneCandidate:
    """A config an autotuner is benchmarking now, in this thread: its decision (`group`, numbered per tracer: one
    `triton.autotune` Autotuner and tuning key, or one Inductor kernel) and the config as plain data
    (`Config.all_kwargs()`: its constexprs and num_warps, num_stages, num_ctas, maxnreg where set)."""

    group: int | None
    config: dict
    compiling: bool = False  # inside a compile of Inductor's: the workload will never run this launch's kernel


@dataclasses.dataclass(frozen=True)
class AutotuneDecision:
    """What one autotune decision chose, and the autotuner's own benchmark of every config it tried
    (`timings`: [config, [median, p20, p80] ms] from `triton.autotune`, [config, [ms]] from Inductor; None for a
    config that failed to compile or run, or that Inductor skipped). An Inductor decision (one per kernel) has its
    kernel's source hash for a `key` (`inductor_tuning_key`) and no `bench_s`. `hooks` (`triton.autotune` only): what
    its benchmark times together with each config (`autotuner_hooks`), one reason its pick can differ from the fastest
    kernel. `cached`: where the workload ran a pick not benchmarked at this call, the timings it was made on: Triton's
    autotune cache's (`triton.autotune(cache_results=True)`, an earlier run's benchmark), or, where `made_at` names
    it, the autotuner's own decision at another input shape under the same tuning key; `timings` are then the
    recording's own benchmark of every config at this call, made so that its candidates are recorded. A decision
    with `made_at` is not a pick of its own: the run picked once, at `made_at`."""

    group: int
    kernel: str
    key: list[str]
    chosen: dict
    timings: list
    bench_s: float | None
    hooks: dict = dataclasses.field(default_factory=dict)  # what the autotuner runs around each timed config
    key_names: list[str] = dataclasses.field(default_factory=list)  # the arguments whose values begin `key`
    cached: list | None = None  # the pick was not made on `timings`: the timings it was made on
    made_at: int | None = None  # the group of the decision that made the pick, at another input shape
    tuner: str = TRITON_AUTOTUNE  # who decided: TRITON_AUTOTUNE, INDUCTOR_RUNTIME, COORDINATE_DESCENT, SELECT_...


def autotune_config(config) -> dict:
    """A `triton.Config` as plain data (the kwargs `Autotuner.run` passes for it)."""
    return _plain_json(config.all_kwargs())


def autotuner_hooks(autotuner) -> dict:
    """What a `triton.autotune` Autotuner runs inside each timed call besides the kernel (3.6-3.9 `_bench`: the
    config's and the user's pre-hook, `reset_to_zero` zeroing and `restore_value` clones of the named arguments):
    {"reset_to_zero": names, "restore_value": names, "pre_hook": a user pre-hook, "config_pre_hooks": how many
    configs carry one}."""
    return {"reset_to_zero": [str(n) for n in getattr(autotuner, "reset_to_zero", None) or []],
            "restore_value": [str(n) for n in getattr(autotuner, "restore_value", None) or []],
            "pre_hook": bool(getattr(autotuner, "user_defined_pre_hook", False)),
            "config_pre_hooks": sum(1 for c in getattr(autotuner, "configs", []) if getattr(c, "pre_hook", None))}


def _finite_ms(timing) -> list[float | None]:
    """The autotuner's timing of one config (a float or [median, p20, p80]) as JSON numbers, None for inf."""
    values = list(timing) if isinstance(timing, (list, tuple)) else [timing]
    return [float(v) if v is not None and v != float("inf") else None for v in values]


def _timings_data(pairs) -> list:
    """An autotuner's (Config, timing) pairs as [[config, [ms...]], ...] (plain data, `AutotuneDecision.timings`)."""
    return [[autotune_config(config), _finite_ms(timing)] for config, timing in pairs]


def _inductor_kernel_name(autotuner) -> str:
    """The name Inductor gave a kernel (its `inductor_meta`), else its function's."""
    return (getattr(autotuner, "inductor_meta", None) or {}).get("kernel_name") or \
        getattr(getattr(autotuner, "fn", None), "__name__", "?")


def _inductor_launcher(autotuner, config):
    """A launcher of `config` for Inductor kernel `autotuner`, built as its coordinate descent builds each config it
    tries (`_precompile_config`, under the autotuner's lock, its kernel loaded first). A kernel compiled in one of
    Inductor's compile workers reaches this process without its Python function (`prepare_for_pickle` drops it), and
    nothing can be compiled from it until it is loaded again: torch 2.13 has a step for that
    (`_ensure_kernel_loaded`), torch 2.11 loads it inline from the `_reload_kernel` its precompile kept."""
    ensure_loaded = getattr(autotuner, "_ensure_kernel_loaded", None)
    if ensure_loaded is not None:
        ensure_loaded()
    elif getattr(autotuner.fn, "fn", None) is None and callable(getattr(autotuner, "_reload_kernel", None)):
        autotuner.fn = autotuner._reload_kernel().fn
    with getattr(autotuner, "lock", None) or contextlib.nullcontext():
        return autotuner._precompile_config(config).make_launcher()


_TRACERS: list[AutotuneTracer] = []
"""The autotune tracers installed in this process (a recording's), which a pin applied here reports to."""


def _subclasses(cls: type) -> list[type]:
    """Every subclass of `cls` defined so far, at any depth."""
    found, todo = [], list(cls.__subclasses__())
    while todo:
        subclass = todo.pop()
        if subclass not in found:
            found.append(subclass)
            todo.extend(subclass.__subclasses__())
    return found


class _Wrapped:
    """Functions of a class replaced by ours, and how to put them back: only where ours still sits, since another
    tool may have wrapped over them since (then ours stay, as pass-throughs once their owner is inactive)."""

    def __init__(self, owner: type, names: tuple[str, ...], wrap: Callable[[str, Callable], Callable]):
        self.owner = owner
        self.originals = {name: owner.__dict__[name] for name in names}
        self.wrappers = {name: wrap(name, original) for name, original in self.originals.items()}
        for name, wrapper in self.wrappers.items():
            setattr(owner, name, wrapper)

    def restore(self) -> None:
        for name, wrapper in self.wrappers.items():
            if self.owner.__dict__.get(name) is wrapper:
                setattr(self.owner, name, self.originals[name])


class _AutotunerWrapping:
    """What the autotune tracer and the pinner share: functions of Triton's `Autotuner` wrapped from `install()`, and
    of Inductor's `CachingAutotuner` once torch imports it (`_imports.after_import`: neither imports torch itself);
    `uninstall()` puts both back (`_Wrapped`). A subclass names the functions (`TRITON`, `INDUCTOR`) and builds each
    wrapper (`_triton_wrapper`, `_inductor_wrapper`: `(name, original) -> wrapper`).

    A library's own subclass of `Autotuner` that defines one of those functions (trifast's `run`, which keeps its
    picks under a key text of its own and in a file) would bypass the wrapper on `Autotuner`: the subclass's own is
    wrapped too, for the subclasses there are at `install()` and for any defined later, when its first autotuner is
    made (`Autotuner.__init__`, which a subclass's runs). A subclass's `run` that calls `Autotuner.run` is then one
    wrapped call within another: each wrapper passes the inner one through (`_enter`)."""

    TRITON: tuple[str, ...] = ()
    INDUCTOR: tuple[str, ...] = ()

    def __init__(self):
        self.active = False
        self._warn = _WarnOnce()
        self._triton: list[_Wrapped] = []
        self._wrapped_classes: set[type] = set()
        self._inductor: _Wrapped | None = None
        self._inductor_wait: AfterImport | None = None
        self._running = threading.local()  # the autotuners inside one of our wrapped `run`s, in this thread

    def install(self) -> None:
        from triton.runtime.autotuner import Autotuner

        if self.active:
            return
        self._triton = [_Wrapped(Autotuner, self.TRITON + ("__init__",), self._wrapper_on_autotuner)]
        self._wrapped_classes = {Autotuner}
        for subclass in _subclasses(Autotuner):
            self._wrap_subclass(subclass)
        self.active = True
        self._inductor_wait = after_import(INDUCTOR_AUTOTUNER_MODULE, self._wrap_inductor)

    def uninstall(self) -> None:
        if not self.active:
            return
        self.active = False
        for wrapped in self._triton:
            wrapped.restore()
        self._triton, self._wrapped_classes = [], set()
        if self._inductor_wait is not None:
            self._inductor_wait.remove()
            self._inductor_wait = None
        if self._inductor is not None:
            self._inductor.restore()
            self._inductor = None

    def _wrapper_on_autotuner(self, name: str, original: Callable) -> Callable:
        return self._wrap_init(original) if name == "__init__" else self._triton_wrapper(name, original)

    def _wrap_init(self, original):
        wrapping = self

        @functools.wraps(original)
        def __init__(autotuner, *args, **kwargs):
            original(autotuner, *args, **kwargs)
            if wrapping.active and type(autotuner) not in wrapping._wrapped_classes:
                for owner in type(autotuner).__mro__:
                    wrapping._wrap_subclass(owner)

        return __init__

    def _wrap_subclass(self, owner: type) -> None:
        """Wrap the functions of `TRITON` that `owner` defines itself, where it is a subclass of `Autotuner`."""
        if owner in self._wrapped_classes or not issubclass(owner, self._triton[0].owner):
            return
        self._wrapped_classes.add(owner)
        own = tuple(name for name in self.TRITON if name in owner.__dict__)
        if own:
            self._triton.append(_Wrapped(owner, own, self._triton_wrapper))

    def _enter(self, autotuner) -> bool:
        """Whether this is the outermost of our wrapped calls on `autotuner` in this thread (a subclass's `run`
        calling `Autotuner.run` is two): only that one traces or pins, and then calls `_leave` when it ends. Plain
        code, not a context manager: it runs at every call of an autotuned kernel."""
        running = self._running.__dict__.setdefault("autotuners", set())
        if id(autotuner) in running:
            return False
        running.add(id(autotuner))
        return True

    def _leave(self, autotuner) -> None:
        self._running.autotuners.discard(id(autotuner))

    def _wrap_inductor(self, module) -> None:
        """Wrap Inductor's `CachingAutotuner` (torch 2.11 and 2.13 alike), once its module is imported."""
        self._inductor_wait = None
        tuner = getattr(module, "CachingAutotuner", None)
        if not self.active or tuner is None or self._inductor is not None:
            return
        missing = [name for name in self.INDUCTOR if name not in tuner.__dict__]
        if missing:
            self._warn(f"{type(self).__name__} on Inductor's autotuner",
                       TritonhookError(f"CachingAutotuner has no {', '.join(missing)}"))
            return
        self._inductor = _Wrapped(tuner, self.INDUCTOR, self._inductor_wrapper)

    def _triton_wrapper(self, name: str, original: Callable) -> Callable:
        raise NotImplementedError

    def _inductor_wrapper(self, name: str, original: Callable) -> Callable:
        raise NotImplementedError


@dataclasses.dataclass
class CompiledAhead:
    """What `AutotuneTracer` compiled ahead of the benchmarks, `threads` at a time, all benchmarks together."""

    threads: int
    decisions: int = 0
    configs: int = 0
    seconds: float = 0.0

    def add(self, configs: int, seconds: float) -> None:
        self.decisions, self.configs, self.seconds = self.decisions + 1, self.configs + configs, self.seconds + seconds


class AutotuneTracer(_AutotunerWrapping):
    """Which launches are an autotuner benchmarking a candidate config, and which config won: `triton.autotune`'s,
    and Inductor's runtime autotuner (`CachingAutotuner`).

    Wraps `Autotuner.run` (a call that benchmarks is one decision: the tuning key was not cached) and
    `Autotuner._bench` (one candidate config; every launch inside it is that candidate's) on the class, in Triton
    3.6 through 3.9 alike, and `Autotuner.check_disk_cache`: a pick read from Triton's autotune cache
    (`cache_results=True`, flash-linear-attention's default) benchmarks nothing, so there the configs are benchmarked
    anyway (the candidates recorded, as a cold run's are) and the cached pick put back, which the workload runs;
    the decision carries the cache's timings (`AutotuneDecision.cached`). And Inductor's
    `CachingAutotuner.benchmark_all_configs` (one decision) and `bench` (one candidate) once torch imports that
    module (`_imports.after_import`: a recording must not import torch).
    Inductor benchmarks the configs of its pointwise and reduction kernels at their first call when its cache has no
    winner yet, on a fresh machine a hundred launches and more per config: without this they counted as the
    workload's launches, and a signature's timed launches were the benchmark's. `uninstall()` puts the very same
    functions back, or turns ours into pass-throughs when another tool wrapped over them. `current()` is the
    candidate being benchmarked in this thread (None outside a benchmark: the launch of the chosen config that
    follows is the workload's own). `on_decided(decision)` runs when a benchmarking call returns. An Inductor
    kernel built with the pick its autotune cache held has that config alone, so nothing is benchmarked:
    `on_held_pick(kernel name, INDUCTOR_CACHE)` runs for it (`CachingAutotuner.__init__`, `autotune_cache_info`), so
    the recording can say which kernels it could not see tuned; and for a `triton.autotune` autotuner of several
    configs whose first call here benchmarks nothing because it held a pick already (a library's subclass that
    keeps its picks in a file of its own, trifast's; or a pick made before recording), `on_held_pick(kernel name,
    its class's qualified name)`. Inductor's coordinate-descent tuning (`CachingAutotuner.coordinate_descent_tuning`,
    its `bench` calls the candidates) is a decision too. So is Inductor's compile-time choice among its GEMM templates
    and extern kernels (`max-autotune`: `AlgorithmSelectorCache.benchmark_in_current_process` / `_in_sub_process`
    one decision, `benchmark_choice` one candidate, each a choice's benchmark kernel such as `triton_mm_3`; the
    workload then runs the template the choice emitted, `triton_tem_fused_*`, a kernel of its own). And every launch
    while Inductor compiles a graph (`_compile_fx_inner`: its fusion benchmarks too) is a benchmark, never the
    workload's. `benchmarking` counts the candidate benchmarks running in all threads: a `LaunchTracer` hands every
    launch in full while it is not 0. With `compile_threads` > 1, a `triton.autotune` benchmark's configs are compiled at once
    in that many threads when it starts (`_compile_ahead`; `compiled_ahead` sums what that took).
    """

    TRITON = ("run", "_bench", "check_disk_cache")
    INDUCTOR = ("benchmark_all_configs", "bench", "__init__", "coordinate_descent_tuning")
    SELECTOR = ("benchmark_in_current_process", "benchmark_in_sub_process", "benchmark_choice")

    def __init__(self, on_decided: Callable[[AutotuneDecision], None],
                 on_held_pick: Callable[[str, str], None] = lambda name, holder: None, *, compile_threads: int = 1):
        super().__init__()
        self.on_decided = on_decided
        self.on_held_pick = on_held_pick
        self._looked_for_held_picks: weakref.WeakSet = weakref.WeakSet()
        # autotuner -> the call shapes seen since its first decision here, and per tuning key the decision's pick
        self._shapes_decided: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.compiled_ahead = CompiledAhead(compile_threads)
        self._groups = 0
        self.benchmarking = 0             # candidate benchmarks running now, all threads together (a cheap test)
        self._frames = threading.local()
        self._compile_waits: list[AfterImport] = []
        self._finalized: dict[int, tuple] = {}  # id(MultiTemplateBuffer) -> it and the choice it was finalized with
        self._fusion_times = FusionTimes(lambda: self.active)
        self._selector_best: dict[tuple, tuple] = {}  # a choice key -> its fastest choice and ms (the unfused way)
        self._compile_wrapped: list[_Wrapped] = []

    def current(self) -> AutotuneCandidate | None:
        """The candidate being benchmarked in this thread: the innermost frame's, else an enclosing one's (a
        template's benchmark inside a compile), None outside every benchmark."""
        frames = getattr(self._frames, "stack", None)
        if not frames:
            return None
        return next((frame["candidate"] for frame in reversed(frames) if frame["candidate"] is not None), None)

    def install(self) -> None:
        super().install()
        _TRACERS.append(self)
        waits = (after_import(INDUCTOR_SELECTOR_MODULE, self._wrap_selector),
                 after_import(INDUCTOR_COMPILE_MODULE, self._wrap_compile),
                 after_import(INDUCTOR_SCHEDULER_MODULE, self._wrap_scheduler))
        self._compile_waits = [wait for wait in waits if wait is not None]  # None: imported already, wrapped now

    def uninstall(self) -> None:
        super().uninstall()
        if self in _TRACERS:
            _TRACERS.remove(self)
        for wait in self._compile_waits:
            wait.remove()
        for wrapped in self._compile_wrapped:
            wrapped.restore()
        self._compile_waits, self._compile_wrapped = [], []
        self._fusion_times.clear()
        self._selector_best.clear()

    def note_pinned(self, kernel: str, key: tuple[str, ...], config: dict) -> None:
        """A pin ran `config` at `kernel` and `key` in place of the autotuner (`AutotunePinner`): a decision of
        this process like an autotuner's, so that a pinned run's picks can be compared across processes (the
        autotuner benchmarked nothing, or a search it would have run from its pick never ran)."""
        frame = self._decision_frame()
        self.on_decided(AutotuneDecision(frame["group"], kernel, list(key), dict(config), [], None, tuner=PINNED))

    def _wrap_selector(self, module) -> None:
        """Wrap Inductor's `AlgorithmSelectorCache` (its classmethods stay classmethods) once it is imported."""
        selector = getattr(module, "AlgorithmSelectorCache", None)
        missing = [name for name in self.SELECTOR if name not in getattr(selector, "__dict__", {})]
        if not self.active or missing:
            if missing:
                self._warn("the autotune tracer on Inductor's select_algorithm",
                           TritonhookError(f"AlgorithmSelectorCache has no {', '.join(missing)}"))
            return
        decision = functools.partial(self._wrap_decision, decided=self._selector_decided)
        wrap = {"benchmark_in_current_process": decision, "benchmark_in_sub_process": decision,
                "benchmark_choice": lambda original: self._wrap_candidate(original, choice_config,
                                                                          "select_algorithm recording")}
        self._compile_wrapped.append(_Wrapped(selector, self.SELECTOR,
                                              lambda name, original: classmethod(wrap[name](original.__func__))))

    def _wrap_compile(self, module) -> None:
        """Wrap `_compile_fx_inner` (a module function, looked up at each compile) once Inductor's compile module
        is imported: a compile is one frame whose launches are all benchmarks (`COMPILE`), no decision of its own."""
        if not self.active or "_compile_fx_inner" not in module.__dict__:
            return
        self._compile_wrapped.append(_Wrapped(module, ("_compile_fx_inner",),
                                              lambda name, original: self._wrap_compile_scope(original)))

    def _wrap_scheduler(self, module) -> None:
        """Wrap what finalizes Inductor's GEMM templates once its scheduler is imported
        (`MultiTemplateBuffer.finalize_as_triton_caller`, `Scheduler.finalize_multi_template_buffers`): each template
        finalized is one decision of `TEMPLATE_FUSION` (`_triton.template_fusion`)."""
        scheduler = getattr(module, "Scheduler", None)
        multi = getattr(sys.modules.get(INDUCTOR_IR_MODULE), "MultiTemplateBuffer", None)
        if not self.active:
            return
        if "finalize_multi_template_buffers" not in getattr(scheduler, "__dict__", {}) \
                or "finalize_as_triton_caller" not in getattr(multi, "__dict__", {}):
            self._warn("the autotune tracer on Inductor's template fusion",
                       TritonhookError("Inductor's scheduler has no finalize_multi_template_buffers, or its "
                                       "MultiTemplateBuffer no finalize_as_triton_caller"))
            return
        self._compile_wrapped.append(_Wrapped(multi, ("finalize_as_triton_caller",),
                                              lambda name, original: self._wrap_template_finalized(original)))
        self._compile_wrapped.append(_Wrapped(scheduler, ("finalize_multi_template_buffers",),
                                              lambda name, original: self._wrap_templates_finalizing(original)))
        self._wrap_fusion_benchmarks(scheduler, multi)

    def _wrap_fusion_benchmarks(self, scheduler, multi) -> None:
        """Wrap what the scheduler times when it weighs a template's fusion (`FusionTimes`): the decision carries
        those timings; without them it still says which way the template ended."""
        times = self._fusion_times
        on_scheduler = {"speedup_by_fusion": times.weighing, "benchmark_fused_nodes": times.timing_neighbour,
                        "benchmark_codegened_module": times.timing_fused}
        missing = [name for name in on_scheduler if name not in scheduler.__dict__]
        if missing or "swap_as_triton_caller" not in multi.__dict__:
            self._warn("template fusion timings", TritonhookError(
                f"Inductor's Scheduler has no {', '.join(missing) or '-'}, or its MultiTemplateBuffer no "
                f"swap_as_triton_caller: template fusions are recorded without their timings"))
            return
        self._compile_wrapped.append(_Wrapped(scheduler, tuple(on_scheduler),
                                              lambda name, original: on_scheduler[name](original)))
        self._compile_wrapped.append(_Wrapped(multi, ("swap_as_triton_caller",),
                                              lambda name, original: times.swapping(original)))

    def _wrap_template_finalized(self, original):
        tracer = self

        @functools.wraps(original)
        def finalize_as_triton_caller(template, caller, *args, **kwargs):
            result = original(template, caller, *args, **kwargs)
            if tracer.active:  # fused (the scheduler's fusion benchmark) or not (its finalizing): the choice it runs
                tracer._finalized[id(template)] = (template, caller)
            return result

        return finalize_as_triton_caller

    def _wrap_templates_finalizing(self, original):
        tracer = self

        @functools.wraps(original)
        def finalize_multi_template_buffers(scheduler, *args, **kwargs):
            if not tracer.active:
                return original(scheduler, *args, **kwargs)
            try:
                templates = multi_templates(scheduler.nodes)  # fused ones are finalized by now, the rest next
            except Exception as exc:  # noqa: BLE001 - recording must never break the workload
                tracer._warn("template fusion recording", exc)
                templates = []
            result = original(scheduler, *args, **kwargs)
            for template, fused in templates:
                tracer._template_decided(template, fused)
            return result

        return finalize_multi_template_buffers

    def _template_decided(self, template, fused: bool) -> None:
        """One GEMM template finalized: the choice it runs and whether it was fused, at its decision's kernel and
        key and the graph node it lowers. A template finalized as an extern kernel (cuBLAS) is no decision here:
        its choice is its `select_algorithm` pick, and nothing fuses into it."""
        held, timed = self._finalized.pop(id(template), None), self._fusion_times.take(template)
        if held is None or held[0] is not template:
            return
        try:
            instance = template_instance(template)
            if instance is None:
                return
            inputs = getattr(template, "original_inputs", None) or template.inputs
            key = selector_key(inputs)
            self.on_decided(AutotuneDecision(
                self._decision_frame()["group"], selector_kernel(template.choices), list(fusion_key(key, instance)),
                {**choice_config(held[1]), FUSED: fused}, self._fusion_timings(*timed, key), None,
                tuner=TEMPLATE_FUSION))
        except Exception as exc:  # noqa: BLE001 - recording must never break the workload
            self._warn("template fusion recording", exc)

    def _fusion_timings(self, fused: list, apart: float | None, key) -> list:
        """What the scheduler timed for a template's fusion (`FusionTimes.take`), as a decision's timings: each
        choice it timed with the neighbour fused, and the unfused way (the fastest choice alone, by its
        `select_algorithm` timings at `key`, plus the neighbour alone); none where it timed no fusion."""
        timings = [[{**choice_config(choice), FUSED: True}, _finite_ms(ms)] for choice, ms in fused]
        best = self._selector_best.get(tuple(key))
        if apart is not None and best is not None:
            timings.append([{**choice_config(best[0]), FUSED: False}, _finite_ms(best[1] + apart)])
        return timings

    def _wrap_compile_scope(self, original):
        tracer = self

        @functools.wraps(original)
        def _compile_fx_inner(*args, **kwargs):
            if not tracer.active:
                return original(*args, **kwargs)
            frame = {"group": None, "candidate": None, "compile": True}
            with tracer._deciding(frame), tracer._candidate(frame, {COMPILE: True}):
                return original(*args, **kwargs)

        return _compile_fx_inner

    def _wrap_decision(self, original, decided: Callable, *, keeps_timings: bool = False):
        """A function whose call is one decision (Inductor's `benchmark_all_configs`, `coordinate_descent_tuning`,
        select_algorithm's benchmark of its choices): its benchmarks run in a new frame (`keeps_timings`: one that
        collects each candidate's timing), then `decided(frame, result, seconds, owner, args, kwargs)` records it."""
        tracer = self

        @functools.wraps(original)
        def decision(owner, *args, **kwargs):
            if not tracer.active:
                return original(owner, *args, **kwargs)
            frame = tracer._decision_frame(**({"timings": []} if keeps_timings else {}))
            began = time.perf_counter()
            with tracer._deciding(frame):
                result = original(owner, *args, **kwargs)
            decided(frame, result, time.perf_counter() - began, owner, args, kwargs)
            return result

        return decision

    def _selector_decided(self, frame: dict, timings, bench_s: float, _selector, args: tuple, kwargs: dict) -> None:
        """Inductor keeps the fastest of `timings` (choice -> ms; inf for a choice that failed); `args`: the
        choices, then the input nodes."""
        choices, input_nodes = args[0], args[1] if len(args) > 1 else kwargs.get("input_nodes")
        try:
            if not timings:
                return
            ms = {choice: _finite_ms(timing)[0] for choice, timing in timings.items()}
            timed = [choice for choice, value in ms.items() if value is not None]
            chosen = min(timed, key=ms.get) if timed else next(iter(timings))
            if timed:  # a template's unfused way, should the scheduler weigh fusing it (`_fusion_timings`)
                self._selector_best[tuple(selector_key(input_nodes))] = (chosen, ms[chosen])
            self.on_decided(AutotuneDecision(
                frame["group"], selector_kernel(choices), selector_key(input_nodes), choice_config(chosen),
                [[choice_config(choice), _finite_ms(timing)] for choice, timing in timings.items()], bench_s,
                tuner=SELECT_ALGORITHM))
        except Exception as exc:  # noqa: BLE001 - recording must never break the workload
            self._warn("select_algorithm recording", exc)

    def _triton_wrapper(self, name: str, original: Callable) -> Callable:
        return {"run": self._wrap_run, "_bench": self._wrap_bench,
                "check_disk_cache": self._wrap_disk_cache}[name](original)

    def _inductor_wrapper(self, name: str, original: Callable) -> Callable:
        bench = functools.partial(self._wrap_candidate, config_of=lambda launcher: autotune_config(launcher.config),
                                  what="Inductor autotune recording")
        if name == "coordinate_descent_tuning":
            return self._wrap_decision(original, self._coordinate_descent_decided, keeps_timings=True)
        if name == "benchmark_all_configs":
            return self._wrap_decision(original, self._inductor_decided)
        return {"bench": bench, "__init__": self._wrap_inductor_init}[name](original)

    def _coordinate_descent_decided(self, frame: dict, winner, bench_s: float, autotuner, _args, _kwargs) -> None:
        """The config coordinate descent settled on, with the timing of each config it tried."""
        try:
            if frame["timings"]:  # none: a coordinate-descent cache hit, or tuning off for this kernel
                self.on_decided(AutotuneDecision(
                    frame["group"], _inductor_kernel_name(autotuner), list(inductor_tuning_key(autotuner)),
                    autotune_config(winner.config), frame["timings"], bench_s, tuner=COORDINATE_DESCENT))
        except Exception as exc:  # noqa: BLE001 - recording must never break the workload
            self._warn("coordinate-descent recording", exc)

    def _wrap_inductor_init(self, original):
        tracer = self

        @functools.wraps(original)
        def __init__(autotuner, *args, **kwargs):
            original(autotuner, *args, **kwargs)
            if tracer.active:
                try:
                    if (getattr(autotuner, "autotune_cache_info", None) or {}).get("autotune_cache_state") == "hit":
                        tracer.on_held_pick(_inductor_kernel_name(autotuner), INDUCTOR_CACHE)
                except Exception as exc:  # noqa: BLE001 - recording must never break the workload
                    tracer._warn("Inductor autotune cache recording", exc)

        return __init__

    def _wrap_run(self, original):
        tracer = self

        @functools.wraps(original)
        def run(autotuner, *args, **kwargs):
            if not tracer.active:
                return original(autotuner, *args, **kwargs)
            if not tracer._enter(autotuner):
                return original(autotuner, *args, **kwargs)
            try:
                tracer._benchmark_at_new_shape(autotuner, args, kwargs)
                # the picks held before the call (new ones are added last: a dict keeps its order)
                frame = {"group": None, "candidate": None, "known": len(getattr(autotuner, "cache", ())),
                         "call": (args, kwargs)}
                stack = tracer._frames.__dict__.setdefault("stack", [])
                stack.append(frame)
                try:
                    return original(autotuner, *args, **kwargs)
                finally:  # a decision made stays made when the launch that follows it raises
                    stack.pop()
                    if frame["group"] is not None:
                        tracer._decided(autotuner, frame)
                    elif autotuner not in tracer._looked_for_held_picks:
                        tracer._held_picks(autotuner, frame)
            finally:
                tracer._leave(autotuner)

        return run

    def _benchmark_at_new_shape(self, autotuner, args: tuple, kwargs: dict) -> None:
        """A call at a tuning key decided here, at input shapes its benchmark never saw (a key that buckets a
        length: trifast rounds it to a power of two), runs the pick made at the other shapes untimed there: benchmark
        every config at this call first, as Triton's own benchmark would (the candidates recorded, its outputs reset
        after, `reset_to_zero`), and record it as a decision whose pick is the one the workload then runs
        (`AutotuneDecision.made_at`), at most `config.sweep.RECORD_SHAPES_PER_KEY` shapes per key."""
        decided = self._shapes_decided.get(autotuner)
        if not decided or len(autotuner.configs) < 2:
            return
        try:
            shape = call_shape(args)
            if shape in decided["seen"]:  # the common call: inputs shaped as an earlier call's
                return
            decided["seen"].add(shape)
            key = tuning_key(autotuner, args, kwargs)
            made = decided["keys"].get(key)
            if made is None or shape in made["shapes"] or len(made["shapes"]) > config.sweep.RECORD_SHAPES_PER_KEY:
                return
            made["shapes"].add(shape)
            frame = {"group": None, "candidate": None}
            held, autotuner.nargs = getattr(autotuner, "nargs", None), dict(zip(autotuner.arg_names, args))
            try:
                with self._deciding(frame):
                    began = time.perf_counter()
                    timings = {c: autotuner._bench(*args, config=c, **kwargs)
                               for c in pruned_configs(autotuner, args, kwargs)}
                    bench_s = time.perf_counter() - began
                autotuner.pre_hook({**autotuner.nargs, **kwargs, **made["pick"].all_kwargs()}, reset_only=True)
            finally:
                autotuner.nargs = held
            if frame["group"] is not None:
                self._record(autotuner, frame["group"], key, made["pick"], timings, bench_s, made["timings"],
                             made["group"])
        except Exception as exc:  # noqa: BLE001 - recording must never break the workload: it runs its pick
            self._warn("autotune recording at a new input shape", exc)

    def _held_picks(self, autotuner, frame) -> None:
        """At an autotuner's first call that benchmarked nothing: where it has several configs and picks it was
        not seen deciding, it ran a pick it held (`on_held_pick`)."""
        self._looked_for_held_picks.add(autotuner)
        try:
            if len(autotuner.configs) > 1 and frame["known"] and autotuner not in self._shapes_decided:
                holder = type(autotuner)
                self.on_held_pick(getattr(autotuner.base_fn, "__name__", "?"),
                                  f"{holder.__module__}.{holder.__qualname__}")
        except Exception as exc:  # noqa: BLE001 - recording must never break the workload
            self._warn("autotune recording of a held pick", exc)

    def _wrap_bench(self, original):
        tracer = self

        @functools.wraps(original)
        def _bench(autotuner, *args, config, **meta):
            stack = getattr(tracer._frames, "stack", None)
            if not tracer.active or not stack:
                return original(autotuner, *args, config=config, **meta)
            frame = stack[-1]
            if frame["candidate"] is not None:  # a subclass's `_bench` calling `Autotuner._bench`: one candidate
                return original(autotuner, *args, config=config, **meta)
            if frame["group"] is None:  # the decision's first candidate: its benchmark begins
                frame["group"], tracer._groups = tracer._groups, tracer._groups + 1
                if tracer.compiled_ahead.threads > 1:
                    tracer._compile_ahead(autotuner, args, meta)
            with tracer._candidate(frame, autotune_config(config)):
                return original(autotuner, *args, config=config, **meta)

        return _bench

    def _compile_ahead(self, autotuner, args: tuple, meta: dict) -> None:
        """Compile every config this decision benchmarks at once, in `compiled_ahead.threads` threads (Triton's
        `AsyncCompileMode`, 3.6-3.9: each config's kernel is put in the kernel cache its benchmark then finds), where
        Triton's benchmark would compile them one at a time: on a cold cache an autotune-heavy library's recording is
        mostly that compiling (docs/timing.md#compiling-autotune-configs-ahead). Best effort: a config whose compile
        fails here is compiled again, and fails as it would have, in the benchmark; any other failure leaves the
        benchmark to compile as usual."""
        from concurrent.futures import ThreadPoolExecutor

        from triton.runtime._async_compile import AsyncCompileMode

        began = time.perf_counter()
        try:
            configs = pruned_configs(autotuner, args, meta)
            with ThreadPoolExecutor(self.compiled_ahead.threads) as pool, AsyncCompileMode(pool, ignore_errors=True):
                for config in configs:
                    autotuner.fn.run(*args, **{**meta, **config.all_kwargs(), "warmup": True})
        except Exception as exc:  # noqa: BLE001 - recording must never break the workload: its benchmark compiles
            self._warn("compiling autotune configs ahead", exc)
            return
        self.compiled_ahead.add(len(configs), time.perf_counter() - began)

    def _wrap_disk_cache(self, original):
        tracer = self

        @functools.wraps(original)
        def check_disk_cache(autotuner, tuning_key, configs, bench_fn):
            stack = getattr(tracer._frames, "stack", None)
            hit = original(autotuner, tuning_key, configs, bench_fn)
            if not hit or not tracer.active or not stack or "cached" in stack[-1]:  # the last: benchmarked within
                return hit
            pick, held = autotuner.cache[tuning_key], autotuner.configs_timings
            try:
                bench_fn()  # every config, benchmarked and recorded as in a run with a cold cache
                stack[-1]["timings"] = autotuner.configs_timings
            except Exception as exc:  # noqa: BLE001 - recording must never break the workload: its cached pick runs
                tracer._warn("autotune recording of a cached pick", exc)
            finally:  # the autotuner as the cache left it: the workload runs the cached pick
                autotuner.cache[tuning_key], autotuner.configs_timings = pick, held
            stack[-1]["cached"] = held
            return hit

        return check_disk_cache

    def _decision_frame(self, **held) -> dict:
        """A new decision's frame, numbered in this process (`group`), with what it collects as it runs (`held`)."""
        frame = {"group": self._groups, "candidate": None, **held}
        self._groups += 1
        return frame

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
        compiling = any(f.get("compile") for f in self._frames.__dict__.get("stack", ()))
        held, frame["candidate"] = frame["candidate"], AutotuneCandidate(frame["group"], config, compiling)
        self.benchmarking += 1
        try:
            yield
        finally:
            frame["candidate"] = held
            self.benchmarking -= 1

    def _wrap_candidate(self, original, config_of: Callable, what: str):
        """A function benchmarking one candidate (`config_of(its argument after self)`: Inductor's `bench` of a
        launcher, select_algorithm's `benchmark_choice` of a choice) of the decision on top of this thread's stack.
        A coordinate-descent frame also keeps each candidate's timing: its tuner keeps no table of them."""
        tracer = self

        @functools.wraps(original)
        def candidate(owner, item, *args, **kwargs):
            stack = getattr(tracer._frames, "stack", None)
            if not tracer.active or not stack:
                return original(owner, item, *args, **kwargs)
            try:
                config = config_of(item)
            except Exception as exc:  # noqa: BLE001 - recording must never break the workload's tuning
                tracer._warn(what, exc)
                return original(owner, item, *args, **kwargs)
            with tracer._candidate(stack[-1], config):
                timing = original(owner, item, *args, **kwargs)
            if "timings" in stack[-1]:
                stack[-1]["timings"].append([config, _finite_ms(timing)])
            return timing

        return candidate

    def _inductor_decided(self, frame: dict, timings, _bench_s: float, autotuner, _args, _kwargs) -> None:
        """Inductor keeps the fastest of `timings` (launcher -> ms), as `CachingAutotuner.autotune_to_one_config`
        does."""
        try:
            if not timings:
                return
            chosen = min(timings, key=timings.get)
            self.on_decided(AutotuneDecision(
                frame["group"], _inductor_kernel_name(autotuner), list(inductor_tuning_key(autotuner)),
                autotune_config(chosen.config),
                _timings_data((launcher.config, timing) for launcher, timing in timings.items()), None,
                tuner=INDUCTOR_RUNTIME))
        except Exception as exc:  # noqa: BLE001 - recording must never break the workload
            self._warn("Inductor autotune recording", exc)

    def _decided(self, autotuner, frame) -> None:
        """The decision a benchmarking call made, under the tuning key the call gives (`tuning_key`, what a pin
        is looked up by), whatever key text the autotuner keeps its pick under (a subclass's own)."""
        try:
            keys = list(autotuner.cache)[frame["known"]:]
            if not keys:  # the benchmark itself failed: nothing was decided
                return
            args, kwargs = frame["call"]
            key, pick = tuning_key(autotuner, args, kwargs), autotuner.cache[keys[0]]
            timings = frame.get("timings") or getattr(autotuner, "configs_timings", None) or {}
            decided, shape = self._shapes_decided.setdefault(autotuner, {"seen": set(), "keys": {}}), call_shape(args)
            decided["seen"].add(shape)
            decided["keys"][key] = {"group": frame["group"], "pick": pick, "timings": timings, "shapes": {shape}}
            self._record(autotuner, frame["group"], key, pick, timings, getattr(autotuner, "bench_time", None),
                         frame.get("cached"))
        except Exception as exc:  # noqa: BLE001 - recording must never break the workload
            self._warn("autotune recording", exc)

    def _record(self, autotuner, group: int, key: tuple[str, ...], pick, timings: dict, bench_s: float | None,
                cached: dict | None, made_at: int | None = None) -> None:
        self.on_decided(AutotuneDecision(
            group, getattr(autotuner.base_fn, "__name__", "?"), list(key), autotune_config(pick),
            _timings_data(timings.items()), bench_s, autotuner_hooks(autotuner),
            [str(name) for name in autotuner.keys if name in autotuner.arg_names],
            None if cached is None else _timings_data(cached.items()), made_at))


CHOICE = "choice"
"""The field of a compile-time choice's config (`choice_config`) that names it."""


def _searches_after(autotuner) -> bool:
    """Whether Inductor's coordinate descent searches on from this kernel's benchmark pick (`inductor_meta`'s
    switch, which max-autotune sets; torch 2.11 and 2.13)."""
    return bool((getattr(autotuner, "inductor_meta", None) or {}).get("coordinate_descent_tuning"))


def pick_identity(config: dict) -> dict:
    """What a decision picked, as it compares with another process's pick: a compile-time choice's config
    (`choice_config`, or a template fusion's) with its name's number left out, any other config as it is. Inductor
    numbers the template choices of a process as it generates them (`triton_mm_3`), so the number names a place in
    one compile's order, not the choice; its template, tiles, warps and stages do."""
    if CHOICE not in config:
        return config
    return {**config, CHOICE: str(config[CHOICE]).rstrip("0123456789").rstrip("_")}


def _numberless_choice_config(choice_or_config) -> dict:
    """A compile-time choice's config (`choice_config`; or such a config) as a pin of it matches Inductor's choices:
    its `pick_identity`, less a template fusion's outcome (`FUSED`), which no choice has."""
    config = dict(choice_or_config) if isinstance(choice_or_config, dict) else choice_config(choice_or_config)
    config.pop(FUSED, None)  # a template fusion's pin (`_triton.template_fusion`): what became of the choice
    return pick_identity({CHOICE: "", **config})


def choice_config(choice) -> dict:
    """One of Inductor's compile-time choices as plain data: its name (`triton_mm_3`, or the extern kernel's such as
    `mm`) and what its `info_dict()` says of it (tile shape, warps, stages, backend), scalars only."""
    info = {}
    with contextlib.suppress(Exception):  # a caller type without it, or one whose info needs what is gone
        info = {key: value for key, value in dict(choice.info_dict()).items()
                if isinstance(value, (str, int, float, bool)) or value is None}
    return {CHOICE: str(getattr(choice, "name", "?")), **info}


def selector_kernel(choices) -> str:
    """A compile-time decision's name: its first template choice's name without the number (`triton_mm`, which
    names every benchmark kernel of that template; `cpp_CppMicroGemmFP32Vec` on a CPU), else its first choice's."""
    names = [str(getattr(choice, "name", "")) for choice in choices]
    template = next((name for name in names if name[-1:].isdigit()), names[0] if names else "?")
    return template.rstrip("0123456789").rstrip("_") or template


def selector_key(input_nodes) -> list[str]:
    """A compile-time decision's key: each input's dtype and sizes, what Inductor's own choice depends on."""
    key = []
    for node in input_nodes or ():
        try:
            key.append(f"{node.get_dtype()} {list(node.get_size())}".replace("torch.", ""))
        except Exception:  # noqa: BLE001 - an input kind without them
            key.append("?")
    return key


def inductor_benchmark_process() -> bool:
    """Whether this process is one of Inductor's benchmark subprocesses (`autotune_in_subproc`): all it launches is
    the parent's compile-time benchmarks, and its decisions reach the parent as timings."""
    return bool(sys.argv) and os.path.basename(sys.argv[0] or "") == INDUCTOR_BENCHMARK_MAIN


def config_matches(wanted, config: dict) -> bool:
    """Whether an autotune `config` (plain values, `autotune_config`) has every value `wanted` (pairs or a dict)
    names, compared as text: a value read from a command line or a decisions file is the same number."""
    return all(name in config and str(config[name]) == str(value)
               for name, value in (wanted.items() if isinstance(wanted, dict) else wanted))


def pruned_configs(autotuner, args: tuple, kwargs: dict) -> list:
    """The configs `triton.autotune`'s autotuner would benchmark for this call (`Autotuner.prune_configs`, 3.6-3.9,
    which reads the call's arguments from `nargs`, set only inside `run`): its pruner may return configs of its own
    making (GemLite's adds constexprs and a zeroing `pre_hook` per config), and its pick is one of these."""
    held = getattr(autotuner, "nargs", None)  # set by `run` only, and None after it
    autotuner.nargs = dict(zip(autotuner.arg_names, args))
    try:
        return autotuner.prune_configs(kwargs)
    finally:
        autotuner.nargs = held


def call_shape(args: tuple) -> tuple:
    """What tells one call's inputs from another's under one tuning key (whose text holds the dtypes): each tensor's
    shape (a host tensor descriptor's, as a tuple), and of any other argument its type alone. A scalar's value is
    not a shape: a dropout seed, a random-number offset or a step count differs at every call, and a call at each
    would otherwise be benchmarked again as if at new inputs (flash-attn-triton's forward passes a fresh seed each
    step); a length that matters reaches a kernel's tensors' shapes too."""
    return tuple(tuple(arg.shape) if hasattr(arg, "shape") else type(arg).__name__ for arg in args)


def tuning_key(autotuner, args: tuple, kwargs: dict) -> tuple[str, ...]:
    """The key `Autotuner.run` keeps its choice under, as text (3.6-3.9: the values of its `key` arguments, then the
    dtype of every argument that has one): the form a recorded decision's `key` takes."""
    named = {k: v for k, v in {**dict(zip(autotuner.arg_names, args)), **kwargs}.items() if k in autotuner.arg_names}
    key = [named[name] for name in autotuner.keys if name in named]
    key += [str(value.dtype) for value in named.values() if hasattr(value, "dtype")]
    return tuple(str(part) for part in key)


def inductor_tuning_key(autotuner) -> tuple[str, ...]:
    """What tells one Inductor kernel's autotune decision from another's beside its name: the SHA-256 of the kernel's
    source (`JITFunction.src`, from its `def`, 3.6-3.9) with its own name left out. Inductor numbers its kernels per
    graph and per compile (`triton_poi_fused_add_0` recurs in every model, and one compile's `..._view_36` is the
    next one's `..._view_35`), so the name tells a run's kernels apart and the key says which code a kernel is, the
    same in every run that compiles that code under whatever number (`AutotunePinner._pin_of`)."""
    fn = autotuner.fn
    nameless = fn.src.replace(fn.__name__, "", 1)
    return (f"{INDUCTOR_KEY_PREFIX}{hashlib.sha256(nameless.encode()).hexdigest()}",)


def pins_turn_inductor_caches_off(pins: dict[tuple[str, tuple[str, ...]], dict]) -> bool:
    """Whether pinning these configs ((kernel name, tuning key) -> config) turns Inductor's caches off in the
    process (`AutotunePinner.install`): a pin of an Inductor kernel or of a compile-time choice."""
    return any(is_inductor_kernel_key(key) or CHOICE in config for (_, key), config in pins.items())


def is_inductor_kernel_key(key) -> bool:
    """Whether a tuning key is an Inductor kernel's (`inductor_tuning_key`: its code), not a `triton.autotune` key's
    or a compile-time choice's (its inputs' dtypes and sizes)."""
    return bool(key) and str(key[0]).startswith(INDUCTOR_KEY_PREFIX)


class AutotunePinner(_AutotunerWrapping):
    """Runs the config a decision pins for one autotune decision (`pins`: (kernel name, tuning key) -> config
    values) instead of benchmarking. `triton.autotune`: `Autotuner.run` is wrapped on the class (and a subclass's own
    `run`), and for a call whose kernel and tuning key have a pin it runs with that config as the autotuner's only
    one, so it skips its benchmark, and any pick it holds, and launches it (its pre-hook included) for this call
    only. Inductor: once torch imports its runtime
    autotuner, `CachingAutotuner.autotune_to_one_config` is wrapped, and for a kernel (name and source hash,
    `inductor_tuning_key`) with a pin it keeps the pinned config's launcher alone without benchmarking (nor saving
    the pick to Inductor's cache), Inductor's caches off for the run (`install`). Its coordinate descent
    (`CachingAutotuner.coordinate_descent_tuning`, which Inductor runs after that benchmark, or from a kernel's one
    config, when `coordinate_descent_tuning` is on, as max-autotune sets it) is wrapped too: for a pinned kernel it
    runs the pinned config instead of searching from it (a search would walk away from the pin: on an H200 a
    FlexAttention step's pinned XBLOCK 32 became 8 again). Inductor's compile-time choice among templates and
    extern kernels: once torch imports `select_algorithm`, `AlgorithmSelectorCache.__call__` is wrapped, and a
    decision with a pin chooses among the pinned choice alone (`pinned_choices`), which Inductor takes without
    benchmarking; caches off as above (a cached compiled graph holds the template chosen before). Fail-open: a pin
    whose values match none of the configs, or any error reading the call, leaves the autotuner to tune as usual,
    with one warning per kernel. `applied` counts the calls run pinned, per (kernel, tuning key). `uninstall()` puts the
    very same functions back (and Inductor's switch as it was), or turns ours into pass-throughs when another tool
    wrapped over them."""

    TRITON = ("run",)
    INDUCTOR = ("autotune_to_one_config", "coordinate_descent_tuning")

    def __init__(self, pins: dict[tuple[str, tuple[str, ...]], dict]):
        super().__init__()
        self.pins = pins
        self.applied: dict[tuple[str, tuple[str, ...]], int] = {}
        self._unmatched: set[tuple[str, tuple[str, ...]]] = set()
        self._tuned_near: set[tuple[str, tuple[str, ...]]] = set()  # autotuned here with a pin's name or key
        self._pinned_names = {name for name, _ in pins}  # looked up on every autotuned call: sets, not a scan
        self._pinned_keys = {key for _, key in pins}
        self._found: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # autotuner -> {key: pinned or None}
        self._config_wait: AfterImport | None = None
        self._caches_before: tuple[object, bool] | None = None  # Inductor's config module, its switch before ours
        self._selector_wait: AfterImport | None = None
        self._selector: _Wrapped | None = None  # AlgorithmSelectorCache.__call__, once select_algorithm is imported
        self._stand_ins: set[tuple[str, tuple[str, ...]]] = set()  # (name, key) pinned by its code's pin (`_pin_of`)
        self._fusion_wait: AfterImport | None = None
        self._fusion: _Wrapped | None = None  # Scheduler.speedup_by_fusion, where a pin says a template is unfused
        self._unfused: dict[int, weakref.ref] = {}  # id(template buffer) -> it: a pinned GEMM that fuses nothing
        self._reported = False

    def pinned_config(self, autotuner, name: str, args: tuple, kwargs: dict):
        """The `triton.Config` pinned for this call of kernel `name`, None where no pin applies: one of the configs
        the autotuner would benchmark for it (`pruned_configs`: a pin is a pick, and a pruner may make the configs
        it picks from), found once per tuning key, as Triton keeps its own pick per key."""
        key = tuning_key(autotuner, args, kwargs)
        found = self._found.setdefault(autotuner, {})
        if key not in found:
            found[key] = self._pinned(name, key, lambda: pruned_configs(autotuner, args, kwargs), autotune_config)
        elif found[key] is not None:
            self._count_applied(name, key)
        return found[key]

    def _run_unpinned(self, autotuner, name: str, original: Callable, args: tuple, kwargs: dict):
        """Run a kernel no pin names as usual; only where the call tuned (its cache grew) work out its tuning key,
        for the report of a pin it shares that key with (`not_applied`): the key costs microseconds, which every
        call of every autotuned kernel would otherwise pay under `enable(apply=)`."""
        held = len(getattr(autotuner, "cache", ()))
        try:
            return original(autotuner, *args, **kwargs)
        finally:  # a call that tuned tuned, whether or not its launch then raised
            if len(getattr(autotuner, "cache", ())) > held:
                try:
                    self._note_tuned(name, tuning_key(autotuner, args, kwargs))
                except Exception as exc:  # noqa: BLE001 - a pin must never break the workload
                    self._warn("pinned config", exc)

    def pinned_launcher(self, autotuner):
        """The Inductor launcher of the pinned config of this kernel, None where no pin applies. A kernel whose
        coordinate descent will search on from its benchmark's pick may be pinned at a config the search found,
        which none of its launchers has: that one is built as the search builds its configs
        (`launcher_instead_of_search`), so that neither the benchmark nor the search runs."""
        name, key = _inductor_kernel_name(autotuner), inductor_tuning_key(autotuner)
        wanted = self._pin_of(name, key)
        if wanted is not None and _searches_after(autotuner) and not any(
                config_matches(wanted, autotune_config(launcher.config)) for launcher in autotuner.launchers):
            return self.launcher_instead_of_search(autotuner, autotuner.launchers[0])
        return self._pinned(name, key, lambda: autotuner.launchers, lambda launcher: autotune_config(launcher.config))

    def launcher_instead_of_search(self, autotuner, start):
        """What an Inductor kernel runs in place of its coordinate descent from launcher `start`: where it has a
        pin, `start` when that is the pinned config (the benchmark above was pinned, or the pin is the kernel's one
        config), else the pinned config built as Inductor builds the configs its search tries (a pin of a config
        the search found); None where no pin applies or the build fails (the search then runs as usual, and
        `not_applied` names the pin)."""
        name, key = _inductor_kernel_name(autotuner), inductor_tuning_key(autotuner)
        wanted = self._pin_of(name, key)
        if wanted is None:
            return None
        if config_matches(wanted, autotune_config(start.config)):
            if (name, key) not in self.applied:
                self._count_applied(name, key)
            return start
        config = copy.deepcopy(start.config)
        for field, value in wanted.items():
            if field in config.kwargs:
                config.kwargs[field] = value
            elif hasattr(config, field):
                setattr(config, field, value)
        return self._pinned(name, key, lambda: [_inductor_launcher(autotuner, config)],
                            lambda launcher: autotune_config(launcher.config))

    def pinned_choices(self, choices: list, input_nodes) -> tuple[list, bool | None]:
        """What Inductor's compile-time choice (`select_algorithm`) chooses among for this call: where a pin names
        its kernel and key (`selector_kernel`, `selector_key`, as the tracer records them), the pinned choice alone,
        which Inductor takes without benchmarking (nor saving a timing to its autotune cache); else `choices`.
        A template fusion's pin of this very GEMM (`_triton.template_fusion`) comes first: its choice is the one the
        template ran, fused or not, which the second value says (None: no such pin)."""
        name = selector_kernel(choices)
        if name not in self._pinned_names:
            return choices, None
        key = tuple(selector_key(input_nodes))
        instance = lowering_instance()
        at = fusion_key(key, instance) if instance is not None else None
        if at is not None and (name, at) in self.pins:
            pinned = self._pinned(name, at, lambda: choices, _numberless_choice_config)
            if pinned is not None:
                return [pinned], bool(self.pins[(name, at)][FUSED])
        pinned = self._pinned(name, key, lambda: choices, _numberless_choice_config)
        return (choices if pinned is None else [pinned]), None

    def _pinned(self, name: str, key: tuple[str, ...], options: Callable[[], list], config_of: Callable):
        """Of `options()` (configs, launchers or Inductor's choices, asked for only where (name, key) has a pin),
        the one whose config (`config_of`: as plain data) has the values pinned for (name, key)."""
        self._note_tuned(name, key)
        wanted = self._pin_of(name, key)
        if wanted is None:
            return None
        if CHOICE in wanted:
            wanted = _numberless_choice_config(wanted)
        found = next((o for o in options() if config_matches(wanted, config_of(o))), None)
        if found is None:
            if (name, key) not in self._unmatched:
                self._unmatched.add((name, key))
                warn(f"tritonhook: a decision pins {wanted} for {name} (tuning key {', '.join(key)}), but none of "
                     f"its configs has those values; it is autotuned as usual")
            return None
        self._count_applied(name, key)
        return found

    def _pin_of(self, name: str, key: tuple[str, ...]) -> dict | None:
        """The config pinned for kernel `name` at tuning key `key`, None where none is. An Inductor kernel whose own
        pin is missing takes the pin of its code under another name (its key: the source without the name), where
        every pin at that key pins one config: Inductor renumbers kernels between compiles, so a pin from another
        run (a gate's baseline, another rank's compile) names the kernel by a number this run may give another. Taken
        so, the pin is kept under this name too (`_stand_ins`), and counts for the pins it stands in for."""
        wanted = self.pins.get((name, key))
        if wanted is not None or not is_inductor_kernel_key(key) or key not in self._pinned_keys:
            return wanted
        alike = [config for (_, pinned_key), config in self.pins.items() if pinned_key == key]
        if any(config != alike[0] for config in alike):
            return None  # the same code pinned at two configs (shapes the code does not fix): not applied, reported
        self.pins[(name, key)] = alike[0]
        self._pinned_names.add(name)
        self._stand_ins.add((name, key))
        return alike[0]

    def _note_tuned(self, name: str, key: tuple[str, ...]) -> None:
        """Keep (name, key) where a pin has that kernel name or tuning key, for the report of pins not applied."""
        if name in self._pinned_names or key in self._pinned_keys:
            self._tuned_near.add((name, key))

    def _count_applied(self, name: str, key: tuple[str, ...]) -> None:
        if (name, key) not in self.applied:  # its first run here: a recording in this process notes the pick
            for tracer in list(_TRACERS):
                tracer.note_pinned(name, key, self.pins[(name, key)])
        self.applied[(name, key)] = self.applied.get((name, key), 0) + 1

    def install(self) -> None:
        """Also report at exit the pins no autotune took (`report_not_applied`: a process under `run --apply` never
        uninstalls), and, where a pin is an Inductor kernel's, turn Inductor's caches off once its config is imported
        (`force_disable_caches`, put back by `uninstall`): a warm cache (its FX graph cache, its autotune cache)
        hands Inductor the kernel with the config it picked before as its only one, so no autotuning happens and the
        pin could not apply. Every kernel of the run is then compiled and tuned afresh."""
        if self.active:
            return
        super().install()
        atexit.register(self.report_not_applied)
        if pins_turn_inductor_caches_off(self.pins):
            self._config_wait = after_import(INDUCTOR_CONFIG_MODULE, self._disable_inductor_caches)
        if any(CHOICE in config for config in self.pins.values()):
            self._selector_wait = after_import(INDUCTOR_SELECTOR_MODULE, self._wrap_selector)
        if any(is_fusion_config(config) for config in self.pins.values()):
            self._fusion_wait = after_import(INDUCTOR_SCHEDULER_MODULE, self._wrap_fusion)

    def not_applied(self) -> list[str]:
        """One line per pin that no autotune of this run took (its kernel never tuned at that key here), naming
        what was tuned under the pin's kernel name or tuning key instead: a pin that silently did nothing would read
        as the autotuner's own pick."""
        lines = []
        taken_by_code = {key for name, key in self._stand_ins if (name, key) in self.applied}
        # a template decision whose GEMMs each took the choice of their template fusion's pin instead
        taken_by_fusion = {(name, key[:-1]) for name, key in self.applied if is_fusion_config(self.pins[(name, key)])}
        for (name, key), wanted in self.pins.items():
            if (name, key) in self.applied or (name, key) in self._unmatched or key in taken_by_code \
                    or (name, key) in self._stand_ins or (name, key) in taken_by_fusion:
                continue
            near = sorted(f"{n} at {', '.join(k)}" for n, k in self._tuned_near if n == name or k == key)
            lines.append(f"tritonhook: a decision pins {wanted} for {name} (tuning key {', '.join(key)}), but no "
                         f"autotune of that kernel at that key ran, so it was not applied"
                         + (f" (tuned here: {'; '.join(near)})" if near else ""))
        return lines

    def report_not_applied(self) -> None:
        """Warn of each pin `not_applied` names, once: from `uninstall()`, and at exit in a process that never
        disables (each process of a command under `run --apply` or `record --apply`)."""
        if self.active and not self._reported:
            self._reported = True
            for line in self.not_applied():
                warn(line)

    def uninstall(self) -> None:
        atexit.unregister(self.report_not_applied)
        self.report_not_applied()
        for wait in (self._config_wait, self._selector_wait, self._fusion_wait):
            if wait is not None:
                wait.remove()
        self._config_wait = self._selector_wait = self._fusion_wait = None
        for wrapped in (self._selector, self._fusion):
            if wrapped is not None:
                wrapped.restore()
        self._selector = self._fusion = None
        self._unfused.clear()
        if self._caches_before is not None:
            module, before = self._caches_before
            module.force_disable_caches = before
            self._caches_before = None
        super().uninstall()

    def _wrap_selector(self, module) -> None:
        """Wrap `AlgorithmSelectorCache.__call__` (name, choices, input nodes, ...: torch 2.11 and 2.13): a pinned
        decision's choices become the pinned one alone."""
        self._selector_wait = None
        selector = getattr(module, "AlgorithmSelectorCache", None)
        if not self.active or self._selector is not None:
            return
        if "__call__" not in getattr(selector, "__dict__", {}):
            self._warn("pinned choice", TritonhookError("AlgorithmSelectorCache has no __call__"))
            return
        self._selector = _Wrapped(selector, ("__call__",), lambda name, original: self._selector_wrapper(original))

    def _selector_wrapper(self, original: Callable) -> Callable:
        pinner = self

        @functools.wraps(original)
        def __call__(selector, name, choices, input_nodes, *args, **kwargs):
            fused = None
            if pinner.active:
                try:
                    choices, fused = pinner.pinned_choices(choices, input_nodes)
                except Exception as exc:  # noqa: BLE001 - a pin must never break the workload: it chooses as usual
                    pinner._warn("pinned choice", exc)
            lowered = original(selector, name, choices, input_nodes, *args, **kwargs)
            if fused is False:
                pinner._note_unfused(lowered)
            return lowered

        return __call__

    def _note_unfused(self, lowered) -> None:
        """The template `select_algorithm` lowered a GEMM to (`lowered`) fuses with nothing, as where its pin was
        made: `speedup_by_fusion` refuses it every neighbour."""
        try:
            template = template_buffer(lowered)
            self._unfused[id(template)] = weakref.ref(template)
        except Exception as exc:  # noqa: BLE001 - a pin must never break the workload: it fuses as usual
            self._warn("pinned template fusion", exc)

    def _wrap_fusion(self, module) -> None:
        """Wrap `Scheduler.speedup_by_fusion` (scheduler nodes `node1`, `node2`: torch 2.11 and 2.13), which Inductor
        asks before each fusion: a template a pin says fused with nothing is fused with nothing."""
        self._fusion_wait = None
        scheduler = getattr(module, "Scheduler", None)
        if not self.active or self._fusion is not None:
            return
        if "speedup_by_fusion" not in getattr(scheduler, "__dict__", {}):
            self._warn("pinned template fusion", TritonhookError("Inductor's Scheduler has no speedup_by_fusion"))
            return
        self._fusion = _Wrapped(scheduler, ("speedup_by_fusion",),
                                lambda name, original: self._fusion_wrapper(original, module))

    def _fusion_wrapper(self, original: Callable, module) -> Callable:
        pinner = self

        @functools.wraps(original)
        def speedup_by_fusion(scheduler, node1, node2, *args, **kwargs):
            if pinner.active and pinner._unfused:
                try:
                    refused = any(pinner._unfused.get(id(template), lambda: None)() is template
                                  for template in fused_templates(node1, node2))
                except Exception as exc:  # noqa: BLE001 - a pin must never break the workload: it fuses as usual
                    pinner._warn("pinned template fusion", exc)
                    refused = False
                if refused:
                    return no_fusion(module)
            return original(scheduler, node1, node2, *args, **kwargs)

        return speedup_by_fusion

    def _disable_inductor_caches(self, module) -> None:
        self._config_wait = None
        if self.active and self._caches_before is None:
            self._caches_before = (module, module.force_disable_caches)
            module.force_disable_caches = True

    def _inductor_wrapper(self, name: str, original: Callable) -> Callable:
        if name == "coordinate_descent_tuning":
            return self._coordinate_descent_wrapper(original)
        pinner = self

        @functools.wraps(original)
        def autotune_to_one_config(autotuner, *args, **kwargs):
            if pinner.active:
                try:
                    pinned = pinner.pinned_launcher(autotuner)
                except Exception as exc:  # noqa: BLE001 - a pin must never break the workload: it tunes as usual
                    pinner._warn("pinned config", exc)
                    pinned = None
                if pinned is not None:
                    autotuner.launchers = [pinned]  # what Inductor keeps after tuning: one launcher
                    return None
            return original(autotuner, *args, **kwargs)

        return autotune_to_one_config

    def _coordinate_descent_wrapper(self, original: Callable) -> Callable:
        pinner = self

        @functools.wraps(original)
        def coordinate_descent_tuning(autotuner, launcher, *args, **kwargs):
            if pinner.active:
                try:
                    pinned = pinner.launcher_instead_of_search(autotuner, launcher)
                except Exception as exc:  # noqa: BLE001 - a pin must never break the workload: it tunes as usual
                    pinner._warn("pinned config", exc)
                    pinned = None
                if pinned is not None:
                    # Inductor's own mark of a searched config: its `run` searches again from any config without it
                    pinned.config.found_by_coordesc = True
                    return pinned
            return original(autotuner, launcher, *args, **kwargs)

        return coordinate_descent_tuning

    def _triton_wrapper(self, name: str, original: Callable) -> Callable:
        pinner = self

        @functools.wraps(original)
        def run(autotuner, *args, **kwargs):
            if not pinner.active:
                return original(autotuner, *args, **kwargs)
            if not pinner._enter(autotuner):
                return original(autotuner, *args, **kwargs)
            try:
                name = getattr(autotuner.base_fn, "__name__", "?")
                if name not in pinner._pinned_names:
                    return pinner._run_unpinned(autotuner, name, original, args, kwargs)
                try:
                    pinned = pinner.pinned_config(autotuner, name, args, kwargs)
                except Exception as exc:  # noqa: BLE001 - a pin must never break the workload: it tunes as usual
                    pinner._warn("pinned config", exc)
                    pinned = None
                if pinned is None:
                    return original(autotuner, *args, **kwargs)
                configs = autotuner.configs
                autotuner.configs = [pinned]  # one config: the autotuner's run takes it without benchmarking
                try:
                    return original(autotuner, *args, **kwargs)
                finally:
                    autotuner.configs = configs
            finally:
                pinner._leave(autotuner)

        return run
