"""The exports, checked by their consumers' rules on a CPU: a store of real captures (the `add` and fp32 `matmul`
samples compiled for sm_90a), a recording of them and a real replay of it (tests/sample_recording.py; only the
replay worker is replaced: tests/sweep_fake_worker.py). The Chrome trace is validated against a JSON schema of the
trace event format's fields (`jsonschema`); the NDJSON is validated by TritonParse's own schema validator and
loaded by its own parser (`unified_parse`, what `tritonparseoss parse` runs), whose output must carry every kernel
with the PTX, TTGIR and metadata the store holds."""

from __future__ import annotations

import dataclasses
import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tritonhook.cli import main
from tritonhook.exports import TRITONPARSE_FILE, chrome_trace, recording_captures
from tritonhook.measure.variants import parse_variants
from tritonhook.sweep import ReplayPlan, Workers, replay
from tritonhook.sweep.recording import RESULT_KIND as RECORDING_KIND

torch = pytest.importorskip("torch")
jsonschema = pytest.importorskip("jsonschema")

from sample_recording import sample_recording  # noqa: E402 - tests/sample_recording.py, after torch is known

pytestmark = pytest.mark.every_release  # reaches what differs between Triton releases (scripts/test-matrix.sh)

FAKE_WORKER = [str(Path(__file__).with_name("sweep_fake_worker.py"))]
ROUNDS = 7  # the fewest at which the adaptive rule decides

_NUMBER = {"type": "number"}
_ID = {"type": "integer", "minimum": 0}
TRACE_SCHEMA = {
    "type": "object",
    "required": ["traceEvents"],
    "properties": {
        "displayTimeUnit": {"enum": ["ms", "ns"]},
        "otherData": {"type": "object"},
        "traceEvents": {"type": "array", "minItems": 1, "items": {"oneOf": [
            {"type": "object", "required": ["name", "ph", "ts", "dur", "pid", "tid"],
             "properties": {"name": {"type": "string"}, "cat": {"type": "string"}, "ph": {"const": "X"},
                            "ts": {**_NUMBER, "minimum": 0}, "dur": {**_NUMBER, "exclusiveMinimum": 0},
                            "pid": _ID, "tid": _ID, "args": {"type": "object"}}},
            {"type": "object", "required": ["name", "ph", "pid", "tid", "args"],
             "properties": {"ph": {"const": "M"}, "pid": _ID, "tid": _ID},
             "oneOf": [
                 {"properties": {"name": {"enum": ["process_name", "thread_name"]},
                                 "args": {"type": "object", "required": ["name"],
                                          "properties": {"name": {"type": "string", "minLength": 1}}}}},
                 {"properties": {"name": {"enum": ["process_sort_index", "thread_sort_index"]},
                                 "args": {"type": "object", "required": ["sort_index"],
                                          "properties": {"sort_index": {"type": "integer"}}}}}]},
        ]}},
    },
}
"""The Chrome trace event format's JSON object form, as far as this export uses it: complete events ("X": name,
phase, timestamp and duration in µs, process and thread ids) and the metadata events naming and ordering
processes and threads ("M")."""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The store, a recording of 3 signatures whose each has several sampled launch times and a fourth that has
    none (launched once: a recording never times a signature's first launch), and a replay of it (plain and
    `cutlass_`)."""
    store, sampled = sample_recording(tmp_path_factory.mktemp("exports") / "store", 3)
    signatures = [dataclasses.replace(s, times_ms=[0.01 * (s.id + 1) + 0.001 * k for k in range(s.id + 2)])
                  for s in sampled.signatures]
    signatures.append(dataclasses.replace(sampled.signatures[0], id=3, times_ms=[], launches=1))
    recording = dataclasses.replace(sampled, signatures=signatures)
    recording.id = store.add_result(RECORDING_KIND, recording.to_json())
    swept = replay(recording, store, parse_variants("plain,cutlass_"), ReplayPlan(rounds=ROUNDS, l2="cold"),
                   workers=Workers.at(worker=FAKE_WORKER))
    return store, recording, swept


def test_the_trace_is_a_chrome_trace_with_every_sampled_launch_and_each_variants_rounds_beside_it(recorded):
    store, recording, swept = recorded
    trace = json.loads(json.dumps(chrome_trace(recording, swept)))
    jsonschema.validate(trace, TRACE_SCHEMA)
    events = trace["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert {e["args"]["name"].split(":")[0] for e in events if e["name"] == "process_name"} == {"workload", "replay"}
    starts = {}
    for signature in recording.signatures[:3]:  # every sampled launch, in the order sampled, end to end
        own = [e for e in slices if e["pid"] == 1 and e["args"]["signature"] == signature.id]
        assert [e["dur"] for e in own] == pytest.approx([t * 1e3 for t in signature.times_ms])
        assert {e["tid"] for e in own} == {signature.id + 1} and {e["name"] for e in own} == {signature.kernel}
        assert [e["ts"] for e in own[1:]] == pytest.approx([e["ts"] + e["dur"] for e in own[:-1]])
        assert names[(1, signature.id + 1)].startswith(f"#{signature.id} {signature.kernel} [")
        starts[signature.id] = own[0]["ts"]
    assert sorted(starts.values()) == list(starts.values())  # in the order of the signatures' first launches
    assert 3 not in {e["args"]["signature"] for e in slices if e["pid"] == 1}  # no timed launch, no track
    assert trace["otherData"]["untimed_signatures"] == [3]
    starts[3] = max(e["ts"] + e["dur"] for e in slices if e["args"]["signature"] == 2)  # after the one before
    assert [row.status for row in swept.rows] == ["ok"] * 4
    for row in swept.rows:  # each variant's rounds on a track of its own, from where its signature starts
        for timing in row.variants:
            own = [e for e in slices if e["pid"] == 2 and e["args"]["signature"] == row.signature
                   and e["args"]["variant"] == timing.label]
            assert [e["dur"] for e in own] == pytest.approx([t * 1e3 for t in timing.samples]) and len(own) == ROUNDS
            assert own[0]["ts"] == pytest.approx(starts[row.signature]) and len({e["tid"] for e in own}) == 1
            assert names[(2, own[0]["tid"])] == f"#{row.signature} {row.label}: {timing.label}"
            assert {e["args"]["verdict"] for e in own} == {timing.verdict}


def test_export_trace_writes_the_file_and_reports_it_and_bad_input_is_one_line(recorded, tmp_path, capsys):
    store, recording, swept = recorded
    out = tmp_path / "deep" / "trace.json"
    assert main(["export-trace", "--store", str(store.path), "--replay", str(swept.id), "-o", str(out),
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    trace = json.loads(out.read_text())
    jsonschema.validate(trace, TRACE_SCHEMA)
    assert trace == json.loads(json.dumps(chrome_trace(recording, swept)))  # the replay's own recording
    assert report["counts"] == {"tracks": 3 + 4 * 2, "timed launches": 2 + 3 + 4, "replay rounds": 4 * 2 * ROUNDS}
    assert main(["export-trace", "--store", str(store.path), "-o", str(out)]) == 0  # the newest recording alone
    assert "wrote Chrome trace to" in capsys.readouterr().out
    assert {e["pid"] for e in json.loads(out.read_text())["traceEvents"]} == {1}
    for argv, message in [
        (["--replay", str(recording.id)], f"result {recording.id} is a Recording result, not a sweep or replay"),
        (["--replay", "999"], "result 999 is none, not a sweep or replay result"),
        (["--recording", "999"], "no recording with id 999"),
        (["--recording", str(recording.id - 1), "--replay", str(swept.id)],
         f"sweep result {swept.id} replays recording {recording.id}, not recording {recording.id - 1}"),
    ]:
        assert main(["export-trace", "--store", str(store.path), *argv, "-o", str(out)]) == 2
        assert message in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert main(["export-trace", "--store", str(store.path), "-o", str(tmp_path / "file" / "t.json")]) == 2
    assert capsys.readouterr().err.startswith(f"tritonhook: error: {tmp_path / 'file' / 't.json'}: cannot write "
                                              f"the Chrome trace")


def _parsed(folder: Path) -> list[dict]:
    files = list(folder.glob("*_mapped.ndjson.gz"))
    assert len(files) == 1, files
    with gzip.open(files[0], "rt") as f:
        return [json.loads(line) for line in f]


def test_tritonparse_validates_and_parses_the_ndjson_into_each_kernel_with_the_stores_ir(recorded, tmp_path,
                                                                                           capsys, monkeypatch):
    tritonparse = pytest.importorskip("tritonparse")
    # its parser copies the trace into two folders of its own that it leaves behind: under tmp_path, they go with it
    (tmp_path / "tritonparse-scratch").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tritonparse-scratch"))
    from tritonparse.parse.utils import unified_parse
    from tritonparse.validation.json_validator import validate_trace_file

    store, recording, _ = recorded
    assert main(["export-tritonparse", "--store", str(store.path), "--recording", str(recording.id),
                 "-o", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    path = tmp_path / TRITONPARSE_FILE
    assert report["path"] == str(path) and not report["warnings"]
    assert report["counts"] == {"compilation events": 2, "launch events": 4}
    checked = validate_trace_file(str(path))
    assert checked["valid"], checked["errors"]
    assert checked["event_type_counts"] == {"compilation": 2, "launch": 4}

    unified_parse(str(path), out=str(tmp_path / "parsed"), overwrite=True)
    parsed = _parsed(tmp_path / "parsed")
    reparsed = validate_trace_file(str(next((tmp_path / "parsed").glob("*.gz"))))  # its own output, ours inside
    assert reparsed["valid"], reparsed["errors"]
    compiled = {e["payload"]["metadata"]["name"]: e for e in parsed if e["event_type"] == "compilation"}
    captures = {c.entry: c for c in recording_captures(store, recording)}
    assert set(compiled) == set(captures) == {"add_kernel", "matmul_kernel"}
    for entry, capture in captures.items():
        payload = compiled[entry]["payload"]
        for stage in ("ptx", "ttgir", "ttir", "llir"):
            assert payload["file_content"][f"{entry}.{stage}"] == store.read(capture, stage).decode()
        metadata = payload["metadata"]
        assert {k: metadata[k] for k in capture.metadata} == {**capture.metadata, "name": entry}
        assert metadata["hash"] == capture.triton_hash
        assert metadata["cache_hit"] is (capture.event == "cache_hit")  # a worker's earlier test may have compiled it
        assert payload["tritonhook"]["capture"] == capture.id
        assert payload["python_source"]["code"] == store.read(capture, "python").decode()
        # TritonParse linked the IR's locations to the captured module's lines: the source mappings it adds
        assert payload["source_mappings"]["ttgir"] and payload["source_mappings"]["python"]
    launches = [e for e in parsed if e["event_type"] == "launch"]
    assert sorted((e["name"], tuple(e["grid"])) for e in launches) == \
        sorted((s.kernel, tuple(s.grid)) for s in recording.signatures)
    for event in launches:
        signature = recording.signatures[event["tritonhook_signature"]]
        assert event["compilation_metadata"]["hash"] == signature.triton_hash
        assert event["tritonhook_times_ms"] == signature.times_ms and event["tritonhook_launches"] == signature.launches
        tensors = {a["name"]: a for a in signature.args if a["kind"] == "tensor"}
        assert {name: (info["shape"], info["dtype"]) for name, info in event["extracted_args"].items()
                if info["type"] == "tensor"} == {n: (t["shape"], f"torch.{t['dtype']}") for n, t in tensors.items()}
    diffs = {e["name"]: e["total_launches"] for e in parsed if e["event_type"] == "launch_diff"}
    assert diffs == {"add_kernel": 3, "matmul_kernel": 1}  # a launch event per signature, grouped by kernel


def test_export_tritonparse_takes_capture_ids_or_every_capture_and_names_bad_input(recorded, tmp_path, capsys):
    store, _, _ = recorded
    first = store.captures()[0]
    out = tmp_path / "one.ndjson"
    assert main(["export-tritonparse", "--store", str(store.path), str(first.id), "-o", str(out)]) == 0
    assert "tritonparseoss parse` reads only files named dedicated_log_triton_trace_*" in capsys.readouterr().err
    events = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(e["event_type"], e["payload"]["tritonhook"]["capture"]) for e in events] == \
        [("compilation", first.id)]
    assert main(["export-tritonparse", "--store", str(store.path), "-o", str(out)]) == 0
    assert len(out.read_text().splitlines()) == len(store.captures())
    assert main(["export-tritonparse", "--store", str(store.path), "999", "-o", str(out)]) == 2
    assert "no capture with id 999" in capsys.readouterr().err
    assert main(["export-tritonparse", "--store", str(store.path), "--recording", "999", "-o", str(out)]) == 2
    assert "no recording with id 999" in capsys.readouterr().err


def test_export_tritonparse_leaves_out_a_capture_whose_blob_is_corrupt_and_exports_the_rest(capture_session,
                                                                                               tmp_path, capsys):
    from tritonhook.samples import compile_sample

    for name in ("add", "matmul_fp16"):
        compile_sample(name, 90)
    store = capture_session.store
    broken, kept = capture_session.captures()
    blob = store.blob_path(broken.artifacts["ptx"].sha256)
    blob.write_bytes(b"truncated")
    out = tmp_path / "out.ndjson"
    assert main(["export-tritonparse", "--store", str(store.path), "-o", str(out)]) == 1
    warned = capsys.readouterr().err.splitlines()
    assert warned[0] == (f"not exported: capture {broken.id} (add_kernel, sm_90a): {blob} (capture {broken.id} ptx): "
                         f"blob is corrupt (its sha256 does not match its name)")
    events = [json.loads(line) for line in out.read_text().splitlines()]
    assert [e["payload"]["tritonhook"]["capture"] for e in events] == [kept.id]


LONG_NAME = "k" * 245
"""A kernel name Triton compiles (its cache names are cut at 150 characters) and no file system takes as a file
name with a suffix (255 bytes)."""


def test_export_of_a_kernel_with_a_245_character_name_writes_every_artifact(store_path, tmp_path):
    import importlib.util

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    import tritonhook
    from tritonhook.files import NAME_LIMIT, file_name

    source = tmp_path / "long_kernel.py"
    source.write_text(f"import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef {LONG_NAME}(x_ptr):\n"
                      f"    tl.store(x_ptr, 1)\n")
    spec = importlib.util.spec_from_file_location("long_kernel", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with tritonhook.session(store_path) as session:
        triton.compile(ASTSource(getattr(module, LONG_NAME), {"x_ptr": "*i32"}, {}), target=GPUTarget("cuda", 90, 32))
    (capture,) = session.captures()
    assert capture.entry == LONG_NAME
    out = tmp_path / "out"
    exported = subprocess.run([sys.executable, "-m", "tritonhook", "export", str(capture.id), str(out), "--store",
                               str(store_path)], capture_output=True, text=True)
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == f"exported capture {capture.id} ({len(capture.artifacts)} artifacts) to {out}\n"
    stem = file_name(LONG_NAME)
    assert len(stem) == NAME_LIMIT and stem.startswith("k" * 100) and stem != file_name(LONG_NAME + "k")
    assert {p.name for p in out.iterdir()} == {f"{stem}.{what}" for what in [*capture.artifacts, "capture.json"]}
    assert (out / f"{stem}.ptx").read_bytes() == session.store.read(capture, "ptx")
    assert json.loads((out / f"{stem}.capture.json").read_text())["entry"] == LONG_NAME
