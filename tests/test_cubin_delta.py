"""`CubinDelta`, why a timed row moved, on a real pair: the fp32 FFMA matmul sample compiled by Triton for sm_90a, its
PTX assembled by Triton's ptxas with its own name and renamed `cutlass_` (docs/ptxas_cutlass.md#the-cutlass-name-path:
the name changes this kernel's SASS on sm_90a). Each figure is checked against `Cubin.summary` and
`opcode_histogram` of each cubin on its own. The sweep's and A/B's rows carrying it: tests/test_sweep_scale.py and
tests/test_ab.py."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tritonhook import _triton

from tritonhook import binaries as tools
from tritonhook.cubin import SUMMARY_FIELDS, Cubin, CubinDelta, CubinDeltas, disassemble, opcode_histogram
from tritonhook.rename import rename_ptx
from tritonhook.samples import compile_sample

pytestmark = pytest.mark.release_independent  # the cubin model and nvdisasm: the same under every Triton

ENTRY, RENAMED = "matmul_kernel", "cutlass_matmul_kernel"


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[bytes, bytes]:
    """(plain cubin, renamed cubin) of the fp32 matmul for sm_90a."""
    with pytest.MonkeyPatch.context() as patch:  # a module fixture runs before the per-test cache fixture
        patch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.mktemp("delta-cache")))
        ptx = compile_sample("matmul_fp32_ieee", 90).asm["ptx"]
    ptxas = _triton.triton_ptxas("sm_90a")
    return (tools.assemble(ptx, ptxas, "sm_90a").cubin,
            tools.assemble(rename_ptx(ptx, "cutlass_", entry=ENTRY), ptxas, "sm_90a").cubin)


def _histogram(cubin: bytes):
    return sum((opcode_histogram(instructions) for instructions in disassemble(cubin).values()), start=Counter())


def test_the_delta_quotes_each_cubins_own_summary_and_the_opcodes_that_changed_most(pair):
    plain, renamed = pair
    delta = CubinDelta.between(plain, renamed, ENTRY, RENAMED)
    before, after = Cubin.from_bytes(plain).summary(ENTRY), Cubin.from_bytes(renamed).summary(RENAMED)
    assert delta.resources == {field: (before[field], after[field]) for field in SUMMARY_FIELDS}
    assert before["text_sha256"] != after["text_sha256"] and not delta.sass_identical
    assert after["spill_stores"] > before["spill_stores"]  # what this pair shows on Triton 3.6's ptxas 12.8
    counts_a, counts_b = _histogram(plain), _histogram(renamed)
    changes = {op: counts_b[op] - counts_a[op] for op in set(counts_a) | set(counts_b) if counts_a[op] != counts_b[op]}
    largest = sorted(changes, key=lambda op: (-abs(changes[op]), op))[:5]
    assert [op for op, _, _ in delta.mix] == largest
    assert all((counts_a[op], counts_b[op]) == (a, b) for op, a, b in delta.mix)
    cell = delta.cell()
    assert cell.startswith(f"regs {before['registers']}")
    spills = (f"{before['spill_stores']}/{before['spill_loads']}", f"{after['spill_stores']}/{after['spill_loads']}")
    assert f"spills {spills[0]}→{spills[1]} B" in cell
    assert f"{largest[0]} {changes[largest[0]]:+d}" in cell and "SASS identical" not in cell
    data = json.loads(json.dumps(delta.to_json()))
    assert data["text"] == cell and data["resources"]["registers"] == {"base": before["registers"],
                                                                      "variant": after["registers"]}
    assert CubinDelta.from_json(data) == delta
    assert len(CubinDelta.between(plain, renamed, ENTRY, RENAMED, top=2).mix) == 2


def test_identical_cubins_are_sass_identical_without_disassembling(pair):
    plain, _ = pair
    delta = CubinDelta.between(plain, plain, ENTRY, ENTRY, nvdisasm="no-such-nvdisasm")  # never run
    assert delta.sass_identical and delta.mix == [] and delta.mix_error is None
    assert delta.cell() == f"regs {Cubin.from_bytes(plain).summary(ENTRY)['registers']}, SASS identical"


def test_without_nvdisasm_the_mix_is_absent_with_its_reason_and_the_resources_stay(pair):
    plain, renamed = pair
    delta = CubinDelta.between(plain, renamed, ENTRY, RENAMED, nvdisasm="no-such-nvdisasm")
    assert delta.mix is None and "no-such-nvdisasm" in delta.mix_error
    assert delta.resources == CubinDelta.between(plain, renamed, ENTRY, RENAMED).resources
    assert "spills" in delta.cell() and "no opcode mix (--nvdisasm no-such-nvdisasm: not found" in delta.cell()


def test_many_pairs_disassemble_each_cubin_once_and_compute_each_pair_once(pair, monkeypatch):
    plain, renamed = pair
    from tritonhook.cubin import delta as delta_module

    runs = []
    real = delta_module.disassemble
    monkeypatch.setattr(delta_module, "disassemble", lambda data, **kw: runs.append(data) or real(data, **kw))
    monkeypatch.setattr(delta_module, "_HISTOGRAMS", {})  # what earlier tests disassembled is kept per process
    deltas = CubinDeltas()
    first, second, same = deltas.many([(plain, renamed, ENTRY, RENAMED), (plain, renamed, ENTRY, RENAMED),
                                       (plain, plain, ENTRY, ENTRY)])
    assert first is second and same.sass_identical
    assert deltas.between(plain, renamed, ENTRY, RENAMED) is first
    assert sorted(runs) == sorted([plain, renamed])
    CubinDeltas().many([(plain, renamed, ENTRY, RENAMED)])  # another sweep of the same cubins: nothing run again
    assert len(runs) == 2
