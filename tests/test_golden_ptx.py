"""Golden PTX of the bundled kernels: the sha256 of each configuration's PTX, checked in per compiler release.

Why: a refactor of gluon_kernels/ or sm120_attn/ that claims to change no code proves it here, configuration by
configuration, with no GPU. The hashes live in tests/golden_ptx/: ``triton-<version>.json`` for the Gluon kernels
(their PTX depends on the Triton release) and ``cutlass-dsl-<version>.json`` for the CuTe DSL kernels of
sm120_attn (their PTX depends on nvidia-cutlass-dsl, not on Triton). A release with no golden file skips.

Regenerate (after a change that is meant to change the PTX, or for a new release), under each interpreter:

    python tests/test_golden_ptx.py --update

The hash is of the PTX's code: the ``.loc`` and ``.file`` lines, the DWARF sections at the end (line numbers and
absolute source paths, which change when code moves but not the code itself) and the labels only they name (the
scopes of inlined calls, which change when code moves into a helper) are left out (``code_of``). The kernels are built
as shipped, line info on (it changes ptxas's register allocation), in the kernel cache the kernel tests share
(`kernel_builds`), so a configuration those tests built is not compiled again here.

The configurations (names are the keys of the golden files): the full grids (77 builds) took 3 minutes under Triton
3.6 and 4 under 3.9 on 2 busy cores, so a representative set (48 builds: about 2 minutes) that covers every kernel
family, dtype, head dim, causal/full and every code path the tuning tables choose:
* Hopper ``simple``: each dtype (fp16, bf16, fp8e4nv), each D and causal/full at least once (5 builds).
* Hopper ``ws`` defaults (no S): bf16 and fp8e4nv, each D and causal/full once (4; fp16 takes bf16's code path).
* Hopper ``ws`` tuned: every entry of ``TUNED_WS`` (bf16) and ``TUNED_WS_FP8``, built at the entry's S
  (17; at D=64 from ``THREE_OVERLAPPED_FROM`` on, the whole three-consumer configuration with its
  ``THREE_OVERLAPPED_TUNED`` knobs).
* Hopper ``ws`` knobs no table entry sets: rising K/V order, whole-diagonal masks, 64-key blocks, fp8's direct
  stores, the LSE output (5).
* Blackwell: bf16 x D x causal/full, fp16 and both fp8 formats once each (8 of its 16-build grid).
* sm120_attn (where ``cutlass`` imports): the CPU test's grid (each variant on each arch it supports, D and causal
  alternating) and the TMA kernel without its register cap (9).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import sys
from pathlib import Path

import pytest

if __name__ == "__main__":  # run as a script: the kernel packages are imported from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import triton  # noqa: E402

from gluon_kernels.tuning import TUNED_WS, TUNED_WS_FP8  # noqa: E402

GOLDEN_DIR = Path(__file__).resolve().parent / "golden_ptx"
UPDATE = "python tests/test_golden_ptx.py --update"
_SEQ_NAMES = {2**31 - 1: "Smax"}


def _mode(causal: bool) -> str:
    return "causal" if causal else "full"


def _hopper(dtype, head_dim, causal, variant="ws", **kwargs):
    def build():
        from gluon_kernels import compile_hopper_attention
        return compile_hopper_attention(dtype, head_dim, causal, variant, **kwargs).asm["ptx"]
    return build


def _blackwell(dtype, head_dim, causal):
    def build():
        from gluon_kernels import compile_blackwell_attention
        return compile_blackwell_attention(dtype, head_dim, causal).asm["ptx"]
    return build


def _sm120(variant, arch, head_dim, causal, **kw):
    def build():
        from sm120_attn import build as sm120_build
        return sm120_build.compile_variant(variant, arch, head_dim, causal, verbose_ptxas=False, **kw).ptx
    return build


def gluon_configs() -> dict:
    """name -> a function returning the PTX, for every Gluon configuration (keys of triton-<version>.json)."""
    configs = {}
    for dtype, d, causal in (("bf16", 128, False), ("bf16", 64, True), ("fp16", 128, True), ("fp8e4nv", 128, False),
                             ("fp8e4nv", 64, True)):
        configs[f"hopper-simple-{dtype}-d{d}-{_mode(causal)}"] = _hopper(dtype, d, causal, "simple")
    for dtype, d, causal in (("bf16", 128, False), ("bf16", 64, True), ("fp8e4nv", 128, True), ("fp8e4nv", 64, False)):
        configs[f"hopper-ws-{dtype}-d{d}-{_mode(causal)}"] = _hopper(dtype, d, causal)
    for dtype, table in (("bf16", TUNED_WS), ("fp8e4nv", TUNED_WS_FP8)):
        for (causal, d), entries in table.items():
            for max_seq_len, _ in entries:
                s = _SEQ_NAMES.get(max_seq_len, f"S{max_seq_len}")
                configs[f"hopper-ws-{dtype}-d{d}-{_mode(causal)}-tuned-{s}"] = _hopper(dtype, d, causal,
                                                                                      seq_len=max_seq_len)
    configs.update({
        "hopper-ws-bf16-d128-causal-rising": _hopper("bf16", 128, True, seq_len=1024, masked_first=False),
        "hopper-ws-bf16-d128-causal-whole_diagonal": _hopper("bf16", 128, True, seq_len=2048, masked_first=False,
                                                              diagonal_halves=False),
        "hopper-ws-bf16-d128-causal-bn64": _hopper("bf16", 128, True, seq_len=1024, block_n=64, stages=3),
        "hopper-ws-fp8e4nv-d128-full-direct_store": _hopper("fp8e4nv", 128, False, tma_store=False),
        "hopper-ws-fp8e4nv-d128-full-lse": _hopper("fp8e4nv", 128, False, write_lse=True, seq_len=8192),
    })
    for d in (64, 128):
        for causal in (False, True):
            configs[f"blackwell-bf16-d{d}-{_mode(causal)}"] = _blackwell("bf16", d, causal)
    for dtype, d, causal in (("fp16", 128, False), ("fp8e4nv", 128, False), ("fp8e4nv", 64, True),
                             ("fp8e5", 64, True)):
        configs[f"blackwell-{dtype}-d{d}-{_mode(causal)}"] = _blackwell(dtype, d, causal)
    return configs


def cute_configs() -> dict:
    """name -> a function returning the PTX, for the CuTe DSL configurations (keys of cutlass-dsl-<version>.json)."""
    configs = {}
    for variant, arch, d, causal in (("cpasync", "sm_120a", 128, True), ("cpasync", "sm_121a", 64, False),
                                     ("cpasync", "sm_90a", 128, False), ("tma", "sm_120a", 128, False),
                                     ("tma", "sm_121a", 64, True), ("tma", "sm_90a", 128, True),
                                     ("fp8", "sm_120a", 128, True), ("fp8", "sm_121a", 64, False)):
        configs[f"sm120-{variant}-{arch}-d{d}-{_mode(causal)}"] = _sm120(variant, arch, d, causal)
    configs["sm120-tma-sm_120a-d128-full-no_entry_cap"] = _sm120("tma", "sm_120a", 128, False, entry_cap=False)
    return configs


def _dsl_version() -> str | None:
    """The installed nvidia-cutlass-dsl release, or None where ``cutlass`` does not import."""
    if importlib.util.find_spec("cutlass") is None:
        return None
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("nvidia-cutlass-dsl")
    except PackageNotFoundError:
        return None


def golden_sets() -> list[tuple[str, Path, dict]]:
    """(family, golden file, configurations) for each family this interpreter can compile."""
    sets = [("gluon", GOLDEN_DIR / f"triton-{triton.__version__}.json", gluon_configs())]
    dsl = _dsl_version()
    if dsl is not None:
        sets.append(("cute", GOLDEN_DIR / f"cutlass-dsl-{dsl}.json", cute_configs()))
    return sets


_LABEL = re.compile(r"^(\$?[A-Za-z_][\w$]*):")
_NAME = re.compile(r"\$?[A-Za-z_][\w$]*")


def code_of(ptx: str) -> str:
    """The PTX without its debug information: no `.loc` / `.file` lines, nothing from the first DWARF section on,
    and no definition of a label that no remaining line names (that is, no branch or instruction refers to it).

    Such labels exist for the debug information alone: ``$L__tmpN`` marks where an inlined call's scope starts and
    ends (DWARF's low/high pc), ``$L__func_begin/end`` the function's extent. Every ``@gluon.jit`` call adds
    them, so a refactor that moves code into a helper or an aggregate's method changes them while every
    instruction stays the same."""
    code = ptx.split("\t.section\t.debug", 1)[0]
    lines = [line for line in code.splitlines() if not line.lstrip().startswith((".loc", ".file"))]
    named = {name for line in lines if not _LABEL.match(line) for name in _NAME.findall(line)}
    return "\n".join(line for line in lines if not (label := _LABEL.match(line)) or label.group(1) in named)


def sha256(ptx: str) -> str:
    return hashlib.sha256(code_of(ptx).encode()).hexdigest()


def _load(path: Path) -> dict:
    return json.loads(path.read_text())["sha256"] if path.exists() else {}


# --------------------------------------------------------------------------------------------------------- tests
# CuTe DSL's PTX does not depend on the Triton release: the test matrix checks it under the first release only
_FAMILY_MARKS = {"cute": [pytest.mark.release_independent]}
CASES = [pytest.param(path, name, build, id=name, marks=_FAMILY_MARKS.get(family, []))
         for family, path, configs in golden_sets() for name, build in configs.items()]


@pytest.fixture(autouse=True)
def triton_cache(kernel_builds):
    """Overrides the repo-wide fixture: the kernel cache shared with tests/gluon_kernels (configurations that
    resolve to the same kernel compile once)."""
    return kernel_builds


@pytest.mark.parametrize("path,name,build", CASES)
def test_ptx_matches_golden(path, name, build):
    golden = _load(path)
    if not golden:
        pytest.skip(f"no golden PTX for this release ({path.relative_to(GOLDEN_DIR.parents[1])}); make it with "
                    f"`{UPDATE}`")
    if name not in golden:
        pytest.fail(f"{name}: no golden hash in {path.name}; if this configuration is new, run `{UPDATE}`")
    got = sha256(build())
    assert got == golden[name], (f"{name}: the PTX changed ({path.name} holds {golden[name][:16]}.., got "
                                 f"{got[:16]}..); if the change is meant, regenerate with `{UPDATE}`")


@pytest.mark.parametrize("family,path,configs", [pytest.param(*s, id=s[0], marks=_FAMILY_MARKS.get(s[0], []))
                                                  for s in golden_sets()])
def test_golden_file_names_only_known_configurations(family, path, configs):
    golden = _load(path)
    if not golden:
        pytest.skip(f"no golden PTX for this release ({path.name}); make it with `{UPDATE}`")
    stale = sorted(set(golden) - set(configs))
    assert not stale, f"{path.name} holds hashes of configurations that no longer exist: {stale}; run `{UPDATE}`"


def update() -> None:
    """Compile every configuration and (re)write the golden file of each family for the installed releases."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="golden-ptx-cache-") as cache:
        os.environ["TRITON_CACHE_DIR"] = cache
        _write_golden_files()


def _write_golden_files() -> None:
    GOLDEN_DIR.mkdir(exist_ok=True)
    for family, path, configs in golden_sets():
        hashes = {}
        for name, build in configs.items():
            hashes[name] = sha256(build())
            print(f"{name} {hashes[name]}", flush=True)
        release = triton.__version__ if family == "gluon" else _dsl_version()
        path.write_text(json.dumps({"family": family, "release": release, "line_info": False, "sha256": hashes},
                                   indent=1, sort_keys=True) + "\n")
        print(f"wrote {path} ({len(hashes)} configurations)")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit(f"usage: {UPDATE}")
    update()
