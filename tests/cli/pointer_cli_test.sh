#!/usr/bin/env bash
# The pointer-generator (See et al. 2017) from the command line: a --pointer model trains on a
# synthetic task, records the option in its checkpoint, and reports the copy probability of
# each output token in `align --json` and `view --json`; on Multi30k it trains with its
# extended vocabulary and `translate --json` gives each piece's copy probability, also for a
# text of unknown pieces only; the Transformer's pointer likewise. A decoder that cannot carry
# the pointer is refused with exit 2.
# Usage: pointer_cli_test.sh path/to/attn   (the Multi30k part skips without the data)
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
source "$(dirname "$0")/lib.sh"

# Every "copy" array of a JSON file (or of each line of a JSON-lines file) holds probabilities,
# at most as many as its "rows" / "pieces" (the output tokens), and there is one at least.
copy_ok() {
  /usr/bin/python3 - "$1" <<'PY' || fail "copy probabilities: $1"
import json, sys
text = open(sys.argv[1]).read()
texts = text.splitlines() if sys.argv[1].endswith(".jsonl") else [text]
seen = 0
def check(j):
    global seen
    if isinstance(j, dict):
        if "copy" in j:
            seen += 1
            labels = j.get("rows", j.get("pieces"))
            assert labels is None or len(j["copy"]) <= len(labels), (len(j["copy"]), labels)
            assert all(0.0 <= p <= 1.0 for p in j["copy"]), j["copy"]
            assert j["copy"], "an empty copy list"
        for v in j.values(): check(v)
    elif isinstance(j, list):
        for v in j: check(v)
for t in texts:
    if t.strip(): check(json.loads(t))
assert seen, "no copy probabilities"
PY
}

tiny=(--hidden 16 --emb 8 --min-len 3 --max-len 6 --batch 8 --log-every 5 --eval-every 10 --eval-samples 16 --threads 1)
expect 0 "trained 12 steps" -- "$attn" train --task copy --pointer "${tiny[@]}" --steps 12 --out "$work/ptr"
model="$work/ptr/model.safetensors"
grep -q '"pointer":true' <(head -c 4096 "$model" | tr -d '\\') || fail "the checkpoint does not record the pointer"
expect 0 "heatmap:" -- "$attn" align --model "$model" --input "5 9 3" --beam 2 --out "$work/a.svg" --json "$work/a.json"
copy_ok "$work/a.json"
expect 0 "" -- "$attn" view --model "$model" --input "5 9 3 17" --beam 2 --out "$work/v.html" --json "$work/v.json"
copy_ok "$work/v.json"
grep -q "copy 0\.\|copy 1\." "$work/v.json" || fail "view's row labels do not show the copy probability"
# PyTorch export has no pointer decoder: refused rather than exported without it.
expect 1 "the pointer-generator has no plain-PyTorch version here" -- "$attn" export --to torch --model "$model" \
  --out "$work/torch"
[[ ! -e "$work/torch" ]] || fail "a refused export wrote its folder"
# explain's importance measures do not follow the copy path: one line, not a crash.
expect 1 "the pointer-generator needs the source's ids" -- "$attn" explain --model "$model" --input "5 9 3 17"
# A model without the pointer keeps its checkpoint form and reports no copy probability.
expect 0 "trained 2 steps" -- "$attn" train --task copy "${tiny[@]}" --steps 2 --out "$work/plain"
! grep -q '"pointer"' <(head -c 4096 "$work/plain/model.safetensors" | tr -d '\\') || fail "a plain checkpoint names the pointer"
expect 0 "heatmap:" -- "$attn" align --model "$work/plain/model.safetensors" --input "5 9" --out "$work/p.svg" --json "$work/p.json"
! grep -q '"copy"' "$work/p.json" || fail "align --json of a plain model has copy probabilities"

# Refused, exit 2, nothing written: no attention, several heads, G2P's two vocabularies.
expect 2 "pointer needs bahdanau or luong attention with one head, got none" -- "$attn" train --task copy --pointer \
  --attention none "${tiny[@]}" --steps 1 --out "$work/bad1"
expect 2 "pointer needs bahdanau or luong attention with one head, got luong (multihead)" -- "$attn" train --task copy \
  --pointer --attention luong --score multihead "${tiny[@]}" --steps 1 --out "$work/bad2"
expect 2 "--pointer does not apply to --task g2p" -- "$attn" train --task g2p --pointer --data "$data" --out "$work/bad3"
expect 2 "--pointer does not apply to --task sst2" -- "$attn" train --task sst2 --pointer --out "$work/bad4"
for bad in bad1 bad2 bad3 bad4; do [[ ! -e "$work/$bad" ]] || fail "a refused train wrote $bad"; done

if have_data multi30k/raw/train.de.gz; then
  expect 2 "--pointer needs --label-smoothing 0" -- "$attn" train --task translate --pointer --label-smoothing 0.1 \
    --data "$data" --out "$work/bad6"
  expect 0 "best validation BLEU" -- "$attn" train --task translate --pointer --data "$data" --train-limit 200 \
    --vocab-size 200 --max-tokens 1200 --steps 20 --warmup 5 --eval-every 20 --eval-sentences 10 --log-every 5 \
    --emb 16 --hidden 24 --threads 2 --out "$work/mt"
  mt="$work/mt/model.safetensors"
  # Greek and CJK letters are outside a vocabulary learned on German and English: unknown pieces.
  printf 'Ein Mann mit Ωμέγα.\n東京\n\n' | "$attn" translate --model "$mt" --json > "$work/mt.jsonl" \
    || fail "translate --json failed"
  [[ "$(wc -l < "$work/mt.jsonl")" == 3 ]] || fail "translate --json wrote $(wc -l < "$work/mt.jsonl") lines for 3"
  copy_ok "$work/mt.jsonl"
  expect 0 "heatmap:" -- "$attn" align --model "$mt" --text "東京" --beam 2 --out "$work/mt.svg" --json "$work/mt.json"
  copy_ok "$work/mt.json"
  expect 0 "" -- "$attn" view --model "$mt" --text "東京" --out "$work/mt.html" --json "$work/mt-view.json"
  copy_ok "$work/mt-view.json"

  # The Transformer's pointer (its last layer's cross-attention, averaged over heads): the same.
  expect 2 "--pointer needs --label-smoothing 0" -- "$attn" train --task translate --model transformer --pointer \
    --label-smoothing 0.1 --data "$data" --out "$work/bad5"
  [[ ! -e "$work/bad5" ]] || fail "a refused train wrote bad5"
  expect 0 "best validation BLEU" -- "$attn" train --task translate --model transformer --pointer --data "$data" \
    --train-limit 200 --vocab-size 200 --max-tokens 1200 --steps 20 --warmup 5 --eval-every 20 --eval-sentences 10 \
    --log-every 5 --d-model 16 --ffn 32 --heads 2 --enc-layers 1 --dec-layers 2 --threads 2 --out "$work/tmt"
  tmt="$work/tmt/model.safetensors"
  grep -q '"pointer":true' <(head -c 4096 "$tmt" | tr -d '\\') || fail "the Transformer checkpoint does not record the pointer"
  printf 'Ein Mann mit Ωμέγα.\n東京\n\n' | "$attn" translate --model "$tmt" --beam 2 --json > "$work/tmt.jsonl" \
    || fail "translate --json (transformer) failed"
  [[ "$(wc -l < "$work/tmt.jsonl")" == 3 ]] || fail "translate --json (transformer) wrote $(wc -l < "$work/tmt.jsonl") lines for 3"
  copy_ok "$work/tmt.jsonl"
  expect 0 "heatmap:" -- "$attn" align --model "$tmt" --text "東京" --beam 2 --out "$work/tmt.svg" --json "$work/tmt.json"
  copy_ok "$work/tmt.json"
  expect 0 "" -- "$attn" view --model "$tmt" --text "東京 Ωμέγα" --beam 2 --out "$work/tmt.html" --json "$work/tmt-view.json"
  copy_ok "$work/tmt-view.json"
  grep -q "copy 0\.\|copy 1\." "$work/tmt-view.json" || fail "view's cross-attention rows do not show the copy probability"
  expect 0 "BLEU" -- "$attn" eval --model "$tmt" --data "$data" --limit 5
  # eval --json's diagnostics (data/translation_metrics.h), on every translation checkpoint.
  "$attn" eval --model "$tmt" --data "$data" --limit 5 --json > "$work/tmt-eval.json" || fail "eval --json failed"
  /usr/bin/python3 - "$work/tmt-eval.json" <<'PY' || fail "eval --json lacks the copy / repetition / under-translation metrics"
import json, sys
j = json.load(open(sys.argv[1]))
c, u = j["copy_accuracy"], j["under_translation"]
assert 0 <= c["copied"] <= c["words"] and c["sentences"] <= j["sentences"], c
assert 0.0 <= j["repetition_rate"] <= 1.0 and j["repetition_ngrams"] == [2, 4], j
assert u["tokens"] > 0 and 0 <= u["under"] <= u["tokens"], u
PY
  for to in torch ctranslate2; do
    expect 1 "export --to $to: the pointer-generator has no" -- "$attn" export --to "$to" --model "$tmt" --out "$work/tx-$to"
    [[ ! -e "$work/tx-$to" ]] || fail "a refused export wrote tx-$to"
  done
fi

finish "pointer CLI"
