"""The replay's output check poisons a float buffer before a second call (`sweep.worker._poison`) to see which
buffers a kernel overwrites. It must work on every float type a recorded kernel takes: on the H200 the gate's fp8
matmul went unchecked in every run because the poison moved its elements with `torch.roll`, which CUDA's torch
lacks for float8. The poison now moves same-sized integers; these checks hold it to the same bytes on a CPU."""

from __future__ import annotations

import pytest

from tritonhook.sweep.worker import _poison

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.release_independent  # torch alone, no Triton


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2", "bfloat16", "float16", "float32", "float64"])
def test_the_poison_moves_every_element_by_one_whatever_the_float_type(dtype):
    values = torch.arange(1, 17, dtype=torch.float32).reshape(4, 4).to(getattr(torch, dtype))
    before = values.view(-1).view(torch.uint8).clone()
    _poison(torch, values)
    size = values.element_size()
    expected = torch.cat([before[-size:], before[:-size]])  # the last element first: one element, whole bytes
    assert torch.equal(values.view(-1).view(torch.uint8), expected)
    assert torch.isfinite(values.float()).all()


def test_a_constant_buffer_is_filled_with_nan_bytes_since_moving_it_changes_nothing():
    values = torch.full((64,), 2.0, dtype=torch.float8_e4m3fn)
    _poison(torch, values)
    assert torch.equal(values.view(torch.uint8), torch.full((64,), 0xFF, dtype=torch.uint8))
