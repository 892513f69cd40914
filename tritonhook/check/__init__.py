"""`tritonhook check`: the regression gate for CI (docs/check.md). Each kernel signature of the current run is
replayed side by side with the baseline run's build of the same kernel and specialization, on one GPU in one
replay; the gate fails on a regression beyond the threshold or on changed outputs.

* `baseline`: `Baseline` (from a recording in a store, or a portable baseline file) and `match_key`.
* `gate`:     `check`, the replay (`gate_plan`) and the rule.
* `result`:   `CheckResult` (rich, JSON, JUnit XML), saved in the store as result kind `check`.

The pytest plugin (`tritonhook.pytest_plugin`) runs the same gate over the kernels each test launched.
"""

from __future__ import annotations

from .baseline import BASELINE_WHAT, Baseline, BaselineBuild, load_baseline, match_key
from .gate import check, gate_plan
from .result import JUNIT_WHAT, RESULT_KIND, CheckResult, KernelCheck, Unmatched

__all__ = ["BASELINE_WHAT", "JUNIT_WHAT", "RESULT_KIND", "Baseline", "BaselineBuild", "CheckResult", "KernelCheck",
           "Unmatched", "check", "gate_plan", "load_baseline", "match_key"]
