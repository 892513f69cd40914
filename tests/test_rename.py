"""Renaming kernels: real Triton compiles, real ptxas, the cubins read back with pyelftools."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import triton
import triton.language as tl
from elftools.elf.elffile import ELFFile
from hypothesis import given, settings, strategies as st

import tritonhook
from tritonhook import cli
from tritonhook.errors import TritonhookError
from tritonhook.launcher import Capture, ChildSettings
from tritonhook.rename import make_ptx_transform, make_selector, ptx_entries, rename_ptx, strip_ptx
from tritonhook.samples import compile_sample

pytestmark = pytest.mark.every_release  # reaches what differs between Triton releases (scripts/test-matrix.sh)

REPO = Path(__file__).resolve().parents[1]

@triton.jit
def cutlass_copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """A kernel that already carries the name: the subject of strip mode and of "never prefix twice"."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


def compile_copy(capability: int = 90):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    source = ASTSource(cutlass_copy_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 256})
    return triton.compile(source, target=GPUTarget("cuda", capability, 32))


def elf_sections(cubin: bytes) -> dict[str, int]:
    """Section name -> size."""
    elf = ELFFile(io.BytesIO(cubin))
    return {section.name: section.data_size for section in elf.iter_sections()}


def elf_functions(cubin: bytes) -> list[str]:
    elf = ELFFile(io.BytesIO(cubin))
    return [s.name for s in elf.get_section_by_name(".symtab").iter_symbols() if s["st_info"]["type"] == "STT_FUNC"]


@pytest.fixture(scope="module")
def add_ptx(tmp_path_factory) -> str:
    """The PTX Triton makes for the `add` sample on sm_90a (compiled once for the module's pure tests)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.mktemp("add-ptx-cache")))
        return compile_sample("add", 90).asm["ptx"]


def ptxas(ptx: str, arch="sm_90a") -> bytes:
    from tritonhook._triton import triton_ptxas
    from tritonhook.binaries import assemble

    return assemble(ptx, triton_ptxas(arch), arch).cubin


# ----- in the compile pipeline ----------------------------------------------------------------------------------
@pytest.mark.parametrize("capability, arch", [(90, "sm_90a"), (100, "sm_100a"), (120, "sm_120a")])
def test_renamed_build_has_the_new_name_in_the_cubin_and_the_metadata(capability, arch, store_path):
    with tritonhook.session(store_path, rename="cutlass_") as session:
        kernel = compile_sample("add", capability)
    cubin = kernel.asm["cubin"]
    assert ".text.cutlass_add_kernel" in elf_sections(cubin)
    assert ".text.add_kernel" not in elf_sections(cubin)
    assert elf_functions(cubin) == [kernel.metadata.name] == ["cutlass_add_kernel"]
    [capture] = session.captures()
    assert (capture.entry, capture.original_entry, capture.arch) == ("cutlass_add_kernel", "add_kernel", arch)


def test_a_kernel_already_named_cutlass_is_never_prefixed_twice(store_path):
    with tritonhook.session(store_path, rename="cutlass_") as session:
        kernel = compile_copy()
    assert kernel.metadata.name == "cutlass_copy_kernel"
    assert elf_functions(kernel.asm["cubin"]) == ["cutlass_copy_kernel"]
    assert not session.captures()[0].renamed


def test_strip_mode_removes_cutlass_from_the_name(store_path):
    with tritonhook.session(store_path, rename=tritonhook.STRIP) as session:
        stripped, untouched = compile_copy(), compile_sample("add", 90)
    assert ".text.copy_kernel" in elf_sections(stripped.asm["cubin"])
    assert stripped.metadata.name == "copy_kernel"
    assert untouched.metadata.name == "add_kernel"
    assert [(c.entry, c.original_entry) for c in session.captures()] == [("copy_kernel", "cutlass_copy_kernel"),
                                                                         ("add_kernel", "add_kernel")]


def test_select_regex_renames_only_the_matching_kernels(store_path):
    with tritonhook.session(store_path, rename="tuned_", select=r"^add") as session:
        compile_sample("add", 90)
        compile_copy()
    assert [c.entry for c in session.captures()] == ["tuned_add_kernel", "cutlass_copy_kernel"]


def test_selectors_list_and_callable(add_ptx):
    metadata = {"name": "add_kernel", "num_warps": 4}
    for select, renamed in ((["add_kernel"], True), (["other"], False),
                            (lambda name, md: md["num_warps"] == 4, True), (lambda name, md: False, False),
                            ("kernel$", True), ("^kernel", False)):
        transform, _key = make_ptx_transform("cutlass_", select)
        meta = dict(metadata)
        out = transform(add_ptx, meta)
        assert (ptx_entries(out) == ["cutlass_add_kernel"]) is renamed, select
        assert meta["name"] == ("cutlass_add_kernel" if renamed else "add_kernel")
        assert ("tritonhook_original_name" in meta) is renamed


def test_selectors_enter_the_cache_key():
    keys = {make_ptx_transform(rename, select)[1]
            for rename, select in (("cutlass_", None), ("cutlass_", "add"), ("cutlass_", ["add"]),
                                   ("tuned_", None), (tritonhook.STRIP, None), ("cutlass_", lambda n, m: True))}
    assert len(keys) == 6


def test_bad_selectors_and_prefixes_are_clear_errors():
    with pytest.raises(TritonhookError, match=r"select '\(': not a valid regular expression"):
        make_selector("(")
    with pytest.raises(TritonhookError, match="kernel names must be strings"):
        make_selector([1, 2])
    with pytest.raises(TritonhookError, match="rename prefix '9x': not a usable kernel name"):
        make_ptx_transform("9x")


def test_enable_refuses_other_rename_settings_while_active(store_path):
    with tritonhook.session(store_path, rename="cutlass_"):
        assert tritonhook.enable(store_path, rename="cutlass_") is tritonhook.active_session()
        with pytest.raises(TritonhookError, match="already capturing with transform"):
            tritonhook.enable(store_path)


# ----- the pure PTX rename --------------------------------------------------------------------------------------
def test_rename_ptx_renames_entry_params_and_references_only(add_ptx):
    renamed = rename_ptx(add_ptx)
    assert ptx_entries(renamed) == ["cutlass_add_kernel"]
    assert "add_kernel_param_0" not in renamed.replace("cutlass_add_kernel_param_0", "")
    assert renamed.count("cutlass_add_kernel") == add_ptx.count("add_kernel")
    # quoted strings (the .file path) are not references
    files = [line for line in add_ptx.splitlines() if line.lstrip().startswith(".file")]
    assert files and all(line in renamed for line in files)


def two_entry_ptx(ptx: str) -> str:
    """The add PTX with a second kernel, `add_kernel2`, whose name starts with the first one's."""
    start = ptx.index("\t// .globl")
    end = ptx.index("\n}\n", start) + 3
    return ptx[:end] + ptx[start:end].replace("add_kernel", "add_kernel2") + ptx[end:]


def test_rename_ptx_leaves_longer_names_and_other_entries_alone(add_ptx):
    renamed = rename_ptx(two_entry_ptx(add_ptx), entry="add_kernel")
    assert ptx_entries(renamed) == ["cutlass_add_kernel", "add_kernel2"]
    assert "add_kernel2_param_0" in renamed and "cutlass_add_kernel2" not in renamed
    assert sorted(elf_functions(ptxas(renamed))) == ["add_kernel2", "cutlass_add_kernel"]


def test_rename_ptx_errors_name_the_problem(add_ptx):
    with pytest.raises(TritonhookError, match=r"no .entry 'nope' \(entries: add_kernel\)"):
        rename_ptx(add_ptx, entry="nope")
    clash = add_ptx.replace("// @add_kernel", "// @add_kernel cutlass_add_kernel")
    with pytest.raises(TritonhookError, match="already uses that name"):
        rename_ptx(clash)


@settings(max_examples=60, deadline=None)
@given(prefix=st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True))
def test_rename_is_idempotent_and_strip_undoes_cutlass(add_ptx, prefix):
    once = rename_ptx(add_ptx, prefix)
    assert rename_ptx(once, prefix) == once
    assert strip_ptx(rename_ptx(add_ptx, "cutlass_")) == add_ptx
    if "cutlass" not in prefix:
        assert strip_ptx(add_ptx) == add_ptx


def _through_the_environment(rename, select):
    """What a child decodes of this process's rename and select, written and read by `launcher.ChildSettings`."""
    sent = ChildSettings(capture=Capture.of("/tmp/s", rename=rename, select=select)).variables({})
    received = ChildSettings.current(sent).capture
    return received.rename, received.select


def test_rename_settings_travel_through_the_environment():
    for rename, select in (("cutlass_", None), (tritonhook.STRIP, "^add"), (None, None)):
        assert _through_the_environment(rename, select) == (rename, select)
    rename, pattern = _through_the_environment("cutlass_", ["add_kernel", "b"])
    assert make_selector(pattern)[0]("add_kernel", {}) and not make_selector(pattern)[0]("add_kernel_x", {})


# ----- cache separation -----------------------------------------------------------------------------------------
def test_plain_renamed_plain_in_one_process_never_share_a_cache_entry(store_path):
    plain = compile_sample("add", 90)
    with tritonhook.session(store_path, rename="cutlass_"):
        renamed = compile_sample("add", 90)
    with tritonhook.session(store_path, rename="tuned_"):
        other = compile_sample("add", 90)
    again = compile_sample("add", 90)
    names = [k.metadata.name for k in (plain, renamed, other, again)]
    assert names == ["add_kernel", "cutlass_add_kernel", "tuned_add_kernel", "add_kernel"]
    assert [elf_functions(k.asm["cubin"]) for k in (plain, renamed, other, again)] == [[n] for n in names]
    assert len({plain.hash, renamed.hash, other.hash}) == 3 and again.hash == plain.hash


CHILD = textwrap.dedent("""
    import hashlib, json, sys, tritonhook
    from tritonhook.samples import compile_sample
    if sys.argv[1] != "plain":
        tritonhook.enable(sys.argv[2], rename=sys.argv[1])
    kernel = compile_sample("add", 90)
    print(json.dumps([kernel.metadata.name, hashlib.sha256(kernel.asm["cubin"]).hexdigest()]))
""")


def test_plain_renamed_plain_across_processes_sharing_one_cache_dir(store_path, triton_cache):
    results = []
    for variant in ("plain", "cutlass_", "plain", "cutlass_"):
        done = subprocess.run([sys.executable, "-c", CHILD, variant, str(store_path)], capture_output=True,
                              text=True, check=True)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    names = [name for name, _ in results]
    assert names == ["add_kernel", "cutlass_add_kernel"] * 2
    cubins = [digest for _, digest in results]
    assert cubins[0] == cubins[2] and cubins[1] == cubins[3] and cubins[0] != cubins[1]
    captures = tritonhook.Store(store_path, create=False).captures()
    assert [(c.event, c.entry, c.original_entry) for c in captures] == [
        ("compile", "cutlass_add_kernel", "add_kernel"), ("cache_hit", "cutlass_add_kernel", "add_kernel")]


# ----- CLI ------------------------------------------------------------------------------------------------------
def test_cli_rename_round_trip_is_accepted_by_ptxas(add_ptx, tmp_path, capsys):
    source, renamed, back = tmp_path / "add.ptx", tmp_path / "renamed.ptx", tmp_path / "back.ptx"
    source.write_text(add_ptx)
    assert cli.main(["rename", str(source), "-o", str(renamed)]) == 0
    assert capsys.readouterr().out.strip() == f"{renamed}: add_kernel -> cutlass_add_kernel"
    cubin = ptxas(renamed.read_text())
    assert elf_functions(cubin) == ["cutlass_add_kernel"] and ".text.cutlass_add_kernel" in elf_sections(cubin)
    assert cli.main(["rename", str(renamed), "--strip", "-o", str(back), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entries"] == [{"before": "cutlass_add_kernel", "after": "add_kernel"}]
    assert back.read_text() == add_ptx


def test_cli_rename_errors_are_one_line(tmp_path, capsys):
    not_ptx = tmp_path / "notes.txt"
    not_ptx.write_text("hello")
    assert cli.main(["rename", str(not_ptx), "-o", str(tmp_path / "out.ptx")]) == 2
    err = capsys.readouterr().err
    assert err == f"tritonhook: error: {not_ptx}: no .entry in this file (is it PTX?)\n"


def test_cli_run_passes_rename_and_select_to_the_child(store_path):
    script = ("from tritonhook.samples import compile_sample\n"
              "compile_sample('add', 90)\n"
              "import tests.test_rename as t; t.compile_copy()\n")
    done = subprocess.run([sys.executable, "-m", "tritonhook", "run", "--store", str(store_path), "--rename",
                           "fast_", "--select", "copy", "--", sys.executable, "-c", script], capture_output=True,
                          text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    entries = [c.entry for c in tritonhook.Store(store_path, create=False).captures()]
    assert entries == ["add_kernel", "fast_cutlass_copy_kernel"]


# ----- the effect itself ----------------------------------------------------------------------------------------
def test_fp8_tcgen05_matmul_renamed_has_a_larger_capmerc_section(store_path):
    plain = compile_sample("matmul_fp8", 100)
    with tritonhook.session(store_path, rename="cutlass_"):
        renamed = compile_sample("matmul_fp8", 100)
    assert "tcgen05.mma" in plain.asm["ptx"]
    plain_size = elf_sections(plain.asm["cubin"])[".nv.capmerc.text.matmul_kernel"]
    renamed_size = elf_sections(renamed.asm["cubin"])[".nv.capmerc.text.cutlass_matmul_kernel"]
    print(f"capmerc plain {plain_size} B, cutlass_ {renamed_size} B ({renamed_size / plain_size:.2f}x)")
    assert renamed_size > plain_size


def test_the_exact_names_regex_matches_those_names_only_however_they_are_spelled():
    """One helper writes every `--select` of exact names (run, the sweep's estimate, the report's A/B estimate);
    the report's once left names unescaped, so a name with a regex character matched others."""
    import re

    from tritonhook.rename import exact_names_pattern

    pattern = re.compile(exact_names_pattern(["k.v", "attn$fwd", "k.v", "matmul"]))
    assert [n for n in ("k.v", "kXv", "attn$fwd", "matmul", "matmul_kernel", "pre_matmul") if pattern.search(n)] \
        == ["k.v", "attn$fwd", "matmul"]
