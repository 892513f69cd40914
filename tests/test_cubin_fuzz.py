"""Fuzz the cubin parser: mutated real cubins and random bytes give a `Cubin` or a `TritonhookError`, never
another exception (a fixed budget of 5,000 cases)."""

from __future__ import annotations

import functools
import re
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tritonhook.cubin import Cubin
from tritonhook.errors import TritonhookError
from tritonhook._triton import triton_ptxas
from tritonhook.binaries import assemble

pytestmark = pytest.mark.release_independent  # the parser on mutated bytes: the same under every Triton

DATA = Path(__file__).parent / "data"


@functools.lru_cache(maxsize=None)
def base_cubins() -> tuple[bytes, ...]:
    """Small real cubins of both ELF ABI layouts (sm_80: ABI 7, sm_100a/sm_120a: ABI 8, with Mercury sections)."""
    ffma = (DATA / "ffma_loop.ptx").read_text()
    sources = [(re.sub(r"\.target sm_80", f".target {gpu}", ffma), gpu) for gpu in ("sm_80", "sm_120a")]
    sources.append(((DATA / "tcgen05_fp8_loop.ptx").read_text(), "sm_100a"))
    return tuple(assemble(ptx, triton_ptxas(gpu), gpu).cubin for ptx, gpu in sources)


@st.composite
def mutated_cubins(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(base_cubins())))
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    region = draw(st.sampled_from(["header", "section_headers", "anywhere"]))
    low, high = {"header": (0, 63), "section_headers": (shoff, len(data) - 1), "anywhere": (0, len(data) - 1)}[region]
    for _ in range(draw(st.integers(1, 8))):
        position = draw(st.integers(low, high))
        data[position] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        del data[draw(st.integers(0, len(data))):]
    return bytes(data)


inputs = st.one_of(mutated_cubins(), st.binary(max_size=512),
                   st.binary(max_size=512).map(lambda tail: b"\x7fELF\x02\x01\x01" + tail))


@settings(max_examples=5000, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(inputs)
def test_parser_raises_only_tritonhook_errors(data):
    try:
        cubin = Cubin.from_bytes(data, label="fuzz.cubin")
    except TritonhookError as exc:
        assert str(exc).startswith("fuzz.cubin: ")
    else:
        assert cubin.size == len(data)
