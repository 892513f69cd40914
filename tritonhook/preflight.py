"""Static preflight: predict, with no GPU, the stack reservation a cubin will make the driver take.

Why (docs/tma_stack.md#the-stack-reservation): when a kernel needs more per-thread stack than the context's
`CU_LIMIT_STACK_SIZE` (1024 B in a fresh context), the driver raises the limit at the first launch and reserves
`(new limit - 1024) x SMs x max threads per SM` for the life of the context; PyTorch never sees it. Triton 3.4-3.6
TMA loads compiled for sm_120a call a driver routine, `__cuda_syscall_cp_async_bulk_tensor_<N>d_*`, whose frame
(~14.6 KB per thread, as reported publicly) is not in the cubin: ptxas reports only the caller's few bytes. So the
prediction adds a known frame for each such call to the stack ptxas reports, and says that it is a prediction.

The driver's rounding of the new limit is not documented, and a 16 KiB `.local` array (limit 16384) does not tell
rounding rules apart, so each prediction is a range: from the need rounded up to 16 B to the need rounded up to a
power of two. The GPU tests check that a measured limit falls in it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import sys
from typing import TYPE_CHECKING, Callable, Iterable

from . import config, format
from .cubin import Cubin
from .errors import TritonhookError, warn
from .format import human_bytes

if TYPE_CHECKING:
    from .store import Capture, Store

DEFAULT_STACK_LIMIT = 1024
"""CU_LIMIT_STACK_SIZE of a fresh context; the reservation counts above it."""
SYSCALL_FRAMES = {"__cuda_syscall_cp_async_bulk_tensor_": 14_600}
"""Per-thread frame of driver routines a cubin calls, by name prefix: ~14.6 KB for the TMA routine, as
reported publicly. Not measurable from the cubin; the largest uncertainty of the prediction."""

_CC_GUIDE = ("CUDA C++ Programming Guide, 'Technical Specifications per Compute Capability': max resident "
             "threads per SM {threads} for compute capability {cc}")


@dataclasses.dataclass(frozen=True)
class GpuSpec:
    """What the reservation formula needs about one GPU model, and where each figure comes from."""

    name: str
    capability: int
    sms: int
    max_threads_per_sm: int
    source: str

    @property
    def threads(self) -> int:
        return self.sms * self.max_threads_per_sm


def _spec(name: str, capability: int, sms: int, threads: int, sm_source: str) -> GpuSpec:
    cc = f"{capability // 10}.{capability % 10}"
    return GpuSpec(name, capability, sms, threads, f"{sm_source}; {_CC_GUIDE.format(threads=threads, cc=cc)}")


GPUS: dict[str, GpuSpec] = {
    "h100": _spec("H100 SXM5", 90, 132, 2048, "132 SMs: NVIDIA H100 Tensor Core GPU Architecture whitepaper"),
    "h100pcie": _spec("H100 PCIe", 90, 114, 2048, "114 SMs: NVIDIA H100 Tensor Core GPU Architecture whitepaper"),
    "h200": _spec("H200", 90, 132, 2048, "132 SMs: cuDeviceGetAttribute(MULTIPROCESSOR_COUNT) on the lent H200 "
                  "(docs/gpu_machine.md#the-lent-h200)"),
    "b200": _spec("B200", 100, 148, 2048, "148 SMs: NVIDIA Blackwell datacenter specifications (DGX B200)"),
    "rtx5090": _spec("RTX 5090", 120, 170, 1536, "170 SMs: 21,760 CUDA cores / 128 per SM, NVIDIA GeForce RTX "
                     "5090 specifications"),
    "rtxpro6000": _spec("RTX PRO 6000 Blackwell", 120, 188, 1536, "188 SMs: 24,064 CUDA cores / 128 per SM, NVIDIA "
                        "RTX PRO 6000 Blackwell specifications"),
    "gb10": _spec("GB10 (DGX Spark)", 121, 48, 1536, "48 SMs: 6,144 CUDA cores / 128 per SM, NVIDIA DGX Spark "
                  "specifications"),
}


def _table_key(name: str) -> str:
    return re.sub(r"nvidia|geforce|blackwell|[\s_-]", "", name.lower())


def find_gpu(name: str, *, given_as: str = "--gpu") -> GpuSpec:
    """'H200', 'NVIDIA H200', 'rtx-5090', 'RTX PRO 6000' -> the table entry (names compared without case,
    spaces, dashes and the words NVIDIA / GeForce / Blackwell). `given_as` names the option or variable."""
    key = _table_key(name)
    if key in GPUS:
        return GPUS[key]
    raise TritonhookError(f"{given_as} {name!r}: not in the GPU table; choose from "
                          f"{', '.join(f'{key} ({spec.name})' for key, spec in GPUS.items())}")


def named_gpu() -> GpuSpec | None:
    """The GPU named by $TRITONHOOK_GPU (an error listing the valid names when it is not one), else None."""
    name = config.capture.GPU.get()
    return find_gpu(name, given_as=f"${config.capture.GPU.name}") if name else None


def visible_gpu() -> GpuSpec | None:
    """The table entry of the GPU this process would run on (torch's current device if torch has started CUDA,
    else NVML's first device as CUDA_VISIBLE_DEVICES orders them); None when there is none or it is not in the
    table. Marketing names carry suffixes ('... 80GB HBM3', '... Workstation Edition'): the longest table key the
    name starts with wins."""
    name = visible_gpu_name()
    if not name:
        return None
    key = _table_key(name)
    matches = [k for k in GPUS if key.startswith(k)]
    return GPUS[max(matches, key=len)] if matches else None


def visible_gpu_name() -> str | None:
    """The name of the GPU this process would run on (torch's current device once torch started CUDA, else NVML's
    first visible device), None when none is visible; a decision's key names its GPU so (`tritonhook.decisions`)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return torch.cuda.get_device_name()
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no bindings, no driver, no GPU: nothing is visible
        return None
    try:
        first = config.sweep.CUDA_VISIBLE_DEVICES.get().split(",")[0].strip()
        handle = (pynvml.nvmlDeviceGetHandleByUUID(first) if first.startswith(("GPU-", "MIG-")) else
                  pynvml.nvmlDeviceGetHandleByIndex(int(first)))
        name = pynvml.nvmlDeviceGetName(handle)
        return name.decode() if isinstance(name, bytes) else name
    except Exception:  # noqa: BLE001 - an empty or odd CUDA_VISIBLE_DEVICES: no device to name
        return None
    finally:
        pynvml.nvmlShutdown()


def _capability(arch: str) -> tuple[int, str]:
    match = re.fullmatch(r"sm_(\d+)([af]?)", arch)
    if not match:
        raise TritonhookError(f"cubin arch {arch!r}: not an sm_XX[a|f] target")
    return int(match.group(1)), match.group(2)


def runs_on(arch: str, gpu: GpuSpec) -> bool:
    """Whether a cubin for `arch` loads on `gpu`: 'a' targets need the exact capability, 'f' the same major and a
    minor at least as high, plain targets the same major (SASS is compatible within a major version)."""
    capability, variant = _capability(arch)
    if variant == "a":
        return gpu.capability == capability
    return gpu.capability // 10 == capability // 10 and gpu.capability >= capability


def gpus_for(arch: str) -> list[GpuSpec]:
    return [gpu for gpu in GPUS.values() if runs_on(arch, gpu)]


# ----- the prediction (pure) ------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Prediction:
    """Predicted stack limit and reservation for one kernel on one GPU, as a low..high range; everything past
    the five fields is derived from them."""

    kernel: str
    arch: str
    gpu: GpuSpec
    syscalls: tuple[str, ...]
    ptxas_stack: int

    @property
    def syscall_frame(self) -> int:
        return syscall_frame(self.syscalls)

    @property
    def need(self) -> int:
        return self.ptxas_stack + self.syscall_frame

    @property
    def stack_low(self) -> int:
        return stack_limit_range(self.need)[0]

    @property
    def stack_high(self) -> int:
        return stack_limit_range(self.need)[1]

    @property
    def runs_on_gpu(self) -> bool:
        return runs_on(self.arch, self.gpu)

    @property
    def reserve_low(self) -> int:
        return reservation(self.stack_low, self.gpu)

    @property
    def reserve_high(self) -> int:
        return reservation(self.stack_high, self.gpu)

    @property
    def basis(self) -> str:
        calls = f" + {self.syscall_frame} B for {', '.join(self.syscalls)} (reported frame, not in the cubin)" \
            if self.syscall_frame else ""
        return (f"need = {self.ptxas_stack} B ptxas stack{calls}; limit = need rounded up to 16 B .. to a power "
                f"of two; reserve = (limit - {DEFAULT_STACK_LIMIT}) x {self.gpu.sms} SMs x "
                f"{self.gpu.max_threads_per_sm} threads/SM")

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "arch": self.arch, "gpu": dataclasses.asdict(self.gpu),
                "syscalls": list(self.syscalls), "ptxas_stack": self.ptxas_stack,
                "syscall_frame": self.syscall_frame, "stack_low": self.stack_low, "stack_high": self.stack_high,
                "reserve_low": self.reserve_low, "reserve_high": self.reserve_high,
                "runs_on_gpu": self.runs_on_gpu, "basis": self.basis}


def syscall_frame(syscalls: Iterable[str]) -> int:
    """The largest known frame among the driver routines called (calls are not nested in one another)."""
    frames = [frame for name in syscalls for prefix, frame in SYSCALL_FRAMES.items() if name.startswith(prefix)]
    return max(frames, default=0)


def stack_limit_range(need: int) -> tuple[int, int]:
    """(low, high) predicted CU_LIMIT_STACK_SIZE after a launch needing `need` B/thread; never below the default."""
    if need <= DEFAULT_STACK_LIMIT:
        return DEFAULT_STACK_LIMIT, DEFAULT_STACK_LIMIT
    return -(-need // 16) * 16, 1 << (need - 1).bit_length()


def reservation(limit: int, gpu: GpuSpec) -> int:
    return max(0, limit - DEFAULT_STACK_LIMIT) * gpu.threads


def predict(kernel, arch: str, syscalls: Iterable[str], gpu: GpuSpec) -> Prediction:
    """`kernel`: a `cubin.Kernel` (name, frame_size, min_stack_size, max_stack_size) of a cubin for `arch`."""
    return Prediction(kernel=kernel.name, arch=arch, gpu=gpu, syscalls=tuple(syscalls),
                      ptxas_stack=max(kernel.frame_size, kernel.min_stack_size, kernel.max_stack_size))


def predict_cubin(cubin, gpus: list[GpuSpec] | None = None) -> list[Prediction]:
    """Every kernel of a parsed `Cubin` on `gpus` (default: the table's GPUs that can load it, else all)."""
    targets = gpus if gpus is not None else (gpus_for(cubin.arch) or list(GPUS.values()))
    return [predict(kernel, cubin.arch, cubin.syscalls, gpu) for kernel in cubin.kernels.values() for gpu in targets]


def table_row(prediction: Prediction) -> tuple[str, ...]:
    """One row of `tritonhook preflight`'s table."""
    gpu = prediction.gpu.name + ("" if prediction.runs_on_gpu else f" (cannot load {prediction.arch})")
    limit = f"{prediction.stack_low:,}" if prediction.stack_low == prediction.stack_high else \
        f"{prediction.stack_low:,}-{prediction.stack_high:,}"
    reserve = human_bytes(prediction.reserve_low) if prediction.reserve_low == prediction.reserve_high else \
        f"{human_bytes(prediction.reserve_low)}-{human_bytes(prediction.reserve_high)}"
    return (prediction.kernel, prediction.arch, gpu, ", ".join(prediction.syscalls) or "-",
            f"{prediction.ptxas_stack:,}", limit, reserve)


@dataclasses.dataclass(frozen=True)
class SourcedPrediction:
    """A prediction and where its cubin came from: a capture (id, specialization) or a file (None, None)."""

    capture_id: int | None
    specialization: str | None
    prediction: Prediction


@dataclasses.dataclass(frozen=True)
class Unpredicted:
    """A capture whose cubin could not be read or parsed; `reason` names the blob and what is wrong with it."""

    capture_id: int
    kernel: str
    arch: str
    specialization: str | None
    reason: str

    def to_json(self) -> dict:
        return {"capture_id": self.capture_id, "kernel": self.kernel, "arch": self.arch,
                "specialization": self.specialization or "-", "error": self.reason}


@dataclasses.dataclass
class PreflightReport:
    """`tritonhook preflight`'s result: a table, each row numbering the basis of its prediction, the numbered bases
    below it naming their rows, and the captures that could not be predicted; or JSON (a row per prediction, and a
    row with `error` per capture not predicted)."""

    predictions: list[SourcedPrediction]
    unpredicted: list[Unpredicted] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every cubin asked for was predicted."""
        return not self.unpredicted

    def to_json(self) -> list[dict]:
        return [{**p.prediction.to_json(), "capture_id": p.capture_id, "specialization": p.specialization or "-"}
                for p in self.predictions] + [u.to_json() for u in self.unpredicted]

    def __rich_console__(self, console, options):
        rows_of: dict[str, list[SourcedPrediction]] = {}
        for sourced in self.predictions:
            rows_of.setdefault(sourced.prediction.basis, []).append(sourced)
        numbers = {basis: number for number, basis in enumerate(rows_of, 1)}
        rows = []
        for sourced in self.predictions:
            kernel, *rest = table_row(sourced.prediction)
            rows.append(("-" if sourced.capture_id is None else sourced.capture_id, kernel,
                         sourced.specialization or "-", *rest, numbers[sourced.prediction.basis]))
        if rows:
            yield format.table(("capture", "kernel", "specialization", "arch", "GPU", "driver calls", "ptxas stack",
                                "predicted limit", "reserve", "basis"), rows,
                               title="preflight: predicted stack reservation (a prediction; see the basis below)",
                               right_align=("capture", "ptxas stack", "predicted limit", "reserve", "basis"))
        for basis, sourced in rows_of.items():
            yield format.line(f"basis {numbers[basis]} ({_rows_named(sourced)}): {basis}")
        for u in self.unpredicted:
            yield format.line(f"not predicted: capture {u.capture_id} ({u.kernel}, {u.arch}): {u.reason}")


def _rows_named(rows: list[SourcedPrediction]) -> str:
    """The rows one basis covers, as a reader finds them in the table: "captures 3, 5 on H100 SXM5, H200"; a cubin
    file's rows by kernel name."""
    ids = [str(i) for i in dict.fromkeys(r.capture_id for r in rows if r.capture_id is not None)]
    names = [f"capture{'s' if len(ids) > 1 else ''} {', '.join(ids)}"] if ids else []
    names += dict.fromkeys(r.prediction.kernel for r in rows if r.capture_id is None)
    return f"{'; '.join(names)} on {', '.join(dict.fromkeys(r.prediction.gpu.name for r in rows))}"


def predict_captures(store: Store, captures: Iterable[Capture],
                     gpus: list[GpuSpec] | None = None) -> PreflightReport:
    """Predictions for the cubins of `captures` on `gpus` (default as `predict_cubin`). A capture whose cubin cannot
    be read or parsed (a corrupt or missing blob, no cubin at all) is listed as unpredicted with the reason, and the
    others are still predicted. Each distinct cubin is read and parsed once."""
    predictions, unpredicted, parsed = [], [], {}
    for capture in captures:
        digest = capture.artifacts["cubin"].sha256 if "cubin" in capture.artifacts else None
        if digest not in parsed:
            try:
                parsed[digest] = _read_cubin(store, capture)
            except TritonhookError as exc:  # not cached: the next capture of the blob is named in its own reason
                unpredicted.append(Unpredicted(capture.id, capture.entry, capture.arch, capture.specialization,
                                               str(exc)))
                continue
        predictions += [SourcedPrediction(capture.id, capture.specialization, p)
                        for p in predict_cubin(parsed[digest], gpus)]
    return PreflightReport(predictions, unpredicted)


def _read_cubin(store: Store, capture: Capture) -> Cubin:
    """A capture's cubin, hash-checked and parsed; an error names the blob and the capture."""
    data = store.read(capture, "cubin")
    return Cubin.from_bytes(data, label=f"{store.blob_path(capture.artifacts['cubin'].sha256)} "
                                        f"(capture {capture.id} cubin)")


# ----- capture-time check ---------------------------------------------------------------------------------------
def capture_checker() -> Callable[[int, object], None]:
    """A `Session.listeners` callback for one capture session: warns once per (entry, arch) when a captured
    kernel would reserve more than `config.capture.WARN_BYTES` on the GPU it is meant for (`warning_gpus`). A bad
    $TRITONHOOK_GPU fails here, when capture starts. Each distinct cubin is parsed once: cache hits of a kernel
    already checked cost a hash, not a parse, in the compile hook."""
    named = named_gpu()
    visible: list[GpuSpec | None] = []  # looked up at the first cubin, not at enable()
    warned: set[tuple[str, str]] = set()
    checked: set[str] = set()

    def check(capture_id: int, event) -> None:
        cubin_bytes = event.artifacts.get("cubin")
        if not cubin_bytes or (event.entry, event.arch) in warned:
            return
        digest = hashlib.sha256(cubin_bytes).hexdigest()
        if digest in checked:
            return
        checked.add(digest)
        if named is None and not visible:
            visible.append(visible_gpu())
        predictions = warning_predictions(cubin_bytes, f"capture {capture_id}", named or visible[0])
        if not any(p.reserve_low > config.capture.WARN_BYTES for p in predictions):
            return
        if _held is not None:  # every config of an autotuned kernel: which one the workload runs is not known yet
            _held.predictions[capture_id] = (getattr(event, "triton_hash", None), predictions)
            return
        warned.add((event.entry, event.arch))
        warn(warning_text(predictions, capture_id))

    return check


class HeldWarnings:
    """Capture warnings held back while a workload is recorded (`hold_warnings`). An autotuner compiles every
    config, and a config that loses may need a stack the winner does not (a prediction of gigabytes for a config
    the workload never runs, where the winner's frame is a few bytes): so the warnings wait for the end of the
    recording, which knows which captures the workload itself launched (`release`)."""

    def __init__(self):
        self.predictions: dict[int, tuple[str | None, list[Prediction]]] = {}  # capture id -> (Triton hash, ...)

    def release(self, launched: set[str], measured: Callable[[], str | None] = lambda: None) -> list[str]:
        """The lines to print at the end of the recording: a warning per kernel the workload launched (`launched`:
        Triton hashes), one line for those it did not (autotune configs that lost), and what the context really
        reserved (`measured()`, asked only when there is something to say); [] when nothing was predicted. Stops
        holding."""
        global _held
        _held = None
        kept = [warning_text(p, capture_id) for capture_id, (digest, p) in sorted(self.predictions.items())
                if digest in launched]
        passed = [p for digest, p in self.predictions.values() if digest not in launched]
        lines = list(kept)
        if passed:
            most = max(p.reserve_high for predictions in passed for p in predictions)
            lines.append(f"tritonhook preflight: {len(passed)} kernel(s) compiled but never launched by the workload "
                         f"(autotune configs that lost) would reserve up to {most / 2**30:.2f} GiB: not counted")
        if lines and (found := measured()):
            lines.append(f"tritonhook preflight: measured at the end of the recording: {found}")
        return lines


_held: HeldWarnings | None = None


def hold_warnings() -> HeldWarnings:
    """Hold this process's capture warnings until `HeldWarnings.release` (see `HeldWarnings`)."""
    global _held
    _held = HeldWarnings()
    return _held


def warning_gpus(arch: str, gpu: GpuSpec | None) -> list[GpuSpec]:
    """The GPUs a warning quotes for a cubin of `arch`: `gpu` (named or visible) when it can load the cubin, else
    every table GPU that can (the cubin is meant for another GPU, which one is not known)."""
    return [gpu] if gpu is not None and runs_on(arch, gpu) else gpus_for(arch)


def warning_predictions(cubin_bytes: bytes, label: str, gpu: GpuSpec | None) -> list[Prediction]:
    """The predictions of a cubin's heaviest kernel on `warning_gpus`; [] for an unreadable cubin (a preflight
    problem must never disturb a compile)."""
    try:
        cubin = Cubin.from_bytes(cubin_bytes, label=label)
    except TritonhookError:
        return []
    predictions = predict_cubin(cubin, warning_gpus(cubin.arch, gpu))
    if not predictions:
        return []
    heaviest = max(predictions, key=lambda p: p.reserve_low).kernel
    return [p for p in predictions if p.kernel == heaviest]


def warning_text(predictions: list[Prediction], capture_id: int | None = None) -> str:
    """One kernel's predictions: on one GPU the figures for it; on several the range over them, naming them all."""
    first = predictions[0]
    where = f" (capture {capture_id})" if capture_id is not None else ""
    gib = 2**30
    low, high = min(p.reserve_low for p in predictions), max(p.reserve_high for p in predictions)
    gpus = first.gpu.name if len(predictions) == 1 else \
        f"{' or '.join(p.gpu.name for p in predictions)} (whichever runs it; ${config.capture.GPU.name} names yours)"
    calls = f"; it calls {', '.join(first.syscalls)}" if first.syscalls else ""
    return (f"tritonhook preflight: kernel {first.kernel}{where} for {first.arch} would make the driver "
            f"reserve {low / gib:.2f}-{high / gib:.2f} GiB of stack on {gpus} for the life of the context "
            f"(stack limit {first.stack_low}-{first.stack_high} B/thread{calls}); see `tritonhook preflight`")
