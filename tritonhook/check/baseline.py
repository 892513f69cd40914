"""The baseline of a check: per kernel build of a recorded run, what matches it across a code change (its kernel
name and specialization, `match_key`), what its code is (`code_of`: what tells apart two builds that share a key)
and what a replay loads it from (its cubin and Triton's metadata JSON).

Why the key is not Triton's cache key or the PTX hash, as `upgrade` and `decisions` match: the gate compares two
versions of the code under test, so the source (and with it the cache key, the PTX) is exactly what differs; what
stays is the kernel's name and what Triton specialized it on. But a name is not a kernel: Inductor names two
templates of different code alike (a FlexAttention backward under two masks or score_mods, each a
`triton_tem_fused_0` of its own generated module). So where builds share a key, their code pairs them
(`matched`): a current build meets the one baseline build whose code is its code. A baseline comes from a
recording in a store or from a baseline file (`Baseline.save`), which carries the builds themselves (cubins base64
in JSON): a CI job saves one on the main branch and checks every change against it on another machine, no store
copied. A baseline also carries the configs its autotuners picked, as pins (`decisions.keep.baseline_picks`): the
current run runs them, so that each kernel is built at the baseline's config and the gate has its build to compare.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import os
from pathlib import Path

from .._triton import PYTHON_STAGE, REBUILD_STAGE, specialized_on
from ..decisions import Decision
from ..decisions.apply import load as load_decisions
from ..decisions.keep import baseline_picks, write_entries
from ..decisions.model import parse_entry
from ..errors import TritonhookError
from ..files import json_text, read_input, write_file
from ..store import Capture, Store, specialization_label
from ..sweep.recording import Recording, Signature

FORMAT, VERSION = "tritonhook-baseline", 3
BASELINE_WHAT = "baseline file"
"""What the portable file is called in the line that says it cannot be written (`files.write_file`)."""
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
"""The compile options a kernel's key holds besides its argument types and constexprs: two configs of one
autotuned kernel differ only in these, and each is its own build."""
CODE_FIELDS = ("source", PYTHON_STAGE, "ptx")
"""What a build's code is (`code_of`), most telling first: its function's source hash (`Signature.source`, Triton's
`JITFunction.cache_key`: the function's text and what it calls, wherever its file lies), the sha256 of the module
text that defines it (an Inductor kernel's generated module: the template as rendered, its mask and score_mod
inlined), and of its PTX (which also names the file's path)."""


def match_key(signature: Signature, capture: Capture | None, specialized: dict[str, str]) -> dict:
    """What a build of a kernel is matched by across a code change: the kernel's name before any rename (a
    `cutlass_` rename of the current build still meets its plain baseline), its argument types and constexpr
    values as the recording holds them, what else Triton specialized it on (`_triton.specialized_on`: an integer
    divisible by 16 or not is another build, of the same code where the integer is a seed: `specialized`, from
    `specialization`) and the capture's `LAUNCH_OPTIONS`."""
    options = capture.options if capture is not None else {}
    return {"kernel": capture.original_entry if capture is not None else signature.kernel,
            "types": {name: kind for name, kind in signature.signature.items() if kind != "constexpr"},
            "constexprs": dict(signature.constexprs),
            "specialized": specialized,
            "options": {name: options.get(name) for name in LAUNCH_OPTIONS if name in options}}


def specialization(signature: Signature, capture: Capture | None, store: Store) -> dict[str, str]:
    """The capture's specialization attributes by argument (its rebuild record, read from `store`: once per
    capture, however many signatures launched it); {} for a capture without one (a compile of IR, not of a Python
    function)."""
    if capture is None or REBUILD_STAGE not in capture.artifacts:
        return {}
    return specialized_on(json.loads(store.read(capture, REBUILD_STAGE)), signature.arg_names)


def code_of(signature: Signature, capture: Capture | None) -> dict[str, str]:
    """The build's `CODE_FIELDS` that are known: the recorded source hash ("" before recordings kept it), the
    capture's module text and PTX hashes."""
    artifacts = capture.artifacts if capture is not None else {}
    found = {"source": signature.source, **{stage: artifacts[stage].sha256 for stage in CODE_FIELDS[1:]
                                             if stage in artifacts}}
    return {field: value for field, value in found.items() if value}


def key_text(key: dict) -> str:
    """A key as one canonical string (the dictionary lookup of matching)."""
    return json.dumps(key, sort_keys=True, default=str)


def key_label(key: dict) -> str:
    """'add_kernel [fp32 BLOCK=1024] n%16 w4 s3': the kernel, its specialization (an integer argument's
    attributes among it: a pointer's are near always "%16" and tell nothing), its warps and stages."""
    options = key.get("options", {})
    launch = " ".join(f"{letter}{options[name]}" for letter, name in (("w", "num_warps"), ("s", "num_stages"))
                      if options.get(name) is not None)
    spec = specialization_label(key.get("types", {}), key.get("constexprs", {}))
    types = key.get("types", {})
    integers = " ".join(f"{name}{how}" for name, how in key.get("specialized", {}).items()
                        if not str(types.get(name.split("[")[0], "*")).startswith("*"))
    return " ".join(part for part in (key["kernel"], f"[{spec}]" if spec else "", integers, launch) if part)


def matched(baseline: list["BaselineBuild"], current: dict[str, dict[str, str]]) -> dict[str, "BaselineBuild"]:
    """Which baseline build each current build of one key is (`current`: each current build's code by its Triton
    hash); a current build left out matches none. First by code: a current build and a baseline build whose code
    is each other's and no other's (`_the_one`, both ways). Then, where one baseline build and one current build
    are left, those two: the same kernel, its code changed (what a gate checks), as a key held by one build of
    each run always matches. Where more are left, which is which is not known, and none is guessed."""
    codes = list(current.values())
    pairs = {}
    for index, (name, code) in enumerate(current.items()):
        found = _the_one([build.code for build in baseline], code)
        if found is not None and _the_one(codes, baseline[found].code) == index:
            pairs[name] = baseline[found]
    left = [build for build in baseline if all(build is not paired for paired in pairs.values())]
    unpaired = [name for name in current if name not in pairs]
    if len(left) == 1 and len(unpaired) == 1:
        pairs[unpaired[0]] = left[0]
    return pairs


def same_code(one: dict[str, str], other: dict[str, str]) -> bool:
    """Whether two builds' code (`code_of`) is one code: a field of `CODE_FIELDS` known to both and the same (a pair
    `matched` made by its key alone, one build each side, may be of two codes)."""
    return any(one.get(field) and one.get(field) == other.get(field) for field in CODE_FIELDS)


def _the_one(codes: list[dict[str, str]], code: dict[str, str]) -> int | None:
    """The index of the one code among `codes` that `code` is, narrowing by each of `CODE_FIELDS` in turn (a field
    that none of those left shares narrows nothing: a PTX may still tell apart two builds of one source); None when
    none or several are left."""
    left = list(range(len(codes)))
    for field in CODE_FIELDS:
        same = [index for index in left if code.get(field) and codes[index].get(field) == code[field]]
        if len(same) == 1:
            return same[0]
        left = same or left
    return None


@dataclasses.dataclass
class BaselineBuild:
    """One kernel build of the baseline run: its key, entry name, Triton cache key, cubin and metadata JSON, the
    labels of the recorded signatures that launched it, and its code (`code_of`; {} in a file written before it
    was kept: such a build is matched by its key alone)."""

    key: dict
    entry: str
    triton_hash: str
    cubin: bytes = dataclasses.field(repr=False)
    metadata_json: bytes = dataclasses.field(repr=False)
    signatures: list[str] = dataclasses.field(default_factory=list)
    code: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def label(self) -> str:
        return key_label(self.key)

    def to_json(self) -> dict:
        return {"key": self.key, "entry": self.entry, "triton_hash": self.triton_hash,
                "cubin": base64.b64encode(self.cubin).decode(), "metadata": json.loads(self.metadata_json),
                "signatures": self.signatures, "code": self.code}

    @classmethod
    def from_json(cls, data: dict) -> "BaselineBuild":
        return cls(data["key"], data["entry"], data["triton_hash"], base64.b64decode(data["cubin"], validate=True),
                   json.dumps(data["metadata"]).encode(), list(data.get("signatures", [])),
                   {str(k): str(v) for k, v in dict(data.get("code", {})).items()})


@dataclasses.dataclass
class Baseline:
    """The builds of a baseline run. `source` names where it was read from (a file, or a recording in a store);
    `unbuilt` the recorded signatures whose build the store did not hold (they match nothing)."""

    builds: list[BaselineBuild]
    arch: str | None
    triton_version: str
    source: str
    recording_id: int | None = None
    command: list[str] | None = None
    unbuilt: list[str] = dataclasses.field(default_factory=list)
    picks: list[Decision] = dataclasses.field(default_factory=list)  # the current run's pins: the configs it ran
    unpinned: list[str] = dataclasses.field(default_factory=list)  # the tuning keys without one, and why

    @classmethod
    def from_recording(cls, recording: Recording, store: Store) -> "Baseline":
        """The builds `recording` launched, read from `store` (one per Triton cache key)."""
        builds: dict[str, BaselineBuild] = {}
        unbuilt = []
        for signature in recording.signatures:
            if signature.triton_hash in builds:
                builds[signature.triton_hash].signatures.append(signature.label())
                continue
            if signature.capture_id is None:
                unbuilt.append(signature.label())
                continue
            capture = store.get(signature.capture_id)
            builds[signature.triton_hash] = BaselineBuild(
                match_key(signature, capture, specialization(signature, capture, store)), capture.entry,
                signature.triton_hash, store.read(capture, "cubin"), store.read(capture, "json"),
                [signature.label()], code_of(signature, capture))
        picks, unpinned = baseline_picks(recording)
        return cls(list(builds.values()), recording.arch, recording.triton_version,
                   f"recording {recording.id} in {store.path}", recording.id, recording.command, unbuilt, picks,
                   unpinned)

    def pins_file(self, folder: str | os.PathLike, apply: str | None, store: Store) -> str | None:
        """A decisions file for the current run's `--apply`: the baseline's picks, pinned, and `apply`'s decisions
        (a file or a store), which win at a key both decide (what the gate then checks is applying them); None
        where neither holds any."""
        applied = load_decisions(apply, store) if apply is not None else []
        decided = {decision.key for decision, _ in applied}
        entries = [(pick, None) for pick in self.picks if pick.key not in decided] + applied
        return write_entries(Path(folder) / "current-run.json", entries, "the current run's pins") if entries else None

    def by_key(self) -> dict[str, list[BaselineBuild]]:
        """Builds by `key_text`; more than one under a key (two kernels of one name and specialization from
        different sources) are told apart by their code (`matched`)."""
        found: dict[str, list[BaselineBuild]] = {}
        for build in self.builds:
            found.setdefault(key_text(build.key), []).append(build)
        return found

    def to_json(self) -> dict:
        return {"format": FORMAT, "version": VERSION, "arch": self.arch, "triton_version": self.triton_version,
                "recording_id": self.recording_id, "command": self.command, "source": self.source,
                "unbuilt": self.unbuilt, "builds": [b.to_json() for b in self.builds],
                "picks": [d.to_json() for d in self.picks], "unpinned": self.unpinned}

    def save(self, path: str | Path) -> Path:
        """Write the portable baseline file (JSON, the cubins base64)."""
        return write_file(path, json_text(self.to_json()), BASELINE_WHAT)

    @classmethod
    def load(cls, path: str | Path) -> "Baseline":
        """A baseline file; anything else is one line naming the file and what is wrong with it."""
        path = Path(path)
        try:
            data = json.loads(read_input(path, BASELINE_WHAT))
        except (ValueError, UnicodeDecodeError) as exc:
            raise TritonhookError(f"{path}: cannot read it as a baseline file ({_one_line(exc)})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise TritonhookError(f"{path}: not a tritonhook baseline file (no \"format\": \"{FORMAT}\"; make one "
                                  f"with tritonhook check --save-baseline)")
        if data.get("version") != VERSION:
            raise TritonhookError(f"{path}: baseline file version {data.get('version')}, this tritonhook reads "
                                  f"version {VERSION}")
        try:
            picks = [parse_entry(entry, where=f"{path}: picks[{at}]", controls_inline=False)[0]
                     for at, entry in enumerate(data["picks"])]
            return cls([BaselineBuild.from_json(b) for b in data["builds"]], data["arch"], data["triton_version"],
                       str(path), data.get("recording_id"), data.get("command"), list(data.get("unbuilt", [])),
                       picks, list(data["unpinned"]))
        except (KeyError, TypeError, ValueError, binascii.Error) as exc:
            raise TritonhookError(f"{path}: malformed baseline file ({type(exc).__name__}: {_one_line(exc)})") from None


def load_baseline(which: str, store: Store) -> Baseline:
    """`which`: a baseline file, or the id of a recording in `store`."""
    if os.path.lexists(which):
        return Baseline.load(which)
    found = store.result(which) if str(which).isdigit() else None
    if not isinstance(found, Recording):
        raise TritonhookError(f"{which}: no such baseline file, nor a recording with that id in {store.path}")
    return Baseline.from_recording(found, store)


def _one_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
