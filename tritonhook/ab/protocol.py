"""The A/B child protocol: what a benchmark script reports (`bench`, `record`) and how the runner reads it back.

Under `tritonhook ab` each child gets its variant, round and output files through the environment; it appends
one JSON line per timing to the file named there.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Callable, Iterable, Sequence

from ..launcher import AbRound
from ..errors import TritonhookError
from ..measure.stats import median
from ..measure.timing import BenchResult, bench_interleaved


def bench(fn: Callable, *, inputs: Sequence = (), warmup_ms: float = 25.0, rep_ms: float = 100.0,
          min_reps: int = 10, name: str | None = None, flops: float | None = None) -> BenchResult:
    """Time `fn(*inputs)` with CUDA events: the median of per-call times after a timed warm-up.

    With `name`, the result is also reported through `record` (what `tritonhook ab` collects), with the
    first call's return value as the output whose equality across variants is checked.
    """
    (result,) = bench_interleaved([(contextlib.nullcontext, fn)], inputs=inputs, warmup_ms=warmup_ms,
                                  rep_ms=rep_ms, min_reps=min_reps)
    if name is not None:
        record(name, result.median_ms, flops=flops, output=result.output)
    return result


def record(name: str, ms: float, *, flops: float | None = None, output=None) -> dict:
    """Report one timing. Under `tritonhook ab` it goes to the runner; outside, it is printed.

    `output` (a tensor) is what the variants' results are compared on: its sha256 is recorded, and in round 0
    the tensor itself is saved so the runner can fall back to allclose when the bits differ.
    """
    ab = AbRound.current()
    entry = {"name": name, "ms": float(ms), "flops": flops, "variant": ab.variant if ab else None,
             "round": ab.round_index if ab else 0, "pid": os.getpid()}
    if output is not None:
        entry["output_sha256"] = _tensor_digest(output)
        if ab is not None and ab.outputs and ab.round_index == 0:
            import torch

            torch.save(output.detach().cpu(), Path(ab.outputs) / output_file(ab.variant, name))
    if ab is not None:
        with open(ab.out, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
    else:
        print(f"tritonhook.ab.record: {name} {ms:.4f} ms")
    return entry


def _tensor_digest(tensor) -> str:
    """sha256 of the tensor's bytes (read through ctypes: torch does not require numpy)."""
    import ctypes

    host = tensor.detach().contiguous().cpu()
    return hashlib.sha256(ctypes.string_at(host.data_ptr(), host.numel() * host.element_size())).hexdigest()


def output_file(variant: str | None, name: str) -> str:
    return hashlib.sha256(f"{variant}\0{name}".encode()).hexdigest()[:24] + ".pt"


def read_records(path: Path) -> list[dict]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    try:
        return [json.loads(line) for line in lines if line.strip()]
    except json.JSONDecodeError as exc:
        raise TritonhookError(f"{path}: a timing record is not JSON ({exc})") from None


def collect(records: Iterable[dict]) -> dict[str, tuple[dict[str, list[float]], float | None, dict[str, set]]]:
    """Per benchmark name: ({variant: one median per round}, flops, {variant: output digests})."""
    grouped: dict[str, dict[tuple[str, int], list[float]]] = {}
    flops: dict[str, float | None] = {}
    digests: dict[str, dict[str, set]] = {}
    for entry in records:
        grouped.setdefault(entry["name"], {}).setdefault((entry["variant"], entry["round"]), []).append(entry["ms"])
        flops[entry["name"]] = entry.get("flops") or flops.get(entry["name"])
        if entry.get("output_sha256"):
            digests.setdefault(entry["name"], {}).setdefault(entry["variant"], set()).add(entry["output_sha256"])
    result = {}
    for name, runs in grouped.items():
        samples: dict[str, list[float]] = {}
        for (variant, _round), values in sorted(runs.items(), key=lambda item: item[0][1]):
            samples.setdefault(variant, []).append(median(values))
        result[name] = (samples, flops[name], digests.get(name, {}))
    return result

