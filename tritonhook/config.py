"""Every tritonhook setting and environment variable, declared once (the model is Triton's `knobs.py`).

Why one module: a setting that travels to child processes (the store, rename, TMA-scope fix, the A/B protocol) is
written by one process and read by another, and when the name or the encoding lives in two places they drift.
Here each variable is an `EnvVar` with its type, default and a docstring; modules read it with `VAR.get()` and
write it with `VAR.encode(value)`; `scope()` sets variables for a block (or until `close()`) and puts back exactly
what was there. What a child process inherits is written by one object, `launcher.ChildSettings`, the only code
that builds a child's environment.

Grouped by concern, as Triton's `knobs.py` groups its knobs: each group is a class used as a namespace, never
instantiated (`config.capture.STORE`, `config.sweep.DEFAULT_ROUNDS`): capture, rename, decisions, ptxas, CuTe DSL,
memwatch, A/B, record and sweep, upgrade, check, report, then the paths and programs several features share
(`GROUPS`). A variable keeps its name in its group; a constant drops the group's prefix (`sweep.RTOL`).

Thresholds and limits that shape results (preflight's warning, the A/B "no difference" floor, memwatch's sample
caps) are declared here too, so a reader finds every tunable in one file.

This module is the bottom layer: it imports nothing from tritonhook.
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import Callable, Generic, Iterator, Mapping, MutableMapping, TypeVar

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, eq=False)
class EnvVar(Generic[T]):
    """One environment variable: its name, how its text decodes, what an unset or empty one means. Each is declared
    once, so one is equal only to itself (and hashes so, a list default included: `launcher` keys by them)."""

    name: str
    default: T
    parse: Callable[[str], T] = str  # type: ignore[assignment]
    doc: str = ""
    text: Callable[[T], str] | None = None
    """How a set value is written, where `parse` reads more than `str` does (None: the generic encoding)."""

    def get(self, environ: Mapping[str, str] | None = None) -> T:
        """The decoded value in `environ` (default os.environ); the default when unset or empty. Text it cannot
        read is a ValueError naming the variable: "$NAME='nan': not a finite number of seconds, above 0"."""
        raw = (os.environ if environ is None else environ).get(self.name)
        if not raw:
            return self.default
        try:
            return self.parse(raw)
        except ValueError as exc:
            raise ValueError(f"${self.name}={raw!r}: {exc}") from None

    def raw(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The text as set, "" included (an empty CUDA_VISIBLE_DEVICES hides every GPU); None when unset."""
        return (os.environ if environ is None else environ).get(self.name)

    def is_set(self, environ: Mapping[str, str] | None = None) -> bool:
        return bool((os.environ if environ is None else environ).get(self.name))

    def encode(self, value: T | None) -> str:
        """The text a child reads back as `value`; "" for None/False (empty means unset to `get`)."""
        if value is None or value is False:
            return ""
        if self.text is not None:
            return self.text(value)
        if value is True:
            return "1"
        return os.pathsep.join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


@dataclasses.dataclass(frozen=True)
class Number:
    """How a number setting reads: an int or a float, finite, of at least `least` (above it where `above`). Why a
    range and not only a type: float() reads "nan" and "inf", int() reads "-1", and a timeout of NaN, a sample of
    every -1st launch or a budget of -5 bytes then fails, or silently does nothing, far from where it was set.
    Text that is no such number is a ValueError saying what is wanted (`unreadable` prints it)."""

    kind: type
    least: float = 0
    above: bool = False
    unit: str = ""

    def __call__(self, text: str) -> int | float:
        try:
            value = self.kind(text)
        except ValueError:
            raise ValueError(self.wanted) from None
        if not math.isfinite(value) or value < self.least or (self.above and value == self.least):
            raise ValueError(self.wanted)
        return value

    @property
    def wanted(self) -> str:
        what = "a whole number" if self.kind is int else "a finite number"
        unit = f" of {self.unit}" if self.unit else ""
        bound = f"above {self.least:g}" if self.above else f"{self.least:g} or more"
        return f"not {what}{unit}, {bound}"


def _flag(text: str) -> bool:
    return text == "1"


def _path_list(text: str) -> list[str]:
    return [entry for entry in text.split(os.pathsep) if entry]


TMA_SCOPE_ALL = "all"
"""The TRITONHOOK_FIX_TMA_SCOPE value for every target (`enable(fix_tma_scope="")`): empty means unset."""


def _tma_scope(text: str) -> bool | str:
    """'1': the default targets (sm_12x, `tma_scope.SM12X`); 'all': every target (""); else the arch prefix."""
    return True if text == "1" else "" if text == TMA_SCOPE_ALL else text


def _tma_scope_text(value: bool | str) -> str:
    return "1" if value is True else value or TMA_SCOPE_ALL


class capture:
    """Capture (`ptx_capture`), the store it writes (`store/`), and preflight's capture-time warning."""

    STORE = EnvVar("TRITONHOOK_STORE", None, str,
                   "The store directory captures go to when none is given (default ./tritonhook-store).")
    ENABLE = EnvVar("TRITONHOOK_ENABLE", False, _flag,
                    "'1': a Python process started with tritonhook's sitecustomize enables capture when it imports "
                    "Triton.")
    NOTE_IMPORTS = EnvVar("TRITONHOOK_NOTE_IMPORTS", None, str,
                          "Set by `tritonhook run` / `capture` for its command: a folder where each of its processes "
                          "notes that it imported cuda.tile, looked for triton and found none, or could not write "
                          "captures (`_imports.note`), so the command's summary can say what it could not capture.")
    NOTED_TRITON_MISSING, NOTED_CUTILE, NOTED_CAPTURES_LOST = "triton-missing", "cuda.tile", "captures-lost"
    """The notes a process leaves in `NOTE_IMPORTS`: its Python has no Triton to import; it imported cuTile; how many of
    its captures could not be written."""
    FIX_TMA_SCOPE = EnvVar("TRITONHOOK_FIX_TMA_SCOPE", False, _tma_scope,
                           "A child process rewrites TMA loads to CTA scope (tma_scope): '1' those of sm_12x targets, "
                           "'all' every target's, other text those of targets starting with it ('sm_120').",
                           _tma_scope_text)
    BOOTSTRAP_DIR = Path(__file__).parent / "_bootstrap"
    """tritonhook's sitecustomize, put first on a capturing child's PYTHONPATH (`launcher.ChildSettings`)."""
    GPU = EnvVar("TRITONHOOK_GPU", None, str,
                 "The GPU the capture-time stack-reservation warning quotes (a preflight table name such as rtx5090), "
                 "when no GPU is visible or to override the visible one.")
    DEFAULT_STORE = "tritonhook-store"
    """The store directory when neither an argument nor $TRITONHOOK_STORE names one."""
    REPAIR_MIN_AGE_S = 60.0
    """`Store.verify(repair=True)` leaves younger orphans and temp files: a writer may be mid-capture."""
    HOLD_MAX_AGE_S = 7 * 24 * 3600.0
    """A blob held by a writer on another host (whose liveness this host cannot check) is protected from a repair for
    this long: a week of recording covers any workload; a hold whose writer died there is dropped after it."""
    LS_DEFAULT_LIMIT = 50
    """`tritonhook ls` shows the newest this many, like `git log -n`; a store can hold 100,000."""
    WARN_BYTES = 256 * 2**20
    """Capture warns when a kernel's predicted stack reservation (low end) exceeds this on a GPU it can run on."""


class rename:
    """The kernel-name rename (`rename`)."""

    PREFIX_MAX_CHARS = 64
    """The longest kernel-name prefix a rename takes, wherever one is given (`run --prefix`/`--rename`, a variant's
    prefix, a decision's choice): a name is a PTX symbol and a cache file's name, which tools cap near 255 bytes, and a
    prefix longer than this is a mistake (a pasted path, a runaway variable), not a name."""
    RENAME = EnvVar("TRITONHOOK_RENAME", None, str,
                    "The rename a child process applies in the PTX stage: a prefix, or ':strip' (`rename.encode`).")
    SELECT = EnvVar("TRITONHOOK_SELECT", None, str,
                    "Regex of the kernel names the rename applies to (unset: all kernels).")


class decisions:
    """Decisions applied at compile time (`decisions.apply`)."""

    APPLY = EnvVar("TRITONHOOK_APPLY", None, str,
                   "The decisions a child process applies at compile time: a decisions file, or a store directory "
                   "(its decisions), as `enable(apply=...)` takes them.")
    INDUCTOR_CACHES_OFF = EnvVar(
        "TORCHINDUCTOR_FORCE_DISABLE_CACHES", None, str,
        "Inductor's switch for all its caches (FX graph, autotune): '1' compiles and tunes as a first run does. "
        "`decisions confirm` sets it in every run where its decisions were measured on a first run's builds, where "
        "the applied arm's pins turn the caches off anyway, or with --cold (`decisions.confirm.runs_cold`), so that "
        "the arms differ only in the decisions.")
    DECISIONS_GPU = EnvVar("TRITONHOOK_DECISIONS_GPU", None, str,
                           "The GPU name decisions' keys are matched against (as torch names it: 'NVIDIA H200'), for a "
                           "build without a visible GPU (compiling ahead of time on a CPU host); overrides the visible "
                           "GPU's name.")


class ptxas:
    """Finding and running ptxas (`binaries`), its recording wrapper (`ptxas/`, `tritonhook capture`)."""

    PTXAS = EnvVar("TRITONHOOK_PTXAS", [], _path_list,
                   "Extra ptxas binaries or directories holding one (os.pathsep-separated) for `ptxas` and `diff`.")
    CAPTURE_TOKEN = EnvVar("TRITONHOOK_CAPTURE_TOKEN", None, str,
                           "Set by `tritonhook capture` for its command: a ptxas it wraps in place for the command's "
                           "duration records only the calls of processes that carry the same token.")
    TRITON_PTXAS_PATH = EnvVar("TRITON_PTXAS_PATH", None, str,
                               "Triton's override of the ptxas it runs (below sm_100 in Triton 3.6-3.8, below sm_90 in "
                               "3.9).")
    TRITON_PTXAS_BLACKWELL_PATH = EnvVar("TRITON_PTXAS_BLACKWELL_PATH", None, str,
                                         "Triton's override of the ptxas it runs for newer targets (sm_100+ in Triton "
                                         "3.6-3.8, sm_90+ in 3.9).")
    PTXAS_OPTIONS = EnvVar("PTXAS_OPTIONS", None, str,
                           "Triton's extra ptxas options, space-separated: the default of its compile option "
                           "ptx_options, read when Triton's NVIDIA backend is imported; `ab` appends a variant's opt: "
                           "and acf: parts.")
    PTXAS_TIMEOUT_S = EnvVar("TRITONHOOK_PTXAS_TIMEOUT", 600.0, Number(float, 0, above=True, unit="seconds"),
                             "Seconds one ptxas run that tritonhook starts (a variant build, ptxas-matrix, diff) may "
                             "take before it is killed and reported hung (docs/variants.md#failed-builds); the largest "
                             "attention kernels take ptxas about a minute.")
    TRITON_OVERRIDES = (("triton ptxas", TRITON_PTXAS_PATH), ("triton ptxas-blackwell", TRITON_PTXAS_BLACKWELL_PATH))
    """`find_ptxas` origin of each Triton-bundled ptxas, and the variable with which Triton lets a user replace it."""
    CUDA_HOME = EnvVar("CUDA_HOME", None, str, "A CUDA toolkit root; its bin/ is searched for ptxas and nvdisasm.")
    CUDA_PATH = EnvVar("CUDA_PATH", None, str, "Like CUDA_HOME (the name Windows installers and some images use).")


class cute:
    """The CuTe DSL (`cute/`) and its name swap."""

    CUTE_DSL_DUMP_DIR = EnvVar("CUTE_DSL_DUMP_DIR", None, str, "Where CuTe DSL writes the PTX/cubin it keeps.")
    CUTE_DSL_KEEP = EnvVar("CUTE_DSL_KEEP", "", str, "CuTe DSL 4.5+: comma-separated artifacts to keep (ptx,cubin).")
    CUTE_DSL_KEEP_PTX = EnvVar("CUTE_DSL_KEEP_PTX", False, _flag, "CuTe DSL 4.4: '1' keeps the PTX.")
    CUTE_DSL_KEEP_CUBIN = EnvVar("CUTE_DSL_KEEP_CUBIN", False, _flag, "CuTe DSL 4.4: '1' keeps the cubin.")
    SM120_NAME_PTXAS = EnvVar("SM120_NAME_PTXAS", None, str,
                              "The external ptxas of the CuTe DSL name swap (tests/cute_name_swap.py); default: the "
                              "newest found.")
    SM120_NAME_CACHE = EnvVar("SM120_NAME_CACHE", None, str,
                              "Where the CuTe DSL name swap caches assembled cubins; default: <tmp>/sm120_name_cache.")


class memwatch:
    """memwatch (`memwatch`, `mem/`)."""

    MAX_SNAPSHOTS = 20_000
    """memwatch keeps at most this many hook snapshots; later ones are counted, not stored (before/after always
    kept)."""
    # The sampler's own limits (MAX_SAMPLES, PROCESS_SAMPLE_EVERY) stay in `_nvml_sampler.py`: it runs as a script in
    # a bare child interpreter and imports nothing from tritonhook.
    TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER = EnvVar(
        "TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER", None, str,
        "Inductor's switch for its static CUDA launcher, which bypasses Triton's launch path (and so every launch "
        "hook); a recording and memwatch set it to '0' (docs/triton_hooks.md#neighbouring-tools).")


class ab:
    """A/B (`ab/`, `measure/`): the child protocol the parent sets for each child, and the verdict's limits."""

    AB_OUT = EnvVar("TRITONHOOK_AB_OUT", None, str, "JSON-lines file an A/B child appends its timing records to.")
    AB_VARIANT = EnvVar("TRITONHOOK_AB_VARIANT", None, str,
                        "The A/B child's variant label ('plain', 'cutlass_', ...).")
    AB_ROUND = EnvVar("TRITONHOOK_AB_ROUND", 0, Number(int),
                      "The A/B child's round; outputs are saved in round 0 only.")
    AB_OUTPUTS = EnvVar("TRITONHOOK_AB_OUTPUTS", None, str,
                        "Directory for the round-0 outputs of A/B children (the allclose check across processes).")
    MIN_ROUNDS = 5
    """A/B comparisons run at least this many rounds (fewer give no usable interval)."""
    DEFAULT_MIN_EFFECT = 0.005
    """A/B differences below 0.5% are called "no difference" even when the interval excludes 1: that is the A/A noise
    floor `benchmarks/ab_noise.py` targets, and below it a difference says more about the machine than the kernel."""
    MIN_EFFECT_US = 0.25
    """Nor is a difference below 0.25 µs a launch (`measure.stats.min_effect_at`: the floor of a µs-scale kernel,
    6% of 4 µs; `tritonhook check`'s too): A/A replays of one build against itself read up to 0.24 µs apart with
    intervals excluding 1 at µs scale: 7 of the 8 false rows of a BERT step's (H100), the one false candidate of a
    Transformer + Liger step's (H200, 0.22 µs of 22 µs) and both false regressions of the gate's A/A over 570
    verdicts (H200, 0.23 and 0.19 µs at 5-6 µs, docs/check.md#the-us-floor); no "faster" or "slower" in the kept
    results that was not an A/A's lies below it."""


class sweep:
    """Record and sweep (`sweep/`): a process started with tritonhook's sitecustomize records every Triton launch;
    the replay's rounds, L2 rules and output check; `tune`'s search."""

    RECORD = EnvVar("TRITONHOOK_RECORD", False, _flag,
                    "'1': a Python process started with tritonhook's sitecustomize records every Triton kernel launch "
                    "(arguments, grid, input snapshots, sampled GPU time) into the store at exit (tritonhook.sweep).")
    RECORD_LABEL = EnvVar("TRITONHOOK_RECORD_LABEL", "", str,
                          "The label a recording process files its recording under (the parent `tritonhook record` "
                          "finds its children's recordings by it).")
    RECORD_SAMPLE = EnvVar("TRITONHOOK_RECORD_SAMPLE", 1, Number(int, 1),
                           "A recording looks at about one launch in this many after each kernel's first "
                           "RECORD_EXACT_FIRST (1, the default: every launch); the others cost a lookup, and the "
                           "launch counts per signature become estimates (`tritonhook record|sweep --sample K`).")
    SNAPSHOT_BUDGET = EnvVar("TRITONHOOK_SNAPSHOT_BUDGET", 256 * 2**20, Number(int, unit="bytes"),
                             "Bytes of input tensors snapshotted per launch signature (default 256 MiB); inputs beyond "
                             "it are replayed with synthetic data of the same dtype and shape, and marked so.")
    SNAPSHOT_TOTAL_BUDGET = EnvVar("TRITONHOOK_SNAPSHOT_TOTAL_BUDGET", 8 * 2**30, Number(int, unit="bytes"),
                                   "Bytes of input snapshots per recording process, all signatures together "
                                   "(default 8 GiB), so a long workload cannot fill the disk.")
    RECORD_TIMED_FIRST = 8
    """A recording times (CUDA events) the first this many launches of each signature, then one launch in
    `RECORD_TIME_EVERY`: the per-kernel GPU time stays measured while a launch-bound loop pays for few events (a
    timed launch costs the host a stream hold and two events, more than a launch itself; at one in 256 that is a small
    fraction of the loop's time)."""
    RECORD_TIME_EVERY = 256
    RECORD_SHAPES_PER_KEY = 4
    """A recording benchmarks an autotuner's configs again at up to this many input shapes per tuning key beyond the one
    it tuned at (a key that buckets a length, as trifast's power of two does, runs one pick at every shape of the
    bucket; `AutotuneTracer`), so those signatures have candidates too; a serving loop's every length would otherwise
    cost a benchmark each."""
    RECORD_FRESH_SCALARS = 16
    """A kernel whose launches made this many new signatures in a row, at one grid, each differing from the last at
    the same scalar arguments (a seed, a random-number offset, a step count: a new value at every launch), is keyed
    without those arguments from then on (`_triton.launches.FreshScalars`): its launches are one signature, timed
    and replayed at one of the values, instead of a signature per launch that is never timed. Above the number of
    sizes a model runs one kernel at in one step, which a repeat of any of them ends."""
    RECORD_EXACT_FIRST = 64
    """Launches of each kernel a sampling recording looks at in full before it samples (its signatures are found)."""
    RECORD_COMPILE_THREADS = EnvVar("TRITONHOOK_RECORD_COMPILE_THREADS", 0, Number(int, unit="threads"),
                                    "Threads a recording compiles an autotune decision's configs in, all at once "
                                    "before Triton's benchmark would compile them one at a time; 0 (the default): one "
                                    "per CPU core, at most 16; 1: one at a time, as Triton does. "
                                    "docs/timing.md#compiling-autotune-configs-ahead")
    RECORD_L2_PROBE = EnvVar("TRITONHOOK_RECORD_L2_PROBE", True, _flag,
                             "'0': a recording does not probe what a signature's first timed launches find in L2, nor "
                             "how dirty it is (`sweep.l2probe`; `--l2 measured` then replays those signatures cold, on "
                             "a dirty L2).")
    SWEEP_EXPLAIN_MISSES = EnvVar("TRITONHOOK_SWEEP_EXPLAIN_MISSES", True, _flag,
                                  "'0': a sweep replay does not replay the rows that miss the fidelity bar again under "
                                  "the other L2 rules to say why they missed it (`sweep.misses`).")
    FUSION_NEAR_TIE = EnvVar("TRITONHOOK_FUSION_NEAR_TIE", 0.05, Number(float, 0, unit="fraction"),
                             "How near (a fraction of its time) Inductor's scheduler timed the way it did not take "
                             "for a GEMM template's fusion (fused with a neighbour, or apart) to the way it took for a "
                             "sweep to count that fusion a draw, and its `--confirm` to run it the other way inside "
                             "the workload (`sweep.fusion`). docs/decisions.md#template-fusions-the-other-way")
    REPLAY_REP_MS = EnvVar("TRITONHOOK_REPLAY_REP_MS", 10.0, Number(float, 0, above=True, unit="ms"),
                           "How long each variant's timed calls span in one round of a replay (at least 10 calls; "
                           "its warm-up a quarter of it). The rounds, not the calls in a round, make a verdict's "
                           "interval: 10 ms, not 20, took a max-autotune model's A/A from 149 s to 97 s, every pair "
                           "still 'no difference' (at 5 ms the rounds grew noisier and more of them were needed). "
                           "docs/sweep.md#what-a-replay-round-costs")
    ROW_PRECISION, CANDIDATE_PRECISION, CANDIDATE_CAP = 0.02, 0.05, 11
    """Adaptive rounds (`measure.sequential.StopRule`): a row's rounds stop once each variant's always-valid interval
    against the baseline has decided or is at most 2% wide (relative), an autotune candidate's (only ranked) at 5% or
    11 rounds; `--rounds` is the cap of both, `--fixed-rounds` times every signature the cap."""
    AUTOTUNE_TOP = 4
    """How many of an autotune decision's candidates a sweep replays by default: the 4 fastest in the autotuner's own
    benchmark, and always the config the workload ran (`--autotune-top all`: every one). Coordinate descent and
    `select_algorithm` try tens of configs a decision, most of them far off the pick; the replay's time goes to the
    contenders. 4 is what the regret measurements were taken with (docs/timing.md)."""
    CHECK_ROUNDS = 7
    """Rounds of a sweep's check replays: a row that missed the fidelity bar under the other L2 rules (`sweep.misses`),
    an autotune regret's config against the workload's on one input set (`sweep.replay`): figures set against a ±10%
    tolerance or an output verdict, not a full verdict's interval."""
    DEFAULT_ROUNDS = 21
    """Interleaved rounds per kernel signature in a sweep replay (one median per variant per round). 21, not 7: two
    replays of one recording differ per kernel about half as much at 21 rounds as at 7, for about twice the replay
    time (docs/sweep_fidelity.md#replay-to-replay-spread)."""
    L2_MODES = ("measured", "cold", "warm", "inputs")
    """A sweep replay's L2 rules, the default first: inputs rotated through copies with the parts of each buffer that
    the recording's probe found in L2 inside the workload brought into L2 before each call (measured; a signature
    without a probe replays cold), rotated alone (cold), one set (warm), or rotated with the buffers the kernel only
    reads brought into L2 (inputs). Measured is the default: it replays many more of a workload's signatures within
    the fidelity bar than cold does (docs/sweep_fidelity.md#cold-against-measured)."""
    L2_DIRT = ("measured", "dirty", "half", "clean", "none")
    """How a replay leaves the L2's lines before each call (`--l2-dirt`; `sweep.worker._L2Setup`), the default first: as
    dirty as the recording's dirt probe found it for the signature (measured: dirty where it read dirty or was not
    probed, clean where clean; under `--l2 measured`, every other rotating rule takes dirty;
    docs/sweep_fidelity.md#how-dirty-the-l2-is), an L2-sized buffer written (dirty), copied half onto its other half,
    the read and written lines interleaved (half), read (clean), or left as the previous call left it (none; `--l2 warm`
    always: its one input set is what each call finds in L2)."""
    SYNTHETIC_FILLS = ("random", "zeros")
    """What a replay fills the float tensors it has no snapshot of with (beyond the snapshot budget): random normal, the
    default, or zeros, the miss check's second fill (`sweep.misses`): a kernel whose time moves with it does work that
    depends on values the replay does not have (filters, early exits, sparsity), so its replayed time is not its time
    inside the workload. Other dtypes are zeros under both (valid indices and masks)."""
    RTOL = 1e-2
    """Tolerance of the replay's output check (rtol = atol): outputs beyond the baseline's own run-to-run spread but
    within it are "close" (another rounding), beyond it they "differ" (`measure.outputs`)."""
    TUNE_ACF_POOL = 16
    """Control files per pool of `tune --acf-space`'s CompileIQ search (`tune --acf-pool`; CompileIQ's smallest is 6):
    two replays of `sweep.tune.CHUNK` candidates each a generation."""
    TUNE_ACF_GENERATIONS = 4
    """Generations of `tune --acf-space`'s CompileIQ search per kernel (`tune --acf-generations`): with the default
    pool, 64 candidates a kernel unless the budget stops it first."""
    CUDA_VISIBLE_DEVICES = EnvVar("CUDA_VISIBLE_DEVICES", "0", str,
                                  "Which GPU is device 0 for CUDA; NVML ignores it, so tritonhook maps it itself.")
    RAY_USAGE_STATS_ENABLED = EnvVar("RAY_USAGE_STATS_ENABLED", None, str,
                                     "Ray's usage reporting; `--ray` sets it to '0' while connecting unless it is set "
                                     "(a cluster it starts then reports nothing; docs/gpu_machine.md#ray-on-one-host).")
    RAY_AUTH_MODE = EnvVar("RAY_AUTH_MODE", None, str,
                           "Ray's token authentication; benchmarks/sweep_scaling.py's two-node cluster on one host "
                           "runs with 'disabled', as docs/gpu_machine.md#ray-on-one-host does.")


class upgrade:
    """Upgrade and bisect (`upgrade/`): a kernel rebuilt under other Triton releases."""

    RELEASES_DIR = EnvVar("TRITONHOOK_RELEASES_DIR", "~/.cache/tritonhook/releases", str,
                          "Where `tritonhook upgrade` keeps a virtualenv per Triton release (triton-X.Y.Z), made on "
                          "first use and reused; an entry may be a symlink to a virtualenv made elsewhere (the test "
                          "matrix points them at its own).")
    REBUILD_TIMEOUT_S = 1800
    """Seconds the rebuild worker of `tritonhook upgrade` may take for all its kernels (a release that hangs in a
    compile is killed, and the kernels it did not reach say so)."""
    REBUILD_HELPERS_MAX_BYTES = 4 * 2**20
    """Bytes of helper-module text one capture records for its rebuild (the modules defining the `@triton.jit`
    functions its kernel calls; docs/upgrade.md#helpers): past it a module is named as left out, and a rebuild imports
    it from what is installed then. A library's kernel modules are tens of KiB; the cap bounds a pathological chain."""
    SUPPORTED_RELEASES = ("3.6.0", "3.7.1", "3.8.0", "3.9.0")
    """The Triton releases tritonhook supports and tests (scripts/test-matrix.sh), oldest first: the releases
    `tritonhook bisect` searches between --from and --to unless given --releases."""

    BISECT_MOVED_BY = ("either", "time", "outputs")
    """`bisect --time --moved-by`: what moves a kernel (the first is the default). Either answers "what changed
    first"; a float-rounding change ("close" outputs) at one release can hide a slowdown at a later one, which `time`
    finds (and `outputs` the reverse)."""


class check:
    """The regression gate (`check/`, the pytest plugin)."""

    THRESHOLD = 0.03
    """`tritonhook check` (and the pytest plugin) call a kernel regressed when its current build is at least this much
    slower than the baseline's build and the interval excludes no change (`check.gate`, docs/check.md#the-rule): 3% is
    six times the A/A noise floor (`ab.DEFAULT_MIN_EFFECT`)."""

    MAX_UNCHECKED = 0.10
    """`tritonhook check` (and the pytest plugin) fail when the signatures they could not check (no baseline build
    matched, or the replay could not time them) make more than this share of the current run's GPU time
    (`CheckResult.exit_code`, docs/check.md#what-is-not-checked): a gate that matched one kernel in ten would
    otherwise pass on what it never compared. `--max-unchecked 1` lets any share pass."""


class report:
    """The HTML report and the demo (`page/`)."""

    CHROMIUM = EnvVar("TRITONHOOK_CHROMIUM", None, str,
                      "The headless Chromium the report's browser test and benchmarks/report_scale.py drive (default: "
                      "chromium, chromium-browser or google-chrome on PATH).")
    TRITON_CACHE_DIR = EnvVar("TRITON_CACHE_DIR", None, str,
                              "Triton's disk cache; the demo gives each variant its own so no build is a cache hit, "
                              "`ab` each variant with its own ptxas, options or control file.")


class paths:
    """Paths and programs several features share."""

    PYTHONPATH = EnvVar("PYTHONPATH", [], _path_list,
                        "Where tritonhook's sitecustomize is put first for child processes.")
    PATH = EnvVar("PATH", [], _path_list,
                  "Searched for ptxas and nvdisasm; a recording ptxas wrapper goes first on it.")
    CACHE = EnvVar("TRITONHOOK_CACHE", "~/.cache/tritonhook", str,
                   "What tritonhook makes once per machine and keeps: the C helpers it builds (the launch tracer's "
                   "per-launch path), one file per source, Python and platform; ptxas's builds, one per PTX, "
                   "target, arguments, control file and ptxas (ptxas/); nvdisasm's listings, one per cubin, "
                   "arguments and nvdisasm (nvdisasm/).")
    CC = EnvVar("CC", None, str, "The C compiler for tritonhook's C helpers (as for Triton's launchers); else cc, gcc, "
                "clang on PATH.")


class scope:
    """Set environment variables until the block ends (or `close()`), then put back exactly what was there.

        with config.scope({"TRITONHOOK_STORE": "/tmp/s", "TRITONHOOK_ENABLE": "1"}):
            ...

    A value of None removes the variable for the duration. Usable without `with` (a capture session opens one at
    `enable()` and closes it at `disable()`); closing twice is harmless."""

    def __init__(self, values: Mapping[str, str | None], environ: MutableMapping[str, str] | None = None):
        self._environ = os.environ if environ is None else environ
        self._saved: dict[str, str | None] = {}
        for key, value in values.items():
            self._saved.setdefault(key, self._environ.get(key))
            if value is None:
                self._environ.pop(key, None)
            else:
                self._environ[key] = value

    def close(self) -> None:
        saved, self._saved = self._saved, {}
        for key, value in saved.items():
            if value is None:
                self._environ.pop(key, None)
            else:
                self._environ[key] = value

    def __enter__(self) -> "scope":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def store_path(explicit: str | os.PathLike | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """The store directory: `explicit`, else $TRITONHOOK_STORE, else ./tritonhook-store."""
    return Path(explicit or capture.STORE.get(environ) or capture.DEFAULT_STORE)


GROUPS = (capture, rename, decisions, ptxas, cute, memwatch, ab, sweep, upgrade, check, report, paths)
"""The settings' groups, in the order of this file: every setting is an attribute of one of them."""


def declared() -> Iterator[EnvVar]:
    """Every environment variable declared here (for documentation and `tritonhook --help`)."""
    return (value for group in GROUPS for value in vars(group).values() if isinstance(value, EnvVar))


def unreadable(environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per declared variable set to text it cannot read ("$NAME='nan': not a finite number of seconds,
    above 0": the `Number` ones are the variables whose reading can fail), so that a command refuses it before it
    starts, rather than each child process that reads it failing on its own."""
    lines = []
    for var in declared():
        try:
            var.get(environ)
        except ValueError as exc:
            lines.append(str(exc))
    return lines
