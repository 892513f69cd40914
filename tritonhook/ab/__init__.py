"""A/B-test kernel variants (plain vs renamed): does the `cutlass` name pay on this GPU, for this kernel?

Two ways in:

* `compare(run, variants=("plain", "cutlass_"), flops=..., check=...)` in one process: each round enables
  each variant's rename in turn (Triton's in-memory cache keeps one build per variant) and times `run` with
  `bench`.
* `tritonhook ab [--variants plain,cutlass_] [--rounds N] -- python bench.py`: `run_interleaved` starts the
  script once per variant per round, in fresh processes, interleaved A B, B A, ...; the script reports its
  timings with `bench(fn, name=...)` or `record(name, ms)`.

The modules: `protocol` (what a child reports and how it is read back), `result` (`ABReport`, which renders
itself), `runner` (`compare`, `run_interleaved`). The timer, the statistics, the output check and the variants
are `tritonhook.measure`'s, shared with `sweep/` (`measure.timing.bench_interleaved`, `measure.stats`,
`measure.variants.parse_variants`); attention FLOPs are `tritonhook.flops`'.
"""

from .protocol import bench, collect, read_records, record
from .result import (ABReport, ABWorkloadEstimate, BenchmarkResult, SavedABResult, SavedABResults, VariantResult,
                     analyze, saved_results)
from .runner import compare, kernel_deltas, kernel_summaries, run_interleaved

__all__ = ["ABReport", "ABWorkloadEstimate", "BenchmarkResult", "SavedABResult", "SavedABResults", "VariantResult",
           "analyze", "bench", "collect", "compare", "kernel_deltas", "kernel_summaries", "read_records", "record",
           "run_interleaved", "saved_results"]
