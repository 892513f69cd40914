"""A replayed kernel may consume state its workload's host resets before every launch: a tile counter it counts up
(the Hopper attention's `dynamic_tiles`), tickets or locks. The replay resets the small integer buffers a kernel
writes before every timed call (`sweep.worker._state`, `_ResetState`); these checks hold the choice and the reset
to their rules on a CPU (the GPU proof: tests/test_sweep_gpu.py)."""

from __future__ import annotations

import pytest

from tritonhook.sweep.worker import STATE_BYTES, _each_before_call, _ResetState, _state

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.release_independent  # torch alone, no Triton


def test_small_integer_buffers_the_kernel_writes_are_state_and_outputs_are_not():
    buffers = {0: torch.zeros(1, dtype=torch.int32),  # a tile counter
               1: torch.zeros(STATE_BYTES // 8 + 1, dtype=torch.int64),  # indices: an output past the bound
               2: torch.zeros(16, dtype=torch.float32),  # a float output (split-K accumulates into such)
               3: torch.zeros(4, dtype=torch.int32),  # read only: an offsets table
               4: torch.zeros(STATE_BYTES // 4, dtype=torch.int32)}  # locks, one a tile, at the bound
    assert _state(buffers, written={0, 1, 2, 4}) == {0, 4}


def test_every_call_finds_the_snapshots_state_in_whichever_input_set_it_is_given():
    pristine = torch.zeros(1, dtype=torch.int32)
    reset = _ResetState([(1, pristine)])
    steps = []
    before_call = _each_before_call([reset, lambda buffers: steps.append(int(buffers[1][0]))])
    for rotated in ((torch.ones(8), torch.tensor([2176], dtype=torch.int32)),
                    (torch.ones(8), torch.tensor([7], dtype=torch.int32))):
        before_call(rotated)
        assert int(rotated[1][0]) == 0 and torch.equal(rotated[0], torch.ones(8))
    assert steps == [0, 0]  # the L2 setup comes after the reset
    assert _each_before_call([]) is None
