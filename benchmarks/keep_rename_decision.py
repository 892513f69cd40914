"""Keep a `cutlass_` rename decision in a store for one workload kernel of its newest sweep, to confirm it inside the
workload (`tritonhook decisions confirm --decision ID`) whatever the sweep recommended: the kernel, among those the
sweep's recording launched built by a ptxas whose path holds SUBSTR, that makes the most GPU time. Its evidence is
the sweep's row for it (ratio 1.0 where the row has no `cutlass_` timing). Prints `DECISION ID` last.

    python benchmarks/keep_rename_decision.py STORE SUBSTR      (SUBSTR: triton/backends, torch/bin, ...)
"""
import sys

from tritonhook.decisions.keep import capture_key, save
from tritonhook.decisions.model import Choice, Decision, Evidence
from tritonhook.store import Store
from tritonhook.sweep.result import RESULT_KIND as SWEEP_KIND

store, built_by = Store(sys.argv[1]), sys.argv[2]
result = store.results(SWEEP_KIND, limit=1)[0]
recording = store.result(result.recording_id)
built = [(s, store.get(s.capture_id)) for s in recording.signatures if s.launches and s.capture_id is not None]
signature, capture = max(((s, c) for s, c in built if built_by in (c.ptxas_path or "")), key=lambda sc: sc[0].gpu_ms)
row = next((r for r in result.rows if r.signature == signature.id), None)
timing = next((t for t in row.variants if t.label == "cutlass_"), None) if row else None
ratio, low, high = (timing.ratio, timing.low, timing.high) if timing else (1.0, None, None)
print(f"{signature.kernel}: built by ptxas {capture.ptxas_version} ({capture.ptxas_path}), share "
      f"{row.share if row else '-'}, swept cutlass_ {ratio} [{low}, {high}] {timing.verdict if timing else '-'}")
key = capture_key(store, capture, recording.device)
evidence = Evidence(signature.kernel, ratio, low, high, "-", "2026-11-29", "0.1.0", SWEEP_KIND, int(result.id))
decision, = save(store, [(Decision(key, Choice("cutlass_"), evidence).checked("hand-made"), None)])
print("DECISION", decision.id)
