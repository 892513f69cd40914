"""What bounds the Hopper Gluon attention where FlashAttention-4 leads (issue 41 goal 2): Nsight Compute's counters
for ours, FA4 and cuDNN on the same inputs, one launch each per shape.

    # on the GPU machine, FA4 importable (as for `hopper_attention.py --fa4`) and benchmarks/ on PYTHONPATH, under
    # ncu (the profiled region is the one launch per arm; compiles and warm-up outside it)
    ncu --profile-from-start off --clock-control none --csv --page raw --section SpeedOfLight \\
        --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats --section LaunchStats \\
        --section Occupancy --section InstructionStats --log-file ncu.csv python benchmarks/hopper_attention_bound.py run
    python benchmarks/hopper_attention_bound.py table ncu.csv --out bound.json

`run` launches, per shape (`--shapes D:causal:S,...`, B·S = 16k tokens and H·D = 2048 as in
benchmarks/hopper_attention.py), our bf16 kernel (each of `--ours`' variants of benchmarks/hopper_attention.py that
builds at the shape's D: arm `ours` for `ws`, `ours:VARIANT` for the others; `fp8` for our tuned fp8 build on the same
inputs cast to e4m3, arm `ours:fp8`), FA4's Hopper forward and cuDNN's, each
warmed up first, then once more inside `cudaProfilerStart/Stop`, in that order (give `table` the same `--ours`).
`table` reads ncu's raw CSV back: per kernel its duration and TFLOPS under the profiler, the issue-slot use
(`smsp__issue_active`: the share of active cycles in which a scheduler issued), instructions issued per SM cycle (at
most 4), the MUFU (XU), FMA and ALU pipes' share of their peak, registers per thread, warps per scheduler, and the
three stall reasons with the most warps stalled per issue cycle. (ncu's GMMA counter counts instructions, not the
tensor pipe's busy cycles: TFLOPS stands for the tensor work.) `--clock-control none` leaves the clocks as the GPU
runs them (the benchmark's condition; ncu cannot lock them on the lent machine).
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import re
import sys

from hopper_attention import ONLY_AT_D, VARIANT_KWARGS

SHAPES = "64:0:16384,64:1:16384,128:0:16384,128:1:16384"
FAMILY_OF_KERNEL = (("ours", re.compile(r"^_attn_fwd_ws")), ("fa4", re.compile(r"flash_attn|FlashAttention", re.I)),
                    ("cudnn", re.compile(r"cudnn|sm90_xmma|fmha", re.I)))
"""A profiled kernel's family (an arm, or all of our variants), by its name (the first pattern that matches);
kernels matching none are left out. Our variants share the kernel's name: launch order tells them apart."""
COLUMNS = {
    "duration_us": ("gpu__time_duration.sum", 1e-3),
    "issue_active_pct": ("smsp__issue_active.avg.pct_of_peak_sustained_active", 1),
    "ipc_per_sm": ("sm__inst_issued.avg.per_cycle_active", 1),
    "xu_pipe_pct": ("sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active", 1),
    "fma_pipe_pct": ("sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active", 1),
    "alu_pipe_pct": ("sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active", 1),
    "registers": ("launch__registers_per_thread", 1),
    "warps_per_scheduler": ("smsp__warps_active.avg.per_cycle_active", 1),
    "threads_per_block": ("launch__block_size", 1),
    "grid": ("launch__grid_size", 1),
}
"""Our column -> (ncu metric, scale to our unit), for the sections above. A metric ncu did not collect leaves the
column None."""
MEMORY_COLUMNS = {
    "dram_read_gb": ("dram__bytes_read.sum", 1e-9),
    "sm_mhz": ("gpc__cycles_elapsed.avg.per_second", 1e-6),
}
"""What a kernel read from DRAM and the SM clock it ran at (JSON only), collected with `--metrics
dram__bytes_read.sum,gpc__cycles_elapsed.avg.per_second,gpu__time_duration.sum` or `--section
MemoryWorkloadAnalysis` beside the sections above (docs/hopper_attention.md#under-sustained-load)."""
ALL_COLUMNS = {**COLUMNS, **MEMORY_COLUMNS}
"""Every column a row carries (`kernel_rows`) and the JSON names the metric of."""
FP8 = "fp8"
"""The `--ours` name of our tuned fp8 (e4m3) build, profiled beside the bf16 arms it is a ratio to (issue 55's fp8
goal); FA4 and cuDNN have no fp8 Hopper forward here."""
STALL = re.compile(r"smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio")


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    shape_args = argparse.ArgumentParser(add_help=False)
    shape_args.add_argument("--shapes", default=SHAPES, help=f"D:causal:S, comma-separated (default {SHAPES})")
    shape_args.add_argument("--tokens", type=int, default=16384, help="B*S")
    shape_args.add_argument("--hidden", type=int, default=2048, help="H*D")
    shape_args.add_argument("--ours", default="ws",
                            help=f"our variants, comma-separated (benchmarks/hopper_attention.py's --variants, "
                                 f"or {FP8} for the tuned fp8 build; default ws)")
    run = sub.add_parser("run", parents=[shape_args], help="launch every arm once per shape inside the profiled region")
    run.add_argument("--warmup", type=int, default=3)
    table = sub.add_parser("table", parents=[shape_args],
                           help="read ncu's raw CSV (--csv --page raw) and print the table (give `run`'s shapes)")
    table.add_argument("csv")
    table.add_argument("--out", default=None, help="write the rows as JSON here")
    return ap.parse_args(argv)


@dataclasses.dataclass(frozen=True)
class Shape:
    """One profiled problem: B*S = `tokens`, H*D = `hidden`, as benchmarks/hopper_attention.py sizes them."""
    D: int
    causal: bool
    S: int
    B: int
    H: int

    @property
    def label(self) -> str:
        return f"D={self.D} {'causal' if self.causal else 'non-causal'} S={self.S}"

    @property
    def flops(self) -> float:
        """The forward's two matmuls (4 B H S^2 D), halved under the causal mask."""
        return 4 * self.B * self.H * self.S ** 2 * self.D * (0.5 if self.causal else 1.0)


def ours_arm(variant: str) -> str:
    """The arm of one of our variants: `ours` for the tuned `ws` build, `ours:VARIANT` for the others."""
    return "ours" if variant == "ws" else f"ours:{variant}"


def arms_of(shape: Shape, ours: list[str]) -> list[str]:
    """The arms `run` launches at `shape`, in launch order."""
    return [ours_arm(v) for v in ours if ONLY_AT_D.get(v, shape.D) == shape.D] + ["fa4", "cudnn"]


def family(arm: str) -> str:
    return arm.split(":")[0]


def shapes(args) -> list[Shape]:
    out = []
    for item in args.shapes.split(","):
        D, causal, S = (int(part) for part in item.split(":"))
        out.append(Shape(D, bool(causal), S, max(1, args.tokens // S), args.hidden // D))
    return out


def run(args) -> None:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from fa4_arms import bshd, fa4_calls
    from gluon_kernels import hopper_attention, transpose_v_for_fp8

    ours = args.ours.split(",")
    unknown = sorted(set(ours) - set(VARIANT_KWARGS) - {FP8})
    if unknown:
        raise SystemExit(f"--ours: unknown variant(s) {unknown}; known: {sorted(VARIANT_KWARGS)}")
    for shape in shapes(args):
        D, causal, S, B, H = shape.D, shape.causal, shape.S, shape.B, shape.H
        g = torch.Generator(device="cuda").manual_seed(S + D)
        q, k, v = (torch.randn((B, H, S, D), device="cuda", generator=g).to(torch.bfloat16) for _ in range(3))
        fa4_context, fa4_call = fa4_calls(causal)["fa4"]
        fa4_inputs = bshd(q, k, v)

        def cudnn():
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

        def fa4():
            with fa4_context():
                return fa4_call(*fa4_inputs)

        calls = {"fa4": fa4, "cudnn": cudnn}
        calls.update({ours_arm(variant): lambda kw=VARIANT_KWARGS[variant]: hopper_attention(q, k, v, causal=causal,
                                                                                             **kw)
                      for variant in ours if variant != FP8})
        if FP8 in ours:  # e4m3 copies of the same inputs, V transposed once, outside the profiled region
            q8, k8 = q.to(torch.float8_e4m3fn), k.to(torch.float8_e4m3fn)
            v_t8 = transpose_v_for_fp8(v.to(torch.float8_e4m3fn))
            calls[ours_arm(FP8)] = lambda: hopper_attention(q8, k8, None, v_t=v_t8, causal=causal)
        arms = {arm: calls[arm] for arm in arms_of(shape, ours)}
        for call in arms.values():
            for _ in range(args.warmup):
                call()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        for call in arms.values():
            call()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        print(f"profiled {shape.label} B={B} H={H}", flush=True)


def read_ncu_csv(lines: list[str]) -> list[dict]:
    """ncu's raw page as rows of {metric: text}; the unit row (the second) and ncu's own log lines (those before
    the header, starting with '==') are skipped."""
    body = [line for line in lines if not line.startswith("==")]
    rows = list(csv.DictReader(body))
    return [row for row in rows if row.get("ID", "").strip().isdigit()]


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def kernel_rows(raw: list[dict], profiled: list[Shape], ours: list[str] = ("ws",)) -> list[dict]:
    """One row per profiled kernel of a known family, in launch order, labelled with its arm, its shape and its
    TFLOPS under the profiler: `run` launches each shape's arms in `arms_of` order, so the n-th launch of a family
    is the n-th (shape, arm) of that family in that order."""
    expected = {name: [] for name, _ in FAMILY_OF_KERNEL}
    for shape in profiled:
        for arm in arms_of(shape, list(ours)):
            expected[family(arm)].append((shape, arm))
    seen = {name: 0 for name in expected}
    rows = []
    for record in raw:
        name = record.get("Kernel Name", "")
        kind = next((f for f, pattern in FAMILY_OF_KERNEL if pattern.search(name)), None)
        if kind is None:
            continue
        index = seen[kind]
        seen[kind] += 1
        shape, arm = expected[kind][index] if index < len(expected[kind]) else (None, kind)
        row = {"shape": shape.label if shape else f"#{index}", "arm": arm, "kernel": name[:80]}
        for column, (metric, scale) in ALL_COLUMNS.items():
            value = _number(record.get(metric))
            row[column] = None if value is None else value * scale
        seconds = row["duration_us"] and row["duration_us"] * 1e-6
        row["tflops"] = shape.flops / seconds / 1e12 if shape and seconds else None
        stalls = {match.group(1): _number(value) for metric, value in record.items()
                  if (match := STALL.fullmatch(metric or "")) and _number(value)}
        row["top_stalls"] = sorted(stalls.items(), key=lambda item: -item[1])[:3]
        rows.append(row)
    return rows


def format_table(rows: list[dict]) -> str:
    head = ("shape", "arm", "us", "TFLOPS", "issue%", "IPC/SM", "XU%", "FMA%", "ALU%", "regs", "warps/sched",
            "top stalls (warps stalled per issue)")
    lines = [" | ".join(head)]
    fmt = lambda v, spec: "-" if v is None else format(v, spec)
    for r in rows:
        stalls = ", ".join(f"{name} {value:.2f}" for name, value in r["top_stalls"])
        lines.append(" | ".join([r["shape"], r["arm"], fmt(r["duration_us"], ".0f"), fmt(r["tflops"], ".0f"),
                                 fmt(r["issue_active_pct"], ".1f"), fmt(r["ipc_per_sm"], ".2f"),
                                 fmt(r["xu_pipe_pct"], ".1f"), fmt(r["fma_pipe_pct"], ".1f"),
                                 fmt(r["alu_pipe_pct"], ".1f"), fmt(r["registers"], ".0f"),
                                 fmt(r["warps_per_scheduler"], ".2f"), stalls]))
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.command == "run":
        run(args)
        return 0
    with open(args.csv) as f:
        raw = read_ncu_csv(f.read().splitlines())
    rows = kernel_rows(raw, shapes(args), args.ours.split(","))
    print(format_table(rows))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"rows": rows, "metrics": {c: m for c, (m, _) in ALL_COLUMNS.items()}}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
