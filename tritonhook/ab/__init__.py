"""A/B-test kernel variants (plain vs renamed): does the `cutlass` name pay on this GPU, for this kernel?

Two ways in:

* `compare(run, variants=("plain", "cutlass_"), flops=..., check=...)` in one process: each round enables
  each variant's rename in turn (Triton's in-memory cache keeps one build per variant) and times `run` with
  `bench`.
* `tritonhook ab [--variants plain,cutlass_] [--rounds N] -- python bench.py`: `run_interleaved` starts the
  script once per variant per round, in fresh processes, interleaved A B A B ...; the script reports its
  timings with `bench(fn, name=...)` or `record(name, ms)`.

The modules: `variants` (what each arm compiles as), `stats` (pure statistics and the verdict), `timing` (the
timer), `protocol` (what a child reports and how it is read back), `result` (`ABReport`, which renders itself),
`runner` (`compare`, `run_interleaved`).
"""

from ..flops import attention_flops
from .protocol import collect, read_records, record
from .result import (ABReport, BenchmarkResult, SavedABResult, SavedABResults, VariantResult, analyze, print_report,
                     saved_results)
from .runner import MIN_ROUNDS, compare, compare_outputs, cubin_summary, kernel_summaries, run_interleaved
from .stats import (DEFAULT_MIN_EFFECT, Summary, bootstrap_ratio, median, quantile, ratio_interval, summarize,
                    t_interval_ratio, verdict)
from .timing import Arm, BenchResult, bench, bench_interleaved, rotation_sets
from .variants import PLAIN, STRIP_LABEL, Variant, parse_variants

__all__ = ["DEFAULT_MIN_EFFECT", "MIN_ROUNDS", "PLAIN", "STRIP_LABEL",
           "ABReport", "Arm", "BenchResult", "BenchmarkResult", "SavedABResult", "SavedABResults",
           "Summary", "Variant", "VariantResult", "analyze", "attention_flops", "bench", "bench_interleaved",
           "bootstrap_ratio", "collect", "compare", "compare_outputs", "cubin_summary", "kernel_summaries", "median",
           "parse_variants", "print_report", "quantile", "ratio_interval", "read_records", "record", "rotation_sets",
           "run_interleaved", "saved_results", "summarize", "t_interval_ratio", "verdict"]
