"""Variants: how each arm of a comparison (A/B, sweep, diff, ptxas-matrix) is built: the kernel name it compiles
with, the ptxas binary, ptxas codegen options and a control file (docs/variants.md#the-variant-grammar).

One grammar for every command, so "cutlass_@13.4+opt:-O2" means the same thing to each: comma-separated variants,
each `+`-joined parts: a name (`plain`, `strip` or a prefix) with an optional `@VERSION` or `@/path/to/ptxas`,
then `opt:OPTION` parts (one ptxas option each, `binaries.CODEGEN_OPTIONS`), at most one `acf:FILE` and at most one
`config:NAME=VALUE,...` (an autotuned kernel's config: the sweep times the variant at the candidate with those
values, and a decision can pin it; its commas stay inside the part, as a variant never holds a `=` outside
one). Everything a spec names is checked here, before any compile: the prefix, the ptxas (resolved through
`binaries.find_ptxas`), the options, the control file (read now and kept with its sha256) and whether that ptxas can
read it.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Sequence

from .. import binaries
from ..errors import TritonhookError
from ..rename import STRIP, Rename, prefixer, rename_description
from ..binaries import ControlFile

PLAIN = "plain"
STRIP_LABEL = "strip"
_PART = re.compile(r"\+(?=opt:|acf:|config:)")  # a path after @ may hold '+'; a part starts with its kind
_CONFIG_ITEM = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([^,=]*?)\s*")
MAX_CONFIG_ITEMS = 32


@dataclasses.dataclass(frozen=True)
class Variant:
    label: str                # unique within one comparison: "plain", "cutlass_@13.4.92+opt:-O2", "plain#2"
    rename: Rename | None     # None: Triton's own name
    ptxas: str | None = None  # None: the ptxas the frontend (or the capture) used
    options: tuple[str, ...] = ()  # canonical ptxas codegen options (`binaries.ptxas_option`)
    controls: ControlFile | None = None
    config: tuple[tuple[str, object], ...] = ()  # an autotune config's values (`config:` part), in spec order

    def describe(self) -> str:
        parts = ["no rename" if self.rename is None else rename_description(self.rename)]
        if self.ptxas:
            parts.append(f"ptxas {binaries.ptxas_version(self.ptxas)} ({self.ptxas})")
        parts += self.options
        if self.controls:
            parts.append(f"controls {self.controls.path} (sha256 {self.controls.sha256[:12]})")
        if self.config:
            parts.append(f"autotune config {config_text(self.config)}")
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
        """The variant `to_json` wrote (a saved result's), as it was: nothing is looked up or read again, as its
        ptxas or control file may be gone; the control file keeps its path and sha256, not its bytes. The name
        part of the label gives the rename (a result saved by an older tritonhook holds only `label`)."""
        name = re.split(r"[@+#]", data["label"], maxsplit=1)[0] or PLAIN
        controls = data.get("controls")
        return cls(data["label"], parse_variant(name).rename, data.get("ptxas"), tuple(data.get("options") or ()),
                   None if controls is None else ControlFile(controls["path"], controls["sha256"], b""),
                   tuple((data.get("config") or {}).items()))

    def to_json(self) -> dict:
        """What made the variant, as a result records it."""
        return {"label": self.label, "rename": None if self.rename is None else str(self.rename),
                "ptxas": self.ptxas, "ptxas_version": binaries.ptxas_version(self.ptxas) if self.ptxas else None,
                "options": list(self.options),
                "controls": None if self.controls is None else {"path": self.controls.path,
                                                               "sha256": self.controls.sha256},
                "config": dict(self.config) or None}


def parse_variants(spec: str | Sequence[str]) -> list[Variant]:
    """"plain,cutlass_@13.4+opt:-O2" -> variants (the grammar: the module docstring). `plain`: no rename;
    `strip`: remove `cutlass`; anything else: a prefix. A repeated variant (an A/A run) gets `#2`, `#3` so the two
    arms stay apart."""
    texts = _variant_texts(spec.split(",")) if isinstance(spec, str) else [n.strip() for n in spec]
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


def _variant_texts(pieces: list[str]) -> list[str]:
    """The comma-separated pieces of a spec as variants: a `NAME=VALUE` piece continues the `config:` part of the
    variant before it (a variant never holds `=` outside one)."""
    texts: list[str] = []
    for piece in pieces:
        if texts and "+config:" in texts[-1] and _CONFIG_ITEM.fullmatch(piece):
            texts[-1] += "," + piece.strip()
        else:
            texts.append(piece.strip())
    return texts


def parse_config(text: str, *, what: str) -> tuple[tuple[str, object], ...]:
    """"BLOCK_K=128,SPLIT_K=4,num_warps=4" -> (("BLOCK_K", 128), ("SPLIT_K", 4), ("num_warps", 4)): whole numbers,
    decimals, True/False, None or bare words (an input precision such as ieee); data, never code."""
    items = text.split(",")
    if not text.strip() or len(items) > MAX_CONFIG_ITEMS:
        raise TritonhookError(f"{what}: give 1 to {MAX_CONFIG_ITEMS} NAME=VALUE items, e.g. config:BLOCK_K=128,"
                              f"num_warps=4")
    parsed = {}
    for item in items:
        match = _CONFIG_ITEM.fullmatch(item)
        if match is None:
            raise TritonhookError(f"{what}: {item.strip()!r} is not NAME=VALUE")
        name, value = match.groups()
        if name in parsed:
            raise TritonhookError(f"{what}: {name} given twice")
        parsed[name] = _config_value(value)
    return tuple(parsed.items())


def _config_value(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"True": True, "False": False, "None": None}.get(text, text)


def config_text(config) -> str:
    """A config (pairs or a dict) as the grammar writes it: `BLOCK_K=128,num_warps=4`."""
    return ",".join(f"{name}={value}" for name, value in (config.items() if isinstance(config, dict) else config))


def config_of_label(label: str) -> dict | None:
    """The config a variant's label pins (a saved result keeps labels), None when it pins none."""
    _, found, rest = label.partition("+config:")
    if not found:
        return None
    return dict(parse_config(re.split(r"\+(?=opt:|acf:)|#", rest, maxsplit=1)[0], what=f"variant {label!r}"))


def parse_variant(text: str) -> Variant:
    """One variant spec (no commas) -> a Variant whose label is the spec normalised: the name (`plain` when only
    `@`, `opt:` or `acf:` parts are given), `@` and the full version of the ptxas, the options in their canonical
    spelling, the control file as given."""
    pieces = _PART.split(text.strip())
    head, parts = ("", pieces) if pieces[0].startswith(("opt:", "acf:", "config:")) else (pieces[0], pieces[1:])
    name, at, where = head.partition("@")
    name = name.strip() or PLAIN
    if "+" in name:
        raise TritonhookError(f"variant {text!r}: {name.split('+', 1)[1]!r} is not a part: after '+' give "
                              f"opt:OPTION, acf:FILE or config:NAME=VALUE,...")
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
    options, controls, config = [], None, None
    for part in parts:
        kind, _, value = part.partition(":")
        if kind == "opt":
            options.append(binaries.ptxas_option(value))
        elif kind == "config":
            if config is not None:
                raise TritonhookError(f"variant {text!r}: at most one config: part")
            config = parse_config(value, what=f"variant {text!r}")
        elif controls is not None:
            raise TritonhookError(f"variant {text!r}: at most one acf: part")
        else:
            controls = binaries.read_control_file(value.strip(), spec=f"acf:{value.strip()}")
    if controls is not None and ptxas is not None and (refusal := binaries.controls_refusal(controls, ptxas)):
        raise TritonhookError(f"variant {text!r}: {refusal}")
    label = name + (f"@{binaries.ptxas_version(ptxas)}" if ptxas else "") + "".join(f"+opt:{o}" for o in options)
    label += f"+acf:{controls.path}" if controls else ""
    label += f"+config:{config_text(config)}" if config else ""
    return Variant(label, rename, ptxas, tuple(options), controls, config or ())


def refuse_configs(variants: Sequence[Variant], command: str) -> None:
    """A `config:` part means something only where autotune candidates are replayed (`sweep`, `replay`, `tune`'s
    arms): every other command refuses it in one line rather than ignore it."""
    for variant in variants:
        if variant is not None and variant.config:
            raise TritonhookError(f"variant {variant.label!r}: a config: part applies to autotuned kernels in "
                                  f"`tritonhook sweep` / `replay`; {command} builds one kernel as it is")


def resolve_ptxas(where: str, what: str) -> str:
    """The ptxas `@WHERE` names: a path (anything with a '/'), or a version among `binaries.find_ptxas()`: the one of
    exactly that version, else the newest whose version starts with it (`@13` -> the newest 13.x). `what` names
    the text it came from in errors (a variant, `upgrade --ptxas`)."""
    if "/" in where:
        _version_of(where, f"{what}: @{where}")
        return where
    if not re.fullmatch(r"\d+(\.\d+)*", where):
        raise TritonhookError(f"{what}: @{where}: give a ptxas version (@13.4) or a path (@/path/ptxas)")
    found = binaries.find_ptxas()
    exact = [b for b in found if b.version == where]
    matching = exact or sorted((b for b in found if b.version.startswith(where + ".")),
                               key=lambda b: b.release, reverse=True)
    if not matching:
        listed = ", ".join(sorted({b.version for b in found})) or "none"
        raise TritonhookError(f"{what}: no ptxas {where} found (found: {listed}; "
                              f"`tritonhook ptxas list`, or give @/path/to/ptxas)")
    return matching[0].path


def _version_of(path: str, what: str) -> str:
    version = binaries.ptxas_version(path)
    if not version:
        raise TritonhookError(f"{what}: not a ptxas that answers --version")
    return version


def build_options(spec: str, command: str) -> tuple[tuple[str, ...], ControlFile | None]:
    """(options, control file) of a spec of `opt:` and `acf:` parts alone, for a command that picks the names
    and ptxas itself (`ptxas-matrix --options`)."""
    variant = parse_variant(spec)
    if not spec.strip() or variant.rename is not None or variant.ptxas is not None or variant.config:
        raise TritonhookError(f"{command} {spec!r}: give only opt: and acf: parts (e.g. opt:-O2+acf:FILE.acf); "
                              f"this command picks the kernel names and ptxas itself")
    return variant.options, variant.controls
