#!/usr/bin/env bash
# Issue 34, sets of files written as a unit: --overwrite keeps the old run until the new one
# has saved a model (defect 9); tokenizer training stops on SIGTERM / SIGINT, leaving the old
# .model and .vocab and no .attn-spm-XXXXXX folder (defects 6 and 11); export's folder
# appears whole or not at all under SIGTERM (defect 11).
# Usage: file_sets_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
source "$(dirname "$0")/lib.sh"

tiny=(--task copy --hidden 16 --emb 8 --min-len 3 --max-len 6 --batch 8 --log-every 2 --eval-every 2 --eval-samples 8 --threads 1)

# leftovers DIR: the temporary folders attn may make in DIR.
leftovers() { ls -A "$1" | grep -E '^\.attn-spm-|^\.attn-replaced-|\.tmp-' || true; }

# same_files A B NAME...: each NAME is byte-identical in A and B.
same_files() {
  local a="$1" b="$2" name; shift 2
  for name in "$@"; do cmp -s "$a/$name" "$b/$name" || fail "$b/$name differs from the old run's (or is missing)"; done
}

# wait_for_text FILE TEXT: up to 60 s for FILE to contain TEXT.
wait_for_text() {
  for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

"$attn" train "${tiny[@]}" --steps 4 --out "$work/good" > /dev/null 2>&1 || fail "the tiny copy run failed"
cp -r "$work/good" "$work/good.copy"
run_files=(model.safetensors last.safetensors log.jsonl config.toml)

# Export: the two files together, or nothing, whenever SIGTERM comes.
expect 0 "wrote" -- "$attn" export --to torch --model "$work/good/model.safetensors" --out "$work/export"
[[ -s "$work/export/model.py" && -s "$work/export/model.safetensors" ]] || fail "export wrote $(ls "$work/export")"
for delay in 0 0.02 0.05 0.1 0.15 0.2 0.3; do
  rm -rf "$work/exp"
  "$attn" export --to torch --model "$work/good/model.safetensors" --out "$work/exp" > /dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -TERM "$pid" 2>/dev/null
  wait "$pid"
  if [[ -e "$work/exp" ]]; then
    [[ -s "$work/exp/model.py" && -s "$work/exp/model.safetensors" ]] ||
      fail "SIGTERM after ${delay}s left an export folder holding only: $(ls "$work/exp")"
  fi
  [[ -z "$(leftovers "$work")" ]] || fail "SIGTERM after ${delay}s during export left $(leftovers "$work")"
done

if have_data multi30k/raw/train.de.gz multi30k/raw/train.en.gz; then
  # --overwrite with a new run that fails after the folder is taken (its tokenizer cannot have
  # 16000 pieces on 50 lines): the old run is back, whole.
  expect 1 "SentencePiece training" -- "$attn" train --task translate --data "$data" --train-limit 50 --vocab-size 16000 \
    --steps 2 --overwrite --out "$work/good"
  same_files "$work/good.copy" "$work/good" "${run_files[@]}"
  [[ ! -e "$work/good/spm.model" && -z "$(leftovers "$work/good")" ]] || fail "the failed --overwrite left $(ls -A "$work/good")"

  # Tokenizer training stops on SIGTERM: the old PREFIX.model and .vocab stay, no scratch folder.
  mkdir -p "$work/tok"
  "$attn" tokenize train --input "$data/multi30k/raw/train.en.gz" --max-sentences 300 --vocab-size 200 \
    --out "$work/tok/spm" > /dev/null 2>&1 || fail "the small tokenizer failed"
  cp -r "$work/tok" "$work/tok.copy"
  # interrupt_tokenizer SIGNAL... : signals a long training once SentencePiece has started.
  interrupt_tokenizer() {
    "$attn" tokenize train --input "$data/multi30k/raw/train.de.gz" --input "$data/multi30k/raw/train.en.gz" \
      --vocab-size 8000 --verbose --out "$work/tok/spm" > "$work/tok.out" 2>&1 &
    local pid=$! signal start
    wait_for_text "$work/tok.out" "trainer_interface" || fail "SentencePiece did not start: $(cat "$work/tok.out")"
    start=$SECONDS
    for signal in "$@"; do kill -s "$signal" "$pid" 2>/dev/null; sleep 0.05; done
    wait "$pid"; rc=$?
    ((SECONDS - start < 10)) || fail "tokenizer training took $((SECONDS - start)) s to stop after $*"
  }
  interrupt_tokenizer TERM
  [[ $rc == 143 ]] || fail "SIGTERM during tokenizer training: exit $rc: $(tail -n 3 "$work/tok.out")"
  grep -q "interrupted (SIGTERM) while training the SentencePiece model" "$work/tok.out" || fail "no message: $(tail -n 3 "$work/tok.out")"
  same_files "$work/tok.copy" "$work/tok" spm.model spm.vocab
  [[ -z "$(leftovers "$work/tok")" ]] || fail "SIGTERM during tokenizer training left $(leftovers "$work/tok")"
  interrupt_tokenizer INT INT
  [[ $rc == 130 ]] || fail "two SIGINTs during tokenizer training: exit $rc"
  same_files "$work/tok.copy" "$work/tok" spm.model spm.vocab
  [[ -z "$(leftovers "$work/tok")" ]] || fail "two SIGINTs during tokenizer training left $(leftovers "$work/tok")"

  # train --task translate: SIGTERM while its tokenizer trains, over a run given --overwrite.
  "$attn" train --task translate --data "$data" --vocab-size 8000 --steps 2 --overwrite --out "$work/good" \
    > "$work/tr.out" 2>&1 &
  pid=$!
  wait_for_text "$work/tr.out" "learning a shared" || fail "translate did not start its tokenizer: $(cat "$work/tr.out")"
  sleep 1
  kill -TERM "$pid"
  wait "$pid"; rc=$?
  [[ $rc == 143 ]] || fail "SIGTERM during train --task translate's tokenizer: exit $rc: $(tail -n 3 "$work/tr.out")"
  same_files "$work/good.copy" "$work/good" "${run_files[@]}"
  [[ ! -e "$work/good/spm.model" && -z "$(leftovers "$work/good")" ]] || fail "the interrupted --overwrite left $(ls -A "$work/good")"
fi

finish "file sets CLI"
