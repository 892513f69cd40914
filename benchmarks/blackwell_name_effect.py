"""The ptxas ``cutlass`` name effect on the Blackwell Gluon attention: plain vs ``cutlass_`` build of the same PTX,
per ptxas version, with no GPU (docs/ptxas_cutlass.md#the-cutlass-name-path).

    python benchmarks/blackwell_name_effect.py                      # fp8 e4m3 + e5m2, D=128, non-causal
    python benchmarks/blackwell_name_effect.py --dtype fp16 --causal --ptxas /path/to/ptxas --json out.json

The PTX comes from the Triton in this environment (``compile_blackwell_attention``, with ``ptx_version=87`` by
default so that ptxas 12.8 and 12.9 accept it: Triton 3.9 emits PTX ISA 9.4 otherwise). It is assembled as is and
renamed with ``tritonhook.rename.rename_ptx`` (the kernel then starts with ``cutlass_``), by every ptxas given with
``--ptxas`` (default: one of each version ``tritonhook ptxas list`` finds; the table in the docs adds ptxas 12.8
from PyPI ``nvidia-cuda-nvcc-cu12==12.8.93`` with ``--ptxas``), with the flags Triton passes (``-lineinfo -v
--regAllocOptLevel=2``; ``--bare`` leaves them out, as ``tritonhook ptxas-matrix`` does). Both cubins are compared
with ``tritonhook.diff.diff_cubins``; the table is markdown, ready for docs/blackwell_attention.md. Needs Triton
and a ptxas, no GPU; run from the repository root with the repository installed (pip install -e .) or
PYTHONPATH=$PWD.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

from tritonhook import binaries as tools

TRITON_PTXAS_FLAGS = tools.TRITON_PTXAS_FLAGS + tools.TRITON_39_PTXAS_FLAGS


@dataclasses.dataclass
class Row:
    dtype: str
    head_dim: int
    causal: bool
    triton: str
    ptx_version: int | None
    ptxas: str
    version: str
    build: str
    kernel: str
    cubin: int
    text: int
    capmerc: int
    registers: int | None
    spill_stores: int
    spill_loads: int
    seconds: float
    changed_sections: int = 0


def default_ptxas() -> list[str]:
    from tritonhook.binaries import find_ptxas, one_per_version

    return [b.path for b in one_per_version(find_ptxas())]


def measure(dtype: str, head_dim: int, causal: bool, ptxas_paths, *, ptx_version: int | None = 87,
            prefix: str = "cutlass_", bare: bool = False, keep: str | None = None) -> list[Row]:
    import triton
    from tritonhook.cubin import Cubin
    from tritonhook.diff import diff_cubins
    from tritonhook.errors import TritonhookError
    from tritonhook.binaries import assemble, ptxas_version
    from tritonhook.rename import rename_ptx

    from gluon_kernels.blackwell import compile_blackwell_attention

    options = {"ptx_version": ptx_version} if ptx_version else {}
    kernel = compile_blackwell_attention(dtype, head_dim, causal, **options)
    plain_ptx = kernel.asm["ptx"]
    renamed_ptx = rename_ptx(plain_ptx, prefix)
    tag = f"{dtype}-d{head_dim}-{'causal' if causal else 'full'}"
    if keep:
        os.makedirs(keep, exist_ok=True)
        for name, text in (("plain", plain_ptx), ("renamed", renamed_ptx)):
            with open(os.path.join(keep, f"{tag}-triton{triton.__version__}-{name}.ptx"), "w") as handle:
                handle.write(text)
    flags = () if bare else TRITON_PTXAS_FLAGS
    rows = []
    for path in ptxas_paths:
        version = ptxas_version(path) or "?"
        try:
            built = {name: assemble(src, path, "sm_100a", flags, label=f"{tag} ({name})")
                     for name, src in (("plain", plain_ptx), (prefix, renamed_ptx))}
        except TritonhookError as exc:
            print(f"skipping ptxas {version} ({path}): {exc}", file=sys.stderr)
            continue
        cubins = {name: Cubin.from_bytes(b.cubin, label=f"{tag} {name} ptxas {version}") for name, b in built.items()}
        diff = diff_cubins(cubins["plain"], cubins[prefix], prefix=prefix)
        changed = sum(1 for s in diff.sections if s.changed)
        for name, cubin in cubins.items():
            (k, ) = cubin.kernels.values()
            rows.append(Row(dtype, head_dim, causal, triton.__version__, ptx_version, path, version, name, k.name,
                            cubin.size, k.text_size, k.capmerc_size, k.registers, k.spill_stores, k.spill_loads,
                            built[name].seconds, changed))
        if keep:
            for name, b in built.items():
                with open(os.path.join(keep, f"{tag}-triton{triton.__version__}-ptxas{version}-{name}.cubin"),
                          "wb") as handle:
                    handle.write(b.cubin)
    return rows


def _ratio(a: int, b: int) -> str:
    return f"{b / a:.2f}x" if a else "-"


def markdown(rows: list[Row]) -> str:
    out = ["| config | Triton (PTX) | ptxas | build | cubin B | .text B | .nv.capmerc B | regs | spill st/ld B | "
           "ptxas s |", "|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    by_key: dict[tuple, dict[str, Row]] = {}
    for r in rows:
        by_key.setdefault((r.dtype, r.head_dim, r.causal, r.triton, r.version), {})[r.build] = r
    for (dtype, d, causal, tri, version), pair in by_key.items():
        config = f"{dtype} D={d} {'causal' if causal else 'non-causal'}"
        plain = pair.get("plain")
        for build, r in pair.items():
            ptx = f"{tri} (ISA {r.ptx_version / 10:.1f})" if r.ptx_version else tri
            cells = [f"{r.cubin:,}", f"{r.text:,}", f"{r.capmerc:,}", str(r.registers),
                     f"{r.spill_stores}/{r.spill_loads}", f"{r.seconds:.2f}"]
            if plain is not None and r is not plain:
                cells[0] += f" ({_ratio(plain.cubin, r.cubin)})"
                cells[1] += f" ({_ratio(plain.text, r.text)})"
                cells[2] += f" ({_ratio(plain.capmerc, r.capmerc)})"
                cells[5] += f" ({_ratio(plain.seconds, r.seconds)})" if plain.seconds else ""
            out.append(f"| {config} | {ptx} | {version} | {build} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", action="append", help="fp16, bf16, fp8e4nv, fp8e5 (repeat; default: both fp8)")
    parser.add_argument("--head-dim", type=int, action="append", help="64 or 128 (repeat; default 128)")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--ptxas", action="append", help="ptxas binary (repeat; default: every version found)")
    parser.add_argument("--ptx-version", type=int, default=87, help="PTX ISA for Triton to emit (0: Triton's own)")
    parser.add_argument("--prefix", default="cutlass_")
    parser.add_argument("--bare", action="store_true", help="plain `ptxas -v` instead of Triton's flags")
    parser.add_argument("--keep", help="directory to write the PTX and cubins into (for `tritonhook diff`)")
    parser.add_argument("--json", help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    paths = args.ptxas or default_ptxas()
    rows = []
    for dtype in args.dtype or ["fp8e4nv", "fp8e5"]:
        for d in args.head_dim or [128]:
            rows += measure(dtype, d, args.causal, paths, ptx_version=args.ptx_version or None, prefix=args.prefix,
                            bare=args.bare, keep=args.keep)
    print(markdown(rows))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump([dataclasses.asdict(r) for r in rows], handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
