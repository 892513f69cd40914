"""Which Triton this is, and the small helpers every hook family of the adapter shares.

Separate because everything else in `tritonhook._triton` imports it and it imports none of them: release detection
and the support check run before any hook is installed (`check_supported`), and the compile, launch and autotune
hooks all report their own failures once (`_WarnOnce`) and turn Triton's metadata into plain JSON (`_plain_json`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re

from ..errors import TritonhookError, warn

MIN_VERSION = (3, 6)
MAX_VERSION = (3, 9)
REQUIREMENT = f"triton>={MIN_VERSION[0]}.{MIN_VERSION[1]},<{MAX_VERSION[0]}.{MAX_VERSION[1] + 1}"
"""The supported releases as a pip requirement: what the support check's errors and `tritonhook doctor` tell users
to install."""


# ----- versions ------------------------------------------------------------------------------------------------
def parse_version(text: str) -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", text)
    if not match:
        raise TritonhookError(f"triton.__version__ {text!r}: cannot read a major.minor version from it")
    return int(match.group(1)), int(match.group(2))


def triton_version() -> str:
    import triton

    return triton.__version__


def check_supported() -> tuple[int, int]:
    """Import Triton and check its version; raise a clear error otherwise."""
    try:
        import triton  # noqa: F401
        from triton import knobs  # noqa: F401
    except ImportError as exc:
        raise TritonhookError(f"cannot import triton ({exc}): install Triton: pip install '{REQUIREMENT}'") from None
    version = parse_version(triton_version())
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise TritonhookError(f"Triton {triton_version()} is not supported: tritonhook works with Triton "
                              f"{_fmt(MIN_VERSION)} to {_fmt(MAX_VERSION)}.x (the stage inspection hook it "
                              f"needs appeared in 3.6): pip install '{REQUIREMENT}'")
    return version


def stage_hook_in_cache_key() -> bool:
    """From 3.7 Triton asks the stage hook for a cache-key contribution."""
    return parse_version(triton_version()) >= (3, 7)


def _fmt(version: tuple[int, int]) -> str:
    return ".".join(map(str, version))


# ----- shared by the hook families ------------------------------------------------------------------------------
def _plain_json(value) -> dict:
    """Metadata as plain JSON types (GPUTarget becomes a dict, tuples become lists)."""
    return json.loads(json.dumps(value, default=_to_json_type))


def _to_json_type(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "_asdict"):
        return value._asdict()
    return repr(value)


class _WarnOnce:
    def __init__(self):
        self.warned = False

    def __call__(self, what: str, exc: BaseException) -> None:
        if not self.warned:
            self.warned = True
            warn(f"tritonhook: {what} failed ({type(exc).__name__}: {exc}); compiling goes on, "
                 f"further failures are counted and reported at exit")


@functools.lru_cache(maxsize=None)
def option_names() -> tuple[str, ...]:
    """The compile options this release's NVIDIA backend takes (`CUDAOptions` fields): what a capture records and a
    rebuild under another release may pass; () where the backend cannot be imported."""
    try:
        from triton.backends.nvidia.compiler import CUDAOptions

        return tuple(field.name for field in dataclasses.fields(CUDAOptions))
    except Exception:  # noqa: BLE001
        return ()
