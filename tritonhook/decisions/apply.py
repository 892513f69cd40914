"""Decisions applied at compile time (`tritonhook.enable(apply=...)`, `tritonhook run --apply ...`), and the autotune
configs they pin applied at launch.

In the "ptx" stage each compile's key is looked up: the sha256 of the code of the PTX Triton just generated first
(`ptx.code_sha256`: two searches, one hash and one dict lookup per compile; benchmarks/decisions_lookup.py), then, for a
hash a decision names, the target, the ptxas version Triton runs for it and the GPU's name. On an exact match the choice
is applied: its name through the rename the pipeline already does (`rename.rename_in_stage`), its ptxas / options /
control file by building the "cubin" stage with `binaries.assemble` (the flags Triton passes,
`binaries.triton_ptxas_args`, then the choice's), all in-process and per kernel. Every applied compile's metadata says
what was applied (`APPLIED_KEY`), so its capture, and a cache hit of it, records it.

A decision keyed by an autotuned kernel and its tuning key (`AutotuneKey`) pins a config: `triton.autotune`'s
autotuner, called with that tuning key on that GPU, runs the pinned config without benchmarking
(`_triton.AutotunePinner`, installed for the session).

Fail-open: a decision whose choice cannot be resolved when the session starts (its ptxas version is not among
those `binaries.find_ptxas` finds, its control file is not in the store, that ptxas cannot read control files) is
dropped with one warning, and its kernel builds plain; a build that ptxas refuses falls back to Triton's own with
one warning (the rename, already in the PTX, stays and is recorded so). A key that does not match exactly applies
nothing. Applied and plain builds never share a Triton cache entry: the session's cache key names the resolved
decisions (as the rename's names its prefix), so every compile of a session that applies decisions is cached apart
from plain ones.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from pathlib import Path

from .. import _triton, config, ptx as _ptx

from .. import binaries
from ..errors import TritonhookError, warn
from ..preflight import visible_gpu_name
from ..rename import prefixer, rename_in_stage, strip_name
from ..store import Store
from .confirmation import decision_text
from .keep import controls_of, listing
from .model import PLAIN, STRIP, AutotuneKey, Decision, Key, read_file

APPLIED_KEY = "tritonhook_applied"
"""The compile metadata key recording the decision applied: {"decision", "choice", "ptx_sha256", "cubin"}."""


@dataclasses.dataclass(frozen=True)
class Resolved:
    """A decision ready to apply: the ptxas path its version resolved to (None: Triton's), its control file."""

    decision: Decision
    ptxas: str | None
    controls: binaries.ControlFile | None

    @property
    def name(self) -> str:
        """How the capture names it: the decision's id in the store, else its index in the file."""
        return str(self.decision.id)


def _warn(message: str) -> None:
    warn(f"tritonhook: {message}")


def load(source: str | os.PathLike, store: Store) -> list[tuple[Decision, bytes | None]]:
    """The decisions of `source` with their control files' bytes: a decisions file (each refused entry one
    warning), or a store directory (`store` itself when it is that directory), less the decisions its newest
    confirmation of them refuted in the workload (each one warning: a kept decision carries its confirmation, and
    a pin found slower where the job runs is not applied to the job; a decisions file applies what it holds)."""
    path = Path(source)
    if path.is_dir():
        held = store if path.resolve() == store.path.resolve() else Store.of(path, readonly=True)
        kept, found = listing(held, confirmations=True), []
        for line in kept.warnings:
            _warn(f"decision not applied: {line}")
        for decision in kept.decisions:
            said = kept.confirmations.get(decision_text(decision.to_json()))
            if said is not None and said["confirmed"] is False:
                _warn(f"decision {decision.id} ({decision.evidence.kernel}, {decision.choice.label}) not applied: "
                      f"refuted in the workload by confirmation {said['id']}: {said['in words']}")
                continue
            try:
                found.append((decision, controls_of(held, decision)))
            except TritonhookError as exc:
                _warn(f"decision {decision.id} not applied: {exc}")
        return found
    contents = read_file(path)
    for line in contents.refused:
        _warn(f"decision not applied: {line}")
    for index, (decision, _) in enumerate(contents.decisions):
        decision.id = index
    return contents.decisions


def resolve(decisions: list[tuple[Decision, bytes | None]], source: str) -> list[Resolved]:
    """Each build decision's choice resolved on this machine; one that cannot be is dropped with one warning.
    Decisions pinning an autotune config are not builds (`autotune_pins`)."""
    found = binaries.find_ptxas() if any(d.choice.ptxas_version for d, _ in decisions) else []
    resolved = []
    for decision, inline in decisions:
        if isinstance(decision.key, AutotuneKey):
            continue
        what = f"{source} decision {decision.id} ({decision.evidence.kernel}, {decision.choice.label})"
        try:
            ptxas = None
            if decision.choice.ptxas_version:
                exact = [b.path for b in found if b.version == decision.choice.ptxas_version]
                if not exact:
                    raise TritonhookError(f"no ptxas {decision.choice.ptxas_version} found (`tritonhook ptxas list`)")
                ptxas = exact[0]
            controls = None
            if decision.choice.controls_sha256:
                controls = binaries.ControlFile(f"sha256:{decision.choice.controls_sha256}",
                                             decision.choice.controls_sha256, inline)
                tool = ptxas or _triton.triton_ptxas(decision.key.arch)
                if refusal := binaries.controls_refusal(controls, tool):
                    raise TritonhookError(refusal)
            resolved.append(Resolved(decision, ptxas, controls))
        except TritonhookError as exc:
            _warn(f"{what}: builds plain ({exc})")
    return resolved


class Applier:
    """The PTX-stage lookup and the cubin-stage build of one session's decisions."""

    def __init__(self, resolved: list[Resolved], gpu: str | None):
        self.gpu = gpu
        self.by_sha: dict[str, list[Resolved]] = {}
        self.by_kernel: dict[str, list[Resolved]] = {}
        for item in resolved:
            self.by_sha.setdefault(item.decision.key.ptx_sha256, []).append(item)
            self.by_kernel.setdefault(item.decision.evidence.kernel, []).append(item)
        self._warned: set[str] = set()

    @property
    def cache_key(self) -> str:
        """Names every resolved decision (key, choice, the ptxas path and version it resolved to) and the GPU."""
        named = sorted((r.decision.key.short, r.decision.choice.label, r.ptxas or "",
                        binaries.ptxas_version(r.ptxas) if r.ptxas else "") for items in self.by_sha.values()
                       for r in items)
        digest = hashlib.sha256(json.dumps([self.gpu, named]).encode()).hexdigest()[:16]
        return f"decisions:{digest}"

    def lookup(self, ptx: str) -> Resolved | None:
        """The decision whose key this compile matches exactly, None for any other (the common case costs the code's
        sha256 and one dict lookup)."""
        return self._matching(ptx, _ptx.code_sha256(ptx))

    def _matching(self, ptx: str, sha: str) -> Resolved | None:
        candidates = self.by_sha.get(sha)
        if not candidates or self.gpu is None:
            return None
        key = self._key(ptx, sha)
        return next((r for r in candidates if r.decision.key == key), None)

    def _key(self, ptx: str, sha: str) -> Key:
        """This compile's key: its PTX's hash, its target, the ptxas Triton runs for it now, the GPU."""
        arch = _ptx.target(ptx)
        match = re.fullmatch(r"sm_(\d+)[af]?", arch)
        _, ptxas_version = _triton.ptxas_for(int(match.group(1))) if match else (None, None)
        return Key(sha, arch, ptxas_version or "", self.gpu)

    def _warn_built_unlike(self, ptx: str, sha: str, metadata: dict) -> None:
        """One warning per decision whose kernel this process builds with another ptxas, for another arch or GPU
        than the decision's key: it can never apply here (torch's Inductor, for one, points Triton at its own
        ptxas once it compiles asynchronously, so a kernel a cold run built with Triton's ptxas is built with
        torch's in a warm one). Other PTX alone is another specialization of the kernel and says nothing."""
        held = self.by_kernel.get(metadata.get("name") or _ptx.entries(ptx)[0], [])
        pending = [item for item in held if item.name not in self._warned]
        if not pending or self.gpu is None:
            return
        built = self._key(ptx, sha)
        for item in pending:
            key = item.decision.key
            if dataclasses.replace(built, ptx_sha256=key.ptx_sha256) != key:  # more than the PTX differs
                self._warned.add(item.name)
                _warn(f"decision {item.name} ({item.decision.evidence.kernel}, {item.decision.choice.label}) not "
                      f"applied: this process builds the kernel with {key.unlike(built)}; a decision holds for "
                      f"the build it was measured on")

    def ptx_stage(self, ptx: str, metadata: dict) -> str:
        if not self.by_sha:  # pins alone (a confirmation's arm as it is): no compile's code can match
            return ptx
        sha = _ptx.code_sha256(ptx)
        found = self._matching(ptx, sha)
        if found is None:
            self._warn_built_unlike(ptx, sha, metadata)
            return ptx
        choice = found.decision.choice
        metadata[APPLIED_KEY] = {"decision": found.name, "choice": choice.label,
                                 "ptx_sha256": found.decision.key.ptx_sha256, "cubin": "triton"}
        if choice.name == PLAIN:
            return ptx
        original = metadata.get("name") or _ptx.entries(ptx)[0]
        rename = strip_name if choice.name == STRIP else prefixer(choice.name)
        return rename_in_stage(ptx, metadata, original, rename(original))

    def cubin_stage(self, ptx: str, metadata: dict, ptxas_options: dict, build_plain) -> bytes:
        applied = metadata.get(APPLIED_KEY)
        if not applied:
            return build_plain()
        found = next(r for r in self.by_sha[applied["ptx_sha256"]] if r.name == applied["decision"])
        if not found.decision.choice.assembles:
            return build_plain()
        tool = found.ptxas or _triton.triton_ptxas(_ptx.target(ptx))
        flags = binaries.triton_ptxas_args(ptxas_options, _triton.parse_version(_triton.triton_version()))
        try:
            cubin = binaries.assemble(ptx, tool, _ptx.target(ptx), [*flags, *found.decision.choice.options],
                                   controls=found.controls, label=f"{metadata.get('name')} (decision "
                                                                  f"{found.name})",
                                   reuse=False).cubin  # Triton's compile: its own cache, or none where turned off
        except binaries.AssembleError as exc:
            if found.name not in self._warned:
                self._warned.add(found.name)
                _warn(f"decision {found.name}: {exc}; built by Triton's own ptxas instead")
            applied["cubin"] = f"triton (the decision's build failed: {exc.cause})"
            return build_plain()
        applied["cubin"] = f"ptxas {binaries.ptxas_version(tool)}"
        return cubin


def check_source(source: str | os.PathLike) -> str:
    """`source` as an absolute path once it reads as decisions (a file of the format, or a store), so that a typo is
    one line before a command starts rather than a warning in each of its processes."""
    path = Path(source).resolve()
    if path.is_dir():
        Store.of(path, readonly=True)
    else:
        read_file(path)
    return str(path)


def autotune_pins(decisions: list[tuple[Decision, bytes | None]], gpu: str | None) -> _triton.AutotunePinner | None:
    """The pinner running each autotune config a decision pins for this GPU (None when no decision pins one):
    its autotuner skipped for that kernel and tuning key, fail-open (`_triton.AutotunePinner`)."""
    pins = {(d.key.kernel, d.key.tuning_key): dict(d.choice.config) for d, _ in decisions
            if isinstance(d.key, AutotuneKey) and d.key.gpu == gpu}
    return _triton.AutotunePinner(pins) if pins else None


def applier(source: str, store: Store):
    """(ptx_transform, cubin_transform, cache_key, autotune pinner or None) applying the decisions of `source` (a
    file or a store directory) in this process; the GPU is $TRITONHOOK_DECISIONS_GPU, else the visible one's name.
    A source that cannot be read applies nothing, with one warning (`run --apply` checks it before the command
    starts)."""
    try:
        loaded = load(source, store)
    except TritonhookError as exc:  # fail-open: the compile goes on plain, the capture goes on
        _warn(f"no decision applied: {exc}")
        loaded = []
    made = Applier(resolve(loaded, source), config.decisions.DECISIONS_GPU.get() or visible_gpu_name())
    if made.gpu is None and loaded:
        _warn(f"{source}: no GPU visible and ${config.decisions.DECISIONS_GPU.name} unset, so no decision's key can "
              f"match; nothing is applied")
    return made.ptx_stage, made.cubin_stage, made.cache_key, autotune_pins(loaded, made.gpu)
