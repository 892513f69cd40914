"""`tritonhook diff` on real cubins, PTX files and store captures, and its one-line errors on bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import triton
import triton.language as tl

from tritonhook import cli
from tritonhook.cubin import Cubin
from tritonhook._triton import triton_ptxas
from tritonhook.binaries import assemble, find_ptxas, one_per_version, parse_ptxas_verbose
from tritonhook.rename import rename_ptx, rename_symbols

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
    sections = {row["name_a"]: row for row in result["sections"]}
    assert sections[".nv.capmerc.text.tcgen05_fp8_loop"]["changed"]
    assert sections[".text.tcgen05_fp8_loop"]["name_b"] == ".text.cutlass_tcgen05_fp8_loop"  # B keeps its name
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


def ffma_loop_named(tmp_path: Path, name: str) -> Path:
    """The FFMA loop for sm_90a with its kernel called `name`, as a cubin from Triton's ptxas."""
    ptx = rename_symbols((DATA / "ffma_loop.ptx").read_text().replace(".target sm_80", ".target sm_90a"),
                         {"ffma_loop": name})
    path = tmp_path / f"{name}.cubin"
    path.write_bytes(assemble(ptx, triton_ptxas("sm_90a"), "sm_90a").cubin)
    return path


def test_lone_kernels_pair_and_differing_sass_is_never_called_identical(tmp_path, capsys):
    """`plain_kernel` and `cutlass_kernel` differ by more than the prefix: they still meet (the only kernel on each
    side), their sections keep their own names, and SASS that differs is not reported as identical."""
    a, b = ffma_loop_named(tmp_path, "plain_kernel"), ffma_loop_named(tmp_path, "cutlass_kernel")
    result = run_json(capsys, a, b, "--sass")
    [kernel] = result["kernels"]
    assert (kernel["name_a"], kernel["name_b"], kernel["paired_by"]) == ("plain_kernel", "cutlass_kernel",
                                                                         "only kernel on each side")
    assert result["only_a"] == result["only_b"] == []
    assert {(r["name_a"], r["name_b"]) for r in result["sections"]} >= {(".text.plain_kernel", ".text.cutlass_kernel")}
    assert result["histogram"] and result["sass_identical"] is False  # the cutlass path changed the code
    assert cli.main(["diff", str(a), str(b), "--sass"]) == 0
    out = capsys.readouterr().out
    assert "normalized SASS: identical" not in out and f"+++ {b}:cutlass_kernel" in out


def test_same_code_under_other_names_is_identical_sass(tmp_path, capsys):
    a, b = ffma_loop_named(tmp_path, "plain_kernel"), ffma_loop_named(tmp_path, "other_kernel")
    result = run_json(capsys, a, b, "--sass")
    assert not result["identical"] and result["sass_identical"] is True and result["histogram"] == []


def test_pair_option_names_the_kernels_to_compare(tmp_path, capsys):
    a, b = ffma_loop_named(tmp_path, "plain_kernel"), ffma_loop_named(tmp_path, "cutlass_kernel")
    [kernel] = run_json(capsys, a, b, "--pair", "plain_kernel=cutlass_kernel")["kernels"]
    assert kernel["paired_by"] == "--pair"
    assert cli.main(["diff", str(a), str(b), "--pair", "plain_kernel=nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "B has no kernel 'nope' (kernels: cutlass_kernel)" in err


@pytest.mark.parametrize("ptxas", [pytest.param(b.path, id=b.version) for b in one_per_version(find_ptxas())])
def test_cumulative_stack_is_what_ptxas_v_reports(ptxas, tmp_path, capsys):
    """An indirect call: the kernel's own frame is 64 B, the stack it needs with its callee is what `ptxas -v`
    calls the cumulative stack size (EIATTR_MIN_STACK_SIZE)."""
    built = assemble((DATA / "indirect_call.ptx").read_text(), ptxas, "sm_90a")
    reported = parse_ptxas_verbose(built.stderr)["indirect_call"]
    assert reported.cumulative_stack > reported.stack_frame > 0
    cubin = tmp_path / "indirect_call.cubin"
    cubin.write_bytes(built.cubin)
    [kernel] = run_json(capsys, cubin, cubin)["kernels"]
    assert kernel["metrics"]["cumulative stack"]["a"] == reported.cumulative_stack


def elf_sections(path: Path) -> list[tuple[str, int, bool]]:
    """(name, size, has file bytes) per section, read with pyelftools alone: the reference for the totals."""
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as handle:
        return [(s.name, s["sh_size"], s["sh_type"] != "SHT_NOBITS") for s in ELFFile(handle).iter_sections()
                if s["sh_type"] != "SHT_NULL"]


def test_sections_largest_change_first_with_total_and_shares(tcgen05_pair, capsys):
    a, b = (tcgen05_pair[k].with_suffix(".cubin") for k in ("plain", "renamed"))
    result = run_json(capsys, a, b)
    sections = result["sections"]
    assert [abs(r["delta"]) for r in sections] == sorted((abs(r["delta"]) for r in sections), reverse=True)
    assert sections[0]["name_a"] == ".nv.capmerc.text.tcgen05_fp8_loop"
    total_a, total_b = (sum(size for _, size, in_file in elf_sections(p) if in_file) for p in (a, b))
    assert result["section_total"] == {"a": total_a, "b": total_b, "delta": total_b - total_a}
    assert sections[0]["share"] == pytest.approx(sections[0]["delta"] / (total_b - total_a))
    assert sum(r["share"] for r in sections if r["in_file"]) == pytest.approx(1.0)
    in_elf_order = run_json(capsys, a, b, "--elf-order")["sections"]
    assert [r["name_a"] for r in in_elf_order] == [name for name, _, _ in elf_sections(a)]
    assert cli.main(["diff", str(a), str(b)]) == 0
    assert "total (bytes in the file)" in capsys.readouterr().out


def test_ptxas_arg_reaches_ptxas_for_ptx_inputs(tcgen05_pair, capsys):
    """docs/ptxas_cutlass.md#the-cutlass-name-path: at -O2 the cutlass path is off, so the renamed build's capmerc equals the plain one's."""
    result = run_json(capsys, tcgen05_pair["plain"].with_suffix(".ptx"), tcgen05_pair["renamed"].with_suffix(".ptx"),
                      "--ptxas-arg=-O2")
    [kernel] = result["kernels"]
    assert kernel["metrics"][".nv.capmerc"]["a"] == kernel["metrics"][".nv.capmerc"]["b"] > 0
    assert result["origin_a"].endswith(" -O2")


@triton.jit
def _square_plus_one(v):
    return v * v + 1.0


def _helper_calling_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Calls a JIT helper: its inlining gives the kernel a DW_TAG_subprogram, whose DW_AT_name is the kernel's."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offsets, mask=offsets < n)
    for _ in range(4):
        acc = _square_plus_one(acc)
    tl.store(out_ptr + offsets, acc, mask=offsets < n)


@pytest.mark.every_release  # the source rename rebuilds a kernel and its callees (_triton.rebuild)
def test_source_rename_and_ptx_rename_differ_only_in_the_debug_text(store_path, capsys, tmp_path):
    """docs/rename_ab.md: Triton's DWARF names the kernel; renaming the PTX (what tritonhook does) leaves that name,
    renaming at the source (`repr=`) does not. The cubins differ in the embedded PTX text (and, from Triton 3.9's
    LLVM, `.debug_str`), never in SASS or Mercury metadata."""
    import tritonhook
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    def build(fn):
        source = ASTSource(fn, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 1024})
        return triton.compile(source, target=GPUTarget("cuda", 100, 32))

    at_source = build(triton.jit(_helper_calling_kernel, repr=lambda _: "cutlass__helper_calling_kernel"))
    with tritonhook.session(store_path, rename="cutlass_"):
        in_pipeline = build(triton.jit(_helper_calling_kernel))
    assert at_source.metadata.name == in_pipeline.metadata.name == "cutlass__helper_calling_kernel"
    assert "DW_TAG_subprogram" in in_pipeline.asm["ptx"]
    paths = []
    for name, kernel in (("source", at_source), ("pipeline", in_pipeline)):
        paths.append(tmp_path / f"{name}.cubin")
        paths[-1].write_bytes(kernel.asm["cubin"])
    result = run_json(capsys, *paths, "--sass")
    changed = {row["name_a"] for row in result["sections"] if row["changed"]}
    assert ".nv_debug_ptx_txt" in changed
    assert changed <= {".nv_debug_ptx_txt", ".nv.merc.nv_debug_ptx_txt", ".debug_str", ".nv.merc.debug_str"}
    assert result["sass_identical"] is True


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
