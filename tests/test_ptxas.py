"""ptxas discovery, assembly errors, and the ptxas matrix on the tcgen05 fp8 loop (plain vs `cutlass_`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tritonhook import cli
from tritonhook.ptxas import assemble, find_ptxas, one_per_version, ptxas_matrix, triton_ptxas
from tritonhook.errors import TritonhookError

DATA = Path(__file__).parent / "data"


def test_find_ptxas_lists_tritons_bundled_ptxas_with_tritons_version():
    from triton.backends.nvidia.compiler import get_ptxas_version

    found = {b.path: b for b in find_ptxas()}
    path = triton_ptxas("sm_100a")
    assert path in found and found[path].origin.startswith("triton")
    assert f"V{found[path].version}" in get_ptxas_version(100)


def test_ptxas_list_json(capsys):
    assert cli.main(["ptxas", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {entry["path"] for entry in listed} == {b.path for b in find_ptxas()}


def test_rejected_ptx_carries_ptxas_message():
    ptx = (DATA / "ffma_loop.ptx").read_text().replace("fma.rn.f32 \t%f3,", "fma.bogus.f32 \t%f3,")
    with pytest.raises(TritonhookError) as info:
        assemble(ptx, triton_ptxas("sm_80"), "sm_80", label="bogus.ptx")
    message = str(info.value)
    assert message.startswith("bogus.ptx: ptxas ") and "bogus.ptx, line" in message and "error" in message


def blackwell_ptxas() -> list[str]:
    """One ptxas per version that can target sm_100a (12.8 and newer)."""
    return [b.path for b in one_per_version(find_ptxas()) if tuple(map(int, b.version.split(".")[:2])) >= (12, 8)]


@pytest.mark.parametrize("path", blackwell_ptxas())
def test_cutlass_name_grows_capmerc_at_least_3x(path):
    rows = ptxas_matrix((DATA / "tcgen05_fp8_loop.ptx").read_text(), [path], prefix="cutlass_")
    plain, renamed = (next(r for r in rows if r.variant == v) for v in ("plain", "renamed"))
    assert (plain.kernel, renamed.kernel) == ("tcgen05_fp8_loop", "cutlass_tcgen05_fp8_loop")
    assert renamed.capmerc_size >= 3 * plain.capmerc_size > 0, (plain, renamed)


def test_ptxas_matrix_cli_table(capsys):
    path = triton_ptxas("sm_100a")
    assert cli.main(["ptxas-matrix", str(DATA / "tcgen05_fp8_loop.ptx"), "--ptxas", path, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["variant"] for r in rows] == ["plain", "renamed"]
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", r["version"]) for r in rows)


def test_extra_ptxas_args_reach_ptxas_and_O2_turns_the_cutlass_path_off(capsys):
    """NOTES §1.1: the name only matters at -O3; with --ptxas-arg=-O2 both builds get the same metadata size."""
    path = triton_ptxas("sm_100a")
    assert cli.main(["ptxas-matrix", str(DATA / "tcgen05_fp8_loop.ptx"), "--ptxas", path, "--ptxas-arg=-O2",
                     "--json"]) == 0
    plain, renamed = json.loads(capsys.readouterr().out)
    assert renamed["kernel"] == "cutlass_tcgen05_fp8_loop"
    assert renamed["capmerc_size"] == plain["capmerc_size"] > 0
