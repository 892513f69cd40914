"""Variants: how each arm of a comparison (A/B, sweep, diff, ptxas-matrix) is built: the kernel name it compiles
with, the ptxas binary, ptxas codegen options and a control file (docs/variants.md#the-variant-grammar).

One grammar for every command, so "cutlass_@13.4+opt:-O2" means the same thing to each: comma-separated variants,
each `+`-joined parts: a name (`plain`, `strip` or a prefix) with an optional `@VERSION` or `@/path/to/ptxas`,
then `opt:OPTION` parts (one ptxas option each, `tools.CODEGEN_OPTIONS`) and at most one `acf:FILE`. Everything a
spec names is checked here, before any compile: the prefix, the ptxas (resolved through `tools.find_ptxas`), the
options, the control file (read now and kept with its sha256) and whether that ptxas can read it.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Sequence

from .. import tools
from ..errors import TritonhookError
from ..rename import STRIP, Rename, prefixer, rename_description
from ..tools import ControlFile

PLAIN = "plain"
STRIP_LABEL = "strip"
_PART = re.compile(r"\+(?=opt:|acf:)")  # a path after @ may hold '+'; a part starts with opt: or acf:


@dataclasses.dataclass(frozen=True)
class Variant:
    label: str                # unique within one comparison: "plain", "cutlass_@13.4.92+opt:-O2", "plain#2"
    rename: Rename | None     # None: Triton's own name
    ptxas: str | None = None  # None: the ptxas the frontend (or the capture) used
    options: tuple[str, ...] = ()  # canonical ptxas codegen options (`tools.ptxas_option`)
    controls: ControlFile | None = None

    def describe(self) -> str:
        parts = ["no rename" if self.rename is None else rename_description(self.rename)]
        if self.ptxas:
            parts.append(f"ptxas {tools.ptxas_version(self.ptxas)} ({self.ptxas})")
        parts += self.options
        if self.controls:
            parts.append(f"controls {self.controls.path} (sha256 {self.controls.sha256[:12]})")
        return ", ".join(parts)

    @property
    def assembles(self) -> bool:
        """Whether the variant needs a ptxas run of its own beyond a rename (another ptxas, options, controls):
        the sweep assembles such a variant from the captured PTX, `ab` gives its arm's Triton compile that ptxas,
        those options and the control file (and a Triton cache of its own)."""
        return bool(self.ptxas or self.options or self.controls)

    def with_ptxas(self, path: str) -> Variant:
        """This variant assembled by `path` instead (the sweep's `--ptxas P1,P2` matrix): `@VERSION` goes after
        the name part of the label, "plain#2" -> "plain#2@13.0.88"."""
        version = _version_of(path, f"--ptxas {path}")
        name, plus, rest = self.label.partition("+")
        return dataclasses.replace(self, label=f"{name}@{version}{plus}{rest}", ptxas=path)

    @classmethod
    def from_json(cls, data: dict) -> Variant:
        """The variant `to_json` wrote (a saved result's), as it was: nothing is looked up or read again, since its
        ptxas or control file may be gone since; the control file keeps its path and sha256, not its bytes. The name
        part of the label gives the rename (a result from before the grammar holds only `label`)."""
        name = re.split(r"[@+#]", data["label"], maxsplit=1)[0] or PLAIN
        controls = data.get("controls")
        return cls(data["label"], parse_variant(name).rename, data.get("ptxas"), tuple(data.get("options") or ()),
                   None if controls is None else ControlFile(controls["path"], controls["sha256"], b""))

    def to_json(self) -> dict:
        """What made the variant, as a result records it."""
        return {"label": self.label, "rename": None if self.rename is None else str(self.rename),
                "ptxas": self.ptxas, "ptxas_version": tools.ptxas_version(self.ptxas) if self.ptxas else None,
                "options": list(self.options),
                "controls": None if self.controls is None else {"path": self.controls.path,
                                                               "sha256": self.controls.sha256}}


def parse_variants(spec: str | Sequence[str]) -> list[Variant]:
    """"plain,cutlass_@13.4+opt:-O2" -> variants (the grammar: the module docstring). `plain`: no rename;
    `strip`: remove `cutlass`; anything else: a prefix. A repeated variant (an A/A run) gets `#2`, `#3` so the two
    arms stay apart."""
    texts = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec)]
    if len(texts) < 2 or not all(texts):
        raise TritonhookError(f"variants {spec!r}: give at least two, e.g. plain,cutlass_ (or plain,plain for A/A)")
    variants, seen = [], {}
    for text in texts:
        variant = parse_variant(text)
        seen[variant.label] = seen.get(variant.label, 0) + 1
        if seen[variant.label] > 1:
            variant = dataclasses.replace(variant, label=f"{variant.label}#{seen[variant.label]}")
        variants.append(variant)
    return variants


def parse_variant(text: str) -> Variant:
    """One variant spec (no commas) -> a Variant whose label is the spec normalised: the name (`plain` when only
    `@`, `opt:` or `acf:` parts are given), `@` and the full version of the ptxas, the options in their canonical
    spelling, the control file as given."""
    pieces = _PART.split(text.strip())
    head, parts = ("", pieces) if pieces[0].startswith(("opt:", "acf:")) else (pieces[0], pieces[1:])
    name, at, where = head.partition("@")
    name = name.strip() or PLAIN
    if "+" in name:
        raise TritonhookError(f"variant {text!r}: {name.split('+', 1)[1]!r} is not a part: after '+' give "
                              f"opt:OPTION or acf:FILE")
    if name == PLAIN:
        rename = None
    elif name == STRIP_LABEL:
        rename = STRIP
    else:
        try:
            prefixer(name)  # validates the prefix now rather than in the middle of a compile
        except TritonhookError as exc:
            raise TritonhookError(f"variant {text!r}: {exc}") from None
        rename = name
    ptxas = resolve_ptxas(where.strip(), f"variant {text!r}") if at else None
    options, controls = [], None
    for part in parts:
        kind, _, value = part.partition(":")
        if kind == "opt":
            options.append(tools.ptxas_option(value))
        elif controls is not None:
            raise TritonhookError(f"variant {text!r}: at most one acf: part")
        else:
            controls = tools.read_control_file(value.strip(), spec=f"acf:{value.strip()}")
    if controls is not None and ptxas is not None and (refusal := tools.controls_refusal(controls, ptxas)):
        raise TritonhookError(f"variant {text!r}: {refusal}")
    label = name + (f"@{tools.ptxas_version(ptxas)}" if ptxas else "") + "".join(f"+opt:{o}" for o in options)
    label += f"+acf:{controls.path}" if controls else ""
    return Variant(label, rename, ptxas, tuple(options), controls)


def resolve_ptxas(where: str, what: str) -> str:
    """The ptxas `@WHERE` names: a path (anything with a '/'), or a version among `tools.find_ptxas()`: the one of
    exactly that version, else the newest whose version starts with it (`@13` -> the newest 13.x). `what` names
    the text it came from in errors (a variant, `upgrade --ptxas`)."""
    if "/" in where:
        _version_of(where, f"{what}: @{where}")
        return where
    if not re.fullmatch(r"\d+(\.\d+)*", where):
        raise TritonhookError(f"{what}: @{where}: give a ptxas version (@13.4) or a path (@/path/ptxas)")
    found = tools.find_ptxas()
    exact = [b for b in found if b.version == where]
    matching = exact or sorted((b for b in found if b.version.startswith(where + ".")),
                               key=lambda b: b.release, reverse=True)
    if not matching:
        listed = ", ".join(sorted({b.version for b in found})) or "none"
        raise TritonhookError(f"{what}: no ptxas {where} found (found: {listed}; "
                              f"`tritonhook ptxas list`, or give @/path/to/ptxas)")
    return matching[0].path


def _version_of(path: str, what: str) -> str:
    version = tools.ptxas_version(path)
    if not version:
        raise TritonhookError(f"{what}: not a ptxas that answers --version")
    return version


def build_options(spec: str, command: str) -> tuple[tuple[str, ...], ControlFile | None]:
    """(options, control file) of a spec of `opt:` and `acf:` parts alone, for a command that picks the names
    and ptxas itself (`ptxas-matrix --options`)."""
    variant = parse_variant(spec)
    if variant.rename is not None or variant.ptxas is not None:
        raise TritonhookError(f"{command} {spec!r}: give only opt: and acf: parts (e.g. opt:-O2+acf:FILE.acf); "
                              f"this command picks the kernel names and ptxas itself")
    return variant.options, variant.controls
