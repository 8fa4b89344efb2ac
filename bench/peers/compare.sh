#!/usr/bin/env bash
# attn against the tools users run today, in one run: PyTorch 2.15 (eager, bf16 autocast,
# torch.compile, F.scaled_dot_product_attention) and CTranslate2 4.8.5, from the pinned venv of
# bench/peers/setup.sh. Alternates attn and every peer configuration, ROUNDS times, with the
# same thread count, and prints one markdown table: per benchmark attn, the best peer
# configuration, the ratio (median and range of the per-round ratios), then the details.
#
#   bash bench/peers/compare.sh                    # or: bash bench/compare.sh --peers
#   ROUNDS=1 ONLY=sdpa bash bench/peers/compare.sh # one part
#
# Environment:
#   THREADS (2)  ROUNDS (3)  ONLY (all, or some of: limits seq2seq transformer translate sdpa)
#   ATTN_PEERS_VENV   the peer venv (default: bash bench/peers/setup.sh --print)
#   BUILD        attn's build folder (default build/; configured with ATTN_BUILD_BENCH=ON and the
#                targets attn attn_micro attn_gemm_limits built there); NO_BUILD=1 uses it as is
#   MODEL        a trained Transformer translator (RUN/model.safetensors, spm.model beside it)
#                for the beam rows; without one they print n/a and the command that trains one
#   DATA         the data folder (default ../shared/data beside the clone)
#   SENTENCES    test2016 sentences per beam run (200; "all" = 1,000)
#   SEQ_STEPS (8)  TF_STEPS (4)  SDPA_LENS ("512 2048 8192")  fixed, small: a --peers run
#                with ROUNDS=3 takes about 15 minutes on 2 idle cores
#   SEQ_GREEDY_REPS (40)  timed greedy decodes of the seq2seq rows, both sides (41 steps of
#                B = 64 each; 40 keep attn's timed region above 1 s)
#   BEFORE       a second attn binary (an older build) run right after attn in the seq2seq
#                and sdpa rows, as the configuration "before (<its commit>), fp32", and in the
#                beam rows as "before (<its commit>), translate int8, ctranslate2 rules":
#                before/after in
#                one run (table.py lists it beside attn; the first table stays today's attn)
#   SDPA_LONG_ROUNDS (1)  T >= 8192 runs in the first this many rounds only (about a minute
#                per side and mask)
#   OUT          where the raw JSON lines go (default $BUILD/peers-<time>)
#   OMP_WAIT_POLICY  both sides; PASSIVE unless set (as bench/compare.sh)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ $# -gt 0 ]]; then echo "usage: bench/peers/compare.sh  (settings through the environment; see the header)" >&2; exit 2; fi
VENV=${ATTN_PEERS_VENV:-$(bash "$ROOT/bench/peers/setup.sh" --print)}
PY=$VENV/bin/python
if [[ ! -x $PY ]] || ! "$PY" -c "import torch, ctranslate2, sacrebleu, safetensors" 2>/dev/null; then
  echo "compare --peers: no peer environment at $VENV; create it with: bash bench/peers/setup.sh" \
    "(PyPI, ~6 GB, a few minutes; ATTN_PEERS_VENV chooses where)" >&2
  exit 2
fi
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
ONLY=${ONLY:-all}
BUILD=${BUILD:-$ROOT/build}
SENTENCES=${SENTENCES:-200}
SEQ_STEPS=${SEQ_STEPS:-8}
SEQ_GREEDY_REPS=${SEQ_GREEDY_REPS:-40}
BEFORE=${BEFORE:-}
if [[ -n $BEFORE && ! -x $BEFORE ]]; then echo "compare --peers: BEFORE=$BEFORE is not an executable attn binary" >&2; exit 2; fi
TF_STEPS=${TF_STEPS:-4}
SDPA_LENS=${SDPA_LENS:-512 2048 8192}
SDPA_LONG_ROUNDS=${SDPA_LONG_ROUNDS:-1}
MODEL=${MODEL:-}
DATA=${DATA:-$ROOT/../shared/data}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
export ATTN_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS
OUT=${OUT:-$BUILD/peers-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
RESULTS=$OUT/results.jsonl
: >"$RESULTS"
part() { [[ $ONLY == all || " $ONLY " == *" $1 "* ]]; }

if [[ -z "${NO_BUILD:-}" ]]; then
  if [[ ! -f $BUILD/build.ninja ]]; then
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTN_BUILD_BENCH=ON >/dev/null
  else
    cmake "$BUILD" -DATTN_BUILD_BENCH=ON >/dev/null
  fi
  cmake --build "$BUILD" --target attn attn_micro attn_gemm_limits -j"$THREADS" >/dev/null
fi
ATTN=$BUILD/attn
TORCH_PEER=("$PY" "$ROOT/bench/torch_peer.py")
TRANSLATE_PEER=("$PY" "$ROOT/bench/peers/translate_peer.py")

sgemm_peak() {  # the best large-square sgemm rate of attn_micro (kernels::gemm, cblas_sgemm)
  "$BUILD/attn_micro" --threads="$THREADS" --benchmark_filter='BM_(Gemm|CblasSgemm)/.*(1024|2048)' \
    --benchmark_min_time=0.3 --benchmark_format=json 2>/dev/null |
    "$PY" -c "import json,sys; print('%.1f' % max(x['GFLOPS'] for x in json.load(sys.stdin)['benchmarks']))"
}

echo "# attn vs PyTorch 2 and CTranslate2 ($(date -u +%Y-%m-%dT%H:%MZ))"
echo
echo "- machine: \`$("$ATTN" doctor --summary 2>/dev/null || echo "attn doctor --summary failed")\`"
echo "- CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; ISA: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_bf16|avx512_vnni|amx_tile|amx_bf16)$' | tr '\n' ' ')"
echo "- threads $THREADS both sides; OMP_WAIT_POLICY=$OMP_WAIT_POLICY; ROUNDS=$ROUNDS"
echo "- peers: $("$PY" -c 'import torch, ctranslate2, sacrebleu; print("torch", torch.__version__, "(CPU capability", torch.backends.cpu.get_cpu_capability() + ")", "ctranslate2", ctranslate2.__version__, "sacrebleu", sacrebleu.__version__)') from $VENV"
DIRTY=$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null | head -1)
echo "- attn $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')${DIRTY:+ (+ changes not committed)}, $BUILD (the binary's own commit: the machine line)"
if [[ -n $BEFORE ]]; then
  BEFORE_COMMIT=$("$BEFORE" doctor --summary 2>/dev/null | sed -n 's/^attn [^ ]* (\([0-9a-f]\{7\}\).*/\1/p')
  BEFORE_NAME="before ($BEFORE_COMMIT), fp32"
  echo "- before: $BEFORE: \`$("$BEFORE" doctor --summary 2>/dev/null || echo "doctor --summary failed")\`"
fi
echo "- load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# OpenBLAS core: the one with the best sgemm rate (attn's GEMMs; torch and CTranslate2 bring
# their own). A user's OPENBLAS_CORETYPE wins.
if [[ -z ${OPENBLAS_CORETYPE:-} ]]; then
  rate=$(sgemm_peak)
  sky=$(OPENBLAS_CORETYPE=SkylakeX sgemm_peak)
  echo "- sgemm peak, OpenBLAS default core: $rate GFLOP/s; SkylakeX core: $sky GFLOP/s"
  if "$PY" -c "import sys; sys.exit(0 if $sky > $rate else 1)"; then export OPENBLAS_CORETYPE=SkylakeX; fi
fi
echo "- attn runs with OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)}"

ROUND=0
LOG=$OUT/stderr.txt
run() {  # run <label> <impl> <config> <command...>: one JSON line tagged label, impl, config, round
  local label=$1 impl=$2 config=$3 line
  shift 3
  if ! line=$("$@" 2>"$LOG.last" | tail -1) || [[ -z $line ]]; then
    { echo "FAILED ($label, $impl $config): $*"; cat "$LOG.last"; } >>"$LOG"
    line="{\"na\": \"n/a (failed: $(tail -1 "$LOG.last" | tr -d '"\\' | cut -c1-100))\"}"
  fi
  "$PY" -c "import json,sys; d=json.loads(sys.argv[1]); d.update(label=sys.argv[2], impl=sys.argv[3], config=sys.argv[4], round=int(sys.argv[5])); print(json.dumps(d))" \
    "$line" "$label" "$impl" "$config" "$ROUND" >>"$RESULTS"
}
na() { run "$1" "$2" "$3" echo "{\"na\": \"n/a ($4)\"}"; }

sgemm_json() { echo "{\"f32_gflops\": $(sgemm_peak)}"; }
limits() {
  run "limits" attn "sgemm (attn_micro: kernels::gemm, cblas_sgemm)" sgemm_json
  run "limits" onednn "matmul f32/bf16/int8" "$BUILD/attn_gemm_limits" --n 2048 --reps 5
}

# ---- the beam rows' preparation: the test sentences, the torch export, the CTranslate2 model
TR=$OUT/translate
TRANSLATE_NA=""
if part translate; then
  mkdir -p "$TR"
  n=$([[ $SENTENCES == all ]] && echo 100000 || echo "$SENTENCES")
  zcat "$DATA/multi30k/raw/test_2016_flickr.de.gz" | sed -n "1,${n}p" >"$TR/src.de"
  zcat "$DATA/multi30k/raw/test_2016_flickr.en.gz" | sed -n "1,${n}p" >"$TR/ref.en"
  if [[ -z $MODEL || ! -f $MODEL ]]; then
    TRANSLATE_NA="no trained Transformer: MODEL=RUN/model.safetensors, from e.g. $ATTN train --task translate --model transformer --data ../shared/data --vocab-size 6000 --max-tokens 2500 --warmup 300 --max-minutes 95 --out RUN"
  else
    SPM=$(dirname "$MODEL")/spm.model
    "$ATTN" tokenize encode --model "$SPM" --ids <"$TR/src.de" >"$TR/src.ids"
    "$ATTN" export --to torch --model "$MODEL" --out "$TR/torch" >/dev/null
    MAX_POS=$("$PY" -c "import sys; sys.path.insert(0, '$ROOT/bench/peers'); import translate_peer as t; print(t.read_config('$TR/torch')[1]['max_len'])")
    if "$ATTN" export --help 2>&1 | grep -q ctranslate2; then
      CT2_HOW="attn export --to ctranslate2"
      "$ATTN" export --to ctranslate2 --model "$MODEL" --out "$TR/ct2" --python "$PY" >/dev/null
    else
      CT2_HOW="bench's spec-API converter (attn export --to ctranslate2 pending)"
      "${TRANSLATE_PEER[@]}" convert --torch-export "$TR/torch" --out "$TR/ct2" >/dev/null
    fi
    echo "- beam rows: $(wc -l <"$TR/src.de") sentences of test2016, beam 5, length penalty 1, batch 64; CTranslate2 model by $CT2_HOW; attn with its own beam rules and with CTranslate2's (--beam-rules ctranslate2)"
  fi
fi

translate_row() {  # translate_row <impl> <config> <engine args...>: timing, then BLEU and tokens
  # (attn's binary: $ATTN, or $TRANSLATE_BIN when set; its hypotheses in $TR/<impl>-<config>.txt)
  local impl=$1 config=$2 tag=${1}-${2}
  shift 2
  local hyp=$TR/$tag.txt ids=$TR/$tag.ids line score
  if [[ $impl == attn ]]; then
    line=$("${TRANSLATE_PEER[@]}" run --engine attn --attn "${TRANSLATE_BIN:-$ATTN}" --model "$MODEL" --src-text "$TR/src.de" --out "$hyp" --threads "$THREADS" "$@" 2>>"$LOG" | tail -1) || line='{"na": "n/a (failed)"}'
    "$ATTN" tokenize encode --model "$SPM" --ids <"$hyp" >"$ids"
  else
    line=$("${TRANSLATE_PEER[@]}" run "$@" --src "$TR/src.ids" --out "$ids" --threads "$THREADS" --max-positions "$MAX_POS" 2>>"$LOG" | tail -1) || line='{"na": "n/a (failed)"}'
    [[ $line == *'"na"'* ]] || "$ATTN" tokenize decode --model "$SPM" --ids <"$ids" >"$hyp"
  fi
  score='{}'
  if [[ $line != *'"na"'* ]]; then
    score=$("${TRANSLATE_PEER[@]}" bleu --hyp "$hyp" --ref "$TR/ref.en" --ids "$ids" 2>>"$LOG") || score='{"bleu": null}'
  fi
  run "beam-5 test2016" "$impl" "$config" "$PY" -c "import json,sys; d=json.loads(sys.argv[1]); s=json.loads(sys.argv[2]); d.update(s)
if d.get('target_tokens'): d['tokens_per_s'] = d['target_tokens'] / d['seconds']
print(json.dumps(d))" "$line" "$score"
}

for ROUND in $(seq 1 "$ROUNDS"); do
  echo "- round $ROUND: $(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg)"
  if part limits; then limits; fi
  if part seq2seq; then
    SEQ=(--batch 64 --emb 64 --hidden 256 --vocab 32 --len 40 --steps "$SEQ_STEPS" --warmup 2
      --greedy-reps "$SEQ_GREEDY_REPS" --threads "$THREADS" --json)
    for att in bahdanau luong; do
      run "seq2seq $att" attn "fp32" "$ATTN" bench seq2seq --attention "$att" "${SEQ[@]}"
      if [[ -n $BEFORE ]]; then run "seq2seq $att" attn "$BEFORE_NAME" "$BEFORE" bench seq2seq --attention "$att" "${SEQ[@]}"; fi
      run "seq2seq $att" torch "eager fp32" "${TORCH_PEER[@]}" seq2seq --attention "$att" "${SEQ[@]}"
      run "seq2seq $att" torch "torch.compile fp32" "${TORCH_PEER[@]}" seq2seq --attention "$att" --compile "${SEQ[@]}"
    done
  fi
  if part transformer; then
    TF=(--steps "$TF_STEPS" --warmup 2 --threads "$THREADS" --json)
    run "transformer training" attn "fp32" "$ATTN" bench transformer "${TF[@]}" --beam-sentences 1 --beam-reps 1
    run "transformer training" torch "eager fp32" "${TORCH_PEER[@]}" transformer "${TF[@]}" --beam-sentences 0
    if grep -q -m1 -E ' (avx512_bf16|amx_bf16) ' <(grep -m1 '^flags' /proc/cpuinfo; echo); then
      # attn may use bf16 where the peer does (its row shows attn's faster configuration)
      run "transformer training" attn "bf16" "$ATTN" bench transformer "${TF[@]}" --beam-sentences 1 --beam-reps 1 --precision bf16
      run "transformer training" torch "eager bf16 autocast" "${TORCH_PEER[@]}" transformer "${TF[@]}" --beam-sentences 0 --precision bf16
      run "transformer training" torch "torch.compile bf16 autocast" "${TORCH_PEER[@]}" transformer "${TF[@]}" --beam-sentences 0 --precision bf16 --compile
    else
      na "transformer training" torch "eager bf16 autocast" "the CPU has neither AVX512-BF16 nor AMX"
    fi
    run "transformer training" torch "torch.compile fp32" "${TORCH_PEER[@]}" transformer "${TF[@]}" --beam-sentences 0 --compile
  fi
  if part translate; then
    if [[ -n $TRANSLATE_NA ]]; then
      na "beam-5 test2016" attn "attn translate fp32" "$TRANSLATE_NA"
    else
      translate_row attn "translate fp32"
      translate_row attn "translate fp32, ctranslate2 rules" --beam-rules ctranslate2
      translate_row attn "translate int8" --precision int8
      # the int8 target's row: int8 against CTranslate2 int8 with the same search
      translate_row attn "translate int8, ctranslate2 rules" --precision int8 --beam-rules ctranslate2
      if [[ -n $BEFORE ]]; then
        TRANSLATE_BIN=$BEFORE translate_row attn "before ($BEFORE_COMMIT), translate int8, ctranslate2 rules" \
          --precision int8 --beam-rules ctranslate2
      fi
      translate_row torch "fp32 eager, cached beam" --engine torch --model "$TR/torch"
      for ct in float32 int8 bfloat16 int8_bfloat16; do
        translate_row ctranslate2 "$ct" --engine ctranslate2 --compute-type "$ct" --model "$TR/ct2"
      done
    fi
  fi
  if part sdpa; then
    for len in $SDPA_LENS; do
      reps=3
      if ((len >= 8192)); then
        reps=1
        ((ROUND <= SDPA_LONG_ROUNDS)) || continue
      fi
      for mask in causal padding; do
        ATT=(--kind sdpa --mask "$mask" --batch 1 --heads 8 --dim 512 --len "$len" --reps "$reps" --warmup 1 --threads "$THREADS" --json)
        run "sdpa T=$len $mask" attn "fused sdpa" "$ATTN" bench attention "${ATT[@]}"
        if [[ -n $BEFORE ]]; then run "sdpa T=$len $mask" attn "$BEFORE_NAME" "$BEFORE" bench attention "${ATT[@]}"; fi
        run "sdpa T=$len $mask" torch "F.scaled_dot_product_attention" "${TORCH_PEER[@]}" attention "${ATT[@]}"
      done
    done
  fi
done
if part limits; then ROUND=$((ROUNDS + 1)); limits; fi
echo "- load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if part translate && [[ -z $TRANSLATE_NA ]]; then
  # the rows with CTranslate2's search against CTranslate2 at the same precision, line by line
  # (the text; the last round's files, the output being deterministic)
  for pair in "fp32:float32" "int8:int8"; do
    mine=$TR/attn-translate\ ${pair%%:*},\ ctranslate2\ rules.txt peer=$TR/ctranslate2-${pair#*:}.txt
    if [[ -f $mine && -f $peer ]]; then
      same=$("$PY" -c "import sys; a, b = (open(p).read().splitlines() for p in sys.argv[1:]); print(sum(x == y for x, y in zip(a, b)), 'of', max(len(a), len(b)))" "$mine" "$peer")
      echo "- attn ${pair%%:*} with CTranslate2's rules: the same text as CTranslate2 ${pair#*:} on $same sentences"
    fi
  done
fi
echo "- raw results: $RESULTS"
echo
"$PY" "$ROOT/bench/peers/table.py" "$RESULTS"
