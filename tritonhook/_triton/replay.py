"""Replaying launches outside the program that made them: host-side TMA descriptor arguments as plain data and
back, and a compiled kernel loaded from its metadata JSON and cubin, launched by Triton's own launcher.

Separate because only the sweep needs it, the recording (descriptors as data) and the replay worker (loading each
variant, rebuilding its arguments); it builds on the launch tracer's `LaunchSpec`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import types
from pathlib import Path

from ..errors import TritonhookError
from ..files import file_name
from .launches import LaunchSpec
from .version import triton_version


def _host_descriptor_classes() -> dict[str, type]:
    """The host-side TMA descriptor classes of this Triton, by the name a recording keeps for each: Triton's
    (`triton.tools.tensor_descriptor`), Gluon's (`gluon.nvidia.hopper`; `gluon.nvidia.blackwell` re-exports the
    same class in 3.6 and 3.9) and Gluon's im2col one (3.9)."""
    classes = {}
    with contextlib.suppress(ImportError):
        from triton.tools.tensor_descriptor import TensorDescriptor

        classes["triton"] = TensorDescriptor
    with contextlib.suppress(ImportError):
        from triton.experimental.gluon.nvidia import hopper

        classes["gluon"] = hopper.TensorDescriptor
        if hasattr(hopper, "TensorDescriptorIm2Col"):
            classes["gluon_im2col"] = hopper.TensorDescriptorIm2Col
    return classes


def tensor_descriptor_fields(arg) -> dict | None:
    """A host-side TMA descriptor argument as plain data (its base tensor kept as the object); None for anything
    else. `descriptor` names its class; every other field of the dataclass is kept (3.9 added
    `round_f32_to_tf32`), a Gluon descriptor's shared-memory layout as its class name and fields."""
    kind = next((name for name, cls in _host_descriptor_classes().items() if type(arg) is cls), None)
    if kind is None:
        return None
    fields = {"descriptor": kind}
    for field in dataclasses.fields(arg):
        fields[field.name] = _descriptor_field(getattr(arg, field.name)) if field.name != "base" else arg.base
    return fields


def _descriptor_field(value):
    if dataclasses.is_dataclass(value):  # a Gluon layout (NVMMASharedLayout): frozen, its fields plain data
        return {"class": type(value).__name__, **dataclasses.asdict(value)}
    if isinstance(value, (list, tuple)):  # shape and strides come as torch.Size / tuples of ints
        return [int(x) for x in value]
    return value


def make_tensor_descriptor(base, fields: dict):
    """The descriptor `tensor_descriptor_fields` described (`fields`: what it returned but the base), over `base`.
    Recordings older than the `descriptor` field hold Triton's descriptors."""
    kind = fields.get("descriptor", "triton")
    cls = _host_descriptor_classes().get(kind)
    names = [field.name for field in dataclasses.fields(cls)] if cls is not None else []
    recorded = [name for name in fields if name != "descriptor"]
    if cls is None or set(recorded) - set(names):
        raise TritonhookError(f"a {kind} host TMA descriptor with fields {sorted(recorded)}: Triton "
                              f"{triton_version()} cannot rebuild it (recorded with another Triton version?)")
    values = {name: fields[name] for name in recorded}
    if isinstance(values.get("layout"), dict):
        values["layout"] = _make_layout(values["layout"])
    return cls(base, **values)


def _make_layout(data: dict):
    from triton.experimental.gluon import language as gl

    layout_class = getattr(gl, data["class"], None)
    if not isinstance(layout_class, type):
        raise TritonhookError(f"Gluon layout {data['class']!r}: not in Triton {triton_version()}'s gluon.language")
    return layout_class(**{key: value for key, value in data.items() if key != "class"})


class _ReplaySource:
    """What Triton's launcher reads from a kernel's source (`signature`, `constants` by position, `fn.arg_names`),
    rebuilt from a `LaunchSpec` without the Python function."""

    def __init__(self, spec: LaunchSpec):
        # the launcher maps arguments by the signature's order: put it back in argument order (a JSON round trip
        # through the store sorts the keys)
        self.signature = {name: spec.signature[name] for name in spec.arg_names if name in spec.signature}
        self.fn = types.SimpleNamespace(arg_names=list(spec.arg_names))
        self.constants = {(spec.arg_names.index(name),): value for name, value in spec.constexprs.items()
                          if name in spec.arg_names}


def load_kernel(directory: str | Path, spec: LaunchSpec, metadata_json: bytes, cubin: bytes, name: str):
    """A CompiledKernel from a metadata JSON and a cubin, launched by Triton's own launcher (global scratch, TMA
    descriptors, clusters and PDL handled as for a kernel Triton compiled): `kernel[grid](*args)`.

    `name` is the entry the cubin holds: the metadata's `name` (what `cuModuleGetFunction` looks up) follows it,
    so a renamed cubin loads under its new name. The files are written into `directory` once: loading the same
    kernel again there (the replay loads each variant afresh every round) only reads them."""
    from triton.compiler.compiler import CompiledKernel

    metadata = json.loads(metadata_json)
    metadata["name"] = name
    directory = Path(directory)
    json_path, cubin_path = directory / file_name(name, ".json"), directory / file_name(name, ".cubin")
    if not (json_path.exists() and cubin_path.exists()):
        directory.mkdir(parents=True, exist_ok=True)
        cubin_path.write_bytes(cubin)
        json_path.write_text(json.dumps(metadata))
    return CompiledKernel(_ReplaySource(spec), {json_path.name: str(json_path), cubin_path.name: str(cubin_path)},
                          metadata.get("hash", ""))


def launch(kernel, grid: tuple[int, int, int], args: list) -> None:
    """Launch a `load_kernel` kernel on the current stream."""
    kernel[tuple(grid)](*args)
