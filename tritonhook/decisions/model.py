"""A decision as data: its key, its choice, its evidence; the portable file and the one validator every entry of
it (and every row the store hands back) goes through.

Why one validator for the file and the store: a decisions file is shipped with a model and may come from anyone, so
what it holds must be data tritonhook knows, never code: a name prefix of the kernel-name grammar or a keyword, a
ptxas *version* (resolved only among the binaries `binaries.find_ptxas` finds, when applied), options of the codegen
allow-list (`binaries.ptxas_option`), a control file carried as bytes (stored by its sha256, never a path). Anything
else, unknown fields, wrong types and oversized values included, refuses that entry with one line naming the file, the
entry's index and what is wrong; the other entries are kept.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import json
import math
import os
import re

from .. import config as settings, format  # `config`, in this module, is an autotune config

from .. import binaries
from ..measure.variants import config_text
from ..errors import TritonhookError
from ..files import read_input

RESULT_KIND = "decision"
FORMAT, VERSION = "tritonhook-decisions", 1
PLAIN, STRIP = "plain", "strip"
MAX_FILE_BYTES = 64 << 20
"""A decisions file larger than this is refused (a control file is at most `binaries.CONTROL_FILE_LIMIT`)."""
MAX_OPTIONS = 16
MAX_TEXT = 256
"""The longest free text an entry holds (a GPU name, a kernel name in the evidence)."""
_PREFIX = re.compile(rf"[A-Za-z_][A-Za-z0-9_]{{0,{settings.rename.PREFIX_MAX_CHARS - 1}}}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_ARCH = re.compile(r"sm_\d{2,3}[af]?")
_VERSION = re.compile(r"\d{1,3}(\.\d{1,4}){1,3}")
_PRINTABLE = re.compile(r"[\x20-\x7e]*")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
MAX_CONFIG_ITEMS = 32


@dataclasses.dataclass(frozen=True)
class Key:
    """What a compile must match exactly for a decision to apply: the sha256 of its PTX's code as Triton generated
    it (before any rename; `ptx.code_sha256`: comments and the source file's path left out), the PTX target, the
    version of the ptxas Triton would run for it, the GPU's name."""

    ptx_sha256: str
    arch: str
    ptxas_version: str
    gpu: str

    @property
    def short(self) -> str:
        return f"{self.ptx_sha256[:12]} {self.arch} ptxas {self.ptxas_version} {self.gpu}"

    def unlike(self, other: "Key") -> str:
        """How a build under `other` differs from this key, in words: why a decision keyed so did not apply to it
        (one kernel built by another ptxas gets other PTX too: Triton writes the PTX ISA that ptxas reads)."""
        parts = [f"{what} {theirs}, not {ours}" for what, ours, theirs in (
            ("ptxas", self.ptxas_version, other.ptxas_version), ("arch", self.arch, other.arch),
            ("GPU", self.gpu, other.gpu)) if ours != theirs]
        return "; ".join([*parts, *(["other PTX"] if other.ptx_sha256 != self.ptx_sha256 else [])]) or "the same key"


@dataclasses.dataclass(frozen=True)
class AutotuneKey:
    """What an autotuned launch must match for a decision pinning its config: the kernel's name (its Python
    function, as `triton.autotune`'s Autotuner names it), the autotuner's tuning key as text (the values of its
    `key` arguments, then the argument dtypes: what a recording's autotune decision holds), the GPU's name."""

    kernel: str
    tuning_key: tuple[str, ...]
    gpu: str

    @property
    def short(self) -> str:
        return f"{self.kernel} [{', '.join(self.tuning_key)}] {self.gpu}"


@dataclasses.dataclass(frozen=True)
class Choice:
    """What a decision builds the kernel with: a name (`plain`, `strip` or a prefix), a ptxas version (None: the
    one Triton runs), codegen options, a control file by its sha256 (its bytes in the store or in the file); or, for
    an `AutotuneKey`, the autotune config it runs (`config`: its values, the autotuner skipped)."""

    name: str = PLAIN
    ptxas_version: str | None = None
    options: tuple[str, ...] = ()
    controls_sha256: str | None = None
    config: tuple[tuple[str, object], ...] = ()

    @property
    def label(self) -> str:
        """The choice in the variant grammar (docs/variants.md), with the control file by hash."""
        text = self.name + (f"@{self.ptxas_version}" if self.ptxas_version else "")
        text += "".join(f"+opt:{o}" for o in self.options)
        text += f"+acf:sha256:{self.controls_sha256[:12]}" if self.controls_sha256 else ""
        return text + (f"+config:{config_text(self.config)}" if self.config else "")

    @property
    def assembles(self) -> bool:
        """Whether applying it runs a ptxas of its choosing (another binary, options, a control file)."""
        return bool(self.ptxas_version or self.options or self.controls_sha256)


@dataclasses.dataclass(frozen=True)
class Evidence:
    """Why: the measured ratio to plain with its interval, the outputs check, where it was measured."""

    kernel: str
    ratio: float
    low: float | None
    high: float | None
    outputs: str
    date: str
    tritonhook_version: str
    source_kind: str
    source_id: int | None


@dataclasses.dataclass
class Decision:
    key: Key | AutotuneKey
    choice: Choice
    evidence: Evidence
    id: int | None = None          # in the store's results table
    warning_prefix = "tritonhook decisions"

    def to_json(self, *, controls: bytes | None = None) -> dict:
        """The entry as the store and the file keep it; `controls`: the control file's bytes, inlined (base64) in
        an exported file."""
        choice = dataclasses.asdict(self.choice)
        choice["options"] = list(self.choice.options)
        choice["config"] = dict(self.choice.config) or None
        sha = choice.pop("controls_sha256")
        choice["controls"] = None if sha is None else {"sha256": sha, **(
            {"base64": base64.b64encode(controls).decode()} if controls is not None else {})}
        key = dataclasses.asdict(self.key)
        if isinstance(self.key, AutotuneKey):
            key["tuning_key"] = list(self.key.tuning_key)
        data = {"key": key, "choice": choice, "evidence": dataclasses.asdict(self.evidence)}
        return data if self.id is None else {**data, "id": self.id}

    def checked(self, where: str) -> "Decision":
        """This decision, once it reads back as a file's entry or the store's row is read (`parse_entry`): a writer
        refuses, naming `where`, what every reader would refuse, rather than keep a decision never applied."""
        parse_entry(self.to_json(), where=where, controls_inline=False)
        return self

    @classmethod
    def from_store(cls, record: dict, *, source: str = "decision") -> "Decision":
        """A row of the store, validated as a file's entry is (its control file's bytes are in the store)."""
        data = {k: v for k, v in record.items() if k not in ("id", "created")}
        decision, _ = parse_entry(data, where=source, controls_inline=False)
        decision.id = record.get("id")
        return decision

    def __rich_console__(self, console, options):
        ev = self.evidence
        interval = f" [{ev.low:.3f}, {ev.high:.3f}]" if ev.low is not None and ev.high is not None else ""
        key = ([("autotuned kernel", self.key.kernel), ("tuning key", ", ".join(self.key.tuning_key))]
               if isinstance(self.key, AutotuneKey) else
               [("PTX sha256", self.key.ptx_sha256), ("arch", self.key.arch), ("ptxas (key)", self.key.ptxas_version)])
        yield format.table(("field", "value"), [
            ("id", str(self.id) if self.id is not None else "-"), ("kernel", ev.kernel), *key,
            ("GPU", self.key.gpu), ("choice", self.choice.label),
            ("evidence", f"x{ev.ratio:.3f}{interval}, outputs {ev.outputs}"),
            ("from", f"{ev.source_kind} result {ev.source_id}" if ev.source_id is not None else ev.source_kind),
            ("date", ev.date), ("tritonhook", ev.tritonhook_version)], title="tritonhook decision")


# ----- validation -------------------------------------------------------------------------------------------------
class _Refused(Exception):
    """What is wrong with one entry (the caller adds the file and the index)."""


def _fields(value, wanted: dict[str, tuple], what: str) -> dict:
    """`value` as a dict with exactly the keys of `wanted` (name -> accepted types)."""
    if not isinstance(value, dict):
        raise _Refused(f"{what}: an object expected, got {_kind(value)}")
    unknown = sorted(set(value) - set(wanted))
    if unknown:
        raise _Refused(f"{what}: unknown field {_short(unknown[0])}")
    for name, types in wanted.items():
        if name not in value:
            raise _Refused(f"{what}.{name}: missing")
        item = value[name]
        if isinstance(item, bool) and bool not in types or not isinstance(item, types):
            expected = " or ".join(dict.fromkeys(_kind_name(t) for t in types))
            raise _Refused(f"{what}.{name}: {_kind(item)} where {expected} expected")
    return value


def _text(value: str, what: str, *, pattern: re.Pattern = _PRINTABLE, limit: int = MAX_TEXT) -> str:
    if len(value) > limit:
        raise _Refused(f"{what}: {len(value)} characters, at most {limit}")
    if not pattern.fullmatch(value):
        raise _Refused(f"{what}: {_short(value)} is not {_PATTERN_WORDS.get(pattern, 'printable text')}")
    return value


def parse_entry(data, *, where: str, controls_inline: bool) -> tuple[Decision, bytes | None]:
    """One entry -> (Decision, its control file's bytes when `controls_inline`); `TritonhookError` "WHERE: what is
    wrong" otherwise. Nothing here runs a program or touches a file."""
    try:
        return _parse(data, controls_inline)
    except _Refused as exc:
        raise TritonhookError(f"{where}: {exc}") from None


def _parse_key(key) -> Key | AutotuneKey:
    """A PTX key, or an autotune key (`tuning_key` present): a kernel name and its tuning key as texts (the
    autotuner's key values and dtypes, or Inductor's `source:` and the 64-digit hash of the kernel's source
    without its name)."""
    if isinstance(key, dict) and "tuning_key" in key:
        key = _fields(key, {"kernel": (str,), "tuning_key": (list,), "gpu": (str,)}, "key")
        if len(key["tuning_key"]) > MAX_OPTIONS:
            raise _Refused(f"key.tuning_key: {len(key['tuning_key'])} parts, at most {MAX_OPTIONS}")
        for i, part in enumerate(key["tuning_key"]):
            if not isinstance(part, str):
                raise _Refused(f"key.tuning_key[{i}]: {_kind(part)} where a string expected")
            _text(part, f"key.tuning_key[{i}]")
        return AutotuneKey(_text(key["kernel"], "key.kernel", pattern=_IDENTIFIER, limit=MAX_TEXT),
                           tuple(key["tuning_key"]),
                           _text(key["gpu"], "key.gpu"))
    key = _fields(key, {"ptx_sha256": (str,), "arch": (str,), "ptxas_version": (str,), "gpu": (str,)}, "key")
    return Key(_text(key["ptx_sha256"], "key.ptx_sha256", pattern=_SHA256, limit=64),
               _text(key["arch"], "key.arch", pattern=_ARCH, limit=8),
               _text(key["ptxas_version"], "key.ptxas_version", pattern=_VERSION, limit=24),
               _text(key["gpu"], "key.gpu"))


def _parse_config(config) -> tuple[tuple[str, object], ...]:
    """An autotune config's values: short names and numbers, booleans, null or short texts (data, never code)."""
    if config is None:
        return ()
    if not isinstance(config, dict) or not config or len(config) > MAX_CONFIG_ITEMS:
        raise _Refused(f"choice.config: an object of 1 to {MAX_CONFIG_ITEMS} values expected")
    for name, value in config.items():
        _text(name, "choice.config name", pattern=_IDENTIFIER, limit=64)
        if isinstance(value, str):
            _text(value, f"choice.config.{name}", limit=64)
        elif not isinstance(value, (int, float, bool, type(None))):
            raise _Refused(f"choice.config.{name}: {_kind(value)} where a number, boolean, null or text expected")
    return tuple(config.items())


def _parse(data, controls_inline: bool) -> tuple[Decision, bytes | None]:
    entry = _fields(data, {"key": (dict,), "choice": (dict,), "evidence": (dict,)}, "entry")
    parsed_key = _parse_key(entry["key"])
    choice = entry["choice"]
    config = _parse_config(choice.get("config")) if isinstance(choice, dict) else ()
    if isinstance(choice, dict):  # "config" is optional: files written before it have none
        choice = {k: v for k, v in choice.items() if k != "config"}
    choice = _fields(choice, {"name": (str,), "ptxas_version": (str, type(None)), "options": (list,),
                              "controls": (dict, type(None))}, "choice")
    pins = isinstance(parsed_key, AutotuneKey)
    if pins != bool(config):
        raise _Refused("an autotune key (kernel, tuning_key) goes with a choice.config, and only with one")
    if pins and (choice["name"] != PLAIN or choice["ptxas_version"] or choice["options"] or choice["controls"]):
        raise _Refused("a decision pinning an autotune config chooses nothing else (name plain, no ptxas, options "
                       "or control file)")
    name = _text(choice["name"], "choice.name", pattern=_PREFIX, limit=settings.rename.PREFIX_MAX_CHARS)
    version = choice["ptxas_version"]
    if version is not None:
        _text(version, "choice.ptxas_version (a ptxas version such as 13.0.88, never a path)", pattern=_VERSION,
              limit=24)
    if len(choice["options"]) > MAX_OPTIONS:
        raise _Refused(f"choice.options: {len(choice['options'])} options, at most {MAX_OPTIONS}")
    options = []
    for i, option in enumerate(choice["options"]):
        if not isinstance(option, str):
            raise _Refused(f"choice.options[{i}]: {_kind(option)} where a string expected")
        _text(option, f"choice.options[{i}]", limit=64)
        try:
            options.append(binaries.ptxas_option(option, where=""))
        except TritonhookError as exc:
            raise _Refused(f"choice.options[{i}]: {exc}") from None
    controls, data_bytes = choice["controls"], None
    if controls is not None:
        wanted = {"sha256": (str,), **({"base64": (str,)} if controls_inline else {})}
        _fields(controls, wanted, "choice.controls")
        sha = _text(controls["sha256"], "choice.controls.sha256", pattern=_SHA256, limit=64)
        if controls_inline:
            text = controls["base64"]
            if len(text) > (binaries.CONTROL_FILE_LIMIT + 2) // 3 * 4:
                raise _Refused(f"choice.controls.base64: {len(text)} characters, a control file is at most "
                               f"{binaries.CONTROL_FILE_LIMIT} bytes")
            try:
                data_bytes = base64.b64decode(text, validate=True)
            except (binascii.Error, ValueError):
                raise _Refused("choice.controls.base64: not base64") from None
            if not data_bytes or hashlib.sha256(data_bytes).hexdigest() != sha:
                raise _Refused("choice.controls: the bytes do not hash to its sha256")
    evidence = _fields(entry["evidence"], {
        "kernel": (str,), "ratio": (int, float), "low": (int, float, type(None)), "high": (int, float, type(None)),
        "outputs": (str,), "date": (str,), "tritonhook_version": (str,), "source_kind": (str,),
        "source_id": (int, type(None))}, "evidence")
    for field in ("kernel", "outputs", "date", "tritonhook_version", "source_kind"):
        _text(evidence[field], f"evidence.{field}")
    for field in ("ratio", "low", "high"):
        _ratio(evidence[field], f"evidence.{field}")
    parsed = Decision(parsed_key, Choice(name, version, tuple(options), controls and controls["sha256"], config),
                      Evidence(**evidence))
    return parsed, data_bytes


def _ratio(value, what: str) -> None:
    """A time ratio (new / plain) is a finite number above 0, or null where a bound is not known: JSON's parser in
    Python reads NaN, Infinity and -3 as numbers, and a decision on such evidence would be exported as
    `"ratio": NaN`, which no strict JSON parser reads."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise _Refused(f"{what}: {_short(value)}, where a ratio of two times (a finite number above 0) expected")


_PATTERN_WORDS = {_PREFIX: "a name prefix (letters, digits and '_', not starting with a digit) nor plain/strip",
                  _IDENTIFIER: "a name (letters, digits, '_' and '.', not starting with a digit)",
                  _SHA256: "a sha256 (64 lowercase hex digits)", _ARCH: "a target such as sm_90a",
                  _VERSION: "a version such as 13.0.88"}


def _kind(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _kind_name(t: type) -> str:
    return _kind({dict: {}, list: [], str: "", bool: True, type(None): None, int: 0, float: 0.0}[t])


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "...'"


# ----- the portable file ------------------------------------------------------------------------------------------
@dataclasses.dataclass
class FileContents:
    """A decisions file read and checked: the entries kept (with their control files' bytes), the refusals (one
    line each, naming the file and the entry's index)."""

    path: str
    decisions: list[tuple[Decision, bytes | None]]
    refused: list[str]


def read_file(path: str | os.PathLike) -> FileContents:
    """Read and validate a decisions file. The whole file is refused (a `TritonhookError`, one line) when it is not
    a file of this format (missing, too large, not JSON, truncated, another format or version); an entry that is
    wrong is refused alone."""
    where = str(path)
    try:
        data = json.loads(read_input(path, "decisions", limit=MAX_FILE_BYTES))
    except (ValueError, RecursionError) as exc:
        raise TritonhookError(f"{where}: not a decisions file (not JSON: {str(exc)[:80]})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise TritonhookError(f"{where}: not a decisions file (no \"format\": \"{FORMAT}\")")
    if data.get("version") != VERSION:
        raise TritonhookError(f"{where}: decisions file version {_short(data.get('version'))}, this tritonhook "
                              f"reads version {VERSION}")
    if not isinstance(data.get("decisions"), list):
        raise TritonhookError(f"{where}: \"decisions\" is {_kind(data.get('decisions'))} "
                              f"({_short(data.get('decisions'))}), where a list of decisions is expected")
    if unknown := sorted(set(data) - {"format", "version", "decisions", "tritonhook_version"}):
        raise TritonhookError(f"{where}: unknown field {_short(unknown[0])}")
    kept, refused = [], []
    for index, entry in enumerate(data["decisions"]):
        try:
            kept.append(parse_entry(entry, where=f"{where} entry {index}", controls_inline=True))
        except TritonhookError as exc:
            refused.append(str(exc))
    return FileContents(where, kept, refused)


def file_json(decisions: list[tuple[Decision, bytes | None]], version: str) -> dict:
    """The portable file's JSON: every decision with its control file inline, no store ids."""
    entries = []
    for decision, controls in decisions:
        entry = dataclasses.replace(decision, id=None).to_json(controls=controls)
        entries.append(entry)
    return {"format": FORMAT, "version": VERSION, "tritonhook_version": version, "decisions": entries}

