#!/usr/bin/env bash
# attn train --task g2p on a small CMUdict-format word list this test writes (a made-up
# language whose syllables always sound the same, so a tiny model learns it in seconds):
# training with Bahdanau, location-aware, monotonic and MoChA attention (RNN) and a Transformer, eval's PER and
# WER on dev and test, translate (words to phonemes, greedy and beam), align, and the bad
# inputs: a bad dictionary line (its line number), a word outside the letters, options of
# another task. Usage: g2p_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
source "$(dirname "$0")/lib.sh"

# 600 words of 1 to 3 syllables; "ka(2)" style alternatives for words ending in "o".
/usr/bin/python3 - "$work/cmudict.dict" <<'PY'
import itertools, sys
syllables = {"ba": "B AA1", "ko": "K OW1", "mi": "M IY1", "tu": "T UW1", "re": "R EH1", "sa": "S AA1",
             "lo": "L OW1", "ni": "N IY1", "pe": "P EH1", "du": "D UW1"}
keys = sorted(syllables)
lines = []
for n in (1, 2, 3):
    for combo in itertools.product(keys, repeat=n):
        if len(lines) >= 600:
            break
        word = "".join(combo)
        lines.append(word + "  " + " ".join(syllables[s] for s in combo))
        if word.endswith("o") and n == 2:
            lines.append(word + "(2)  " + " ".join(syllables[s] for s in combo[:-1]) + " " + syllables[combo[-1]].replace("1", "0"))
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
run=(--data "$work" --eval-every 150 --log-every 50 --max-tokens 1200 --lr 5e-3 --threads 2)
tiny=("${run[@]}" --hidden 48 --emb 24 --steps 300)

for score in additive location_aware; do
  expect 0 "best dev PER" -- "$attn" train --task g2p --attention bahdanau --score $score --location-width 5 "${tiny[@]}" \
    --out "$work/$score"
  per=$(grep -o '"val_per":[0-9.e-]*' "$work/$score/log.jsonl" | tail -1 | cut -d: -f2)
  /usr/bin/python3 -c "import sys; sys.exit(0 if float('$per') < 0.25 else 1)" || fail "$score: dev PER $per after 300 steps"
  for split in dev test; do
    "$attn" eval --model "$work/$score/model.safetensors" --data "$work" --split $split --json > "$work/$score.$split.json" \
      || fail "eval --split $split"
    /usr/bin/python3 - "$work/$score.$split.json" <<'PY' || fail "$score: eval JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["metric"] == "per" and d["score"] == d["per"] and 0 <= d["per"] <= 1 and 0 <= d["wer"] <= 1, d
assert d["words"] > 0 and d["per"] == d["phoneme_edits"] / d["reference_phonemes"], d
assert d["wer"] == d["words_wrong"] / d["words"], d
PY
  done
done
# Words to phonemes, greedy and beam (the location-aware state goes through beam search);
# an empty line stays empty, upper case is lower-cased.
for beam in 1 4; do
  printf 'bako\n\nMIRE\n' | "$attn" translate --model "$work/location_aware/model.safetensors" --beam $beam \
    > "$work/said.$beam" || fail "translate --beam $beam"
  [[ "$(sed -n 1p "$work/said.$beam")" == "B AA1 K OW1" ]] || fail "translate --beam $beam: bako -> $(sed -n 1p "$work/said.$beam")"
  [[ -z "$(sed -n 2p "$work/said.$beam")" && "$(sed -n 3p "$work/said.$beam")" == "M IY1 R EH1" ]] \
    || fail "translate --beam $beam: $(cat "$work/said.$beam")"
done
expect 0 "heatmap" -- "$attn" align --model "$work/location_aware/model.safetensors" --text "tumi" --beam 2 --out "$work/a.png"
[[ -s "$work/a.png" ]] || fail "align did not write the picture"
# Monotonic and MoChA attention: trained on the expected alignment, decoded online (greedy and
# beam carry the reading position); align --json reports the letters read before each output
# row, eval the mean: at most the word's letters, never fewer than the step before.
for score in monotonic mocha; do
  expect 0 "best dev PER" -- "$attn" train --task g2p --attention bahdanau --score $score --chunk 2 "${tiny[@]}" \
    --out "$work/$score"
  per=$(grep -o '"val_per":[0-9.e-]*' "$work/$score/log.jsonl" | tail -1 | cut -d: -f2)
  /usr/bin/python3 -c "import sys; sys.exit(0 if float('$per') < 0.25 else 1)" || fail "$score: dev PER $per after 300 steps"
  for beam in 1 4; do
    printf 'bako\nMIRE\n' | "$attn" translate --model "$work/$score/model.safetensors" --beam $beam > "$work/said.$score.$beam" \
      || fail "$score: translate --beam $beam"
    [[ "$(sed -n 1p "$work/said.$score.$beam")" == "B AA1 K OW1" ]] || fail "$score --beam $beam: bako -> $(sed -n 1p "$work/said.$score.$beam")"
    expect 0 "heatmap" -- "$attn" align --model "$work/$score/model.safetensors" --text "tumilo" --beam $beam \
      --out "$work/$score.$beam.png" --json "$work/$score.$beam.align.json"
    /usr/bin/python3 - "$work/$score.$beam.align.json" <<'PY' || fail "$score --beam $beam: align frames_read"
import json, sys
d = json.load(open(sys.argv[1]))
f = d["frames_read"]
assert len(f) == len(d["rows"]) and all(1 <= x <= 6 for x in f) and f == sorted(f), d
rows = d["panels"][0]["weights"]
assert all(all(w == 0 for w in row[x:]) for row, x in zip(rows, f)), d  # nothing past the frames read
PY
  done
  "$attn" eval --model "$work/$score/model.safetensors" --data "$work" --split dev --json > "$work/$score.eval.json" \
    || fail "$score: eval"
  /usr/bin/python3 - "$work/$score.eval.json" "$work/additive.dev.json" <<'PY' || fail "$score: eval frames read"
import json, sys
d, soft = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert 0 < d["frames_read_per_step"] < d["letters_per_step"], d
assert soft["frames_read_per_step"] == soft["letters_per_step"], soft  # soft attention reads every letter
PY
done
expect 0 "best dev PER" -- "$attn" train --task g2p --model transformer --d-model 32 --ffn 64 --heads 2 --enc-layers 1 \
  --dec-layers 1 "${run[@]}" --steps 20 --out "$work/transformer"
expect 0 "PER" -- "$attn" eval --model "$work/transformer/model.safetensors" --data "$work" --split test

# Bad input.
mkdir -p "$work/bad"
printf 'ba  B AA1\nbad\n' > "$work/bad/cmudict.dict"
gzip "$work/bad/cmudict.dict"
expect 1 "cmudict.dict.gz:2: 'bad' has no phonemes" -- "$attn" train --task g2p --data "$work/bad" --steps 2 --out "$work/bad_run"
expect 2 "character '_' in 'a_b' is not a letter" -- sh -c "echo a_b | '$attn' translate --model '$work/additive/model.safetensors'"
expect 2 "--src does not apply to --task g2p" -- "$attn" train --task g2p --src de "${tiny[@]}" --out "$work/bad2"
expect 2 "unknown --split 'val' (valid: dev, test, train)" -- "$attn" eval --model "$work/additive/model.safetensors" \
  --data "$work" --split val
expect 2 "chunk must be >= 1, got 0" -- "$attn" train --task g2p --score mocha --chunk 0 "${tiny[@]}" --out "$work/bad4"
[[ ! -e "$work/bad4" ]] || fail "a refused train wrote its folder"
expect 1 "no CMUdict under $work/none" -- "$attn" train --task g2p --data "$work/none" --steps 2 --out "$work/bad3"

# The real dictionary: a few steps on a slice of it, scored on its dev split.
if have_data cmudict/cmudict.dict.gz; then
  expect 0 "best dev PER" -- "$attn" train --task g2p --data "$data" --train-limit 500 --eval-sentences 50 --steps 10 \
    --eval-every 10 --hidden 16 --emb 8 --threads 2 --out "$work/real"
fi
finish "G2P CLI"
