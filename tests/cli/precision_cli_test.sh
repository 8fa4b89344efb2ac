#!/usr/bin/env bash
# --precision fp32|bf16 (attn/precision.h, docs/precision.md): a bad name is a usage error on
# every command that takes it; bf16 below the avx512 level (ATTN_ISA=baseline, which every
# x86-64 runs) is refused with one line on each, before any work; where the CPU runs bf16, a
# bf16 run trains, evaluates an fp32 checkpoint and the reverse, and its checkpoint stores F32.
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
  # shellcheck disable=SC2086  # the words of $command are its arguments
  expect 2 "--precision: fp16 not in {fp32,bf16}" -- "$attn" $command --precision fp16
  # shellcheck disable=SC2086
  out="$(ATTN_ISA=baseline "$attn" $command --precision bf16 2>&1 </dev/null)"; rc=$?
  [[ $rc == 1 && "$out" == "attn: error: bf16 needs the avx512 kernel level (ATTN_ISA=baseline limits this process to SSE4.2); run with --precision fp32" ]] \
    || fail "ATTN_ISA=baseline attn $command --precision bf16: exit $rc, expected 1 and the one refusal line; output: $out"
done
[[ ! -e "$work/refused" ]] || fail "a refused bf16 train wrote $work/refused"
# attn doctor says whether bf16 runs, and what it needs where it does not.
expect 0 "bf16        --precision bf16 is refused: it needs the avx512 kernel level (ATTN_ISA=baseline limits" -- \
  env ATTN_ISA=baseline "$attn" doctor --seconds 0

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

finish precision
