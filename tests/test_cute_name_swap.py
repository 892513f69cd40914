"""CPU tests of the name experiment's plumbing (tests/cute_name_swap.py): no GPU.

The MLIR string codec and the host-module rewrite are tested on synthetic text; with the CuTe DSL and an external
ptxas present, one real kernel (CpAsync, sm_90a, D=128, causal) is compiled with fake tensors, its PTX stripped
and re-assembled for sm_90a, and the DSL's own host module is rewritten and re-parsed as MLIR.
"""

import re

import cute_name_swap as name_swap  # tests/cute_name_swap.py
import pytest

pytestmark = pytest.mark.release_independent  # CuTe DSL's compiler, not Triton's


def test_mlir_string_codec_round_trips_every_byte():
    data = bytes(range(256)) + b'\x7fELF "quoted" back\\slash'
    body = name_swap.mlir_encode(data)
    assert '"' not in body and name_swap.mlir_decode(body) == data
    # what MLIR itself prints: \XX escapes, plus the short forms it accepts
    assert name_swap.mlir_decode(r"A\00\7FELF\\\"\n") == b'A\x00\x7fELF\\"\n'


def _fake_module(entry: str, blob: bytes) -> str:
    quoted = name_swap.mlir_encode(blob)
    return "\n".join([
        'module attributes {gpu.container_module} {',
        f'  llvm.mlir.global internal constant @printfFormat_0("\\0AError: kernel \'{entry}\' too big\\00") '
        '{addr_space = 0 : i32}',
        f'  llvm.mlir.global internal constant @kernels_binary("{quoted}") {{addr_space = 0 : i32, alignment = 8 : i64}}',
        '  llvm.func @cuda_load(%arg0: !llvm.ptr) -> i32 {',
        f'    %13 = llvm.mlir.constant("{entry}\\00") : !llvm.array<{len(entry) + 1} x i8>',
        '  }',
        '  llvm.func @cuda_load_to_device(%arg0: !llvm.ptr, %arg1: i32) -> i32 {',
        f'    %8 = llvm.mlir.constant("{entry}\\00") : !llvm.array<{len(entry) + 1} x i8>',
        '  }',
        '}'])


def test_swap_module_text_replaces_binary_and_pads_lookup_names():
    old, new = "kernel_cutlass_attn_0", "kernel_attn_0"
    text = _fake_module(old, b"\x50\xed\x55\xba\x01\x00\x7fELF....." + old.encode() + b"\x00")
    cubin = b"\x7fELF\x02\x01" + new.encode() + b"\x00\xff\x22\x5c"
    swapped, report = name_swap.swap_module_text(text, cubin, {old: new}, old_entry=old)
    assert report.binary_symbol == "kernels_binary" and report.new_binary_bytes == len(cubin)
    assert report.lookups_renamed == {old: 2}
    blob = re.search(r'@kernels_binary\("((?:[^"\\]|\\.)*)"\)', swapped).group(1)
    assert name_swap.mlir_decode(blob) == cubin
    padded = new + "\\00" * (len(old) - len(new) + 1)
    assert swapped.count(f'llvm.mlir.constant("{padded}") : !llvm.array<{len(old) + 1} x i8>') == 2
    assert f"kernel '{old}' too big" in swapped  # error-message strings are left alone
    # the ext arm (no rename) only swaps the binary
    same_names, report = name_swap.swap_module_text(text, cubin, {}, old_entry=old)
    assert report.lookups_renamed == {} and same_names.count(f'"{old}\\00"') == 2


def test_swap_module_text_refuses_what_it_cannot_do():
    old = "kernel_cutlass_attn_0"
    text = _fake_module(old, b"\x7fELF" + old.encode())
    with pytest.raises(ValueError, match="one embedded GPU binary"):
        name_swap.swap_module_text(text.replace("\\7FELF", "NOTELF"), b"\x7fELF", {}, old_entry=old)
    # a compressed fatbin does not show the name: the one fatbin global is taken
    packed = _fake_module(old, b"\x50\xed\x55\xba" + bytes(range(40)))
    _, report = name_swap.swap_module_text(packed, b"\x7fELF", {}, old_entry=old)
    assert report.binary_symbol == "kernels_binary"
    with pytest.raises(ValueError, match="longer"):
        name_swap.swap_module_text(text, b"\x7fELF", {old: old + "_x"}, old_entry=old)
    with pytest.raises(ValueError, match="no kernel lookup string"):
        name_swap.swap_module_text(text, b"\x7fELF", {"kernel_cutlass_missing": "kernel_missing"}, old_entry=old)


def test_arm_ptx():
    ptx = ".version 8.8\n.target sm_90a\n.visible .entry kernel_cutlass_k_0(\n.param .u64 kernel_cutlass_k_0_param_0\n)\n{\n}\n"
    assert name_swap.arm_ptx(ptx, "ext") == (ptx, {})
    stripped, names = name_swap.arm_ptx(ptx, "strip")
    assert names == {"kernel_cutlass_k_0": "kernel_k_0"}
    assert "cutlass" not in stripped and "kernel_k_0_param_0" in stripped
    with pytest.raises(ValueError):
        name_swap.arm_ptx(ptx, "plain")


# ----- with the DSL and an external ptxas --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dsl_kernel():
    pytest.importorskip("cutlass.cute", reason="needs nvidia-cutlass-dsl (the [cute] extra)")
    from sm120_attn import build

    return build.compile_variant("cpasync", "sm_90a", 128, True, verbose_ptxas=False)


@pytest.fixture(scope="module")
def external_ptxas():
    from tritonhook.binaries import find_ptxas

    found = [b for b in find_ptxas() if tuple(int(x) for x in b.version.split(".")[:2]) >= (12, 8)]
    if not found:
        pytest.skip("no external ptxas")
    return max(found, key=lambda b: tuple(int(x) for x in b.version.split("."))).path


def test_stripped_ptx_reassembles_for_sm90a_without_cutlass(dsl_kernel, external_ptxas, tmp_path):
    from tritonhook.cubin import Cubin
    from tritonhook.rename import ptx_entries

    (entry,) = ptx_entries(dsl_kernel.ptx)
    assert "cutlass" in entry
    dsl_names = list(Cubin.from_bytes(dsl_kernel.cubin).kernels)
    assert dsl_names == [entry]
    for arm in ("ext", "strip"):
        src, names = name_swap.arm_ptx(dsl_kernel.ptx, arm)
        built = name_swap.assemble_cached(src, "sm_90a", ptxas=external_ptxas, cache_dir=tmp_path)
        cubin = Cubin.from_bytes(built.cubin, label=arm)
        assert cubin.arch == "sm_90a"
        (kernel,) = cubin.kernels.values()
        if arm == "strip":
            assert "cutlass" not in kernel.name and kernel.name == names[entry]
        else:
            assert kernel.name == entry
        assert kernel.registers and kernel.registers <= 255
        again = name_swap.assemble_cached(src, "sm_90a", ptxas=external_ptxas, cache_dir=tmp_path)
        assert again.cached and again.cubin == built.cubin


def test_dsl_host_module_takes_the_stripped_cubin(dsl_kernel, external_ptxas, tmp_path):
    """The DSL's real host module: one embedded binary, two kernel lookups; after the swap it still parses."""
    from cutlass._mlir import ir
    from tritonhook.rename import ptx_entries

    (entry,) = ptx_entries(dsl_kernel.ptx)
    src, names = name_swap.arm_ptx(dsl_kernel.ptx, "strip")
    built = name_swap.assemble_cached(src, "sm_90a", ptxas=external_ptxas, cache_dir=tmp_path)
    text = name_swap.module_text(dsl_kernel.compiled)
    swapped, report = name_swap.swap_module_text(text, built.cubin, names, old_entry=entry)
    assert report.lookups_renamed[entry] >= 1
    with dsl_kernel.compiled.ir_module.context:
        module = ir.Module.parse(swapped)
    printed = str(module)
    lookups = re.findall(r'llvm\.mlir\.constant\("(kernel\w*?)(?:\\00)+"\)', printed)
    assert lookups and set(lookups) == {names[entry]}
    assert name_swap.mlir_encode(built.cubin[:64]) in printed
