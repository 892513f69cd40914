"""`tritonhook diff` on real cubins, PTX files and store captures, and its one-line errors on bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tritonhook import cli
from tritonhook.cubin import Cubin
from tritonhook.ptxas import assemble, triton_ptxas
from tritonhook.rename import rename_ptx

DATA = Path(__file__).parent / "data"


@pytest.fixture
def tcgen05_pair(tmp_path):
    """The tcgen05 loop as PTX, plain and renamed `cutlass_`, and their cubins from Triton's ptxas."""
    ptx = (DATA / "tcgen05_fp8_loop.ptx").read_text()
    paths = {}
    for name, text in (("plain", ptx), ("renamed", rename_ptx(ptx, "cutlass_"))):
        (tmp_path / f"{name}.ptx").write_text(text)
        (tmp_path / f"{name}.cubin").write_bytes(assemble(text, triton_ptxas("sm_100a"), "sm_100a").cubin)
        paths[name] = tmp_path / name
    return paths


def run_json(capsys, *args) -> dict:
    assert cli.main(["diff", *map(str, args), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_identical_inputs_say_so_in_one_line(tcgen05_pair, capsys):
    cubin = tcgen05_pair["plain"].with_suffix(".cubin")
    assert cli.main(["diff", str(cubin), str(cubin)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("identical:")


def test_renamed_kernel_is_paired_and_capmerc_grows(tcgen05_pair, capsys):
    result = run_json(capsys, tcgen05_pair["plain"].with_suffix(".ptx"), tcgen05_pair["renamed"].with_suffix(".ptx"))
    assert not result["identical"] and result["only_a"] == result["only_b"] == []
    [kernel] = result["kernels"]
    assert (kernel["name_a"], kernel["name_b"]) == ("tcgen05_fp8_loop", "cutlass_tcgen05_fp8_loop")
    capmerc = kernel["metrics"][".nv.capmerc"]
    assert capmerc["b"] >= 3 * capmerc["a"]
    sections = {row["name"]: row for row in result["sections"]}
    assert sections[".nv.capmerc.text.tcgen05_fp8_loop"]["changed"]
    on_disk = Cubin.from_path(tcgen05_pair["renamed"].with_suffix(".cubin"))
    assert capmerc["b"] == on_disk.section_size(".nv.capmerc.text.cutlass_tcgen05_fp8_loop")


def test_sass_diff_has_histogram_and_unified_diff(tcgen05_pair, capsys):
    a, b = (tcgen05_pair[k].with_suffix(".cubin") for k in ("plain", "renamed"))
    assert cli.main(["diff", str(a), str(b), "--sass"]) == 0
    out = capsys.readouterr().out
    assert "opcode histogram" in out
    assert f"--- {a}:tcgen05_fp8_loop" in out and f"+++ {b}:cutlass_tcgen05_fp8_loop" in out
    result = run_json(capsys, a, b, "--sass")
    assert result["histogram"] == sorted(result["histogram"], key=lambda r: (-abs(r["delta"]), r["opcode"]))


def test_diff_of_store_captures(tmp_path, capsys):
    from tritonhook.samples import compile_sample
    from tritonhook.store import NewCapture, Store

    store = Store(tmp_path / "store")
    for capability in (80, 90):
        compiled = compile_sample("add", capability)
        store.add(NewCapture("compile", "triton", "add_kernel", "add_kernel", "add_kernel", None, None,
                             f"sm_{capability}", "x", None, None, None, {}, {}, {},
                             {"cubin": compiled.asm["cubin"]}))
    result = run_json(capsys, 1, 2, "--store", tmp_path / "store")
    assert result["label_a"] == "capture 1 (add_kernel)" and result["header_a"].startswith("sm_80")
    assert result["header_b"].startswith("sm_90a")


def host_elf() -> bytes:
    return Path(os.path.realpath(sys.executable)).read_bytes()


def fatbin(tmp_path: Path, cubin: Path) -> bytes:
    if shutil.which("fatbinary") is None:
        pytest.skip("no fatbinary")
    out = tmp_path / "x.fatbin"
    subprocess.run(["fatbinary", f"--create={out}", f"--image3=kind=elf,sm=100a,file={cubin}",
                    f"--image3=kind=elf,sm=100a,file={cubin}"], check=True)
    return out.read_bytes()


@pytest.mark.parametrize("kind,expected", [
    ("text", "not an ELF file"),
    ("random", "not an ELF file"),
    ("truncated", "truncated"),
    ("host", "not a CUDA cubin"),
    ("machine", "e_machine 3"),
    ("fatbin", "a CUDA fatbin, not a cubin (elf sm_100, elf sm_100)"),
    ("bad_ptx", "ptxas"),
    ("missing", "no such file, and not a capture id"),
])
def test_bad_input_is_one_line_naming_the_file(kind, expected, tcgen05_pair, tmp_path, capsys):
    good = tcgen05_pair["plain"].with_suffix(".cubin")
    data = good.read_bytes()
    makers = {
        "text": lambda: b"just some text\n",
        "random": lambda: os.urandom(4096).replace(b"\x7fELF", b"xELF").replace(b"\x50\xed\x55\xba", b"xxxx"),
        "truncated": lambda: data[:len(data) // 3],
        "host": host_elf,
        "machine": lambda: data[:18] + (3).to_bytes(2, "little") + data[20:],
        "fatbin": lambda: fatbin(tmp_path, good),
        "bad_ptx": lambda: (DATA / "tcgen05_fp8_loop.ptx").read_bytes().replace(b"tcgen05.mma", b"tcgen05.mmx"),
    }
    bad = tmp_path / f"bad-{kind}.bin"
    if kind in makers:
        bad.write_bytes(makers[kind]())
    assert cli.main(["diff", str(bad), str(good)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"tritonhook: error: {bad}") and expected in err, err
