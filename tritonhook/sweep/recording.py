"""The recording format: what a recorded run left for a replay, as plain JSON, with a version number.

A recording lists launch signatures. A signature is one kernel (its Triton hash) launched with one grid and the
same values of everything the kernel sees besides its pointers: every scalar's and constexpr's value, every
host-side TMA descriptor's class, base dtype, shape, strides, block shape, padding and (Gluon) shared-memory layout.
A tensor argument reaches the kernel as a pointer alone: its dtype and alignment are in the Triton hash, its shape
and strides only through scalar arguments, which are in the key. So tensors add nothing to the key (which keeps it
cheap enough to compute on every launch: `signature_key`), and a kernel run on the slices of one buffer, or on
tensors of other shapes with the same scalars, is one signature: the same work. Each signature keeps its first
launch's arguments (input snapshots as content-addressed blobs in the store; their shapes are that launch's), how
often it ran, and the GPU times measured for a sample of its launches.

Autotuned kernels (version 2): a signature launched while `triton.autotune` benchmarked it carries `autotune`
({"group", "config"}: which decision it was a candidate of, with which config) and counts those launches in
`tuning_launches`, never in `launches` or `times_ms` (tuning is not the workload). The recording's `autotune` lists
the decisions (`_triton.AutotuneDecision` as data: the chosen config, the autotuner's own timing of each config).

L2 residency (version 3): a signature's `l2_resident` holds, per tensor of `tensors_of(args)` (None where not
probed), the fraction of its first timed launches (`config.sweep.RECORD_TIMED_FIRST`) at which each of `l2probe.LINES`
sampled lines was in L2 just before the kernel ran (`l2probe`); the recording's `l2_calibration` is the probe's hot
and cold medians on this GPU. Versions 1 and 2 load with neither (a `--l2 measured` replay runs them cold).

Lag (version 4): a signature's `behind_ms` is how far the GPU ran behind the host at its first timed launches
(the median, ms; `record.Recorder._mark`; the recorder's own probes and holds included): the context its times
were measured in, milliseconds where its launches waited in a deep queue, near 0 where the GPU waited for the host.
A sweep row carries it (JSON). Trailing empty kernel (version 4): every timed launch's end event is followed by an
empty kernel between two events (`measure.timing.time_empty_kernel`), as the replay follows each call's; `empty_ms` is
its median time after those first timed launches the stream hold covered (the launch lead there;
`result.SweepRow.lead_ms`), the recording's held ones where the signature had none. Versions 1 to 3 load without
either (None), and their times were taken without the empty kernel.

L2 dirt (version 5): a signature's `l2_dirt` is where its dirt probes' read time lay (the median, at its first timed
launches, just before the L2 probe) from the recording's `dirt_calibration` clean (0) to dirty (1): how much of what
the kernel evicted was owed to DRAM (`l2probe.DirtCalibration`). None where not probed.

Sources and late samples (version 6): a signature's `source` is its function's source hash
(`_triton.LaunchSpec.source`), which tells apart two kernels of one name and is the same in every run. Its `late_us`
lists, per sample of `times_ms` that the host queued after the stream hold before it ran out, how many µs after
(`Recorder.on_launched`): the GPU idled between the start event and the kernel for up to that long, so the sample
counts the host's launch. Late samples are kept only where none was queued in time; empty where every one was.

The functions here are pure or work on tensors of any device (torch CPU tensors suffice for the format's tests).
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from typing import Callable, Hashable, Sequence

from .. import config
from .._triton import COORDINATE_DESCENT, SELECT_ALGORITHM
from ..errors import TritonhookError
from ..measure.stats import median
from ..store import BlobHold, ResultKind, register_result_kind

FORMAT = "tritonhook-recording"
VERSION = 6
"""Bump when a field changes meaning; `Recording.from_json` refuses any version not in `READS` with both numbers."""
READS = (1, 2, 3, 4, 5, 6)
"""Versions this tritonhook loads: version 1 has no autotune fields (its benchmark launches count as the
workload's, as they were recorded); versions 1 and 2 have no L2 residency; versions 1 to 3 no lag; versions 1 to 4
no L2 dirt (replayed on a dirty L2); versions 1 to 5 no kernel sources (a kernel is known by its name alone) and
no late samples (each counted as held)."""
RESULT_KIND = "recording"
"""The kind recordings are saved under in the store's results table (declared below `Recording`: found by label)."""

SNAPSHOT, SYNTHETIC, PARTLY_SYNTHETIC, NO_INPUTS = "snapshot", "synthetic", "partly synthetic", "none"


# ----- a launch's arguments as data ---------------------------------------------------------------------------------
class SnapshotBudget:
    """Bytes of input snapshots still allowed: per signature, and for the whole recording process; and the tensors
    each limit refused (`refused`: limit -> [tensors, bytes]), so that a replay on synthetic inputs can say why."""

    def __init__(self, per_signature: int, total: int):
        self.per_signature, self.total, self.total_left = per_signature, total, total
        self.refused = {"per_signature": [0, 0], "total": [0, 0]}

    def take(self, used_by_signature: int, nbytes: int) -> bool:
        limit = ("per_signature" if used_by_signature + nbytes > self.per_signature
                 else "total" if nbytes > self.total_left else None)
        if limit is not None:
            self.refused[limit][0] += 1
            self.refused[limit][1] += nbytes
            return False
        self.total_left -= nbytes
        return True

    def to_json(self) -> dict:
        return {"per_signature": self.per_signature, "total": self.total, "refused": self.refused}


def _torch():
    return sys.modules.get("torch")


def is_tensor(value) -> bool:
    torch = _torch()
    return torch is not None and isinstance(value, torch.Tensor)


def span_elements(shape: Sequence[int], strides: Sequence[int]) -> int:
    """Elements of storage a strided view reaches, from its first element: 1 + sum((size - 1) * stride)."""
    if any(size == 0 for size in shape):
        return 0
    return 1 + sum((size - 1) * abs(stride) for size, stride in zip(shape, strides))


def dtype_name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def signature_key(args: tuple) -> tuple[int, ...] | Callable[[tuple], Hashable]:
    """How a kernel's launches are keyed, from its first launch's arguments (`_triton.LaunchTracer` asks once per
    kernel). A kernel's argument kinds are fixed by its Triton hash, so the first launch tells where its scalars
    are: where every other argument is a tensor, the key is the values at those positions, returned as the
    positions (the tracer's C path takes them from the launch's argument array); otherwise (a host TMA descriptor,
    an object with `data_ptr`) `argument_key`, a Python function."""
    tensor_type = _tensor_type()
    positions = []
    for index, value in enumerate(args):
        if isinstance(value, tensor_type):
            continue
        if not (value is None or isinstance(value, (int, float, str))):
            return argument_key
        positions.append(index)
    return tuple(positions)


def argument_key(args: tuple) -> tuple:
    """The key (see the module docstring) of any launch: a tensor adds its dtype, a scalar itself, a host-side TMA
    descriptor what the kernel reads of it, anything else its type's name."""
    tensor_type = _tensor_type()
    key = []
    for value in args:
        if isinstance(value, tensor_type):
            key.append(value.dtype)
        elif value is None or isinstance(value, (int, float, str)):
            key.append(value)
        elif hasattr(value, "block_shape") and hasattr(value, "base"):  # a host-side TensorDescriptor
            key.append((type(value), value.base.dtype, tuple(value.shape), tuple(value.strides),
                        tuple(value.block_shape), getattr(value, "layout", None), value.padding))
        else:
            key.append(type(value).__name__)
    return tuple(key)


_TENSOR_TYPE: list = []


def _tensor_type() -> type:
    """torch.Tensor once torch is loaded (a type nothing is an instance of before that)."""
    if _TENSOR_TYPE:
        return _TENSOR_TYPE[0]
    torch = _torch()
    if torch is None:
        return _NoTensor
    _TENSOR_TYPE.append(torch.Tensor)
    return torch.Tensor


class _NoTensor:
    """Stands for torch.Tensor while torch is not imported."""


def describe_tensor(tensor, *, blobs: BlobHold | None, budget: SnapshotBudget | None, used: list[int],
                    aliases: dict, shared: dict | None = None) -> dict:
    """A tensor argument as data; its content saved as a blob held by `blobs` (the recording's hold on its
    snapshots until it is saved) when the budget allows (else marked synthetic).
    A tensor at the same address as an earlier argument is recorded as that argument's alias. `shared` (address,
    size, dtype -> blob) hands out a snapshot taken earlier for the same tensor at no cost to the budget: the
    configs of one autotune decision launch with the same arguments, and one snapshot (from before the first of
    them wrote anything) serves them all."""
    shape, strides = [int(x) for x in tensor.shape], [int(x) for x in tensor.stride()]
    span = span_elements(shape, strides)
    described = {"kind": "tensor", "dtype": dtype_name(tensor.dtype), "shape": shape, "strides": strides,
                 "storage_offset": int(tensor.storage_offset()), "span": span,
                 "element_size": tensor.element_size(), "alias": None, "blob": None, "synthetic": False}
    pointer = tensor.data_ptr()
    if pointer and pointer in aliases:
        described["alias"] = aliases[pointer]
        return described
    aliases[pointer] = len(aliases)
    described["buffer"] = aliases[pointer]
    nbytes = span * tensor.element_size()
    key = (pointer, nbytes, described["dtype"])
    if shared is not None and key in shared:
        described["blob"] = shared[key]
        return described
    if blobs is None or budget is None or not budget.take(used[0], nbytes):
        described["synthetic"] = nbytes > 0
        return described
    used[0] += nbytes
    flat = tensor.detach().as_strided((span,), (1,)) if span else tensor.detach().reshape(-1)[:0]
    described["blob"] = blobs.put_blob(flat.contiguous().view(_torch().uint8).cpu().numpy().tobytes())
    if shared is not None:
        shared[key] = described["blob"]
    return described


def describe_args(args: tuple, arg_names: Sequence[str], signature: dict, constexprs: dict, *,
                  blobs: BlobHold | None = None, budget: SnapshotBudget | None = None, descriptor_fields=None,
                  shared: dict | None = None) -> list[dict]:
    """Every positional argument of a launch as data (`kind` tensor, tensordesc, scalar, constexpr or other).
    Compile-time arguments are typed "constexpr" in the launcher's signature or listed in `constexprs`.
    `descriptor_fields(value)` reads a host-side TMA descriptor (`_triton.tensor_descriptor_fields`); `shared`:
    see `describe_tensor`."""
    described, used, aliases = [], [0], {}
    take = functools.partial(describe_tensor, blobs=blobs, budget=budget, used=used, aliases=aliases, shared=shared)
    for index, value in enumerate(args):
        name = arg_names[index] if index < len(arg_names) else f"arg{index}"
        if signature.get(name) == "constexpr" or name in constexprs:
            described.append({"kind": "constexpr", "name": name, "value": _plain(value)})
        elif is_tensor(value):
            described.append({"name": name, **take(value)})
        elif descriptor_fields is not None and (fields := descriptor_fields(value)) is not None:
            base = take(fields.pop("base"))
            described.append({"kind": "tensordesc", "name": name, "base": base, **fields})
        elif isinstance(value, (int, float, bool)) or value is None:
            described.append({"kind": "scalar", "name": name, "value": value})
        else:
            described.append({"kind": "other", "name": name, "value": repr(value)})
    return described


def _plain(value):
    return value if isinstance(value, (int, float, bool, str)) or value is None else repr(value)


def shapes_text(shape: Sequence[int]) -> str:
    """A tensor shape as a label writes it: 768x4096 ("scalar" for a 0-d tensor)."""
    return "x".join(map(str, shape)) or "scalar"


def tensors_of(args: Sequence[dict]) -> list[dict]:
    """The tensor descriptions of a signature's arguments (descriptor bases included)."""
    return [a if a["kind"] == "tensor" else a["base"] for a in args if a["kind"] in ("tensor", "tensordesc")]


def inputs_status(args: Sequence[dict]) -> str:
    """snapshot / synthetic / partly synthetic / none: how a replay gets this signature's input data."""
    owners = [t for t in tensors_of(args) if t["alias"] is None and t["span"]]
    synthetic = sum(t["synthetic"] for t in owners)
    if not owners:
        return NO_INPUTS
    return SNAPSHOT if not synthetic else SYNTHETIC if synthetic == len(owners) else PARTLY_SYNTHETIC


# ----- the recording ----------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Signature:
    """One launch signature of one kernel (see the module docstring)."""

    id: int
    kernel: str                      # the entry name the launcher looked up
    triton_hash: str
    capture_id: int | None
    arch: str | None
    grid: list[int]
    args: list[dict]
    arg_names: list[str]
    signature: dict[str, str]
    constexprs: dict[str, object]
    launches: int
    times_ms: list[float]            # GPU times of the sampled launches (CUDA events around each)
    tuning_launches: int = 0         # launches while the autotuner benchmarked it (not in launches/times_ms)
    autotune: dict | None = None     # {"group": decision, "config": its config} when it was an autotune candidate
    l2_resident: list[list[float] | None] | None = None  # per tensor of tensors_of(args): per sampled line (l2probe)
    behind_ms: float | None = None   # how far the GPU ran behind the host at its first timed launches (median)
    empty_ms: float | None = None  # an empty kernel timed right after them (median; measure.timing.time_empty_kernel)
    l2_dirt: float | None = None   # how dirty its dirt probes found the L2: 0 clean, 1 dirty (l2probe.DirtCalibration)
    source: str = ""               # its function's source hash (_triton.LaunchSpec.source); "" where not recorded
    late_us: list[float] = dataclasses.field(default_factory=list)  # per sample in times_ms queued after its hold

    @property
    def inputs(self) -> str:
        return inputs_status(self.args)

    @property
    def replayable(self) -> str | None:
        """None when a replay can rebuild the arguments; else why not."""
        others = [a["name"] for a in self.args if a["kind"] == "other"]
        return f"arguments of unknown type: {', '.join(others)}" if others else None

    @property
    def time_per_launch_ms(self) -> float | None:
        """The median of the sampled launch times."""
        return median(self.times_ms) if self.times_ms else None

    @property
    def gpu_ms(self) -> float:
        """Estimated GPU time of all its launches: the mean sampled time net of the launch lead (`empty_ms`) x
        launches. Why net: the events around a kernel add the lead to every sample (3.6-4.1 µs on an H200), most of
        a µs-scale kernel's sample, so gross times gave a max-autotune BERT's copies and norms twice their share of
        `torch.profiler`'s kernel time (docs/sweep_fidelity.md#shares-net-of-the-launch-lead)."""
        if not self.times_ms:
            return 0.0
        return max(sum(self.times_ms) / len(self.times_ms) - (self.empty_ms or 0.0), 0.0) * self.launches

    @property
    def shapes(self) -> tuple[tuple[int, ...], ...]:
        """Its tensor arguments' shapes (descriptor bases included): what tells apart the launches one tuning key
        makes at several input shapes."""
        return tuple(tuple(t["shape"]) for t in tensors_of(self.args))

    def label(self) -> str:
        shapes = [shapes_text(shape) for shape in self.shapes][:3]
        return f"{self.kernel} [{', '.join(shapes)}]" if shapes else self.kernel


@dataclasses.dataclass
class Recording:
    """A recorded run: its signatures and where they came from. `to_json` / `from_json` are the file format."""

    signatures: list[Signature]
    arch: str | None
    device: str | None
    triton_version: str
    torch_version: str | None
    pid: int
    label: str = ""
    command: list[str] | None = None
    exit_code: int | None = None
    wall_s: float | None = None
    budget: dict = dataclasses.field(default_factory=dict)
    store: str | None = None
    autotune: list[dict] = dataclasses.field(default_factory=list)  # the autotune decisions (AutotuneDecision)
    sample_every: int = 1            # > 1: launch counts per signature are estimates (see sweep.record)
    l2_calibration: dict | None = None  # the L2 probe's {"hot", "cold"} median cycles (l2probe.Calibration)
    dirt_calibration: dict | None = None  # the dirt probe's {"clean", "dirty"} median cycles (l2probe.DirtCalibration)
    sm_clock_mhz: float | None = None  # the SM clock right after the workload (measure.timing.sm_clock_mhz)
    rank: int | None = None          # the process's rank in a distributed job (RANK, as torchrun sets it)
    id: int | None = None            # its id in the store's results table

    @property
    def total_gpu_ms(self) -> float:
        return sum(s.gpu_ms for s in self.signatures)

    @property
    def inductor_tuning(self) -> list[dict]:
        """The decisions Inductor's compile-time tuning made while this run was recorded (its choice among
        templates, coordinate descent): none where a warm cache handed it every pick, so a run that has some
        compiled as a first run does."""
        return [d for d in self.autotune if d.get("tuner") in (SELECT_ALGORITHM, COORDINATE_DESCENT)]

    def share(self, signature: Signature) -> float | None:
        total = self.total_gpu_ms
        return signature.gpu_ms / total if total else None

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data.pop("id")
        return {"format": FORMAT, "version": VERSION, **data}

    @classmethod
    def from_json(cls, data: dict, *, source: str = "recording") -> "Recording":
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise TritonhookError(f"{source}: not a tritonhook recording (no \"format\": \"{FORMAT}\")")
        version = data.get("version")
        if version not in READS:
            advice = "upgrade tritonhook" if isinstance(version, int) and version > VERSION else \
                "record the workload again"
            raise TritonhookError(f"{source}: recording format version {version}, this tritonhook reads versions "
                                  f"{', '.join(map(str, READS))}; {advice}")
        fields = {f.name for f in dataclasses.fields(cls)}
        try:
            values = {k: v for k, v in data.items() if k in fields}
            values["signatures"] = [Signature(**s) for s in data["signatures"]]
            recording = cls(**values)
        except (KeyError, TypeError) as exc:
            raise TritonhookError(f"{source}: malformed recording ({type(exc).__name__}: {exc})") from None
        for signature in recording.signatures:
            _check_args(signature.args, f"{source}: signature {signature.id}")
        return recording

    @classmethod
    def merged(cls, recordings: Sequence["Recording"]) -> "Recording":
        """The recordings of several processes of one run as one (signature ids and autotune groups renumbered:
        each process numbers its own from 0; each decision keeps its process's rank and pid)."""
        if not recordings:
            raise TritonhookError("no recording to merge: the command launched no Triton kernel")
        signatures, decisions, offset = [], [], 0
        for recording in recordings:
            moved = lambda group: group + offset  # noqa: E731
            for s in recording.signatures:
                tag = s.autotune and {**s.autotune, "group": moved(s.autotune["group"])}
                signatures.append(dataclasses.replace(s, id=len(signatures), autotune=tag))
            decisions += [{"rank": recording.rank, "pid": recording.pid, **d, "group": moved(d["group"]),
                           **({"made_at": moved(d["made_at"])} if d.get("made_at") is not None else {})}
                          for d in recording.autotune]
            groups = [d["group"] for d in recording.autotune] + [s.autotune["group"] for s in recording.signatures
                                                                   if s.autotune]
            offset += max(groups, default=-1) + 1
        return dataclasses.replace(recordings[0], signatures=signatures, autotune=decisions, id=None,
                                   sample_every=max(r.sample_every for r in recordings))


register_result_kind(ResultKind(RESULT_KIND, Recording.from_json, label="label", blobs=lambda data: [
    t["blob"] for s in data.get("signatures", []) for t in tensors_of(s["args"]) if t.get("blob")]))


_INT, _OPTIONAL_INT, _OPTIONAL_TEXT = (int,), (int, type(None)), (str, type(None))
_ARG_FIELDS = {
    "tensor": {"dtype": (str,), "shape": (list,), "strides": (list,), "storage_offset": _INT, "span": _INT,
               "element_size": _INT, "alias": _OPTIONAL_INT, "blob": _OPTIONAL_TEXT, "synthetic": (bool, int)},
    "tensordesc": {"base": (dict,)}, "scalar": {"value": (int, float, bool, type(None))},
    "constexpr": {"value": (int, float, bool, str, type(None))}, "other": {"value": (str,)},
}
"""The fields each kind of argument has in every recording version (`describe_args`), with their JSON types: what
the replay, tune and upgrade read of them."""


def _check_args(args, where: str) -> None:
    """Refuse a signature's arguments that lack a field the replay reads, or whose field has another type, in one
    line naming the signature, the argument and the field, as a decisions file's entries are refused: a recording
    file is user input, and a KeyError deep in a replay worker names neither."""
    if not isinstance(args, list):
        raise TritonhookError(f"{where}: its args are not a list")
    buffers = 0
    for index, arg in enumerate(args):
        at = f"{where} argument {index}"
        if not isinstance(arg, dict) or arg.get("kind") not in _ARG_FIELDS:
            raise TritonhookError(f"{at}: not an argument of a kind the replay knows ({', '.join(_ARG_FIELDS)})")
        at = f"{at} ({arg.get('name')!r})"
        _check_fields(arg, {"name": (str,), **_ARG_FIELDS[arg["kind"]]}, at)
        tensor = arg["base"] if arg["kind"] == "tensordesc" else arg if arg["kind"] == "tensor" else None
        if tensor is not None:
            buffers = _check_tensor(tensor, at if tensor is arg else f"{at} base", buffers)


def _check_tensor(tensor: dict, at: str, buffers: int) -> int:
    """Check one tensor's fields, its shape against its strides, and that an alias names a buffer of an earlier
    argument; returns the buffers counted so far (an argument that is no alias has the next one)."""
    _check_fields(tensor, _ARG_FIELDS["tensor"], at)
    shape, strides = tensor["shape"], tensor["strides"]
    if len(shape) != len(strides) or not all(isinstance(n, int) and not isinstance(n, bool) for n in shape + strides):
        raise TritonhookError(f"{at}: shape and strides must be lists of whole numbers of one length")
    if tensor["alias"] is None:
        _check_fields(tensor, {"buffer": _INT}, at)
        return buffers + 1
    if not 0 <= tensor["alias"] < buffers:
        raise TritonhookError(f"{at}: alias {tensor['alias']} names no buffer of an earlier argument")
    return buffers


def _check_fields(value: dict, wanted: dict[str, tuple], at: str) -> None:
    for field, types in wanted.items():
        if field not in value:
            raise TritonhookError(f"{at}: no field {field!r}")
        if not isinstance(value[field], types) or (isinstance(value[field], bool) and bool not in types):
            raise TritonhookError(f"{at}: field {field!r} is {type(value[field]).__name__}, not "
                                  f"{' or '.join(t.__name__ for t in types)}")


def capability_of(arch: str | None) -> int | None:
    """'sm_90a' -> 90."""
    digits = "".join(ch for ch in (arch or "").removeprefix("sm_") if ch.isdigit())
    return int(digits) if digits else None


def synthetic_fill(dtype_text: str, fill: str = config.sweep.SYNTHETIC_FILLS[0]) -> str:
    """How a replay fills a tensor it has no snapshot of: floats as `fill` says (`config.sweep.SYNTHETIC_FILLS`;
    random normal by default), everything else zeros (zeros are valid indices and masks, random integers would read
    out of bounds)."""
    floats = any(word in dtype_text for word in ("float", "bfloat", "half"))
    return "randn" if floats and fill == config.sweep.SYNTHETIC_FILLS[0] else "zeros"


def synthetic_tensors(args: Sequence[dict]) -> list[dict]:
    """The tensors of a signature's arguments a replay fills synthetic (beyond the snapshot budget), each once."""
    return [t for t in tensors_of(args) if t["alias"] is None and t["synthetic"]]


def check_arch(recorded: str | None, device: str, *, source: str) -> None:
    """A recording replays only on the GPU architecture it was recorded on (its cubins are built for it)."""
    if recorded is not None and capability_of(recorded) != capability_of(device):
        raise TritonhookError(f"{source}: recorded on {recorded}, this GPU is {device}; replay it on a GPU of the "
                              f"same architecture (its cubins are built for {recorded})")


