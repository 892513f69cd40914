"""`upgrade`: which kernel a Triton (or ptxas) upgrade changed, and whether Triton's PTX or ptxas changed it.

An upgrade changes two things at once: the PTX Triton writes and the ptxas that assembles it. Each captured kernel
is built four ways (`result.CELLS`): today's cubin as captured; the captured PTX with the new ptxas; the PTX the
new release writes (rebuilt from the capture's recorded module and specialization, `rebuild`) with the captured
ptxas; and the new release's own cubin. Each is compared with today's cubin (`CubinDelta`: SASS identical,
registers, spills, .text). Everything runs on the CPU: an AOT build for the recorded target needs no GPU.
The timing of the cells is a GPU replay's job: each cell's cubin and metadata are written where a replay takes
its variants from (`UpgradeResult.variants`).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import re
from pathlib import Path

from .. import _triton

from .. import binaries
from .. import ptx as _ptx
from ..cubin import CubinDeltas
from ..errors import TritonhookError
from ..measure.variants import resolve_ptxas
from ..store import TRITON_FRONTENDS, Capture, Store
from ..sweep import load as load_recording
from ..sweep.builds import captured_ptxas
from .worker import Rebuilt, rebuild_captures
from .releases import release_python
from .result import BASELINE, BOTH, PTX_ONLY, PTXAS_ONLY, RESULT_KIND, Cell, KernelUpgrade, UpgradeResult

ABI_METADATA = ("global_scratch_size", "global_scratch_align", "profile_scratch_size", "profile_scratch_align",
                "num_ctas", "cluster_dims", "launch_cooperative_grid", "launch_pdl", "tensordesc_meta")
"""Metadata a launcher reads besides the parameters (scratch buffers it allocates, how it launches, the host TMA
descriptors it builds); a key only one release writes is not compared."""
_ISA_REFUSED = re.compile(r"Unsupported \.version (\d+\.\d+); current version is '(\d+\.\d+)'")


def upgrade(store: Store, *, to: str | None = None, ptxas: str | None = None, recording: str | None = None,
            kernel: str | None = None) -> UpgradeResult:
    """The four cells of every kernel captured in `store` (or launched in `recording`, an id or file), for Triton
    `to` (installed in a virtualenv of its own) and/or the ptxas `ptxas` (a path or version: the new ptxas; alone,
    a CUDA upgrade under the same Triton); `kernel`: only the kernels whose name or entry matches this regex. Saved
    in the store and returned."""
    if to is None and ptxas is None:
        raise TritonhookError("give the release to upgrade to (--to 3.9.0), a ptxas (--ptxas 13.4), or both")
    new_ptxas = resolve_ptxas(ptxas, "--ptxas") if ptxas else None
    captures, recording_id, warnings = _captures(store, recording)  # before a release is installed for nothing
    if kernel is not None:
        pattern = kernel_pattern(kernel)
        if not (captures := [c for c in captures if kernel_matches(pattern, c)]):
            raise TritonhookError(f"{store.path}: no captured Triton kernel matching {kernel!r} to upgrade"
                                  + (f" in recording {recording_id}" if recording_id is not None else ""))
    python = release_python(to) if to else None
    work = store.run_folder("upgrades")
    rebuilt = rebuild_captures(python, store, captures, work / "rebuild") if python else {}
    deltas = CubinDeltas()
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        kernels = list(pool.map(lambda c: _kernel(store, c, rebuilt.get(c.id), new_ptxas, deltas, work / "variants"),
                                captures))
    warnings += [f"capture {k.capture_id} ({k.entry}): Triton {to} has no compile option "
                 f"{', '.join(k.unknown_options)}; rebuilt without" for k in kernels if k.unknown_options]
    result = UpgradeResult(_versions(captures), to, new_ptxas and binaries.ptxas_version(new_ptxas), kernels,
                           str(work / "variants"), recording_id, warnings)
    result.id = store.add_result(RESULT_KIND, result.to_json())
    return result


def kernel_pattern(kernel: str) -> re.Pattern:
    """`--kernel`'s regular expression, or one line saying it is none."""
    try:
        return re.compile(kernel)
    except re.error as exc:
        raise TritonhookError(f"--kernel {kernel!r}: not a regular expression ({exc})") from None


def kernel_matches(pattern: re.Pattern, capture: Capture) -> bool:
    """Whether the captured kernel's name or its entry matches."""
    return bool(pattern.search(capture.kernel) or pattern.search(capture.entry))


def _captures(store: Store, recording: str | None) -> tuple[list[Capture], int | None, list[str]]:
    """The captures to upgrade: a recording's kernels, else every Triton build in the store (one capture per
    Triton cache key: cache hits and loads are the same build; renamed builds are left out)."""
    if recording is not None:
        loaded = load_recording(store, recording)
        ids = sorted({s.capture_id for s in loaded.signatures if s.capture_id is not None})
        missing = sum(1 for s in loaded.signatures if s.capture_id is None)
        warnings = [f"{missing} signature(s) of recording {loaded.id} have no capture (compiled before recording?)"
                    ] if missing else []
        found = store.captures(ids=ids)
    else:
        loaded, warnings, found = None, [], store.captures()
    builds = {}
    for capture in found:
        if capture.frontend in TRITON_FRONTENDS and not capture.renamed and {"ptx", "cubin"} <= set(capture.artifacts):
            builds.setdefault(capture.triton_hash or capture.id, capture)
    if not builds:
        raise TritonhookError(f"{store.path}: no Triton kernel build with its PTX and cubin to upgrade"
                              + (f" in recording {loaded.id}" if loaded else ""))
    return list(builds.values()), loaded.id if loaded else None, warnings


def _versions(captures: list[Capture]) -> str:
    return ", ".join(sorted({c.frontend_version or "?" for c in captures}))


def _kernel(store: Store, capture: Capture, rebuilt: Rebuilt | None, new_ptxas: str | None, deltas: CubinDeltas,
            variants: Path) -> KernelUpgrade:
    """One kernel's cells, their cubins, PTX and metadata written under `variants/<capture id>/`."""
    old_ptx = _ptx.as_text(store.read(capture, "ptx"))
    kernel = KernelUpgrade(capture.id, capture.kernel, capture.entry, capture.arch, capture.specialization, {},
                           ptx_isa=(_isa(old_ptx), None), triton_hash=capture.triton_hash)
    if rebuilt is not None and rebuilt.error:
        kernel.rebuild_error = rebuilt.error
    if rebuilt is not None and rebuilt.ptx is not None:
        _compare_rebuild(kernel, capture, old_ptx, rebuilt)
    kernel.cells = cells_between(store, capture, None, rebuilt, new_ptxas, deltas, variants / str(capture.id))
    return kernel


def cells_between(store: Store, capture: Capture, before: Rebuilt | None, after: Rebuilt | None,
                  new_ptxas: str | None, deltas: CubinDeltas, folder: Path) -> dict[str, Cell]:
    """The cells of `capture`'s kernel between two builds of it, against `before`'s cubin: `before` is the captured
    build (None) or another release's rebuild (`bisect` compares two releases neither of which was captured);
    `after` is the other release's rebuild (None, or failed: the ptxas cell alone), assembled by `new_ptxas` when
    given. Each build's PTX, cubin and metadata are written under `folder/<cell>/`."""
    if before is None:
        old, old_flags = captured_build(store, capture)
    else:
        old = _Build.rebuilt(before, capture.entry)
        old_flags = binaries.triton_ptxas_args(before.metadata, _triton.parse_version(before.triton_version))
    builds = {BASELINE: old}
    new_tool, new_flags = _new_ptxas(capture, after, new_ptxas, old_flags)
    if new_tool:
        builds[PTXAS_ONLY] = old.assembled(new_tool, new_flags, capture.arch)
    if after is not None and after.ptx is not None:
        new = _Build.rebuilt(after, capture.entry)
        gpu = _ptx.target(after.ptx)
        builds[PTX_ONLY] = new.assembled(old.ptxas, old_flags, gpu)
        builds[BOTH] = new if new_ptxas is None else new.assembled(new_ptxas, new_flags, gpu)
    return _cells(builds, capture, deltas, folder)


def captured_build(store: Store, capture: Capture) -> tuple["_Build", list[str]]:
    """The captured build (its PTX, metadata, ptxas and cubin) and the flags its Triton ran ptxas with
    (`binaries.triton_ptxas_args`): what another ptxas assembles the captured PTX with (`_Build.assembled`)."""
    build = _Build(capture.entry, _ptx.as_text(store.read(capture, "ptx")), store.read(capture, "json"),
                   captured_ptxas(capture), store.read(capture, "cubin"))
    return build, binaries.triton_ptxas_args(capture.options, _triton.parse_version(capture.frontend_version))


@dataclasses.dataclass(frozen=True)
class _Build:
    """One cell's build: its kernel's entry, the PTX and metadata it came from, the ptxas that built it, and the
    cubin (or the `AssembleError` that stopped ptxas)."""

    entry: str
    ptx: str
    metadata: bytes
    ptxas: str | None
    cubin: bytes | binaries.AssembleError
    note: str | None = None

    @classmethod
    def rebuilt(cls, rebuilt: Rebuilt, entry: str) -> "_Build":
        """A release's own build of the kernel (`entry`: the captured name, where its metadata names none)."""
        return cls(rebuilt.metadata.get("name", entry), rebuilt.ptx, json.dumps(rebuilt.metadata).encode(),
                   rebuilt.ptxas_path, rebuilt.cubin)

    def assembled(self, ptxas: str, flags: list[str], gpu: str) -> "_Build":
        """This PTX assembled by `ptxas` with `flags` for `gpu`. A PTX ISA newer than that ptxas reads (3.9 writes
        ISA 9.4, ptxas 12.8 reads 8.7) is tried again at the ISA it reads, noted: the PTX change alone can be
        measured wherever the new PTX uses no newer instruction (ptxas refuses the one that does)."""
        try:
            return dataclasses.replace(self, ptxas=ptxas, cubin=self._assemble(self.ptx, ptxas, flags, gpu))
        except binaries.AssembleError as exc:
            if not (match := _ISA_REFUSED.search(str(exc))):
                return dataclasses.replace(self, ptxas=ptxas, cubin=exc)
            lowered = _ptx.with_isa_version(self.ptx, match.group(2))
            try:
                cubin = self._assemble(lowered, ptxas, flags, gpu)
            except binaries.AssembleError as again:
                return dataclasses.replace(self, ptxas=ptxas, cubin=binaries.AssembleError(
                    "unsupported", f"{exc}; at ISA {match.group(2)}: {again}"))
            note = f"PTX ISA {match.group(1)} lowered to {match.group(2)}, which ptxas reads"
            return dataclasses.replace(self, ptx=lowered, ptxas=ptxas, cubin=cubin, note=note)

    def _assemble(self, ptx: str, ptxas: str, flags: list[str], gpu: str) -> bytes:
        return binaries.assemble(ptx, ptxas, gpu, flags, label=f"{self.entry} PTX").cubin


def _new_ptxas(capture: Capture, rebuilt: Rebuilt | None, new_ptxas: str | None,
               old_flags: list[str]) -> tuple[str | None, list[str]]:
    """The new ptxas (`--ptxas`, else the one the new release ran for this target; None: none known) and its
    flags: those of the release after the upgrade (the new one's, or the capture's own for a ptxas upgrade)."""
    tool = new_ptxas or (rebuilt.ptxas_path if rebuilt is not None else None)
    if rebuilt is None or rebuilt.triton_version is None:
        return tool, old_flags
    options = rebuilt.metadata or capture.options  # a kernel the release did not compile: the captured options
    return tool, binaries.triton_ptxas_args(options, _triton.parse_version(rebuilt.triton_version))


def _cells(builds: dict[str, _Build], capture: Capture, deltas: CubinDeltas, folder: Path) -> dict[str, Cell]:
    base = builds[BASELINE]
    cells = {}
    for name, build in builds.items():
        version = (binaries.ptxas_version(build.ptxas) or capture.ptxas_version) if build.ptxas else None
        if isinstance(build.cubin, binaries.AssembleError):
            cells[name] = _refused(build.cubin, version)
            continue
        variant = folder / name.replace(", ", "+").replace(" ", "_")
        variant.mkdir(parents=True, exist_ok=True)
        for file, data in (("kernel.cubin", build.cubin), ("metadata.json", build.metadata),
                           ("kernel.ptx", build.ptx.encode())):
            (variant / file).write_bytes(data)
        try:
            delta = None if name == BASELINE else deltas.between(base.cubin, build.cubin, base.entry, build.entry)
        except TritonhookError as exc:
            cells[name] = Cell("error", version, error=str(exc), variant=str(variant))
            continue
        cells[name] = Cell("ok", version, delta, variant=str(variant), note=build.note)
    return cells


def _refused(error: binaries.AssembleError, version: str | None) -> Cell:
    """A failed build; a PTX ISA newer than this ptxas reads, and needed (`_Build.assembled`), is "unsupported"."""
    if match := _ISA_REFUSED.search(str(error)):
        return Cell("unsupported", version, error=f"PTX ISA {match.group(1)} needs a ptxas newer than {version} "
                                                  f"(it reads ISA {match.group(2)} at most, and the PTX needs more: "
                                                  f"{_first_error(str(error).rpartition('; at ISA ')[2])})")
    return Cell(error.cause, version, error=str(error))


def _first_error(message: str) -> str:
    """ptxas's first error of an `AssembleError` message (after its 'rejected it ... :' preamble)."""
    return message.partition("): ")[2].split(" | ")[0] or message


def _compare_rebuild(kernel: KernelUpgrade, capture: Capture, old_ptx: str, rebuilt: Rebuilt) -> None:
    """Whether the PTX changed, and whether today's launcher launches the rebuilt kernel as it is."""
    kernel.ptx_changed = old_ptx != rebuilt.ptx
    kernel.ptx_isa = (_isa(old_ptx), _isa(rebuilt.ptx))
    kernel.unknown_options = list(rebuilt.unknown_options)
    changes = []
    old_params = _ptx.entry_parameters(old_ptx, capture.entry) or []
    new_params = _ptx.entry_parameters(rebuilt.ptx, rebuilt.metadata.get("name", capture.entry)) or []
    if old_params != new_params:
        changes.append(f"parameters {len(old_params)}→{len(new_params)}" if len(old_params) != len(new_params) else
                       "parameter types " + ", ".join(f"{i}: {a}→{b}" for i, (a, b) in
                                                      enumerate(zip(old_params, new_params)) if a != b))
    changes += [f"{key} {capture.metadata[key]}→{rebuilt.metadata[key]}" for key in ABI_METADATA
                if key in capture.metadata and key in rebuilt.metadata
                and capture.metadata[key] != rebuilt.metadata[key]]
    kernel.abi = f"not replayable across these releases: {'; '.join(changes)}" if changes else None


def _isa(ptx: str) -> str:
    version = _ptx.isa_version(ptx)
    return f"{version[0]}.{version[1]}" if version else "?"
