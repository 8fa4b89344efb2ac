#!/usr/bin/env bash
# CLI tests of `attn tokenize` (train / encode / decode) and `attn bleu` on a few hundred
# Multi30k lines. Usage: text_cli_test.sh path/to/attn   (skips the data parts without data)
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
source "$(dirname "$0")/lib.sh"

# ---- bleu (no data needed) ----
printf 'the cat sat on the mat\nIt is raining.\nZwei Hunde, 1,000.5 Meter\n' > "$work/hyp.txt"
printf 'the cat is on the mat\nIt is raining today.\nZwei Hunde , 1,000.5 Meter\n' > "$work/ref.txt"
# Hand-computed in tests/unit/bleu_test.cpp (MultiSentenceCorpusSumsStatistics).
out="$("$attn" bleu --ref "$work/ref.txt" < "$work/hyp.txt")"
[[ "$out" == "BLEU = 56.13 93.3/75.0/55.6/33.3 (BP = 0.936 ratio = 0.938 hyp_len = 15 ref_len = 16)" ]] \
  || fail "bleu printed: $out"
gzip -c "$work/ref.txt" > "$work/ref.txt.gz"
expect 0 "BLEU = 56.13" -- "$attn" bleu --ref "$work/ref.txt.gz" --hyp "$work/hyp.txt"
expect 0 '"score": 56.13' -- bash -c "\"$attn\" bleu --ref \"$work/ref.txt\" --json < \"$work/hyp.txt\""
expect 0 "BLEU = 100.00" -- bash -c "\"$attn\" bleu --ref \"$work/ref.txt\" < \"$work/ref.txt\""
# --lowercase (sacreBLEU's): Python's str.lower(), Unicode included (ÄÖÜ, final sigma).
printf 'THE CAT IS ON THE MAT\nÄRGER ÜBER ΣΑΣ\n' > "$work/upper.txt"
printf 'the cat is on the mat\närger über σας\n' > "$work/lower.txt"
expect 0 "BLEU = 100.00" -- "$attn" bleu --ref "$work/lower.txt" --hyp "$work/upper.txt" --lowercase
expect 0 '"case": "lc"' -- "$attn" bleu --ref "$work/lower.txt" --hyp "$work/upper.txt" --lowercase --json
out="$("$attn" bleu --ref "$work/lower.txt" --hyp "$work/upper.txt")"
[[ "$out" == "BLEU = 0.00 "* ]] || fail "cased BLEU of upper- against lowercase text: $out"
head -n 2 "$work/hyp.txt" > "$work/short.txt"
expect 1 "stdin has 2 lines but" -- bash -c "\"$attn\" bleu --ref \"$work/ref.txt\" < \"$work/short.txt\""
out="$("$attn" bleu --ref "$work/ref.txt" < "$work/short.txt" 2>&1)"
[[ "$(printf '%s\n' "$out" | wc -l)" == 1 ]] || fail "line-count error is not one line: $out"
expect 1 "missing.txt" -- bash -c "\"$attn\" bleu --ref \"$work/missing.txt\" < \"$work/hyp.txt\""
expect 2 "--ref" -- "$attn" bleu

# ---- tokenize ----
expect 2 "--input" -- "$attn" tokenize train --out "$work/m"
expect 2 "--model-type" -- "$attn" tokenize train --input "$work/ref.txt" --model-type word --out "$work/m"
expect 2 "--vocab-size must be in [5, 16777216], got 2" -- "$attn" tokenize train --input "$work/ref.txt" --vocab-size 2 --out "$work/m"
expect 1 "missing.model" -- bash -c "echo hi | \"$attn\" tokenize encode --model \"$work/missing.model\""

de="$data/multi30k/raw/val.de.gz"
en="$data/multi30k/raw/val.en.gz"
if have_data multi30k/raw/val.de.gz multi30k/raw/val.en.gz; then
  gzip -dc "$de" | head -n 200 > "$work/de.txt"
  gzip -dc "$en" | head -n 200 | gzip -c > "$work/en.txt.gz"
  expect 0 "trained a unigram model of 300 pieces on 400 lines" -- \
    "$attn" tokenize train --input "$work/de.txt" --input "$work/en.txt.gz" --vocab-size 300 --out "$work/shared"
  [[ -s "$work/shared.model" && -s "$work/shared.vocab" ]] || fail "tokenize train did not write the model"
  expect 0 "bpe model of 250 pieces" -- \
    "$attn" tokenize train --input "$work/de.txt" --vocab-size 250 --model-type bpe --out "$work/bpe"

  head -n 20 "$work/de.txt" > "$work/sample.txt"
  "$attn" tokenize encode --model "$work/shared.model" < "$work/sample.txt" > "$work/pieces.txt" || fail "encode failed"
  [[ "$(wc -l < "$work/pieces.txt")" == 20 ]] || fail "encode did not keep the line count"
  grep -q $'^\xe2\x96\x81' "$work/pieces.txt" || fail "pieces lack the word-start mark: $(head -n 1 "$work/pieces.txt")"
  "$attn" tokenize decode --model "$work/shared.model" < "$work/pieces.txt" > "$work/back.txt" || fail "decode failed"
  # Multi30k lines have single spaces, so the round trip is exact (modulo squeezed spaces).
  diff <(sed 's/  */ /g; s/ *$//' "$work/sample.txt") "$work/back.txt" > /dev/null || fail "pieces round trip differs"
  "$attn" tokenize encode --model "$work/shared.model" --ids < "$work/sample.txt" > "$work/ids.txt" || fail "encode --ids"
  grep -qvE '^[0-9]+( [0-9]+)*$' "$work/ids.txt" && fail "ids output is not numbers: $(head -n 1 "$work/ids.txt")"
  "$attn" tokenize decode --model "$work/shared.model" --ids < "$work/ids.txt" > "$work/back_ids.txt" || fail "decode --ids"
  diff "$work/back.txt" "$work/back_ids.txt" > /dev/null || fail "ids and pieces decode differently"
  # BOS/EOS framing in id input: BOS skipped, stops at EOS.
  first="$(head -n 1 "$work/ids.txt")"
  out="$(echo "1 $first 2 5 6" | "$attn" tokenize decode --model "$work/shared.model" --ids)"
  [[ "$out" == "$(head -n 1 "$work/back.txt")" ]] || fail "decode --ids with BOS/EOS gave: $out"
  expect 1 "'x' is not an id" -- bash -c "echo '5 x' | \"$attn\" tokenize decode --model \"$work/shared.model\" --ids"
  expect 1 "outside the vocabulary" -- bash -c "echo '5 99999' | \"$attn\" tokenize decode --model \"$work/shared.model\" --ids"
  # BLEU of the decoded text against the original is 100.
  expect 0 "BLEU = 100.00" -- "$attn" bleu --ref "$work/sample.txt" --hyp "$work/back.txt"
fi

finish "text CLI"
