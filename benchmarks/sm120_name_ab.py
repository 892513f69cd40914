"""The name experiment: does the `cutlass` in every CuTe DSL kernel name change the speed of our kernels?

Three arms of the same PTX (tests/cute_name_swap.py): `plain` = the DSL's own cubin (its linked-in ptxas, cutlass
name), `ext` = an external ptxas at -O3 on the unchanged PTX (cutlass name), `strip` = the same external ptxas on
the PTX with `cutlass` stripped from the entry names. strip vs ext isolates the name; plain vs ext the ptxas.

As a `tritonhook ab` child (the arm comes from $TRITONHOOK_AB_VARIANT, `#N` suffixes of A/A runs ignored):

    python -m tritonhook ab --variants plain,strip,ext --rounds 6 -- python benchmarks/sm120_name_ab.py

times CpAsync and TMA, BF16, B=2 H=16 S=4096 D=128, causal and not, with `tritonhook.ab.bench` (the first call's
output is what tritonhook ab compares across arms). Every process seeds the same inputs. The variant labels are
the ones `tritonhook.measure.variants.parse_variants` accepts: `plain` and `strip` are its own; `ext` parses as a rename prefix,
which only Triton compiles would see (nothing here compiles Triton), so for this script it is only a label.

    python benchmarks/sm120_name_ab.py --experiment --out DIR [--json FILE]

builds the three arms of each configuration once, checks the loaded library's kernel names, runs each arm on the
same NaN-poisoned output (bitwise against plain, relative error against SDPA in fp32), and writes every cubin and
PTX to DIR with a JSON of registers, spills, instruction counts and which .text sections are identical.

Needs an sm_90 GPU (the arms are built for sm_90a), torch, nvidia-cutlass-dsl and an external ptxas; run from the
repository root with the repository installed (pip install -e '.[cute]') or PYTHONPATH=$PWD.
benchmarks/sm120_h200_name_run.sh runs both modes on the H200 and prints the tables. Results: sm120_attn/README.md
("The cutlass name").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from sm120_attn.constants import LOG2E
from tritonhook import config
from tritonhook.measure.stats import bootstrap_ratio, verdict

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))  # cute_name_swap: the name swap is lab support, kept with its tests

B, H, S, D = 2, 16, 4096, 128
CONFIGS = [("cpasync", False), ("cpasync", True), ("tma", False), ("tma", True)]
ARCH = "sm_90a"


def bench_name(kernel: str, causal: bool) -> str:
    return f"{kernel}-{'causal' if causal else 'full'}-b{B}h{H}s{S}d{D}"


def flops(causal: bool) -> float:
    from tritonhook.flops import attention_flops

    return attention_flops(B, H, S, D, causal)


def inputs(seed: int = 0):
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    return tuple(torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(3))


def prepare(kernel: str, causal: bool, arm: str, q, k, v, out, *, dump_dir: str, ptxas: str | None = None):
    """Compile one configuration and switch it to `arm`. Returns (fn, cute args, stream, info)."""
    import sm120_attn
    import cute_name_swap as name_swap  # tests/cute_name_swap.py (on sys.path: see TESTS)
    from tritonhook.rename import ptx_entries

    fn, args, stream = sm120_attn.compiled_kernel(kernel, q, k, v, out, causal, arch=ARCH,
                                                  options=f"--keep-ptx --keep-cubin --dump-dir {dump_dir}")
    ptx = fn.__ptx__
    ptx = (ptx if isinstance(ptx, str) else bytes(ptx).decode()).rstrip("\0")
    (entry,) = ptx_entries(ptx)
    info = {"arm": arm, "dsl_entry": entry, "ptx": ptx, "dsl_cubin": bytes(fn.__cubin__ or b"")}
    if arm != "plain":
        src, names = name_swap.arm_ptx(ptx, arm)
        built = name_swap.assemble_cached(src, ARCH, ptxas=ptxas)
        report = name_swap.install_cubin(fn, built.cubin, names, old_entry=entry)
        info.update(entry=names.get(entry, entry), cubin=built.cubin, ptxas=built.ptxas, ptxas_version=built.version,
                    flags=list(built.flags), ptx_isa_rewritten=built.ptx_isa_rewritten, swap=vars(report),
                    arm_ptx=src, ptxas_log=built.log)
    else:
        info.update(entry=entry, cubin=info["dsl_cubin"])
    return fn, args, stream, info


def arm_from_env(default: str = "plain") -> str:
    label = config.ab.AB_VARIANT.get() or default
    return label.split("#", 1)[0]


# ----- tritonhook ab child -----------------------------------------------------------------------------------------
def run_child(arm: str) -> None:
    import torch

    from tritonhook import ab

    if arm not in ("plain", "ext", "strip"):
        raise SystemExit(f"name_ab: unknown arm {arm!r} (plain, ext, strip)")
    q, k, v = inputs()
    scale_log2 = D ** -0.5 * LOG2E
    with tempfile.TemporaryDirectory(prefix="sm120_name_ab_") as dump:
        for kernel, causal in CONFIGS:
            out = torch.empty_like(q)
            fn, args, stream, info = prepare(kernel, causal, arm, q, k, v, out, dump_dir=dump)

            def launch(fn=fn, args=args, stream=stream, out=out):
                fn(*args, scale_log2, stream)
                return out

            result = ab.bench(launch, name=bench_name(kernel, causal), flops=flops(causal))
            print(f"{arm:5} {bench_name(kernel, causal)} entry={info['entry'][:40]}... "
                  f"{result.median_ms:.4f} ms {flops(causal) / result.median_ms / 1e9:.1f} TFLOPS", flush=True)


# ----- the experiment (one process, all arms) ----------------------------------------------------------------------
def kernel_facts(cubin: bytes, label: str) -> dict:
    from tritonhook.cubin import Cubin

    parsed = Cubin.from_bytes(cubin, label=label)
    (kern,) = parsed.kernels.values()
    text = next(s for s in parsed.sections if s.name == f".text.{kern.name}")
    return {"entry": kern.name, "registers": kern.registers, "spill_stores": kern.spill_stores,
            "spill_loads": kern.spill_loads, "frame_size": kern.frame_size, "text_bytes": kern.text_size,
            "instructions": kern.instructions, "text_sha256": text.sha256, "cubin_bytes": parsed.size,
            "tool": f"{parsed.tool.name} {parsed.tool.version}".strip(), "uses_setmaxnreg": kern.uses_setmaxnreg}


def opcode_delta(a: bytes, b: bytes) -> list:
    """Changed base-opcode counts between two single-kernel cubins (nvdisasm), largest change first."""
    from tritonhook.cubin import disassemble, opcode_histogram

    ha = opcode_histogram(i for ins in disassemble(a).values() for i in ins)
    hb = opcode_histogram(i for ins in disassemble(b).values() for i in ins)
    rows = [(op, ha[op], hb[op]) for op in set(ha) | set(hb) if ha[op] != hb[op]]
    return sorted(rows, key=lambda r: (-abs(r[2] - r[1]), r[0]))


def experiment(out_dir: Path, ptxas: str | None) -> dict:
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "sm120_attn"))
    import gpu_check
    import cute_name_swap as name_swap  # tests/cute_name_swap.py (on sys.path: see TESTS)
    from tritonhook.rename import rename_ptx

    out_dir.mkdir(parents=True, exist_ok=True)
    q, k, v = inputs()
    scale_log2 = D ** -0.5 * LOG2E
    results = []
    with tempfile.TemporaryDirectory(prefix="sm120_name_exp_") as dump:
        for kernel, causal in CONFIGS:
            tag = f"{kernel}-{'causal' if causal else 'full'}"
            out = torch.empty_like(q)
            t0 = time.perf_counter()
            fn, args, stream, plain = prepare(kernel, causal, "plain", q, k, v, out, dump_dir=dump, ptxas=ptxas)
            text = name_swap.module_text(fn)  # the DSL's host module, before any swap
            ref = gpu_check.reference(q, k, v, causal, None)
            row = {"config": tag, "B": B, "H": H, "S": S, "D": D, "causal": causal, "arms": {}}
            outputs = {}
            for arm in name_swap.ARMS:
                info = plain
                if arm != "plain":
                    src, names = name_swap.arm_ptx(plain["ptx"], arm)
                    built = name_swap.assemble_cached(src, ARCH, ptxas=ptxas)
                    try:
                        report = name_swap.install_cubin(fn, built.cubin, names, old_entry=plain["dsl_entry"],
                                                         text=text)
                    except Exception:
                        # what the host module says about the kernel, to see why the swap did not fit
                        lines = [ln[:400] for ln in text.splitlines() if plain["dsl_entry"][:40] in ln
                                 or "Library" in ln or "binary" in ln]
                        (out_dir / f"{tag}.host_module_lines.txt").write_text("\n".join(lines))
                        raise
                    info = {"entry": names.get(plain["dsl_entry"], plain["dsl_entry"]), "cubin": built.cubin,
                            "ptxas": built.ptxas, "ptxas_version": built.version, "flags": list(built.flags),
                            "ptx_isa_rewritten": built.ptx_isa_rewritten, "swap": vars(report),
                            "ptxas_log_tail": built.log.strip().splitlines()[-4:]}
                    (out_dir / f"{tag}.{arm}.ptx").write_text(src)
                else:
                    (out_dir / f"{tag}.plain.ptx").write_text(plain["ptx"])
                (out_dir / f"{tag}.{arm}.cubin").write_bytes(info["cubin"])
                out.fill_(float("nan"))
                fn(*args, scale_log2, stream)
                torch.cuda.synchronize()
                outputs[arm] = out.clone()
                facts = kernel_facts(info["cubin"], f"{tag}.{arm}")
                arm_row = {k2: v2 for k2, v2 in info.items() if k2 not in ("cubin", "ptx", "dsl_cubin", "arm_ptx",
                                                                           "ptxas_log", "dsl_entry", "arm")}
                arm_row.update(facts)
                arm_row["loaded_kernels"] = name_swap.loaded_kernel_names(fn)
                arm_row["nan"] = int(torch.isnan(out).sum())
                arm_row["rel_err_vs_sdpa_fp32"] = gpu_check.rel_err(out, ref)
                arm_row["bitwise_equal_plain"] = bool(torch.equal(out, outputs["plain"]))
                row["arms"][arm] = arm_row
            # the stripped PTX re-prefixed with cutlass_ (pairs with strip under `tritonhook diff`'s default prefix)
            stripped, _ = name_swap.strip_names(plain["ptx"])
            recut = name_swap.assemble_cached(rename_ptx(stripped, "cutlass_"), ARCH, ptxas=ptxas)
            (out_dir / f"{tag}.recut.cubin").write_bytes(recut.cubin)
            recut_facts = kernel_facts(recut.cubin, f"{tag}.recut")
            arms = row["arms"]
            row["text_identical"] = {
                "plain_vs_ext": arms["plain"]["text_sha256"] == arms["ext"]["text_sha256"],
                "ext_vs_strip": arms["ext"]["text_sha256"] == arms["strip"]["text_sha256"],
                "ext_vs_recut": arms["ext"]["text_sha256"] == recut_facts["text_sha256"],
            }
            row["recut"] = recut_facts
            try:
                row["opcodes_ext_to_strip"] = opcode_delta((out_dir / f"{tag}.ext.cubin").read_bytes(),
                                                           (out_dir / f"{tag}.strip.cubin").read_bytes())[:25]
            except Exception as exc:  # noqa: BLE001 - nvdisasm missing: the rest stands
                row["opcodes_ext_to_strip"] = f"{type(exc).__name__}: {exc}"
            row["seconds"] = round(time.perf_counter() - t0, 1)
            results.append(row)
            del ref
            print(json.dumps({"config": tag, "text_identical": row["text_identical"],
                              **{a: {x: arms[a][x] for x in ("entry", "registers", "spill_stores", "spill_loads",
                                                             "instructions", "bitwise_equal_plain",
                                                             "rel_err_vs_sdpa_fp32", "loaded_kernels")}
                                 for a in arms}}), flush=True)
    return {"device": torch.cuda.get_device_name(), "arch": ARCH, "configs": results}


def print_summary(data: dict) -> None:
    print(f"\nname experiment ({data['device']}, {data['arch']}): regs / spill st,ld / SASS instructions")
    print(f"{'config':16} {'arm':5} {'ptxas':10} {'regs':>4} {'spill':>9} {'instr':>6} {'bitwise=plain':>13} "
          f"{'rel_err':>8}  entry")
    for row in data["configs"]:
        for arm, a in row["arms"].items():
            print(f"{row['config']:16} {arm:5} {a.get('ptxas_version', 'DSL'):10} {a['registers']:>4} "
                  f"{a['spill_stores']:>4},{a['spill_loads']:<4} {a['instructions']:>6} "
                  f"{str(a['bitwise_equal_plain']):>13} {a['rel_err_vs_sdpa_fp32']:8.2e}  {a['entry'][:32]}")
        print(f"{'':16} .text identical: {row['text_identical']}")


def summarize_ab(report: dict) -> list[dict]:
    """Rows of a `tritonhook ab --json` report of this script: each arm against plain (the report's own ratios and
    intervals) and strip against ext (the name alone), computed with the same paired bootstrap and verdict."""
    rows = []
    for bench in report["benchmarks"]:
        arms = {v["label"]: v for v in bench["variants"]}
        row = {"name": bench["name"], "correctness": bench["correctness"],
               "median_ms": {k: v["summary"]["median_ms"] for k, v in arms.items()},
               "tflops": {k: v["tflops"] for k, v in arms.items()},
               "spread_pct": {k: v["summary"].get("spread_pct") for k, v in arms.items()}, "vs": {}}
        base = bench["variants"][0]["label"]
        for label, v in arms.items():
            if label != base:
                row["vs"][f"{label}/{base}"] = (v["ratio"], v["ci_low"], v["ci_high"], v["verdict"])
        if "strip" in arms and "ext" in arms:
            ratio, low, high = bootstrap_ratio(arms["ext"]["samples_ms"], arms["strip"]["samples_ms"])
            min_effect = report.get("min_effect", config.ab.DEFAULT_MIN_EFFECT)
            row["vs"]["strip/ext"] = (ratio, low, high, verdict(ratio, low, high, min_effect))
        rows.append(row)
    return rows


def print_ab(rows: list[dict], rounds: int | None = None) -> None:
    print(f"\nname A/B ({rounds or '?'} rounds; time ratio, < 1 = faster; 95% paired-bootstrap CI)")
    for row in rows:
        tf = " ".join(f"{k} {v:.1f}" for k, v in row["tflops"].items() if v)
        print(f"{row['name']:34} outputs {row['correctness']:9} TFLOPS: {tf}")
        for pair, (ratio, low, high, verdict) in row["vs"].items():
            print(f"{'':34}   {pair:12} {ratio:.4f} [{low:.4f}, {high:.4f}] {verdict}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("name_experiment"))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--arm", help="run as this arm (default: $TRITONHOOK_AB_VARIANT, else plain)")
    parser.add_argument("--ptxas", help="external ptxas (default: $SM120_NAME_PTXAS, /usr/local/cuda/bin/ptxas)")
    parser.add_argument("--summarize-ab", type=Path, metavar="AB_JSON",
                        help="print the table of a `tritonhook ab --json` report of this script (no GPU)")
    args = parser.parse_args(argv)
    if args.summarize_ab:
        report = json.loads(args.summarize_ab.read_text())
        rows = summarize_ab(report)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
        print_ab(rows, report.get("rounds"))
        return 0
    if args.ptxas:
        os.environ["SM120_NAME_PTXAS"] = args.ptxas
    if not args.experiment:
        run_child(args.arm or arm_from_env())
        return 0
    data = experiment(args.out, args.ptxas)
    if args.json:
        args.json.write_text(json.dumps(data, indent=1, default=str))
    print_summary(data)
    ok = all(a["nan"] == 0 and a["bitwise_equal_plain"] for row in data["configs"] for a in row["arms"].values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
