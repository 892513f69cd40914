"""ptxas discovery, assembly errors, and the ptxas matrix on the tcgen05 fp8 loop (plain vs `cutlass_`)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tritonhook import cli
from tritonhook.cubin import Cubin
from tritonhook._triton import triton_ptxas
from tritonhook.ptxas_matrix import ptxas_matrix
from tritonhook.binaries import assemble, find_ptxas, kept_file, one_per_version, ptxas_version
from tritonhook.rename import rename_ptx
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


def test_a_build_made_once_is_not_made_again_by_the_same_ptxas(tmp_path, monkeypatch):
    """ptxas's builds are kept by PTX, target, arguments, control file and ptxas (`binaries.kept_file`): the same
    build asked again runs no ptxas and gives its cubin and its `-v` report; another target or argument, a damaged
    entry, another modification time of the binary, or `reuse=False` build anew, and a failed build is not kept.
    The ptxas here is Triton's, behind a script that logs each run."""
    monkeypatch.setenv("TRITONHOOK_CACHE", str(tmp_path / "cache"))
    log, logging = tmp_path / "runs", tmp_path / "ptxas"
    logging.write_text(f"#!/bin/sh\n[ \"$1\" = --version ] || echo \"$*\" >> {log}\n"
                       f"exec {triton_ptxas('sm_80')} \"$@\"\n")
    logging.chmod(0o755)
    ptx = (DATA / "ffma_loop.ptx").read_text()
    runs = lambda: len(log.read_text().splitlines())  # noqa: E731
    first = assemble(ptx, str(logging), "sm_80")
    again = assemble(ptx, str(logging), "sm_80")
    assert runs() == 1 and (again.cubin, again.stderr) == (first.cubin, first.stderr)
    assert again.cubin == assemble(ptx, triton_ptxas("sm_80"), "sm_80", reuse=False).cubin  # what ptxas makes
    assemble(ptx, str(logging), "sm_86")
    assemble(ptx, str(logging), "sm_80", ["-O2"])
    assert runs() == 3
    kept = kept_file("ptxas", str(logging), [ptxas_version(str(logging)), "sm_80", ""], ptx.rstrip("\0").encode())
    kept.write_bytes(kept.read_bytes()[:20])
    assert assemble(ptx, str(logging), "sm_80").cubin == first.cubin and runs() == 4
    os.utime(logging, ns=(1, 1))
    assemble(ptx, str(logging), "sm_80")
    assemble(ptx, str(logging), "sm_80", reuse=False)
    assert runs() == 6
    bogus = ptx.replace("fma.rn.f32 \t%f3,", "fma.bogus.f32 \t%f3,")
    for _ in range(2):
        with pytest.raises(TritonhookError, match="rejected it"):
            assemble(bogus, str(logging), "sm_80")
    assert runs() == 8


def blackwell_ptxas() -> list[str]:
    """One ptxas per version that can target sm_100a (12.8 and newer)."""
    return [b.path for b in one_per_version(find_ptxas()) if tuple(map(int, b.version.split(".")[:2])) >= (12, 8)]


@pytest.mark.parametrize("path", blackwell_ptxas())
def test_cutlass_name_grows_capmerc_at_least_3x(path):
    rows = ptxas_matrix((DATA / "tcgen05_fp8_loop.ptx").read_text(), [path], prefix="cutlass_").rows
    plain, renamed = (next(r for r in rows if r.variant == v) for v in ("plain", "renamed"))
    assert (plain.kernel, renamed.kernel) == ("tcgen05_fp8_loop", "cutlass_tcgen05_fp8_loop")
    assert renamed.capmerc_size >= 3 * plain.capmerc_size > 0, (plain, renamed)


def test_ptxas_matrix_cli_table(capsys):
    path = triton_ptxas("sm_100a")
    assert cli.main(["ptxas-matrix", str(DATA / "tcgen05_fp8_loop.ptx"), "--ptxas", path, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["variant"] for r in rows] == ["plain", "renamed"]
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", r["version"]) for r in rows)


def test_extra_ptxas_args_reach_ptxas_and_O2_turns_the_cutlass_path_off(capsys):
    """docs/ptxas_cutlass.md#the-cutlass-name-path: the name only matters at -O3; with --ptxas-arg=-O2 both builds get the same metadata size."""
    path = triton_ptxas("sm_100a")
    assert cli.main(["ptxas-matrix", str(DATA / "tcgen05_fp8_loop.ptx"), "--ptxas", path, "--ptxas-arg=-O2",
                     "--json"]) == 0
    plain, renamed = json.loads(capsys.readouterr().out)["rows"]
    assert renamed["kernel"] == "cutlass_tcgen05_fp8_loop"
    assert renamed["capmerc_size"] == plain["capmerc_size"] > 0


def test_default_set_skips_a_ptxas_too_old_for_the_ptx_with_a_note(tmp_path, capsys):
    """Triton's sm_100a PTX is newer than its own bundled `ptxas` (3.6: ISA 8.8 vs 12.8.93; 3.9: ISA 9.4 vs
    12.9.86): the default matrix notes that ptxas and goes on with the others."""
    from tritonhook.samples import compile_sample

    ptx = tmp_path / "add_kernel.ptx"
    ptx.write_text(compile_sample("add", 100).asm["ptx"])
    assert cli.main(["ptxas-matrix", str(ptx), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    bundled = next(b for b in find_ptxas() if b.origin == "triton ptxas")
    skipped = {s["path"]: s for s in result["skipped"]}
    assert "Unsupported .version" in skipped[bundled.path]["reason"]
    assert {r["variant"] for r in result["rows"]} == {"plain", "renamed"}
    assert cli.main(["ptxas-matrix", str(ptx)]) == 0
    assert f"skipped ptxas {bundled.version} ({bundled.path}): too old" in capsys.readouterr().out


def test_two_ptxas_of_one_version_are_told_apart_by_their_paths(tmp_path, capsys):
    path = triton_ptxas("sm_100a")
    other = tmp_path / "bin" / "ptxas"
    other.parent.mkdir()
    other.symlink_to(path)
    assert cli.main(["ptxas-matrix", str(DATA / "tcgen05_fp8_loop.ptx"), "--ptxas", path, "--ptxas", str(other)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"[1] {path}" in lines and f"[2] {other}" in lines


def test_renamed_over_plain_ratios_match_the_cubins(tmp_path, capsys):
    path = triton_ptxas("sm_100a")
    ptx = (DATA / "tcgen05_fp8_loop.ptx").read_text()
    assert cli.main(["ptxas-matrix", str(DATA / "tcgen05_fp8_loop.ptx"), "--ptxas", path, "--json"]) == 0
    [ratio] = json.loads(capsys.readouterr().out)["ratios"]
    plain, renamed = (Cubin.from_bytes(assemble(text, path, "sm_100a").cubin)
                      for text in (ptx, rename_ptx(ptx, "cutlass_")))
    capmerc = (renamed.section_size(".nv.capmerc.text.cutlass_tcgen05_fp8_loop")
               / plain.section_size(".nv.capmerc.text.tcgen05_fp8_loop"))
    assert (ratio["kernel"], ratio["renamed"]) == ("tcgen05_fp8_loop", "cutlass_tcgen05_fp8_loop")
    assert ratio["capmerc"] == pytest.approx(capmerc) and capmerc >= 3
    assert ratio["cubin"] == pytest.approx(renamed.size / plain.size)


def test_a_bad_gpu_name_is_blamed_not_every_ptxas(capsys):
    assert cli.main(["ptxas-matrix", str(DATA / "tcgen05_fp8_loop.ptx"), "--gpu-name", "sm_xx"]) == 2
    assert capsys.readouterr().err == "tritonhook: error: 'sm_xx': not a GPU name like sm_90a or sm_100a\n"


def test_a_target_no_ptxas_knows_is_blamed_not_the_ptxas_versions(capsys):
    """sm_1000 is a GPU name in form, and every ptxas refuses it: the target is wrong, not the ptxas too old."""
    paths = [triton_ptxas("sm_90a"), triton_ptxas("sm_100a")]
    ptx = DATA / "ffma_loop.ptx"
    assert cli.main(["ptxas-matrix", str(ptx), *(f"--ptxas={p}" for p in paths), "--gpu-name", "sm_1000"]) == 2
    versions = ", ".join(ptxas_version(p) for p in paths)
    assert capsys.readouterr().err == (f"tritonhook: error: {ptx}: sm_1000 is a target unknown to every ptxas found "
                                       f"({versions}); give a GPU name such as sm_90a\n")


def test_ptx_without_an_entry_is_a_clear_error(tmp_path, capsys):
    library = tmp_path / "library.ptx"
    library.write_text((DATA / "indirect_call.ptx").read_text().split(".visible .entry")[0])
    assert cli.main(["ptxas-matrix", str(library), "--ptxas", triton_ptxas("sm_90a")]) == 2
    err = capsys.readouterr().err
    assert err == f"tritonhook: error: {library}: no .entry in this PTX, so no kernel to assemble and compare\n"
