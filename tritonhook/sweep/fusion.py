"""Inductor's template fusions in a recording, as its scheduler timed them: per GEMM, the way it took (its template
fused with a neighbour, or apart), the fastest way it did not take, and how near the two came.

The scheduler decides each fusion by one benchmark while it compiles (`_triton.template_fusion`): the template with
its neighbour fused in against the template's best choice and the neighbour apart. Where the two come within
`config.sweep.FUSION_NEAR_TIE` of each other the pick is a draw (two cold runs, or two ranks, can go either way), so
the way not taken may be the faster one in the workload. The replay cannot say: the unfused way is two kernels, and
the fused one a kernel the workload launches only when fused. So a near tie's regret is measured where it runs, the
workload with that fusion pinned the other way against it as recorded (`decisions confirm`, by the step's time:
the GEMM's kernels are other kernels in each arm). Pure: tested with given decisions on a CPU.
"""

from __future__ import annotations

import dataclasses

from .._triton import FUSED, TEMPLATE_FUSION


@dataclasses.dataclass
class TemplateFusion:
    """One GEMM's fusion decision: its template decision's kernel and key (the GEMM's graph node last), the config
    it ran (`taken`: the choice, and `fused`) and the fastest config the scheduler timed the other way (`other`,
    None where it timed none), with the scheduler's times of each (ms)."""

    group: int
    kernel: str
    key: list[str]
    taken: dict
    taken_ms: float | None
    other: dict | None
    other_ms: float | None

    @property
    def fused(self) -> bool:
        return bool(self.taken.get(FUSED))

    @property
    def margin(self) -> float | None:
        """The way not taken over the way taken, as the scheduler timed them (1.25: the other way 25% slower);
        None where it did not time both."""
        return self.other_ms / self.taken_ms if self.other_ms and self.taken_ms else None

    def near_tie(self, within: float) -> bool:
        """Whether the scheduler timed the other way within `within` (a fraction) of the way it took."""
        return self.margin is not None and abs(self.margin - 1.0) <= within

    @property
    def gemm(self) -> str:
        """The GEMM in words: its kernel and the graph node it lowers (the key's last value)."""
        return f"{self.kernel} {self.key[-1]}" if self.key else self.kernel

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "margin": self.margin}

    @staticmethod
    def way_text(config: dict | None) -> str:
        """A way in words: "fused at triton_mm_17" or "apart at triton_mm_4" (the choice the way ran)."""
        if config is None:
            return "-"
        return f"{'fused' if config.get(FUSED) else 'apart'} at {config.get('choice', '?')}"

    @classmethod
    def from_json(cls, data: dict) -> "TemplateFusion":
        return cls(**{field.name: data[field.name] for field in dataclasses.fields(cls)})


def template_fusions(decisions: list[dict]) -> list[TemplateFusion]:
    """The template fusions among a recording's autotune decisions (`Recording.autotune`), in decision order."""
    return [_fusion(d) for d in decisions if d.get("tuner") == TEMPLATE_FUSION and d.get("chosen")]


def _fusion(decision: dict) -> TemplateFusion:
    """A decision's two ways: the fastest timing of each (a way's timings are the fused choices it timed, or the
    template's best choice and the neighbour apart)."""
    taken = decision["chosen"]
    ways: dict[bool, tuple[dict, float]] = {}
    for config_timed, times in decision.get("timings") or []:
        ms = (times or [None])[0]
        way = bool(config_timed.get(FUSED))
        if ms is not None and (way not in ways or ms < ways[way][1]):
            ways[way] = (config_timed, ms)
    own, other = ways.get(bool(taken.get(FUSED))), ways.get(not taken.get(FUSED))
    return TemplateFusion(decision["group"], decision["kernel"], list(decision.get("key") or []), taken,
                          own[1] if own else None, other[0] if other else None, other[1] if other else None)


def near_ties(fusions: list[TemplateFusion], within: float) -> list[TemplateFusion]:
    """The fusions whose other way the scheduler timed within `within` (a sweep's `config.sweep.FUSION_NEAR_TIE`)."""
    return [fusion for fusion in fusions if fusion.near_tie(within)]


def fusions_line(fusions: list[TemplateFusion], within: float) -> str:
    """What a sweep says of its template fusions: how many, how many fused, and the near ties its confirmation runs
    the other way."""
    timed = [f for f in fusions if f.margin is not None]
    ties = near_ties(timed, within)
    closest = min(timed, key=lambda f: abs(f.margin - 1.0), default=None)
    line = (f"template fusions: {len(fusions)} GEMM(s) decided by Inductor's scheduler, "
            f"{sum(f.fused for f in fusions)} fused; {len(timed)} timed both ways")
    if closest is not None:
        line += f", the closest {closest.gemm} (the other way {closest.margin:.3f}x)"
    if ties:
        line += (f"; {len(ties)} within {within:g} the other way, a draw, run the other way inside the workload by "
                 f"--confirm: " + ", ".join(f"{f.gemm} ({f.way_text(f.other)})" for f in ties))
    return line
