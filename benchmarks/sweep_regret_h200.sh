#!/usr/bin/env bash
# GPU proofs of issue 53 (the sweep answers for the configs the workload runs; autotune regret measured, pinned and
# confirmed inside the workload), for the H200 (torch 2.11 + Triton 3.6). From the repository root, with .wheels
# carried (benchmarks/workloads/carry.sh):
#     OUT=/some/dir ONLY="gpu_test torchao torchao_aa ..." bash benchmarks/sweep_regret_h200.sh
# Steps (each under `timeout`, keeping what it produced; results in $OUT, packed into steps.tar.gz beside the
# summaries at the end, the table last; ONLY picks some, since one device call runs 10 minutes at most): NAME sweeps
# a workload (plain,cutlass_), NAME_aa replays its recording plain,plain, NAME_fixed replays it plain,cutlass_ with
# --fixed-rounds, NAME_confirm runs `decisions confirm` of every regret its sweep found (CONFIRM_AGAINST=sweep: against
# the sweep's config pinned), NAME_bare runs the workload
# alone with caches of its own, cold (what the sweep adds to it: run both on one machine start). A later call on the same
# (warm) machine finds the sweep in SCRATCH, so a sweep and its confirmation can span two device calls.
#   gpu_test   tests/test_sweep_gpu.py's regret test (a workload with a biased autotuner: found, pinned, confirmed), or
#              the tests GPU_TESTS selects (pytest -k)
#   torchao    torchao 0.18.0's quantized GEMM/GEMV (split-K at batch 1/16, per-batch-size autotuning)
#   flaggems   FlagGems 5.0.2's ops (autotune-heavy)
#   timm       timm 1.0.31 models under torch.compile (Inductor)
#   mamba      mamba-ssm's Mamba-2 SSD scan and norms (autotune-heavy: 16 autotuned kernels, 122 configs)
#   fla        flash-linear-attention's gated delta rule, GLA and simple GLA, forward and backward (fla-core 0.6.0,
#              autotune-heavy), FLA_OPS picks some
#   tv         torchvision 0.26.0's training steps under torch.compile (Inductor): Swin-T and EfficientNet-B0, or
#              TV_MODELS (e.g. maxvit_t, mobilenet_v3_large)
#   gemlite    GemLite 0.6.0.post2's 4-bit and int8 GEMM/GEMV (split-K with atomics at batch 16, autotuned per batch
#              bucket); gemlite_serial sweeps it the same with configs compiled one at a time
#              (TRITONHOOK_RECORD_COMPILE_THREADS=1), its own cold Triton cache and store
#   qwen       Hugging Face transformers' Qwen3 (4 layers, random weights) training steps under torch.compile
#   unet       Hugging Face diffusers' UNet2DConditionModel (SD 1.x layout, small, random weights) training steps under
#              torch.compile
#   tf         our Inductor-compiled transformer (benchmarks/workloads/inductor_transformer.py), its 30 largest rows
#   gpt2       Hugging Face transformers' GPT-2 (4 layers, random weights, dropout 0.1) training steps under torch.compile
#   gemma      Hugging Face transformers' Gemma 3 text model (4 layers, random weights, sliding-window attention) training
#              steps under torch.compile
#   cce        Apple's Cut Cross-Entropy 25.1.1: the fused linear + cross-entropy loss of three LM heads, forward and
#              backward, autotuned (CCE_AUTOTUNE=1), the backward's atomics under spin locks; cce_recorded sweeps it
#              with snapshot budgets that hold every input (the backward's work depends on its data)
#   sage       SageAttention 1.0.6: int8 per-block quantization of Q and K and int8 QK^T attention (no autotuning)
#   audio      torchaudio 2.11's Conformer (4 layers, batch norm and depthwise convolutions, padded batch) training
#              steps under torch.compile
#   gnn        PyTorch Geometric 2.8's GraphSAGE and GAT training steps under torch.compile on a random graph
#              (gathers and atomic scatters by edge index), GNN_MODELS picks some
#   aqlm       AQLM 1.1.7's Triton GEMV over 4x8-bit additive-quantized linear layers at batch 1 and 4 (20 configs,
#              autotuned per layer shape)
#   fbgemm     FBGEMM GenAI 1.9.0's fp8 row-wise quantize + GEMM (100 autotune configs, a key that buckets M from 256;
#              M = 1, 16, 512, 768)
#   trifast    trifast 0.1.13's triangle attention, forward and backward (four kernels autotuned by its own subclass
#              of Triton's Autotuner, the backward's zeroing its outputs per benchmark), TRIFAST_SHAPES picks some
# DIRTS (e.g. "dirty clean", "half"): after the steps, each sweep of this call has its recording replayed plain,plain
# on each of those --l2-dirt (NAME_DIRT; with dirty and clean, the summary gives what each dirt threshold makes of its
# fidelity: benchmarks/dirt_threshold.py).
# Only the folders .wheels/ holds are installed (benchmarks/workloads/carry.sh): a step whose library is not there
# fails at its import, the others run.
set -u
OUT=${OUT:-$PWD/regret-out}
SCRATCH=${SCRATCH:-/tmp/regret-work}
mkdir -p "$OUT" "$SCRATCH"
eval "$(bash benchmarks/workloads/carry.sh "$SCRATCH" $(ls .wheels))"
export PYTHONPATH=$PWD:$PYTHONPATH PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR="$SCRATCH/triton-cache" TORCHINDUCTOR_CACHE_DIR="$SCRATCH/inductor-cache"
export FLAGGEMS_CACHE_DIR="$SCRATCH/flaggems-cache"
PY=${PYTHON:-python3}
TOP=${AUTOTUNE_TOP:-4}
step() {  # step NAME SECONDS CMD...: stdout to $OUT/NAME.json, stderr to $SCRATCH/NAME.log (tail in steps.log)
  local name=$1 limit=$2; shift 2
  local began=$(date +%s)
  timeout "$limit" "$@" > "$OUT/$name.json" 2> "$SCRATCH/$name.log"
  local rc=$?
  cp "$OUT/$name.json" "$SCRATCH/$name.json"  # for a later call's steps (aa, fixed, confirm) on this warm machine
  echo "$name: exit $rc after $(( $(date +%s) - began )) s" | tee -a "$OUT/steps.log"
  tail -n 4 "$SCRATCH/$name.log" | cut -c1-300 | sed 's/^/   | /' | tee -a "$OUT/steps.log"
}
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }
sweep() {  # sweep NAME SECONDS WORKLOAD...: plain,cutlass_ over the kernels the workload runs ($ROWS: the largest;
  local name=$1 limit=$2; shift 2  # $SWEEP_ARGS: more options, e.g. snapshot budgets)
  step "${name}_sweep" "$limit" $PY -m tritonhook sweep --store "$SCRATCH/store-$name" --autotune-top "$TOP" \
      ${ROWS:+--top "$ROWS"} ${SWEEP_ARGS:-} --json -- "$@"
}
sweep_field() {  # sweep_field NAME FIELD: a field of NAME's sweep result
  $PY -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$SCRATCH/${1}_sweep.json" "$2" 2>/dev/null
}
aa() {  # aa NAME SECONDS [DIRT]: plain,plain over the sweep's recording (not the store's newest: confirm runs record
  local recording  # too); DIRT: on that --l2-dirt (step NAME_DIRT), else the default (step NAME_aa)
  recording=$(sweep_field "$1" recording_id) || return
  step "${1}_${3:-aa}" "$2" $PY -m tritonhook replay --store "$SCRATCH/store-$1" --recording "$recording" \
      --autotune-top "$TOP" ${ROWS:+--top "$ROWS"} --variants plain,plain ${3:+--l2-dirt "$3"} --json
}
fixed() {  # fixed NAME SECONDS: plain,cutlass_ over the sweep's recording with --fixed-rounds (the adaptive rule's check)
  local recording
  recording=$(sweep_field "$1" recording_id) || return
  step "${1}_fixed" "$2" $PY -m tritonhook replay --store "$SCRATCH/store-$1" --recording "$recording" \
      --autotune-top "$TOP" ${ROWS:+--top "$ROWS"} --variants plain,cutlass_ --fixed-rounds --json
}
bare() {  # bare NAME SECONDS WORKLOAD...: the workload without tritonhook, its Triton and Inductor caches its own
  local name=$1 limit=$2; shift 2
  rm -rf "$SCRATCH/bare-$name"
  TRITON_CACHE_DIR="$SCRATCH/bare-$name/triton-cache" TORCHINDUCTOR_CACHE_DIR="$SCRATCH/bare-$name/inductor-cache" \
      step "${name}_bare" "$limit" "$@"
}
confirm() {  # confirm NAME RUNS SECONDS WORKLOAD...: decisions confirm of the sweep's regrets
  local name=$1 runs=$2 limit=$3; shift 3
  local id
  id=$(sweep_field "$name" id) || return
  step "${name}_confirm" "$limit" $PY -m tritonhook decisions confirm --sweep "$id" --store "$SCRATCH/store-$name" \
      --runs "$runs" ${CONFIRM_AGAINST:+--against "$CONFIRM_AGAINST"} --json -- "$@"
}
$PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())" | tee "$OUT/versions.txt"
if want gpu_test; then  # GPU_TESTS: which of tests/test_sweep_gpu.py (-k), the regret test by default
  timeout 300 $PY -m pytest tests/test_sweep_gpu.py -q -x -p no:cacheprovider -k "${GPU_TESTS:-regret}" -s \
      > "$OUT/gpu_test.txt" 2>&1
  tail -n 30 "$OUT/gpu_test.txt"
fi
TORCHAO=($PY benchmarks/workloads/torchao_quant_gemm.py 3 w8a16_int8)  # the split-K family alone: a call's 10 min
FLAGGEMS=($PY benchmarks/workloads/flaggems_ops.py 3)
TIMM=($PY benchmarks/workloads/timm_compiled.py 5)
want torchao && sweep torchao 480 "${TORCHAO[@]}"
want torchao_aa && aa torchao 240
want torchao_fixed && fixed torchao 240
want torchao_confirm && confirm torchao 2 330 "${TORCHAO[@]}"
want flaggems && sweep flaggems 400 "${FLAGGEMS[@]}"
want flaggems_aa && aa flaggems 240
want flaggems_confirm && confirm flaggems 2 330 "${FLAGGEMS[@]}"
want timm && ROWS=${TIMM_ROWS:-20} sweep timm 500 "${TIMM[@]}"
want timm_aa && ROWS=${TIMM_ROWS:-20} aa timm 240
MAMBA=($PY benchmarks/workloads/mamba_ssd.py ${MAMBA_STEPS:-3} ${MAMBA_SHAPES:-2.7b})
TV=($PY benchmarks/workloads/torchvision_compiled.py ${TV_STEPS:-5} ${TV_MODELS:-swin_t,efficientnet_b0})
want mamba_bare && bare mamba ${MAMBA_S:-540} "${MAMBA[@]}"
want mamba && ROWS=${MAMBA_ROWS:-12} sweep mamba ${MAMBA_S:-540} "${MAMBA[@]}"
want mamba_aa && ROWS=${MAMBA_ROWS:-12} aa mamba 300
want mamba_fixed && ROWS=${MAMBA_ROWS:-12} fixed mamba 300
want mamba_confirm && confirm mamba ${RUNS:-3} ${CONFIRM_S:-420} "${MAMBA[@]}"
FLA=($PY benchmarks/workloads/fla_ops.py ${FLA_STEPS:-3} ${FLA_OPS:-gdn,gla,sgla})
want fla_bare && bare fla ${FLA_S:-540} "${FLA[@]}"
want fla && ROWS=${FLA_ROWS:-12} sweep fla ${FLA_S:-540} "${FLA[@]}"
want fla_aa && ROWS=${FLA_ROWS:-12} aa fla 300
want fla_fixed && ROWS=${FLA_ROWS:-12} fixed fla 300
want fla_confirm && confirm fla ${RUNS:-3} ${CONFIRM_S:-420} "${FLA[@]}"
want torchao_confirm4 && confirm torchao 4 420 "${TORCHAO[@]}"
want tv && ROWS=${TV_ROWS:-20} sweep tv ${TV_S:-400} "${TV[@]}"
want tv_aa && ROWS=${TV_ROWS:-20} aa tv 200
want tv_confirm && confirm tv ${RUNS:-3} ${CONFIRM_S:-420} "${TV[@]}"
want tv_fixed && ROWS=${TV_ROWS:-20} fixed tv 200
GEMLITE=($PY benchmarks/workloads/gemlite_quant.py ${GEMLITE_STEPS:-3})
want gemlite && sweep gemlite ${GEMLITE_S:-400} "${GEMLITE[@]}"
if want gemlite_serial; then
  rm -rf "$SCRATCH/serial"
  TRITON_CACHE_DIR="$SCRATCH/serial/triton-cache" TRITONHOOK_RECORD_COMPILE_THREADS=1 \
      sweep gemlite_serial ${GEMLITE_S:-400} "${GEMLITE[@]}"
fi
want gemlite_aa && aa gemlite 240
want gemlite_fixed && fixed gemlite 240
want gemlite_confirm && confirm gemlite ${RUNS:-3} ${CONFIRM_S:-420} "${GEMLITE[@]}"
QWEN=($PY benchmarks/workloads/hf_causal_lm_compiled.py ${QWEN_STEPS:-5} qwen3)
want qwen && ROWS=${QWEN_ROWS:-20} sweep qwen ${QWEN_S:-400} "${QWEN[@]}"
want qwen_aa && ROWS=${QWEN_ROWS:-20} aa qwen 200
want qwen_confirm && confirm qwen ${RUNS:-3} ${CONFIRM_S:-420} "${QWEN[@]}"
UNET=($PY benchmarks/workloads/diffusers_unet_compiled.py ${UNET_STEPS:-5})
want unet && ROWS=${UNET_ROWS:-20} sweep unet ${UNET_S:-400} "${UNET[@]}"
want unet_aa && ROWS=${UNET_ROWS:-20} aa unet 200
want unet_confirm && confirm unet ${RUNS:-3} ${CONFIRM_S:-420} "${UNET[@]}"
TF=($PY benchmarks/workloads/inductor_transformer.py ${TF_STEPS:-10})
want tf && ROWS=${TF_ROWS:-30} sweep tf ${TF_S:-400} "${TF[@]}"
GPT2=($PY benchmarks/workloads/hf_causal_lm_compiled.py ${GPT2_STEPS:-5} gpt2)
want gpt2 && ROWS=${GPT2_ROWS:-20} sweep gpt2 ${GPT2_S:-400} "${GPT2[@]}"
want gpt2_aa && ROWS=${GPT2_ROWS:-20} aa gpt2 200
want gpt2_confirm && confirm gpt2 ${RUNS:-3} ${CONFIRM_S:-420} "${GPT2[@]}"
GEMMA=($PY benchmarks/workloads/hf_causal_lm_compiled.py ${GEMMA_STEPS:-5} gemma3)
want gemma && ROWS=${GEMMA_ROWS:-20} sweep gemma ${GEMMA_S:-400} "${GEMMA[@]}"
want gemma_confirm && confirm gemma ${RUNS:-3} ${CONFIRM_S:-420} "${GEMMA[@]}"
CCE=($PY benchmarks/workloads/cce_loss.py ${CCE_STEPS:-3} ${CCE_HEADS:-llama3,qwen3,gemma2})
want cce && sweep cce ${CCE_S:-400} "${CCE[@]}"
# the same with every input snapshotted (3 GiB a signature, 48 GiB in all): its backward replayed on its own data
want cce_recorded && SWEEP_ARGS="--budget $((3 << 30)) --snapshot-budget $((48 << 30))" \
    sweep cce_recorded ${CCE_S:-400} "${CCE[@]}"
want cce_aa && aa cce 240
want cce_confirm && confirm cce ${RUNS:-3} ${CONFIRM_S:-420} "${CCE[@]}"
SAGE=($PY benchmarks/workloads/sage_attention.py ${SAGE_STEPS:-5})
want sage && sweep sage ${SAGE_S:-300} "${SAGE[@]}"
want sage_aa && aa sage 200
AUDIO=($PY benchmarks/workloads/torchaudio_conformer_compiled.py ${AUDIO_STEPS:-5})
want audio && ROWS=${AUDIO_ROWS:-20} sweep audio ${AUDIO_S:-300} "${AUDIO[@]}"
want audio_aa && ROWS=${AUDIO_ROWS:-20} aa audio 200
want audio_confirm && confirm audio ${RUNS:-3} ${CONFIRM_S:-420} "${AUDIO[@]}"
want tf_confirm && confirm tf ${RUNS:-3} ${CONFIRM_S:-420} "${TF[@]}"
GNN=($PY benchmarks/workloads/pyg_gnn_compiled.py ${GNN_STEPS:-5} ${GNN_MODELS:-sage,gat})
want gnn && ROWS=${GNN_ROWS:-20} sweep gnn ${GNN_S:-300} "${GNN[@]}"
want gnn_aa && ROWS=${GNN_ROWS:-20} aa gnn 200
want gnn_confirm && confirm gnn ${RUNS:-3} ${CONFIRM_S:-420} "${GNN[@]}"
AQLM=($PY benchmarks/workloads/aqlm_gemv.py ${AQLM_STEPS:-10} ${AQLM_BATCHES:-1,4})
want aqlm && sweep aqlm ${AQLM_S:-300} "${AQLM[@]}"
want aqlm_aa && aa aqlm 200
want aqlm_confirm && confirm aqlm ${RUNS:-3} ${CONFIRM_S:-420} "${AQLM[@]}"
TRIFAST=($PY benchmarks/workloads/trifast_triangle.py ${TRIFAST_STEPS:-10} ${TRIFAST_SHAPES:-n128,n256,n384,n512})
want trifast && sweep trifast ${TRIFAST_S:-400} "${TRIFAST[@]}"
want trifast_aa && aa trifast 200
want trifast_confirm && confirm trifast ${RUNS:-3} ${CONFIRM_S:-420} "${TRIFAST[@]}"
FBGEMM=($PY benchmarks/workloads/fbgemm_fp8_rowwise.py ${FBGEMM_STEPS:-10})
want fbgemm && sweep fbgemm ${FBGEMM_S:-420} "${FBGEMM[@]}"
want fbgemm_aa && aa fbgemm 200
want fbgemm_confirm && confirm fbgemm ${RUNS:-3} ${CONFIRM_S:-420} "${FBGEMM[@]}"
for dirt in ${DIRTS:-}; do
  for swept in "$OUT"/*_sweep.json; do
    [ -e "$swept" ] || continue
    name=$(basename "$swept" _sweep.json)
    ROWS=$($PY -c "import json,sys; print(len(json.load(open(sys.argv[1]))['rows']))" "$swept" 2>/dev/null) \
        aa "$name" 200 "$dirt"
  done
done
$PY benchmarks/regret_summary.py "$OUT" | tee "$OUT/summary.txt"
# the steps' results in one tarball (the device tool brings back 8 files at most), the summaries beside it
steps=$(cd "$OUT" && ls *_*.json 2>/dev/null | grep -v '^regret_summary.json$')
[ -n "$steps" ] && (cd "$OUT" && tar -czf steps.tar.gz $steps && rm -f $steps)
