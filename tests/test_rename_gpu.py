"""On a GPU (written for the H200, sm_90a, Triton 3.6): renamed kernels launch, and the A/B machinery's
verdicts hold where the answer is known. Run with `python -m pytest tests/test_rename_gpu.py -s` to see the
measured ratios (printed and written to ./tritonhook-gpu-ab.json)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import triton
import triton.language as tl

import tritonhook
from tritonhook import ab, format

pytestmark = pytest.mark.gpu
RESULTS = Path("tritonhook-gpu-ab.json")


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def matmul(torch, dtype, size: int, precision: str, block_k: int):
    """(run, inputs, flops) for the sample matmul kernel (row-major A and B)."""
    from tritonhook.samples import matmul_kernel

    a = torch.randn(size, size, device="cuda").to(dtype)
    b = torch.randn(size, size, device="cuda").to(dtype)
    c = torch.empty(size, size, device="cuda", dtype=torch.float32 if dtype == torch.float32 else torch.float16)

    def run(a, b, c):
        matmul_kernel[(size // 128, size // 128)](
            a, b, c, size, size, size, size, size, size, BLOCK_M=128, BLOCK_N=128, BLOCK_K=block_k,
            PRECISION=precision, num_warps=8, num_stages=3)
        return c

    return run, (a, b, c), 2.0 * size**3


def keep(title: str, report: ab.ABReport) -> None:
    """Print the report and add it to ./tritonhook-gpu-ab.json for the closing note."""
    format.show(report)
    saved = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    saved[title] = report.to_json()
    RESULTS.write_text(json.dumps(saved, indent=2, default=str))


@triton.jit
def rename_probe_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """This module's own add: the shared `add_kernel` may already sit in the in-memory JIT cache when another GPU
    test ran first, and then its plain session would compile (and capture) nothing."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


def test_renamed_kernel_launches_and_matches_plain_in_one_process(torch, store_path):
    x, y = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    outs, names = [], []
    for rename in (None, "cutlass_", None, "cutlass_"):
        out = torch.empty_like(x)
        with tritonhook.session(store_path, rename=rename, subprocesses=False):
            compiled = rename_probe_kernel[(x.numel() // 1024,)](x, y, out, x.numel(), BLOCK=1024)
        torch.cuda.synchronize()
        outs.append(out)
        names.append(compiled.metadata.name)
    assert names == ["rename_probe_kernel", "cutlass_rename_probe_kernel"] * 2  # the JIT cache never crosses variants
    assert all(torch.equal(out, x + y) for out in outs)
    captures = tritonhook.Store(store_path, create=False).captures()
    assert [(c.entry, c.original_entry) for c in captures] == [
        ("rename_probe_kernel", "rename_probe_kernel"), ("cutlass_rename_probe_kernel", "rename_probe_kernel")]


AA_SCRIPT = textwrap.dedent("""
    import torch
    from tritonhook import ab
    from tritonhook.samples import matmul_kernel
    torch.manual_seed(0)  # every process must compute on the same inputs for the output check
    size = 4096
    a, b = (torch.randn(size, size, device="cuda").half() for _ in range(2))
    c = torch.empty(size, size, device="cuda", dtype=torch.float16)
    def run(a, b, c):
        matmul_kernel[(size // 128, size // 128)](a, b, c, size, size, size, size, size, size, BLOCK_M=128,
                                                  BLOCK_N=128, BLOCK_K=64, PRECISION="tf32", num_warps=8,
                                                  num_stages=3)
        return c
    ab.bench(run, inputs=(a, b, c), name="fp16_matmul_4096", flops=2.0 * size**3)
""")


def test_an_a_a_run_in_fresh_processes_finds_no_difference(tmp_path, store_path):
    script = tmp_path / "bench_fp16.py"
    script.write_text(AA_SCRIPT)
    done = subprocess.run([sys.executable, "-m", "tritonhook", "ab", "--store", str(store_path), "--variants",
                           "plain,plain", "--rounds", "5", "--json", "--", sys.executable, str(script)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    [bench] = json.loads(done.stdout)["benchmarks"]
    other = bench["variants"][1]
    print(f"A/A fp16 4096^3 (fresh processes): ratio {other['ratio']:.4f} "
          f"[{other['ci_low']:.4f}, {other['ci_high']:.4f}]")
    assert bench["correctness"] == "bitwise"
    assert other["verdict"] == "no difference"


def test_fp8_wgmma_matmul_same_sass_and_no_difference(torch, store_path):
    run, inputs, flops = matmul(torch, torch.float8_e4m3fn, 4096, "tf32", 128)
    report = ab.compare(run, ("plain", "cutlass_"), flops=flops, inputs=inputs, rounds=7, store=store_path,
                        check="bitwise", name="fp8 wgmma 4096")
    keep("fp8 wgmma", report)
    assert [k["entry"] for k in report.kernels["cutlass_"]] == ["cutlass_matmul_kernel"]
    assert report.sass_identical()                   # docs/ptxas_cutlass.md#the-cutlass-name-path: wgmma SASS does not depend on the name
    bench = report.benchmarks[0]
    assert bench.correctness == "bitwise"
    assert bench.variants[1].verdict == "no difference"


def test_ffma_matmul_whose_sass_changes_with_the_name(torch, store_path):
    run, inputs, flops = matmul(torch, torch.float32, 2048, "ieee", 32)
    report = ab.compare(run, ("plain", "cutlass_"), flops=flops, inputs=inputs, rounds=7, store=store_path,
                        check="allclose", name="fp32 FFMA 2048")
    keep("fp32 FFMA", report)
    assert report.sass_identical() is False
    [plain], [renamed] = report.kernels["plain"], report.kernels["cutlass_"]
    bench = report.benchmarks[0]
    other = bench.variants[1]
    print(f"fp32 FFMA 2048^3 on sm_90a: cutlass_/plain time ratio {other.ratio:.4f} "
          f"[{other.ci_low:.4f}, {other.ci_high:.4f}] -> {other.verdict}; "
          f"regs {plain['registers']} -> {renamed['registers']}, spills {plain['spill_stores']} -> "
          f"{renamed['spill_stores']} B")
    assert bench.correctness in ("bitwise", "allclose")


def test_compare_after_the_program_already_ran_the_kernel_still_summarizes_the_plain_build(torch, store_path):
    """The plain variant of a kernel the program already launched compiles nothing (an in-memory JIT cache hit):
    its build is captured late, from Triton's cache files, so the report still has its cubin facts."""
    run, inputs, _ = matmul(torch, torch.float32, 1024, "ieee", 32)
    run(*inputs)
    torch.cuda.synchronize()
    report = ab.compare(run, ("plain", "cutlass_"), inputs=inputs, rounds=5, store=store_path, progress=False)
    [plain], [renamed] = report.kernels["plain"], report.kernels["cutlass_"]
    assert (plain["entry"], renamed["entry"]) == ("matmul_kernel", "cutlass_matmul_kernel")
    assert plain["registers"] != renamed["registers"] and report.sass_identical() is False


def test_identical_arms_read_alike_whatever_their_place_in_the_round(torch):
    """Five arms of one 4096^3 bf16 GEMM (~175 µs on the H200), timed interleaved: a call right behind the stream
    hold reads 3-6% slower than one behind another call (benchmarks/timer_places.py), so an order that kept some
    arms off the first place (A B C, C B A) read those 1.5% faster than the ends. Every arm now takes every place
    alike: their medians agree within 1%."""
    from tritonhook.measure.timing import bench_interleaved

    a, b = (torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    results = bench_interleaved([(contextlib.nullcontext, torch.matmul)] * 5, inputs=(a, b), rep_ms=300, min_reps=40)
    medians = [r.median_ms for r in results]
    print("arm medians (ms):", [round(m, 4) for m in medians])
    assert max(medians) / min(medians) < 1.01, medians
