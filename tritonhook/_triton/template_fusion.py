"""Inductor's template fusion: which GEMM template it fused with its neighbours, as a decision that can be pinned.

Under max-autotune Inductor does not settle a GEMM when it benchmarks the choices (`select_algorithm`): it keeps them
all in a `MultiTemplateBuffer`, and its scheduler, meeting a pointwise neighbour (an epilogue such as a bias add, or
a prologue), compiles the template with that neighbour fused in, times it against the template and the neighbour
apart, and fuses only where that is faster, finalizing the template with the choice it fused
(`MultiTemplateBuffer.finalize_as_triton_caller`); the rest are finalized at their fastest choice
(`Scheduler.finalize_multi_template_buffers`). Both are compile-time benchmarks: draws that two cold runs, or two
ranks, can make differently, and that are invisible in the choice's own timings. A run with the choice pinned has
one choice, so no `MultiTemplateBuffer`, and the scheduler fuses whatever fits without benchmarking: the pinned run's
GEMM kernels then differ from the run its pins came from (an H200 BERT step's LM head fused its `add`; the baseline's
had not).

So the autotune tracer records, per GEMM (its template decision's kernel and key, and the graph node it lowers: two
GEMMs of one shape can fuse differently), the choice the template was finalized with and whether it was fused
(`FUSED`), a decision of `TEMPLATE_FUSION`; the pinner, given such a pin, takes that choice for that GEMM and refuses
every fusion of its template where the pinned run's had none (`Scheduler.speedup_by_fusion`). Torch 2.11 and 2.13.

The decision carries what the scheduler timed to make it (`FusionTimes`): the template with its neighbour fused, per
choice it compiled so, and the neighbour alone, which with the template's best choice alone (its `select_algorithm`
timings) is the unfused way; it fused where the fused time was the lower.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
import threading
from typing import Callable

INDUCTOR_SCHEDULER_MODULE = "torch._inductor.scheduler"
"""Where Inductor's scheduler lives (`Scheduler.finalize_multi_template_buffers`, `speedup_by_fusion`; it imports
`torch._inductor.ir`, where `MultiTemplateBuffer` lives)."""
INDUCTOR_IR_MODULE = "torch._inductor.ir"
INDUCTOR_VIRTUALIZED_MODULE = "torch._inductor.virtualized"
TEMPLATE_FUSION = "template fusion"
"""Who made a decision (`AutotuneDecision.tuner`): Inductor's scheduler, fusing a GEMM template with its neighbours
or not, by a benchmark while it compiles."""
FUSED = "fused"
"""The field of a template fusion's config that says whether the template was fused with a neighbour."""
AT = "at "
"""How the last value of a template fusion's key begins: the graph node the GEMM lowers, and its graph's kind."""


def fusion_key(key: tuple[str, ...] | list[str], instance: str) -> tuple[str, ...]:
    """A template fusion's key: its template decision's (`selector_key`), then the GEMM it is (`instance`)."""
    return (*key, AT + instance)


def is_fusion_config(config: dict) -> bool:
    return FUSED in config


def template_instance(buffer) -> str | None:
    """Which GEMM of the compiled graph a template buffer is: the graph node it was lowered from (the first of its
    origins: Inductor lowers each node with that node first among the origins of what it makes), and whether the
    graph is a backward one (a forward and a backward graph number their nodes alike); None where unknown."""
    origin = next((node for node in getattr(buffer, "origins", ()) if hasattr(node, "name")), None)
    return None if origin is None else _instance(origin.name, _graph())


def lowering_instance() -> str | None:
    """Which GEMM the graph being lowered is lowering now (`template_instance`'s words); None outside a lowering."""
    graph = _graph()
    node = getattr(graph, "current_node", None)
    return None if node is None else _instance(node.name, graph)


def _graph():
    """The graph Inductor is lowering or scheduling now (`V.graph`); None outside one."""
    virtualized = sys.modules.get(INDUCTOR_VIRTUALIZED_MODULE)
    try:
        return virtualized.V.graph
    except Exception:  # noqa: BLE001 - no graph now (or no virtualized module yet)
        return None


def _instance(node_name: str, graph) -> str:
    return f"{node_name} ({'backward' if getattr(graph, 'is_backward', False) else 'forward'})"


def multi_templates(scheduler_nodes) -> list[tuple[object, bool]]:
    """The `MultiTemplateBuffer`s among a scheduler's nodes, each with whether its node was fused with others."""
    ir = sys.modules.get(INDUCTOR_IR_MODULE)
    multi = getattr(ir, "MultiTemplateBuffer", None)
    found = []
    for node in scheduler_nodes:
        template = node.get_template_node() if node.is_template() else None
        if multi is not None and isinstance(template, multi):
            found.append((template, len(node.get_nodes()) > 1))
    return found


def template_buffer(lowered):
    """The buffer behind what `AlgorithmSelectorCache.__call__` returned (torch 2.13: (node, choice); a node
    before), through Inductor's boxes."""
    node = lowered[0] if isinstance(lowered, tuple) else lowered
    ir = sys.modules.get(INDUCTOR_IR_MODULE)
    box = getattr(ir, "MutableBox", ())
    while isinstance(node, box):
        node = node.data
    return node


def fused_templates(node1, node2) -> list:
    """The template buffers a fusion of scheduler nodes `node1` and `node2` would fuse with a neighbour."""
    return [node.get_template_node() for node in (node1, node2) if node.is_template()]


def no_fusion(scheduler_module):
    """`Scheduler.speedup_by_fusion`'s answer "do not fuse": a `FusionResult` where the scheduler has one (torch
    2.13), else False."""
    result = getattr(scheduler_module, "FusionResult", None)
    return result.fuse(False) if result is not None else False


class FusionTimes:
    """What Inductor's scheduler timed while it weighed fusing a GEMM template with a neighbour: the template with
    the neighbour fused in, per choice (`Scheduler.benchmark_codegened_module` inside
    `MultiTemplateBuffer.swap_as_triton_caller`: torch 2.11 times the fastest choice alone so, 2.13 more), and the
    neighbour alone (`Scheduler.benchmark_fused_nodes` of nodes that hold no template, inside
    `Scheduler.speedup_by_fusion`). Kept per template buffer until its decision takes them (`take`). The wrappers
    (`weighing`, `swapping`, `timing_neighbour`, `timing_fused`) pass every call through unchanged, and keep
    nothing while `active()` is false (their owner uninstalled, another tool's wrapper over them)."""

    def __init__(self, active: Callable[[], bool]):
        self.active = active
        self._local = threading.local()  # per thread: the templates being weighed, the choices swapped in
        self._held: dict[int, _Timed] = {}  # id(template) -> what was timed for it

    def take(self, template) -> tuple[list[tuple[object, float]], float | None]:
        """The template's fused times, (choice, ms) each, and its neighbour's time alone (None: not timed)."""
        held = self._held.pop(id(template), None)
        if held is None or held.template is not template:
            return [], None
        return list(held.fused.values()), held.apart

    def clear(self) -> None:
        self._held.clear()

    def _of(self, template) -> "_Timed":
        """What is held for `template`, a new record where none is (or where its id was another template's)."""
        held = self._held.get(id(template))
        if held is None or held.template is not template:
            held = self._held[id(template)] = _Timed(template)
        return held

    def _stack(self, name: str) -> list:
        return self._local.__dict__.setdefault(name, [])

    def weighing(self, original):
        """`Scheduler.speedup_by_fusion(node1, node2)`: which template the neighbour's time is for."""
        times = self

        @functools.wraps(original)
        def speedup_by_fusion(scheduler, node1, node2, *args, **kwargs):
            weighed = times._stack("weighed")
            weighed.append(_multi_template_of(node1, node2))
            try:
                return original(scheduler, node1, node2, *args, **kwargs)
            finally:
                weighed.pop()

        return speedup_by_fusion

    def swapping(self, original):
        """`MultiTemplateBuffer.swap_as_triton_caller(choice)` (a context manager): which choice a fused time is
        of."""
        times = self

        @functools.wraps(original)
        def swap_as_triton_caller(template, choice, *args, **kwargs):
            return times._swapped(original(template, choice, *args, **kwargs), template, choice)

        return swap_as_triton_caller

    @contextlib.contextmanager
    def _swapped(self, inner, template, choice):
        with inner as value:
            swapped = self._stack("swapped")
            swapped.append((template, choice))
            try:
                yield value
            finally:
                swapped.pop()

    def timing_fused(self, original):
        """`Scheduler.benchmark_codegened_module`: (ms, path); inside a swap, the swapped choice fused."""
        times = self

        @functools.wraps(original)
        def benchmark_codegened_module(scheduler, *args, **kwargs):
            result = original(scheduler, *args, **kwargs)
            swapped = times._stack("swapped")
            if swapped and times.active() and (ms := _ms(result)) is not None:
                template, choice = swapped[-1]
                times._of(template).fused[id(choice)] = (choice, ms)
            return result

        return benchmark_codegened_module

    def timing_neighbour(self, original):
        """`Scheduler.benchmark_fused_nodes(nodes)`: (ms, path); of nodes without a template, while a template is
        weighed, its neighbour alone."""
        times = self

        @functools.wraps(original)
        def benchmark_fused_nodes(scheduler, nodes, *args, **kwargs):
            result = original(scheduler, nodes, *args, **kwargs)
            weighed = times._stack("weighed")
            template = weighed[-1] if weighed else None
            if template is not None and times.active() and (ms := _ms(result)) is not None \
                    and not _holds_a_template(nodes):
                times._of(template).apart = ms
            return result

        return benchmark_fused_nodes


@dataclasses.dataclass
class _Timed:
    """What the scheduler timed for one template: per choice (by id), the choice and its time with the neighbour
    fused; the neighbour's time alone. The template is held too: an id is reused once its object is gone."""

    template: object
    fused: dict[int, tuple[object, float]] = dataclasses.field(default_factory=dict)
    apart: float | None = None


def _ms(result) -> float | None:
    """The milliseconds of a scheduler benchmark's result ((ms, path) in torch 2.11 and 2.13)."""
    ms = result[0] if isinstance(result, tuple) else result
    return float(ms) if isinstance(ms, (int, float)) else None


def _multi_template_of(node1, node2):
    """The `MultiTemplateBuffer` a fusion of scheduler nodes `node1` and `node2` would fuse a neighbour into; None
    when neither is one."""
    multi = getattr(sys.modules.get(INDUCTOR_IR_MODULE), "MultiTemplateBuffer", None)
    try:
        return next((t for t in fused_templates(node1, node2) if multi is not None and isinstance(t, multi)), None)
    except Exception:  # noqa: BLE001 - a node of a kind we do not know: nothing to attribute
        return None


def _holds_a_template(nodes) -> bool:
    try:
        return any(node.is_template() for node in nodes)
    except Exception:  # noqa: BLE001 - unknown nodes: attribute nothing to them
        return True
