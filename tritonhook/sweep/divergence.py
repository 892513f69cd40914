"""Autotune picks across processes: which config each rank of each run picked per tuning key, and where they differ.

Autotuners pick per process, and at µs scale a pick is a draw among near-ties: ranks of one job, or cold runs of one
program, pick other configs for the same kernel and key, so they compute with other numerics and take other times
at a kernel they wait for each other on. `divergence(recordings)` reads the autotune decisions each recording's
processes made (`Recording.merged` tags each with its process's rank and pid; the recording's label is its run) and
returns, per tuning key, every pick, how many differ, the share of picks that are not the most common one (the flip
rate), and the autotuners' own timing of each rival pick (the median over the decisions that timed it, with its
range). Every autotuner a recording labels counts, Inductor's compile-time choice among templates
(`select_algorithm`, keyed by its input shapes) included: ranks that chose other templates run other kernels. Pure:
no GPU, no store. A key is divergent when its picks are not all one config.

What a divergent pick costs (`KeyPicks.cost`): each process's own time at the kernel inside the workload (the
recording's sampled launches of the config it picked), the slowest process of a run against the fastest pick's time
per launch, over that process's launches: ranks that wait for each other wait for the slowest. How far apart the
rival picks are on one GPU, as an interval, is a replay's (`sweep.replay.replay_rivals`, `decisions divergence
--replay`). The autotuners' own timings are what each process decided on; a pick made from them is an estimate
until the workload confirms it (`tritonhook decisions confirm`).
"""

from __future__ import annotations

import collections
import dataclasses

from .. import format
from .._triton import TRITON_AUTOTUNE, is_inductor_kernel_key, pick_identity
from ..measure.stats import median
from .autotune import config_text
from .recording import Recording

@dataclasses.dataclass
class Pick:
    """One process's decision at a tuning key: which run (the recording's label), rank and pid, its config, and
    what the workload then ran of it in that process (its launches and their sampled GPU time; 0 where the
    recording timed none)."""

    run: str
    rank: int | None
    pid: int | None
    config: dict
    launches: int = 0
    gpu_ms: float = 0.0

    @property
    def ms_per_launch(self) -> float | None:
        return self.gpu_ms / self.launches if self.launches and self.gpu_ms else None


@dataclasses.dataclass
class RivalTiming:
    """One rival pick against the fastest, replayed on one GPU (`sweep.rivals`): the ratio of its time to the fastest pick's, its interval and
    verdict, or why it was not timed."""

    config: str
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    verdict: str = "not replayed"


@dataclasses.dataclass
class KeyPicks:
    """Every pick at one kernel and tuning key, and the autotuners' own timings of each config picked anywhere
    (`timings`: config text -> [median, lowest, highest] of the medians the decisions measured for it), and where
    replayed, each rival pick against the fastest (`replayed`)."""

    kernel: str
    key: list[str]
    picks: list[Pick]
    timings: dict[str, list[float]]
    replayed: list[RivalTiming] = dataclasses.field(default_factory=list)  # set by `sweep.rivals.replay_rivals`
    tuner: str | None = None  # who decided (`_triton.AutotuneDecision.tuner`): not every tuner's pick can be pinned
    launched: bool = True  # False: an Inductor kernel no process's workload launched (`divergence`)

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


    def cost(self) -> dict | None:
        """What the divergence cost inside the workload: per run, its slowest process at this key (by its own time
        per launch) against the fastest pick (`fastest`; its processes' median time per launch), over the slowest
        process's launches; the run where that excess is largest. None where the key is not divergent, or a pick's
        time inside the workload was not sampled."""
        best = self.fastest()
        if not self.divergent or best is None:
            return None
        best_ms = [p.ms_per_launch for p in self.picks if config_text(p.config) == config_text(best)]
        if None in best_ms or any(p.ms_per_launch is None for p in self.picks):
            return None
        best_per_launch = median(best_ms)
        worst = None
        for run in sorted({p.run for p in self.picks}):
            slowest = max((p for p in self.picks if p.run == run), key=lambda p: p.ms_per_launch)
            excess = (slowest.ms_per_launch - best_per_launch) * slowest.launches
            if worst is None or excess > worst["excess_ms"]:
                worst = {"run": run, "rank": slowest.rank, "config": config_text(slowest.config),
                         "ms_per_launch": slowest.ms_per_launch, "best_ms_per_launch": best_per_launch,
                         "launches": slowest.launches, "excess_ms": excess}
        return worst


TIE = 0.02
"""Rival picks whose own medians are within 2% of the fastest are a tie, broken by a fixed rule (`fastest`)."""


@dataclasses.dataclass
class Divergence:
    """Every tuning key the recordings decided at, divergent keys first."""

    keys: list[KeyPicks]
    recordings: list[int | None]

    @property
    def divergent(self) -> list[KeyPicks]:
        """The divergent keys of kernels the workload launched (`KeyPicks.launched`): a kernel no step runs has
        picks that differ at no cost, and no pin."""
        return [key for key in self.keys if key.divergent and key.launched]

    def to_json(self) -> dict:
        return {"recordings": self.recordings, "divergent": len(self.divergent),
                "keys": [{**dataclasses.asdict(key), "configs": key.configs, "divergent": key.divergent,
                          "flip_rate": key.flip_rate, "spread": key.spread, "cost": key.cost()}
                         for key in self.keys]}

    def __rich_console__(self, console, options):
        rows = [[_kernel_text(key),
                 " ".join(key.key), str(len(key.picks)), str(len(key.configs)),
                 format.share(key.flip_rate), "-" if key.spread is None else f"{key.spread:.3f}", _cost_text(key),
                 "; ".join(f"{text} ({_runs_ranks(key, text)})" for text in key.configs), _replayed_text(key)]
                for key in self.keys]
        yield format.table(("kernel", "tuning key", "picks", "configs", "flip rate", "slowest/fastest (own)",
                            "cost in the workload", "config (run:rank, ...)", "replayed / fastest pick"), rows,
                           title=f"autotune picks across processes: {len(self.divergent)} of "
                                 f"{sum(key.launched for key in self.keys)} tuning key(s) divergent, "
                                 f"{len(self.recordings)} run(s)" + _unlaunched_text(self.keys),
                           right_align=("picks", "configs", "flip rate", "slowest/fastest (own)"))


def _kernel_text(key: KeyPicks) -> str:
    """The kernel cell: its name, who decided where not `triton.autotune`, and "benchmark only" where no workload
    launched it."""
    tuner = "" if key.tuner in (None, TRITON_AUTOTUNE) else f" ({key.tuner})"
    return f"{key.kernel}{tuner}{'' if key.launched else ' (benchmark only)'}"


def _unlaunched_text(keys: list[KeyPicks]) -> str:
    """The title's note of keys whose kernels only Inductor's benchmarks launched, counted apart."""
    unlaunched = sum(not key.launched for key in keys)
    return f"; {unlaunched} more of kernels only Inductor's benchmarks launched (not counted, not pinned)" \
        if unlaunched else ""


def _replayed_text(key: KeyPicks) -> str:
    """Each rival's replayed ratio to the fastest pick, with its interval and verdict; "-" where not replayed."""
    return "; ".join(f"{r.config}: {r.verdict}" if r.ratio is None else
                     f"{r.config}: {r.ratio:.3f} [{r.low:.3f}, {r.high:.3f}] {r.verdict}" for r in key.replayed) or "-"


def _cost_text(key: KeyPicks) -> str:
    """The divergence's cost as a cell: the slowest process's excess over the fastest pick, and where."""
    cost = key.cost()
    if cost is None:
        return "-"
    return (f"{cost['excess_ms']:.3f} ms ({cost['run']}:{'-' if cost['rank'] is None else cost['rank']}, "
            f"{cost['ms_per_launch'] * 1e3:.1f} vs {cost['best_ms_per_launch'] * 1e3:.1f} µs x {cost['launches']})")


def _runs_ranks(key: KeyPicks, text: str) -> str:
    return ", ".join(f"{p.run}:{'-' if p.rank is None else p.rank}" for p in key.picks if config_text(p.config) == text)


def divergence(recordings: list[Recording]) -> Divergence:
    """Per kernel and tuning key, the pick of every process of every recording (see the module docstring): the
    config its last decision at that key chose, the one it ran. Inductor benchmarks a kernel's configs and then,
    with coordinate descent on, searches on from the winner: two decisions at one key in one process, the first
    of which it never ran. A decision that did not pick at its own call (`made_at`: the pick made at another input
    shape) is not a pick. Each decision's timings count, the first's too: the autotuners' own times of the configs.
    A compile-time choice is compared by what it is (`_triton.pick_identity`), not by the number in its name."""
    final: dict[tuple, tuple[dict, tuple[int, float]]] = {}  # (run, rank, pid, kernel, key) -> its last decision
    timed: dict[tuple, dict[str, list[float]]] = {}
    launched: dict[tuple, bool] = {}
    for recording in recordings:
        run = recording.label or str(recording.id)
        ran = _workload_of_groups(recording)
        workload_kernels = {s.kernel for s in recording.signatures if s.launches}
        for decision in recording.autotune:
            if decision.get("made_at") is not None:
                continue
            at = (decision["kernel"], tuple(decision.get("key") or ()))
            process = (run, decision.get("rank", recording.rank), decision.get("pid", recording.pid))
            final[(*process, *at)] = (decision, ran.get(decision["group"], (0, 0.0)))
            launched[at] = launched.get(at, False) or not _compiled_to_benchmark(at, recording, workload_kernels)
            for config, ms in decision.get("timings") or []:
                if ms and ms[0] is not None:
                    timed.setdefault(at, {}).setdefault(config_text(pick_identity(config)), []).append(ms[0])
    picks: dict[tuple, list[Pick]] = {}
    tuners: dict[tuple, str | None] = {}
    for (run, rank, pid, kernel, key), (decision, (launches, gpu_ms)) in final.items():
        at = (kernel, key)
        tuners.setdefault(at, decision.get("tuner"))
        picks.setdefault(at, []).append(Pick(run, rank, pid, pick_identity(decision["chosen"]), launches, gpu_ms))
    keys = [KeyPicks(kernel, list(key), found,
                     {text: [median(values), min(values), max(values)] for text, values in timed.get((kernel, key),
                                                                                                   {}).items()},
                     tuner=tuners[(kernel, key)], launched=launched[(kernel, key)])
            for (kernel, key), found in picks.items()]
    keys.sort(key=lambda k: (not k.divergent, -k.flip_rate, k.kernel, k.key))
    return Divergence(keys, [r.id for r in recordings])


def _compiled_to_benchmark(at: tuple, recording: Recording, workload_kernels: set[str]) -> bool:
    """Whether a decision at `at` (kernel, tuning key) is of an Inductor kernel the recorded workload never launched:
    Inductor compiles fused kernels to benchmark them while it compiles (named `Placeholder.DESCRIPTIVE_NAME`) and
    tunes them like any, and no step runs them. Told only where the recording has launches to tell it by (a
    recording of decisions alone says nothing of it) and for Inductor's kernels (a compile-time choice is named for
    the template its benchmark kernels share, and launches under other names)."""
    kernel, key = at
    return bool(recording.signatures) and is_inductor_kernel_key(key) and kernel not in workload_kernels


def _workload_of_groups(recording: Recording) -> dict[int, tuple[int, float]]:
    """Per autotune group, what the workload ran of it: launches and sampled GPU ms (the tuning launches are not
    in either)."""
    ran: dict[int, tuple[int, float]] = {}
    for signature in recording.signatures:
        if signature.autotune is not None and signature.launches:
            launches, gpu_ms = ran.get(signature.autotune["group"], (0, 0.0))
            ran[signature.autotune["group"]] = (launches + signature.launches, gpu_ms + signature.gpu_ms)
    return ran
