"""Compile the kernels with no GPU (fake tensors), keep PTX + cubin, capture them into a tritonhook store.

    python -m sm120_attn.build --arch sm_120a --arch sm_121a --arch sm_90a [--store DIR] [--out DIR]

Every kernel is compiled for each arch it supports (FP8 only for sm_120a / sm_121a: ptxas rejects `kind::f8f6f4`
elsewhere). With no driver the DSL would assume sm_100a, so the arch is always given (docs/notes.md §4).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import VARIANTS, kernel_class

FP8_ARCHES = ("sm_120a", "sm_121a")
BF16_ARCHES = ("sm_120a", "sm_121a", "sm_90a")


@dataclass
class Built:
    variant: str
    arch: str
    head_dim: int
    causal: bool
    compiled: object
    ptx: str
    cubin: bytes
    ptxas_log: str = ""
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.variant}-d{self.head_dim}-{'causal' if self.causal else 'full'}-{self.arch}"


def supported_arches(variant: str) -> tuple[str, ...]:
    return FP8_ARCHES if variant == "fp8" else BF16_ARCHES


def fake_qkvo(variant: str, head_dim: int, dtype=None, out_dtype=None):
    """Fake (B, S, H, D) tensors: B, S, H dynamic, D static, D contiguous, 16 B aligned."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_compact_tensor

    if variant == "fp8":
        dtype = dtype or cutlass.Float8E4M3FN
        out_dtype = out_dtype or cutlass.BFloat16
    else:
        dtype = dtype or cutlass.BFloat16
        out_dtype = out_dtype or dtype
    order = (3, 2, 1, 0)

    def make(dt, tag):
        shape = (cute.sym_int(), cute.sym_int(), cute.sym_int(), head_dim)
        return make_fake_compact_tensor(dt, shape, stride_order=order, assumed_align=16)

    return make(dtype, "q"), make(dtype, "k"), make(dtype, "v"), make(out_dtype, "o")


@contextlib.contextmanager
def _fd2_captured():
    """Capture what the in-process ptxas writes to file descriptor 2 (its log)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        box = {}
        try:
            yield box
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            box["text"] = tmp.read().decode("utf-8", "replace")


def compile_variant(variant: str, arch: str, head_dim: int, causal: bool, *, verbose_ptxas: bool = True,
                    out_dtype=None, **kw) -> Built:
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_stream

    cls = kernel_class(variant)
    if variant == "fp8" and arch not in FP8_ARCHES:
        raise ValueError(f"FP8 (mma kind::f8f6f4) needs sm_120a/sm_121a, not {arch}")
    kernel = cls(head_dim, causal=causal, arch=arch, **kw) if variant == "fp8" else cls(head_dim, causal=causal, **kw)
    q, k, v, o = fake_qkvo(variant, head_dim, out_dtype=out_dtype)
    start = time.perf_counter()
    # --keep-* writes files too: into a throw-away dump dir, never the current directory
    with tempfile.TemporaryDirectory(prefix="sm120_attn_dump_") as dump, _fd2_captured() as log:
        opts = f"--gpu-arch {arch} --keep-ptx --keep-cubin --dump-dir {dump}"
        if verbose_ptxas:
            opts += " --ptxas-options=-v"
        compiled = cute.compile(kernel, q, k, v, o, cutlass.Float32(0.125), make_fake_stream(), options=opts)
    elapsed = time.perf_counter() - start
    ptx = compiled.__ptx__
    ptx = ptx if isinstance(ptx, str) else bytes(ptx).decode()
    return Built(variant, arch, head_dim, causal, compiled, ptx.rstrip("\0"), bytes(compiled.__cubin__),
                 ptxas_log=log.get("text", ""), seconds=elapsed)


def external_ptxas_log(ptx: str, arch: str) -> tuple[str, str] | None:
    """Re-assemble the DSL's PTX with an external ptxas (-v) and return (ptxas version, log), or None if no
    ptxas new enough for the PTX's ISA version is found. The DSL links its own ptxas in and keeps its log to
    itself (empty even with --ptxas-options=-v), so warnings such as C7508 are only visible this way."""
    from tritonhook.tools import assemble, find_ptxas

    isa = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", ptx, re.MULTILINE)
    need = (12, 9) if isa and (int(isa.group(1)), int(isa.group(2))) >= (8, 8) else (12, 8)

    def key(binary):
        return tuple(int(x) for x in binary.version.split(".")[:2])

    candidates = sorted((b for b in find_ptxas() if key(b) >= need), key=key)
    for binary in candidates:
        try:
            return binary.version, assemble(ptx, binary.path, arch, label=arch).stderr
        except Exception:  # noqa: BLE001 - this one cannot take it; try the next
            continue
    return None


def kernel_facts(built: Built) -> dict:
    """Registers, setmaxnreg use, REG_RECONFIG, syscalls: read from the cubin with tritonhook's model."""
    from tritonhook.cubin import Cubin

    cubin = Cubin.from_bytes(built.cubin, label=built.label)
    facts = {}
    for name, kern in cubin.kernels.items():
        attrs = [a.name for a in kern.eiattrs]
        facts[name] = {
            "registers": kern.registers,
            "spill_stores": kern.spill_stores, "spill_loads": kern.spill_loads, "frame_size": kern.frame_size,
            "max_registers": kern.max_registers, "shared_static": kern.shared_static,
            "externs": list(kern.externs),
            "uses_setmaxnreg": kern.uses_setmaxnreg,
            "eiattrs": attrs,
            "reg_reconfig": any("REG_RECONFIG" in str(a) for a in attrs),
        }
    setmaxnreg = sorted(set(re.findall(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+(\d+)", built.ptx)))
    return {"kernels": facts, "ptx_setmaxnreg": setmaxnreg,
            "ptx_maxnreg_or_minnctapersm": re.findall(r"\.(maxnreg|minnctapersm|reqntid|maxntid)\s+([\d, ]+)",
                                                      built.ptx),
            "ptxas_warnings": [l for l in built.ptxas_log.splitlines() if "warning" in l.lower()]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", action="append", help="default: every supported arch")
    parser.add_argument("--variant", action="append", choices=VARIANTS)
    parser.add_argument("--head-dim", action="append", type=int)
    parser.add_argument("--causal", choices=("both", "yes", "no"), default="both")
    parser.add_argument("--store", help="tritonhook store to capture into (default: none)")
    parser.add_argument("--out", type=Path, help="write <label>.ptx / .cubin / .ptxas.log here")
    args = parser.parse_args(argv)
    causals = {"both": (False, True), "yes": (True,), "no": (False,)}[args.causal]
    summary = []
    for variant in args.variant or VARIANTS:
        for arch in args.arch or supported_arches(variant):
            if arch not in supported_arches(variant):
                continue
            for d in args.head_dim or (64, 128):
                for causal in causals:
                    built = compile_variant(variant, arch, d, causal)
                    facts = kernel_facts(built)
                    cid = None
                    if args.store:
                        from tritonhook.cute.capture import capture_compiled
                        cid = capture_compiled(built.compiled, store=args.store)
                    if args.out:
                        args.out.mkdir(parents=True, exist_ok=True)
                        (args.out / f"{built.label}.ptx").write_text(built.ptx)
                        (args.out / f"{built.label}.cubin").write_bytes(built.cubin)
                        (args.out / f"{built.label}.ptxas.log").write_text(built.ptxas_log)
                    regs = {n: f["registers"] for n, f in facts["kernels"].items()}
                    summary.append({"label": built.label, "seconds": round(built.seconds, 1), "capture": cid,
                                    "registers": regs, "setmaxnreg": facts["ptx_setmaxnreg"],
                                    "reg_reconfig": [f["reg_reconfig"] for f in facts["kernels"].values()],
                                    "ptxas_warnings": facts["ptxas_warnings"]})
                    print(json.dumps(summary[-1]), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
