"""The cubin model against independent tools: `ptxas -v`, `readelf -S`, nvdisasm.

Real kernels are compiled by Triton (no GPU needed), then assembled for sm_80, sm_90a, sm_100a and sm_120a by
Triton's ptxas and by the local CUDA toolkit's ptxas; what `Cubin` reads from each cubin must agree with what
those tools print about it.
"""

from __future__ import annotations

import collections
import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tritonhook import binaries as tools
from tritonhook._triton import triton_ptxas
from tritonhook.cubin import Cubin, disassemble, opcode_histogram
from tritonhook.errors import TritonhookError

pytestmark = pytest.mark.every_release  # reaches what differs between Triton releases (scripts/test-matrix.sh)

DATA = Path(__file__).parent / "data"
GPUS = ("sm_80", "sm_90a", "sm_100a", "sm_120a")


@functools.lru_cache(maxsize=None)
def triton_ptx(sample: str, capability: int) -> str:
    """Triton's PTX for a sample kernel, at PTX ISA 8.7 so that every ptxas from 12.8 on reads it."""
    import tempfile

    from tritonhook.samples import compile_sample

    old = os.environ.get("TRITON_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="tritonhook-test-cache-") as cache:
        os.environ["TRITON_CACHE_DIR"] = cache
        try:
            return compile_sample(sample, capability, ptx_version=87).asm["ptx"]
        finally:
            if old is None:
                os.environ.pop("TRITON_CACHE_DIR", None)
            else:
                os.environ["TRITON_CACHE_DIR"] = old


def retarget(ptx: str, gpu: str) -> str:
    return re.sub(r"^\.target\s+sm_\w+", f".target {gpu}", ptx, count=1, flags=re.MULTILINE)


def spilling_ffma_ptx(gpu: str) -> str:
    """Triton's fp32 FFMA matmul asked to run 1024 threads: ptxas must cap registers at 64 and spill."""
    return retarget(triton_ptx("matmul_fp32_ieee", 80).replace(".reqntid 256", ".reqntid 1024"), gpu)


def local_cuda_ptxas() -> str | None:
    found = [b.path for b in tools.find_ptxas() if b.origin in ("CUDA toolkit", "$CUDA_HOME", "$CUDA_PATH")]
    return found[0] if found else None


def ptxas_for(which: str, gpu: str) -> str:
    if which == "triton":
        return triton_ptxas(gpu)
    path = local_cuda_ptxas()
    if path is None:
        pytest.skip("no local CUDA toolkit ptxas")
    return path


# (source name, gpu): the sources are Triton's own kernels (retargeted where the PTX allows it).
SOURCES = {
    "add": lambda gpu: retarget(triton_ptx("add", 80), gpu),
    "ffma_spill": spilling_ffma_ptx,
    "matmul_fp16": lambda gpu: triton_ptx("matmul_fp16", int(re.sub(r"\D", "", gpu))),
    "tma_copy": lambda gpu: triton_ptx("tma_copy", 120),
}
CASES = [("add", "sm_80"), ("ffma_spill", "sm_80"), ("ffma_spill", "sm_90a"), ("ffma_spill", "sm_100a"),
         ("ffma_spill", "sm_120a"), ("matmul_fp16", "sm_90a"), ("tma_copy", "sm_120a")]


@functools.lru_cache(maxsize=None)
def assembled(source: str, gpu: str, which: str) -> tools.AssembleResult:
    return tools.assemble(SOURCES[source](gpu), ptxas_for(which, gpu), gpu, label=f"{source}-{gpu}")


@pytest.mark.parametrize("which", ["triton", "cuda"])
@pytest.mark.parametrize("source,gpu", CASES)
def test_resources_agree_with_ptxas_verbose(source, gpu, which):
    result = assembled(source, gpu, which)
    cubin = Cubin.from_bytes(result.cubin, label=source)
    reported = tools.parse_ptxas_verbose(result.stderr)
    assert set(cubin.kernels) == set(reported)
    for name, kernel in cubin.kernels.items():
        info = reported[name]
        assert (kernel.registers, kernel.frame_size, kernel.spill_stores, kernel.spill_loads, kernel.barriers,
                kernel.shared_static) == (info.registers, info.stack_frame, info.spill_stores, info.spill_loads,
                                          info.barriers, info.shared), result.stderr
    assert cubin.arch == gpu
    if source == "ffma_spill":
        assert all(k.spill_stores > 0 and k.spill_loads > 0 for k in cubin.kernels.values())


def test_shared_memory_and_params_agree_with_ptxas():
    """The tcgen05 kernel declares 32 KiB + 12 B of static shared memory and three parameters (8, 4, 8 B)."""
    result = tools.assemble((DATA / "tcgen05_fp8_loop.ptx").read_text(), triton_ptxas("sm_100a"),
                                "sm_100a")
    kernel = Cubin.from_bytes(result.cubin).kernels["tcgen05_fp8_loop"]
    assert kernel.shared_static == tools.parse_ptxas_verbose(result.stderr)["tcgen05_fp8_loop"].shared
    assert [(p.ordinal, p.size) for p in kernel.params] == [(0, 8), (1, 4), (2, 8)]
    assert [p.offset for p in kernel.params] == [0, 8, 16]
    assert kernel.uses_tcgen05 and kernel.reqntid == (128, 1, 1)


def readelf_sections(data: bytes, tmp_path: Path) -> dict[str, int]:
    path = tmp_path / "x.cubin"
    path.write_bytes(data)
    out = subprocess.run(["readelf", "-SW", str(path)], capture_output=True, text=True, check=True).stdout
    rows = re.findall(r"^\s*\[\s*\d+\]\s+(\S+)\s+\S+(?:\+\S+)?\s+[0-9a-f]{16}\s+[0-9a-f]+\s+([0-9a-f]+)", out,
                      re.MULTILINE)
    return {name: int(size, 16) for name, size in rows}


@pytest.mark.skipif(shutil.which("readelf") is None, reason="no readelf")
@pytest.mark.parametrize("which", ["triton", "cuda"])
@pytest.mark.parametrize("source,gpu", [("ffma_spill", g) for g in GPUS] + [("tma_copy", "sm_120a")])
def test_section_sizes_agree_with_readelf(source, gpu, which, tmp_path):
    data = assembled(source, gpu, which).cubin
    expected = readelf_sections(data, tmp_path)
    cubin = Cubin.from_bytes(data)
    assert {s.name: s.size for s in cubin.sections} == expected
    assert cubin.section_size(".text." + next(iter(cubin.kernels))) > 0


def nvdisasm_text_counts(data: bytes) -> dict[str, collections.Counter]:
    """Opcode counts read from nvdisasm's plain listing (not the JSON that `disassemble` reads)."""
    out = tools.run_nvdisasm(data, ["-c"])
    counts: dict[str, collections.Counter] = {}
    current = None
    for line in out.splitlines():
        if match := re.match(r"\s*\.text\.(\S+):", line):
            current = counts.setdefault(match.group(1), collections.Counter())
        elif current is not None and (match := re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+)",
                                                        line)):
            current[match.group(1)] += 1
    return counts


@pytest.mark.parametrize("source,gpu", [("ffma_spill", "sm_80"), ("matmul_fp16", "sm_90a"),
                                        ("ffma_spill", "sm_100a"), ("tma_copy", "sm_120a")])
def test_opcode_counts_agree_with_nvdisasm_listing(source, gpu):
    data = assembled(source, gpu, "triton").cubin
    sass = disassemble(data)
    expected = nvdisasm_text_counts(data)
    assert {name: opcode_histogram(instructions) for name, instructions in sass.items()} == expected
    cubin = Cubin.from_bytes(data)
    assert {name: k.instructions for name, k in cubin.kernels.items()} == {
        name: sum(counts.values()) for name, counts in expected.items()}


def test_a_cubin_listed_once_is_not_listed_again_by_the_same_nvdisasm(tmp_path, monkeypatch):
    """nvdisasm's listings are kept by cubin, arguments and nvdisasm (`binaries.kept_file`): the same cubin listed
    again runs no nvdisasm and reads what it printed; another modification time of the binary, other arguments or a
    damaged entry list it anew. The nvdisasm here is Triton's, behind a script that logs each run."""
    monkeypatch.setenv("TRITONHOOK_CACHE", str(tmp_path / "cache"))
    log = tmp_path / "runs"
    logging = tmp_path / "nvdisasm"
    logging.write_text(f"#!/bin/sh\necho \"$*\" >> {log}\nexec {tools.find_nvdisasm()} \"$@\"\n")
    logging.chmod(0o755)
    data = assembled("matmul_fp16", "sm_90a", "triton").cubin
    direct = subprocess.run([tools.find_nvdisasm(), "-c", str(_written(tmp_path / "k.cubin", data))],
                            capture_output=True, text=True, check=True).stdout

    def listed(*args: str) -> tuple[str, int]:
        text = tools.run_nvdisasm(data, args, nvdisasm=str(logging))
        return text, len(log.read_text().splitlines())

    assert listed("-c") == (direct, 1)
    assert listed("-c") == (direct, 1)  # kept
    assert listed("-c", "-hex")[1] == 2
    kept = tools.kept_file("nvdisasm", str(logging), ["-c"], data)
    kept.write_bytes(kept.read_bytes()[:20])
    assert listed("-c") == (direct, 3)
    os.utime(logging, ns=(1, 1))
    assert listed("-c") == (direct, 4)
    assert listed("-c") == (direct, 4)


def _written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def nvdisasm_eiattr_names(data: bytes) -> list[str]:
    return re.findall(r"nvinfo : (\S+)", tools.run_nvdisasm(data, []))


@pytest.mark.parametrize("source,gpu", [("ffma_spill", "sm_100a"), ("tma_copy", "sm_120a"),
                                        ("matmul_fp16", "sm_90a")])
def test_eiattr_names_agree_with_nvdisasm(source, gpu):
    data = assembled(source, gpu, "triton").cubin
    cubin = Cubin.from_bytes(data)
    ours = [r.name for r in cubin.global_eiattrs] + [r.name for k in cubin.kernels.values() for r in k.eiattrs
                                                     if r.symbol is None]
    theirs = nvdisasm_eiattr_names(data)
    assert len(ours) == len(theirs)
    pairs = list(zip(ours, theirs))
    mismatched = [(a, b) for a, b in pairs if a != b and not ("UNKNOWN" in a and b == "<unknown>")]
    assert mismatched == []


def test_triton_cubin_arch_tool_and_syscall():
    """Triton's own sm_120a TMA cubin (3.6 emits the syscall, 3.9 does not: docs/tma_stack.md#the-stack-reservation)."""
    import triton
    from triton.backends.nvidia.compiler import get_ptxas_version, sm_arch_from_capability

    from tritonhook.samples import compile_sample

    compiled = compile_sample("tma_copy", 120)
    cubin = Cubin.from_bytes(compiled.asm["cubin"], label="tma_copy")
    assert cubin.arch == sm_arch_from_capability(120)
    assert list(cubin.kernels) == [compiled.metadata.name]
    assert cubin.tool.version and f"V{cubin.tool.version}" in get_ptxas_version(120)
    has_syscall_in_ptx = "shared::cluster.global" in compiled.asm["ptx"]
    assert bool(cubin.syscalls) == has_syscall_in_ptx, (triton.__version__, cubin.external_symbols)


@pytest.mark.parametrize("gpu", ["sm_90", "sm_100", "sm_100f", "sm_120f"])
def test_arch_variants(gpu):
    path = local_cuda_ptxas() or triton_ptxas("sm_100a")
    if gpu.endswith("f") and tuple(map(int, tools.ptxas_version(path).split(".")[:2])) < (12, 9):
        pytest.skip("family targets need ptxas 12.9+")
    ptx = retarget((DATA / "ffma_loop.ptx").read_text(), gpu).replace(".version 8.7", ".version 8.8")
    data = tools.assemble(ptx, path, gpu).cubin
    assert Cubin.from_bytes(data).arch == gpu


@pytest.mark.parametrize("make,reason", [
    (lambda good: b"", "not an ELF file (empty)"),
    (lambda good: b"hello world, not a cubin", "not an ELF file"),
    (lambda good: good[:40], "truncated ELF header"),
    (lambda good: good[:len(good) // 2], "truncated"),
    (lambda good: good[:18] + (62).to_bytes(2, "little") + good[20:], "e_machine 62"),
    (lambda good: (DATA / "ffma_loop.ptx").read_bytes(), "PTX text, not a cubin"),
    (lambda good: Path(shutil.which("ls") or "/bin/ls").resolve().read_bytes(), "not a CUDA cubin"),
])
def test_bad_input_names_the_file_and_the_reason(make, reason):
    good = assembled("add", "sm_80", "triton").cubin
    with pytest.raises(TritonhookError) as info:
        Cubin.from_bytes(make(good), label="input.bin")
    assert str(info.value).startswith("input.bin: ") and reason in str(info.value)


@pytest.mark.skipif(shutil.which("fatbinary") is None, reason="no fatbinary (CUDA toolkit)")
def test_fatbin_is_named_and_its_cubin_extracted(tmp_path):
    from tritonhook.cubin import fatbin_cubins

    good = assembled("add", "sm_80", "triton").cubin
    (tmp_path / "a.cubin").write_bytes(good)
    subprocess.run(["fatbinary", f"--create={tmp_path / 'a.fatbin'}",
                    f"--image3=kind=elf,sm=80,file={tmp_path / 'a.cubin'}"], check=True)
    data = (tmp_path / "a.fatbin").read_bytes()
    with pytest.raises(TritonhookError, match=r"a\.fatbin: a CUDA fatbin, not a cubin \(elf sm_80\)"):
        Cubin.from_bytes(data, label="a.fatbin")
    assert fatbin_cubins(data) == [good]


@pytest.mark.parametrize("source,gpu", [("ffma_spill", "sm_90a"), ("tma_copy", "sm_120a")])
def test_summary_agrees_with_ptxas_verbose_and_readelf(source, gpu, tmp_path):
    """`Cubin.summary(entry)`, the one kernel summary reports quote: ptxas -v's registers and spills, and the size
    and bytes of the kernel's .text section as readelf and objcopy see them."""
    import hashlib

    result = assembled(source, gpu, "triton")
    (entry, info), = tools.parse_ptxas_verbose(result.stderr).items()
    summary = Cubin.from_bytes(result.cubin, label=source).summary(entry)
    assert (summary["registers"], summary["spill_stores"], summary["spill_loads"], summary["frame_size"]) == (
        info.registers, info.spill_stores, info.spill_loads, info.stack_frame)
    if not shutil.which("readelf"):
        pytest.skip("no readelf")
    (tmp_path / "k.cubin").write_bytes(result.cubin)
    dump = subprocess.run(["readelf", "-x", f".text.{entry}", tmp_path / "k.cubin"], capture_output=True, text=True,
                          check=True).stdout
    text = bytes.fromhex("".join("".join(m.group(1).split()) for m in re.finditer(
        r"^\s+0x[0-9a-f]+ ((?:[0-9a-f]{2,8} ){1,4})", dump, re.MULTILINE)))
    assert summary["text_size"] == len(text) == readelf_sections(result.cubin, tmp_path)[f".text.{entry}"]
    assert summary["text_sha256"] == hashlib.sha256(text).hexdigest()


def test_summary_names_the_missing_kernel():
    cubin = Cubin.from_bytes(assembled("add", "sm_80", "triton").cubin, label="add.cubin")
    with pytest.raises(TritonhookError, match=r"add\.cubin: no kernel 'nope' \(kernels: add_kernel\)"):
        cubin.summary("nope")
    assert cubin.summary() == cubin.summary("add_kernel")


def test_inner_loops_find_the_k_loop_and_nothing_in_straight_code():
    """The fp16 matmul's k-loop (its tensor-core instructions inside, closed by a branch back to its first
    instruction) is the one inner loop of its SASS for sm_90a; the elementwise add has none."""
    from tritonhook.cubin import inner_loops

    (matmul,) = disassemble(assembled("matmul_fp16", "sm_90a", "triton").cubin).values()
    (loop,) = inner_loops(matmul)
    closing = loop[-1]
    assert closing.base_opcode == "BRA" and int(closing.operands.split("0x")[-1].rstrip(";) "), 16) == loop[0].offset
    mma = [i for i in loop if i.base_opcode in ("HGMMA", "HMMA")]
    assert mma and len(loop) < len(matmul), (len(loop), len(matmul))
    (add,) = disassemble(assembled("add", "sm_90a", "triton").cubin).values()
    assert inner_loops(add) == []
