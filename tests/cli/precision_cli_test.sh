#!/usr/bin/env bash
# --precision fp32|bf16|int8 (attn/precision.h, docs/precision.md): a bad name is a usage error on
# every command that takes it, and int8 on train and bench; bf16 and int8 below the avx512 level
# (ATTN_ISA=baseline, which every x86-64 runs) are refused with one line on each, before any work;
# where the CPU runs bf16, a bf16 run trains, evaluates an fp32 checkpoint and the reverse, and
# its checkpoint stores F32; where it runs int8, a trained model evaluates, translates and
# classifies under int8 close to fp32.
# Usage: precision_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
source "$(dirname "$0")/lib.sh"

tiny=(--hidden 16 --emb 8 --min-len 3 --max-len 6 --batch 8 --log-every 5 --eval-every 10 --eval-samples 16 --threads 1)
model_free=(
  "train --task copy ${tiny[*]} --steps 2 --out $work/refused"
  "eval --model $work/none.safetensors"
  "translate --model $work/none.safetensors"
  "classify --model $work/none.safetensors --text good"
  "bench seq2seq --steps 1" "bench attention" "bench transformer --steps 1" "bench gemm --seconds 0.01"
)
for command in "${model_free[@]}"; do
  names="fp32,bf16"
  case "$command" in eval* | translate* | classify*) names="fp32,bf16,int8" ;; esac
  # shellcheck disable=SC2086  # the words of $command are its arguments
  expect 2 "--precision: fp16 not in {$names}" -- "$attn" $command --precision fp16
  if [[ "$names" == "fp32,bf16" ]]; then
    # shellcheck disable=SC2086
    expect 2 "--precision: int8 is for inference: translate, classify and eval only" -- "$attn" $command --precision int8
  else
    # shellcheck disable=SC2086
    out="$(ATTN_ISA=baseline "$attn" $command --precision int8 2>&1 </dev/null)"; rc=$?
    [[ $rc == 1 && "$out" == "attn: error: int8 needs "*"; run with --precision fp32" && "$out" != *$'\n'* ]] \
      || fail "ATTN_ISA=baseline attn $command --precision int8: exit $rc, expected 1 and the one refusal line; output: $out"
  fi
  # shellcheck disable=SC2086
  out="$(ATTN_ISA=baseline "$attn" $command --precision bf16 2>&1 </dev/null)"; rc=$?
  [[ $rc == 1 && "$out" == "attn: error: bf16 needs the avx512 kernel level (ATTN_ISA=baseline limits this process to SSE4.2); run with --precision fp32" ]] \
    || fail "ATTN_ISA=baseline attn $command --precision bf16: exit $rc, expected 1 and the one refusal line; output: $out"
done
[[ ! -e "$work/refused" ]] || fail "a refused bf16 train wrote $work/refused"
# attn doctor says whether bf16 runs, and what it needs where it does not.
expect 0 "bf16        --precision bf16 is refused: it needs the avx512 kernel level (ATTN_ISA=baseline limits" -- \
  env ATTN_ISA=baseline "$attn" doctor --seconds 0
expect 0 "int8        --precision int8 is refused: it needs " -- env ATTN_ISA=baseline "$attn" doctor --seconds 0

# Where the CPU runs bf16 (AVX512_BF16 or AMX-BF16): both directions between the precisions.
if out="$("$attn" bench gemm --seconds 0.01 --precision bf16 --json 2>&1)"; then
  [[ "$out" == *'"implementation"'* ]] || fail "bench gemm --precision bf16 names no oneDNN implementation: $out"
  expect 0 "bf16        --precision bf16 runs: oneDNN " -- "$attn" doctor --seconds 0
  expect 0 "trained 20 steps" -- "$attn" train --task copy "${tiny[@]}" --steps 20 --out "$work/fp32"
  expect 0 "trained 20 steps" -- "$attn" train --task copy "${tiny[@]}" --steps 20 --precision bf16 --out "$work/bf16"
  grep -qx 'precision = "bf16"' "$work/bf16/config.toml" || fail "config.toml of the bf16 run lacks 'precision = "bf16"'"
  for run in fp32 bf16; do
    for precision in fp32 bf16; do
      expect 0 '"token_accuracy"' -- "$attn" eval --model "$work/$run/model.safetensors" --eval-lengths 3,6 --samples 10 \
        --json --precision "$precision"
    done
    # Checkpoints store fp32 whatever the precision of the run: every tensor's dtype is F32.
    /usr/bin/python3 - "$work/$run/model.safetensors" <<'PY' || fail "$run/model.safetensors holds a tensor that is not F32"
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
dtypes = {v["dtype"] for k, v in header.items() if k != "__metadata__"}
assert dtypes == {"F32"}, dtypes
PY
  done
  data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
  if have_data sst2/sentiment-dev; then
    expect 0 "trained 2 steps" -- "$attn" train --task sst2 --model transformer-cls --data "$data" --steps 2 \
      --train-limit 100 --dev-limit 20 --threads 1 --precision bf16 --out "$work/sst2"
    for precision in fp32 bf16; do
      expect 0 '"probability"' -- "$attn" classify --model "$work/sst2/model.safetensors" --text "a moving film" --json \
        --precision "$precision"
    done
  fi
else
  [[ "$out" == "attn: error: bf16 needs "* ]] || fail "bench gemm --precision bf16 failed without the refusal line: $out"
  echo "SKIP: this CPU does not run bf16: ${out#attn: error: }" >&2
  skipped+=("a CPU with AVX512_BF16 or AMX-BF16")
fi

# Where the CPU runs int8 (VNNI or AMX-INT8): a copy model trained for 400 steps in fp32
# (about 99 % token accuracy) evaluates under int8, greedy and beam 3, within 2 points of
# fp32; a tiny SST-2 classifier gives the same label and a probability within 0.02 of fp32's.
if "$attn" doctor --seconds 0 --json | /usr/bin/python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["int8"]["runs"] else 1)'; then
  expect 0 "int8        --precision int8 runs: oneDNN " -- "$attn" doctor --seconds 0
  expect 0 "trained 400 steps" -- "$attn" train --task copy --hidden 64 --emb 32 --min-len 3 --max-len 6 --batch 32 \
    --log-every 100 --eval-every 100 --eval-samples 64 --lr 3e-3 --threads 1 --steps 400 --out "$work/copy"
  for beam in 1 3; do
    for precision in fp32 int8; do
      "$attn" eval --model "$work/copy/model.safetensors" --eval-lengths 3,6 --samples 64 --beam $beam --json \
        --precision "$precision" > "$work/eval-$precision.json" || fail "eval --beam $beam --precision $precision failed"
    done
    /usr/bin/python3 - "$work/eval-fp32.json" "$work/eval-int8.json" <<'PY' || fail "int8 eval (beam $beam) is not within 2 points of fp32's"
import json, sys
fp32, int8 = (json.load(open(p))["score"] for p in sys.argv[1:])
assert fp32 > 0.9 and abs(fp32 - int8) <= 0.02, (fp32, int8)
PY
  done
  data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
  if have_data sst2/sentiment-dev; then
    expect 0 "trained 20 steps" -- "$attn" train --task sst2 --model transformer-cls --data "$data" --steps 20 \
      --train-limit 200 --dev-limit 20 --d-model 32 --ffn 64 --threads 1 --out "$work/sst2-int8"
    for precision in fp32 int8; do
      "$attn" classify --model "$work/sst2-int8/model.safetensors" --text "a moving , funny film" --json \
        --precision "$precision" > "$work/classify-$precision.json" || fail "classify --precision $precision failed"
    done
    /usr/bin/python3 - "$work/classify-fp32.json" "$work/classify-int8.json" <<'PY' || fail "int8 classify is not within 0.02 of fp32"
import json, sys
fp32, int8 = (json.load(open(p)) for p in sys.argv[1:])
assert fp32["label"] == int8["label"] and abs(fp32["probability"] - int8["probability"]) <= 0.02, (fp32, int8)
PY
  fi
else
  echo "SKIP: this CPU does not run int8" >&2
  skipped+=("a CPU with VNNI or AMX-INT8")
fi

finish precision
