"""The store's data in the files other tools open: a recording's kernel timeline as a Chrome trace (Perfetto,
chrome://tracing), captures as TritonParse's structured-log NDJSON (its `parse` and its web viewer), and a capture's
artifacts as the files Triton's cache holds (`export_capture`: ptxas, nvdisasm, cuobjdump read them).

Why our own writers: both formats are plain JSON that their consumers document (the Chrome trace event format;
TritonParse's JSON schemas in `tritonparse/validation/schemas`), and tritonhook must not need either tool installed
to write them. tests/test_exports.py checks the trace against a schema of the event format and loads the NDJSON
with TritonParse's own validator and parser.

The timeline is built from what a recording holds (`sweep.recording`): per signature, the GPU times of its sampled
launches, in the order they were sampled, and no wall-clock time of any launch. So its positions are laid out, not
measured: signatures in the order of their first launch (their ids), each one's sampled launches end to end on its
own track; a replay's per-round times (`SweepRow`, `VariantTiming.samples`) start at the same position as their
signature's launches, one track per variant, so the two read side by side. Durations are the measurements.

docs/exports.md says how to open both files.
"""

from __future__ import annotations

import dataclasses
import datetime
import inspect
from pathlib import Path
from typing import Sequence

from . import format
from ._version import __version__
from .errors import TritonhookError
from .files import file_name, json_text, write_file
from .store import Capture, Store
from .sweep.recording import Recording, Signature
from .sweep.result import SweepResult

WORKLOAD_PID, REPLAY_PID = 1, 2
"""The trace's two processes: the recorded workload and the replay."""

TRITONPARSE_PREFIX = "dedicated_log_triton_trace_"
"""The start of every file name TritonParse's `parse` accepts (its `DEFAULT_TRACE_FILE_PREFIX_WITHOUT_USER`)."""
TRITONPARSE_FILE = f"{TRITONPARSE_PREFIX}tritonhook_.ndjson"
"""The default name of the NDJSON export: one `tritonparseoss parse` reads as it is."""
TEXT_STAGES = ("ttir", "ttgir", "llir", "ptx", "json")
"""The captured stages TritonParse's CUDA backend reads as text (its IR stages with `is_text`; the cubin is binary
and SASS is not captured). Each goes into `file_content` as `<entry>.<stage>`, as Triton's cache names them."""


# ----- the Chrome trace -------------------------------------------------------------------------------------------
def chrome_trace(recording: Recording, replay: SweepResult | None = None) -> dict:
    """The recording's sampled launch times, and `replay`'s per-round times beside them, as a Chrome trace
    (JSON object format: `traceEvents` of "X" complete events in µs, "M" metadata events naming the processes and
    tracks). Laid out as the module docstring says."""
    if replay is not None and recording.id is not None and replay.recording_id not in (None, recording.id):
        raise TritonhookError(f"sweep result {replay.id} replays recording {replay.recording_id}, not recording "
                              f"{recording.id}")
    rows: dict[int, list] = {}
    for row in (replay.rows if replay is not None else []):
        if row.status == "ok":
            rows.setdefault(row.signature, []).append(row)
    order = [(s, rows.pop(s.id, [])) for s in recording.signatures]
    orphans = sorted(rows)  # replayed rows of no signature of the recording: after the others
    order += [(None, rows[signature]) for signature in orphans]
    events = [_name("process_name", WORKLOAD_PID, f"workload: recording {recording.id} "
                                                  f"({' '.join(recording.command or []) or recording.label or 'run'})"),
              _sort("process_sort_index", WORKLOAD_PID, 0, 0)]
    if replay is not None:
        events += [_name("process_name", REPLAY_PID, f"replay: sweep result {replay.id} ({replay.rounds} rounds, "
                                                     f"L2 {replay.l2_rule})"),
                   _sort("process_sort_index", REPLAY_PID, 0, 1)]
    at, tracks = 0.0, 0
    for signature, replayed in order:
        spans = [0.0]
        if signature is not None and signature.times_ms:
            tracks += 1
            events += [_name("thread_name", WORKLOAD_PID, _track_name(signature), tid=signature.id + 1),
                       _sort("thread_sort_index", WORKLOAD_PID, signature.id + 1, signature.id)]
            spans.append(_lay(events, at, signature.times_ms, signature.kernel, "workload", WORKLOAD_PID,
                              signature.id + 1, lambda k, s=signature: _launch_args(s, k)))
        for row in replayed:
            for index, timing in enumerate(row.variants):
                if not timing.samples:
                    continue
                tracks += 1
                tid = (row.signature + 1) * 1000 + index
                events += [_name("thread_name", REPLAY_PID, f"#{row.signature} {row.label}: {timing.label}", tid=tid),
                           _sort("thread_sort_index", REPLAY_PID, tid, tid)]
                spans.append(_lay(events, at, timing.samples, f"{row.kernel} [{timing.label}]", "replay",
                                  REPLAY_PID, tid, lambda k, r=row, t=timing: _round_args(r, t, k)))
        at += max(spans)
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"producer": f"tritonhook {__version__}", "recording": recording.id,
                          "replay": None if replay is None else replay.id, "tracks": tracks,
                          "untimed_signatures": [s.id for s in recording.signatures if not s.times_ms],
                          "replayed_signatures_not_in_recording": orphans,
                          "layout": "laid out, not measured: signatures in first-launch order, each one's sampled "
                                    "launches end to end; durations are the measured GPU times"}}


def _lay(events: list, start: float, times_ms: Sequence[float], name: str, category: str, pid: int, tid: int,
         args) -> float:
    """Complete events for `times_ms`, end to end from `start` (µs); returns the span they take."""
    at = start
    for index, ms in enumerate(times_ms):
        events.append({"name": name, "cat": category, "ph": "X", "ts": at, "dur": ms * 1e3, "pid": pid, "tid": tid,
                       "args": args(index)})
        at += ms * 1e3
    return at - start


def _name(kind: str, pid: int, name: str, tid: int = 0) -> dict:
    return {"name": kind, "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}


def _sort(kind: str, pid: int, tid: int, index: int) -> dict:
    return {"name": kind, "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": index}}


def _track_name(signature: Signature) -> str:
    grid = "x".join(map(str, signature.grid))
    return f"#{signature.id} {signature.label()} grid {grid}"


def _launch_args(signature: Signature, sample: int) -> dict:
    return {"signature": signature.id, "sample": sample, "time_ms": signature.times_ms[sample],
            "launches": signature.launches, "sampled": len(signature.times_ms), "grid": signature.grid,
            "triton_hash": signature.triton_hash, "capture": signature.capture_id}


def _round_args(row, timing, round_: int) -> dict:
    return {"signature": row.signature, "variant": timing.label, "round": round_, "time_ms": timing.samples[round_],
            "median_ms": timing.median_ms, "ratio": timing.ratio, "verdict": timing.verdict,
            "recorded_ms": row.recorded_ms, "outputs": row.outputs}


# ----- TritonParse NDJSON -----------------------------------------------------------------------------------------
def tritonparse_events(store: Store, captures: Sequence[Capture], recording: Recording | None = None) -> list[dict]:
    """One TritonParse "compilation" event per capture (Triton's metadata, the text stages as `file_content`, the
    kernel's module as `python_source`), then, given a recording, one "launch" event per signature: its grid and
    arguments as TritonParse's launch hook describes them. The recording keeps one launch per signature (its
    first: arguments, grid) and counts the rest, so a signature is one launch event; `tritonhook_launches` carries
    the count, `tritonhook_times_ms` the sampled times (top-level fields: TritonParse's launch diff compares each
    field across a kernel's launches, and its schema wants no nested object there but the arguments). TritonParse
    keeps the first compilation of each hash (a cache hit repeats its compile's).

    A capture whose stages cannot be read (a corrupt or missing blob) is left out, with a line saying so in the
    second list, and the others are exported, as `preflight` predicts past it; its launches carry the recording's
    name and hash alone."""
    events, left_out, exported = [], [], {}
    for capture in captures:
        try:
            events.append(compilation_event(store, capture))
        except TritonhookError as exc:
            left_out.append(f"not exported: capture {capture.id} ({capture.entry}, {capture.arch}): {exc}")
            continue
        exported[capture.id] = capture
    if recording is not None:
        events += [launch_event(s, recording, exported.get(s.capture_id)) for s in recording.signatures]
    return events, left_out


def recording_captures(store: Store, recording: Recording) -> list[Capture]:
    """The captures a recording's signatures link to, in id order."""
    return store.captures(ids=sorted({s.capture_id for s in recording.signatures if s.capture_id is not None}))


def kernel_hash(capture: Capture) -> str:
    """The hash TritonParse groups a kernel's events by: Triton's cache key, or for a kernel Triton did not compile
    (CuTe DSL, a ptxas run the wrapper saw) the SHA-256 of its PTX."""
    if capture.triton_hash:
        return capture.triton_hash
    artifact = capture.artifacts.get("ptx") or capture.artifacts.get("cubin")
    return artifact.sha256 if artifact else f"tritonhook-capture-{capture.id}"


def compilation_event(store: Store, capture: Capture) -> dict:
    payload = {"metadata": {**capture.metadata, "hash": kernel_hash(capture), "name": capture.entry,
                            "cache_hit": capture.event == "cache_hit"},
               "file_content": {f"{capture.entry}.{stage}": store.read(capture, stage).decode("utf-8", "replace")
                                for stage in TEXT_STAGES if stage in capture.artifacts},
               "tritonhook": {"capture": capture.id, "event": capture.event, "frontend": capture.frontend_label,
                              "kernel": capture.kernel, "original_entry": capture.original_entry,
                              "arch": capture.arch, "ptxas": capture.ptxas_version, "ptxas_path": capture.ptxas_path,
                              "specialization": capture.specialization, "compile_times_s": capture.times}}
    source = _python_source(store, capture)
    if source is not None:
        payload["python_source"] = source
    return {"event_type": "compilation", "pid": capture.pid, "timestamp": _iso(capture.created), "stack": [],
            "payload": payload}


def _python_source(store: Store, capture: Capture) -> dict | None:
    """The module text captured at compile time (`_triton.rebuild`), whole, with the kernel's lines marked
    (TritonParse's full-source form: line numbers are the file's, as the IR's locations name them)."""
    if "python" not in capture.artifacts or capture.src_file is None:
        return None
    code = store.read(capture, "python").decode("utf-8", "replace")
    lines = code.splitlines(keepends=True)
    source = {"file_path": capture.src_file, "start_line": 1, "end_line": max(len(lines), 1), "code": code}
    if capture.src_line is not None and 1 <= capture.src_line <= len(lines):
        try:
            block = inspect.getblock(lines[capture.src_line - 1:])
        except (SyntaxError, IndentationError, ValueError):  # the text is not Python tokenize can read
            block = lines[capture.src_line - 1:capture.src_line]
        source["function_start_line"] = capture.src_line
        source["function_end_line"] = capture.src_line + len(block) - 1
    return source


def launch_event(signature: Signature, recording: Recording, capture: Capture | None) -> dict:
    metadata = ({**capture.metadata, "hash": kernel_hash(capture), "name": capture.entry} if capture is not None
                else {"hash": signature.triton_hash, "name": signature.kernel})
    return {"event_type": "launch", "pid": recording.pid,
            "timestamp": _iso(capture.created) if capture is not None else _iso(0.0), "stack": [],
            "name": signature.kernel, "grid": list(signature.grid), "compilation_metadata": metadata,
            "extracted_args": {arg["name"]: _arg_info(arg) for arg in signature.args},
            **{f"tritonhook_{key}": value for key, value in (
                ("recording", recording.id), ("signature", signature.id), ("launches", signature.launches),
                ("tuning_launches", signature.tuning_launches), ("times_ms", signature.times_ms),
                ("inputs", signature.inputs))}}


def _arg_info(arg: dict) -> dict:
    """One argument description of a recording (`recording.describe_args`) as TritonParse's launch hook writes
    an argument: a tensor's type, shape, dtype ("torch.float32"), stride, element size and offset; a scalar's type
    name and value; a TMA descriptor's fields over its base tensor."""
    if arg["kind"] == "tensor":
        return _tensor_info(arg)
    if arg["kind"] == "tensordesc":
        fields = {k: v for k, v in arg.items() if k not in ("kind", "name", "base")}
        return {"type": "TensorDescriptor", "base": _tensor_info(arg["base"]), **fields}
    if arg["kind"] == "other":
        return {"type": "object", "repr": arg["value"]}
    return {"type": type(arg["value"]).__name__, "value": arg["value"]}


def _tensor_info(tensor: dict) -> dict:
    numel = 1
    for size in tensor["shape"]:
        numel *= size
    return {"type": "tensor", "shape": tensor["shape"], "dtype": f"torch.{tensor['dtype']}",
            "stride": tensor["strides"], "numel": numel, "element_size": tensor["element_size"],
            "storage_offset": tensor["storage_offset"], "memory_usage": numel * tensor["element_size"]}


def _iso(seconds: float) -> str:
    """TritonParse's timestamp form (UTC, microseconds, "Z")."""
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ----- writing ----------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Export:
    """What an export wrote: the file, its format, counts of what it holds, and notes (stderr)."""

    path: str
    format: str
    counts: dict[str, int]
    warnings: list[str] = dataclasses.field(default_factory=list)
    left_out: int = 0
    """Captures not exported (their stages could not be read): each is one of the warnings."""

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    def __rich_console__(self, console, options):
        held = ", ".join(f"{n:,} {what}" for what, n in self.counts.items())
        yield format.line(f"wrote {self.format} to {self.path}: {held}")


def write_chrome_trace(path: str | Path, recording: Recording, replay: SweepResult | None = None) -> Export:
    trace = chrome_trace(recording, replay)
    write_file(path, json_text(trace), "Chrome trace")
    launches = sum(1 for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == WORKLOAD_PID)
    rounds = sum(1 for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == REPLAY_PID)
    counts = {"tracks": trace["otherData"]["tracks"], "timed launches": launches}
    if replay is not None:
        counts["replay rounds"] = rounds
    empty = [] if launches else [f"recording {recording.id} has no timed launch: its workload tracks are empty"]
    return Export(str(path), "Chrome trace", counts, empty)


def write_tritonparse(path: str | Path, store: Store, captures: Sequence[Capture],
                      recording: Recording | None = None) -> Export:
    """The NDJSON at `path`, or, when `path` is a directory, at `path`/`TRITONPARSE_FILE`."""
    path = Path(path)
    if path.is_dir():
        path = path / TRITONPARSE_FILE
    events, left_out = tritonparse_events(store, captures, recording)
    write_file(path, "".join(json_text(event) + "\n" for event in events), "TritonParse NDJSON")
    counts = {kind: sum(1 for e in events if e["event_type"] == kind) for kind in ("compilation", "launch")}
    warnings = left_out + ([] if path.name.startswith(TRITONPARSE_PREFIX) else [
        f"{path.name}: `tritonparseoss parse` reads only files named {TRITONPARSE_PREFIX}*; rename it before "
        f"parsing (the web viewer opens it under any name)"])
    return Export(str(path), "TritonParse NDJSON", {f"{k} events": n for k, n in counts.items()}, warnings,
                  len(left_out))


# ----- a capture's artifacts ---------------------------------------------------------------------------------------
def export_capture(store: Store, capture: Capture, directory: str | Path) -> int:
    """Write each artifact of `capture` that can be read into `directory` as `<entry>.<stage>`, and its record as
    `<entry>.capture.json`; returns how many artifacts were written. The entry is made a file name by
    `files.file_name` (Triton compiles a kernel of a 245-character name; no file system takes such a file name).
    An artifact that cannot be read is named in the `TritonhookError` raised once the rest are written, so a
    partial export never looks complete."""
    contents, unreadable = {}, []
    for stage in capture.artifacts:
        try:
            contents[stage] = store.read(capture, stage)
        except TritonhookError as exc:
            unreadable.append(str(exc))
    contents["capture.json"] = json_text(capture.to_json(), indent=2, default=str).encode()
    for what, data in contents.items():
        write_file(Path(directory) / file_name(capture.entry, f".{what}"), data, f"capture {capture.id} {what}")
    written = len(contents) - 1
    if unreadable:
        raise TritonhookError(f"exported {written} of {len(capture.artifacts)} artifacts of capture {capture.id} to "
                              f"{directory}; not written: {'; '.join(unreadable)}")
    return written
