"""`ReplayJob`: what the replay's workers are handed, written once to job.json and read back by each worker (on this
machine, or on a Ray node with its own store path). Plain JSON on the wire, so that a worker of another process, or
a test's fake worker, reads the same keys; typed on both ends, so that no side adds a field after it is written."""

from __future__ import annotations

import dataclasses
from typing import Sequence

from .. import config


@dataclasses.dataclass(frozen=True)
class ReplayJob:
    """Per replay: the store the snapshots are read from, the recording's GPU architecture and name (a worker on another
    GPU refuses it, naming it), the rounds (a cap where a signature has a stop rule), the L2 rule and the L2 dirt
    set before each call (`config.sweep.L2_DIRT`), the timer's warm-up and repetitions, what float tensors beyond the
    snapshot budget are filled with (`config.sweep.SYNTHETIC_FILLS`), and one entry per signature: its arguments,
    launch, variant files and stop rule (`replay.replay_job`)."""

    store: str
    arch: str | None
    recording: str
    signatures: tuple[dict, ...]
    rounds: int
    l2: str
    l2_dirt: str
    warmup_ms: float
    rep_ms: float
    min_reps: int
    synthetic_fill: str = config.sweep.SYNTHETIC_FILLS[0]

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "signatures": list(self.signatures)}

    @classmethod
    def from_json(cls, data: dict) -> "ReplayJob":
        return cls(**{**data, "signatures": tuple(data["signatures"])})

    def part(self, signatures: Sequence[dict], store: str | None = None) -> "ReplayJob":
        """This job for some of its signatures (a Ray task's), reading snapshots from `store` where given."""
        return dataclasses.replace(self, signatures=tuple(signatures), store=self.store if store is None else store)
