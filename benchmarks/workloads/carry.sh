#!/usr/bin/env bash
# Installs the wheels carried to the GPU machine for the third-party workloads, and prints the PYTHONPATH to use.
#
#   bash benchmarks/workloads/carry.sh DIR [NAME ...]
#
# NAME: a folder of .wheels/ (base, timm, flag-gems, torchao, mamba, liger, fla, gemlite, diffusers, cce,
# sageattention, aqlm, trifast, fbgemm, conch, mlstm, fat, stk, adasplash, colt5,
# accelerated_scan); none = all of them. Installs with
# `pip install --no-deps --no-index --target DIR/site` (the GPU machine has no internet: every dependency it lacks is
# carried beside its package) and prints `export PYTHONPATH=DIR/site...` on its last line. Run from the repository
# root, where the device machine runs commands; `.wheels/` is git-ignored, so name it in the run's `carry`.
# DIR should be a scratch folder such as /tmp/wl, not the run's $OUT: what lies under $OUT is sent back.
#
# What each folder holds (downloaded with `pip download --no-deps`; the GPU machine has Python 3.12, torch 2.11.0
# +cu130, triton 3.6.0, numpy, einops, transformers 5.17 and so huggingface-hub, safetensors, pyyaml, packaging,
# and pillow through matplotlib):
#   base       pyelftools 0.32 (py3-none-any; tritonhook's one dependency the GPU machine lacks)
#   liger      liger-kernel 0.8.5 (py3-none-any; needs only torch and triton)
#   timm       timm 1.0.31 (py3-none-any, 2.7 MB) and torchvision 0.26.0 (cp312 manylinux_2_28, 0.26.0+cu130,
#              requires torch==2.11.0, 7.5 MB): timm imports torchvision at import time
#   flag-gems  flag-gems 5.0.2 (py3-none-any, 2.2 MB) and SQLAlchemy 2.0.48 (py3-none-any, 1.9 MB, its tuning cache)
#   torchao    torchao 0.18.0 (cp310-abi3 manylinux_2_28, 3.3 MB; its C++ extensions may not load, only its
#              Triton kernels are used)
#   mamba      mamba-ssm 2.3.2.post1+git.e9594ce (py3-none-any, 0.2 MB): built here from upstream commit e9594ce
#              (state-spaces/mamba main, 2.3.2.post1 plus 3 commits) with pip wheel --no-build-isolation
#              MAMBA_FORCE_BUILD=TRUE, so without its CUDA extension selective_scan_cuda (Mamba-1 scan; csrc/ not
#              compiled). Every PyPI release (1.0.1 to 2.3.2.post1) imports selective_scan_cuda unguarded from
#              mamba_ssm/__init__, so no released version imports without it; #977 (f577286) made it optional.
#              Nothing else carried: causal-conv1d, tilelang, quack-kernels and flash-attn are optional imports
#              (try/except) and not used by the Triton SSD and norm kernels; einops, transformers and
#              huggingface-hub, which it imports, are on the GPU machine
#   fla        fla-core 0.6.0 (py3-none-any, 1.1 MB; flash-linear-attention's kernels: torch, Triton and einops,
#              which the GPU machine has)
#   gemlite    gemlite 0.6.0.post2 (py3-none-any, 0.2 MB; built here from its PyPI sdist with pip wheel --no-deps:
#              Triton kernels in Python; needs torch, triton, numpy and tqdm, which the GPU machine has)
#   diffusers  diffusers 0.42.1 (py3-none-any, 6.4 MB), importlib_metadata 10.2.0 and zipp 4.1.2 (py3-none-any): its
#              import checks requests, filelock and numpy, which the GPU machine has, and it needs huggingface-hub
#              >= 1.32 (transformers' on the GPU machine)
#   cce        cut-cross-entropy 25.1.1 (py3-none-any, 23 kB; Triton kernels in Python, needs only torch and triton)
#   sageattention  sageattention 1.0.6 (py3-none-any, 20 kB; its Triton release: torch and triton only)
#   aqlm       aqlm 1.1.7 (py3-none-any, 40 kB; its Triton GEMV needs only torch and triton; its CUDA kernels, built at
#              first use, and its transformers/accelerate integration are not imported for the layouts used here)
#   fbgemm     fbgemm-gpu-genai 1.9.0 (cp312 manylinux_2_28, 34 MB): only its Triton GEMM modules are used; its
#              package import loads the CUDA libraries its fbgemm_gpu/docs/target.*.json.py names (built for torch
#              2.14), so those files are removed after the install and none loads
#   trifast    trifast 0.1.13 (py3-none-any, 16 kB; Triton kernels in Python), jaxtyping 0.3.11 and wadler_lindig
#              0.1.8 (its type annotations, imported at import), platformdirs 4.14.8 (where it keeps its picks); it
#              needs einops, numpy and pyyaml too, which the GPU machine has
#   conch      conch-triton-kernels 1.3 (py3-none-any, 0.1 MB; Stack AV's Triton stand-ins for vLLM's kernels: torch
#              and triton only)
#   mlstm      mlstm_kernels 2.0.6 (py3-none-any, 0.4 MB; NX-AI's xLSTM kernels in Triton; needs einops, numpy, PyYAML
#              and matplotlib, which the GPU machine has); Triton 3.6.0 crashed compiling its chunkwise kernels
#              for an H200 (an LLVM assertion in the SLP vectorizer), with and without tritonhook
#   fat        flash-attn-triton 0.1.1 (py3-none-any, 30 kB; FlashAttention-2's interface on Triton kernels: torch,
#              triton, einops and pytest, which the GPU machine has)
#   stk        stanford-stk 0.7.1 (py3-none-any; MegaBlocks' Triton block-sparse matmuls: torch and triton only)
#   adasplash  adasplash 0.2.2 (py3-none-any, 37 kB; entmax attention in Triton: torch, triton and numpy only)
#   colt5      colt5-attention 0.11.2 (py3-none-any, 24 kB; CoLT5's routed attention and feed-forward, its router's
#              coordinate descent in Triton), local-attention 1.11.2 (10 kB), hyper-connections 0.4.11 (30 kB) and
#              torch-einops-utils 0.2.0 (22 kB), all py3-none-any: colt5-attention imports local-attention, which
#              imports hyper-connections, which imports torch-einops-utils; they need torch, triton, einops, numpy
#              and packaging too, which the GPU machine has
#   accelerated_scan  accelerated-scan 0.3.1 (py3-none-any, 10 kB; first-order parallel scans in Triton: torch and
#              triton only)
# Then, e.g.:  PYTHONPATH=/tmp/wl/site python3 benchmarks/workloads/torchao_quant_gemm.py 10
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ $# -lt 1 ]; then
    echo "usage: $0 DIR [base|timm|flag-gems|torchao|mamba|liger|fla|gemlite|diffusers|cce|sageattention|aqlm|trifast|fbgemm|conch|mlstm|fat|stk|adasplash|colt5|accelerated_scan ...]" >&2
    exit 2
fi
dir=$1
shift
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    names=(base timm flag-gems torchao mamba liger fla gemlite diffusers cce sageattention aqlm trifast fbgemm conch mlstm fat stk adasplash colt5 accelerated_scan)
fi
python=${PYTHON:-python3}

wheels=()
for name in "${names[@]}"; do
    found=(.wheels/"$name"/*.whl)
    if [ ! -e "${found[0]}" ]; then
        echo "carry.sh: no wheels in .wheels/$name (name .wheels in the run's carry)" >&2
        exit 1
    fi
    wheels+=("${found[@]}")
done

mkdir -p "$dir/site"
if "$python" -m pip --version >/dev/null 2>&1; then
    "$python" -m pip install --quiet --disable-pip-version-check --no-deps --no-index --target "$dir/site" \
        "${wheels[@]}" >&2
else
    # no pip: a wheel is a zip whose root is what --target would hold (no scripts in these wheels)
    for wheel in "${wheels[@]}"; do
        "$python" -m zipfile -e "$wheel" "$dir/site"
    done
fi
rm -f "$dir/site"/fbgemm_gpu/docs/target.*.json.py  # fbgemm: no CUDA library of its loads (above)
echo "carry.sh: installed ${names[*]} into $dir/site ($(du -sh "$dir/site" | cut -f1))" >&2
echo "export PYTHONPATH=$(cd "$dir/site" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
