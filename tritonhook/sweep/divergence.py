"""Autotune picks across processes: which config each rank of each run picked per tuning key, and where they differ.

Autotuners pick per process, and at µs scale a pick is a draw among near-ties: ranks of one job, or cold runs of one
program, pick other configs for the same kernel and key, so they compute with other numerics and take other times
at a kernel they wait for each other on. `divergence(recordings)` reads the autotune decisions each recording's
processes made (`Recording.merged` tags each with its process's rank and pid; the recording's label is its run) and
returns, per tuning key, every pick, how many differ, the share of picks that are not the most common one (the flip
rate), and the autotuners' own timing of each rival pick (the median over the decisions that timed it, with its
range). Pure: no GPU, no store. A key is divergent when its picks are not all one config.

What it does not say: how far apart the rival picks really are on one GPU (a replay's interval: `tritonhook sweep`
replays a recording's autotune candidates) and what a divergent pick costs the step (the slowest rank at that
kernel). The autotuners' own timings are what each process decided on; a pick made from them is an estimate until
the workload confirms it (`tritonhook decisions confirm`).
"""

from __future__ import annotations

import collections
import dataclasses

from .. import format
from ..measure.stats import median
from .autotune import config_text
from .recording import Recording

INDUCTOR_COMPILE_TIME = ("select_algorithm",)
"""Decisions left out: a compile-time choice is keyed by input shapes, not by a kernel a pin can reach."""


@dataclasses.dataclass
class Pick:
    """One process's decision at a tuning key: which run (the recording's label), rank and pid, and its config."""

    run: str
    rank: int | None
    pid: int | None
    config: dict


@dataclasses.dataclass
class KeyPicks:
    """Every pick at one kernel and tuning key, and the autotuners' own timings of each config picked anywhere
    (`timings`: config text -> [median, lowest, highest] of the medians the decisions measured for it)."""

    kernel: str
    key: list[str]
    picks: list[Pick]
    timings: dict[str, list[float]]

    @property
    def configs(self) -> list[str]:
        """The configs picked, most often first."""
        counts = collections.Counter(config_text(p.config) for p in self.picks)
        return [text for text, _ in counts.most_common()]

    @property
    def divergent(self) -> bool:
        return len(self.configs) > 1

    @property
    def flip_rate(self) -> float:
        """The share of picks that are not the most common config (0 when all agree)."""
        counts = collections.Counter(config_text(p.config) for p in self.picks)
        return 1.0 - counts.most_common(1)[0][1] / len(self.picks) if self.picks else 0.0

    @property
    def spread(self) -> float | None:
        """The slowest rival pick's own median over the fastest one's, by the autotuners' timings (None where a
        pick was never timed)."""
        medians = [self.timings[text][0] for text in self.configs if text in self.timings]
        if len(medians) < len(self.configs) or not medians or min(medians) <= 0:
            return None
        return max(medians) / min(medians)

    def fastest(self) -> dict | None:
        """The picked config the autotuners' own timings put fastest; among configs within `tie` of it, the first
        by its text (a fixed rule: the same answer from the same data, never a vote among draws). None where a pick
        was never timed."""
        timed = {text: self.timings[text][0] for text in self.configs if text in self.timings}
        if len(timed) < len(self.configs):
            return None
        best = min(timed.values())
        near = sorted(text for text, ms in timed.items() if ms <= best * (1 + TIE))
        return next(p.config for p in self.picks if config_text(p.config) == near[0])


TIE = 0.02
"""Rival picks whose own medians are within 2% of the fastest are a tie, broken by a fixed rule (`fastest`)."""


@dataclasses.dataclass
class Divergence:
    """Every tuning key the recordings decided at, divergent keys first."""

    keys: list[KeyPicks]
    recordings: list[int | None]

    @property
    def divergent(self) -> list[KeyPicks]:
        return [key for key in self.keys if key.divergent]

    def to_json(self) -> dict:
        return {"recordings": self.recordings, "divergent": len(self.divergent),
                "keys": [{**dataclasses.asdict(key), "configs": key.configs, "divergent": key.divergent,
                          "flip_rate": key.flip_rate, "spread": key.spread} for key in self.keys]}

    def __rich_console__(self, console, options):
        rows = [[key.kernel, " ".join(key.key), str(len(key.picks)), str(len(key.configs)),
                 format.share(key.flip_rate), "-" if key.spread is None else f"{key.spread:.3f}",
                 "; ".join(f"{text} ({_runs_ranks(key, text)})" for text in key.configs)]
                for key in self.keys]
        yield format.table(("kernel", "tuning key", "picks", "configs", "flip rate", "slowest/fastest (own)",
                            "config (run:rank, ...)"), rows,
                           title=f"autotune picks across processes: {len(self.divergent)} of {len(self.keys)} "
                                 f"tuning key(s) divergent, {len(self.recordings)} run(s)",
                           right_align=("picks", "configs", "flip rate", "slowest/fastest (own)"))


def _runs_ranks(key: KeyPicks, text: str) -> str:
    return ", ".join(f"{p.run}:{'-' if p.rank is None else p.rank}" for p in key.picks if config_text(p.config) == text)


def divergence(recordings: list[Recording]) -> Divergence:
    """Per kernel and tuning key, the picks of every process of every recording (see the module docstring). A
    decision that did not pick at its own call (`made_at`: the pick made at another input shape) is not a pick."""
    picks: dict[tuple, list[Pick]] = {}
    timed: dict[tuple, dict[str, list[float]]] = {}
    for recording in recordings:
        run = recording.label or str(recording.id)
        for decision in recording.autotune:
            if decision.get("made_at") is not None or decision.get("tuner") in INDUCTOR_COMPILE_TIME:
                continue
            at = (decision["kernel"], tuple(decision.get("key") or ()))
            picks.setdefault(at, []).append(Pick(run, decision.get("rank", recording.rank),
                                                 decision.get("pid", recording.pid), decision["chosen"]))
            for config, ms in decision.get("timings") or []:
                if ms and ms[0] is not None:
                    timed.setdefault(at, {}).setdefault(config_text(config), []).append(ms[0])
    keys = [KeyPicks(kernel, list(key), found,
                     {text: [median(values), min(values), max(values)] for text, values in timed.get((kernel, key),
                                                                                                   {}).items()})
            for (kernel, key), found in picks.items()]
    keys.sort(key=lambda k: (not k.divergent, -k.flip_rate, k.kernel, k.key))
    return Divergence(keys, [r.id for r in recordings])

