#!/usr/bin/env bash
# `attn train --task summarize` on a tiny hand-written article/summary set (fixtures/summaries):
# it trains in seconds (plain and with the pointer), its checkpoint says it summarises, and
# `attn eval` reports ROUGE-1/2/L equal to `attn rouge` on the same hypotheses. --src / --tgt
# name other file suffixes (fairseq's train.source / train.target). Bad input: no --data
# (exit 2), a missing file (exit 1, named), and nothing written by a refused run. `attn rouge`
# gives a hand-computed score and one-line errors.
# Usage: summarize_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
source "$(dirname "$0")/lib.sh"
set_dir="$(cd "$(dirname "$0")/fixtures/summaries" && pwd)"

tiny=(--vocab-size 90 --max-tokens 1200 --warmup 5 --log-every 100 --emb 32 --hidden 48 --lr 5e-3 --threads 1)
# 300 steps (about 3 s): enough to fit the twelve pairs and get test words right, so that the
# ROUGE compared below is not zero.
expect 0 "best validation BLEU" -- "$attn" train --task summarize --data "$set_dir" "${tiny[@]}" --steps 300 \
  --eval-every 300 --out "$work/sum"
model="$work/sum/model.safetensors"
grep -q '"summarization":true' <(head -c 4096 "$model" | tr -d '\\') || fail "the checkpoint does not say it summarises"
grep -q '"val_rougeL"' "$work/sum/log.jsonl" || fail "validation did not log ROUGE-L"

# eval: ROUGE-1/2/L of a split (train: the one this tiny model has learned, so the scores are
# not zero), the score ROUGE-L F1, and the same numbers as attn rouge on the hypotheses it wrote.
"$attn" eval --model "$model" --data "$set_dir" --split train --beam 2 --json --hypotheses "$work/hyp.txt" \
  > "$work/eval.json" || fail "eval --json failed"
"$attn" rouge --ref "$set_dir/train.summary" --hyp "$work/hyp.txt" --json > "$work/rouge.json" || fail "attn rouge failed"
/usr/bin/python3 - "$work/eval.json" "$work/rouge.json" <<'PY' || fail "eval's ROUGE"
import json, sys
e, r = (json.load(open(p)) for p in sys.argv[1:])
assert e["split"] == "train" and e["sentences"] == 12 and e["metric"] == "rougeL_f1", e
assert e["score"] == e["rougeL"]["f1"] and e["stemming"] is False, e
for name in ("rouge1", "rouge2", "rougeL"):
    assert e[name] == r[name], (name, e[name], r[name])
    assert all(0 <= e[name][k] <= 100 for k in ("precision", "recall", "f1")), e[name]
assert "bleu" in e and e["rouge1"]["f1"] > 0, e
PY
expect 0 "rnn test (2 sentences, beam 5): ROUGE-1/2/L F1 = " -- "$attn" eval --model "$model" --data "$set_dir"

# The pointer-generator copies from the article (RNN decoders).
expect 0 "best validation BLEU" -- "$attn" train --task summarize --pointer --data "$set_dir" "${tiny[@]}" --steps 30 \
  --eval-every 30 --out "$work/ptr"
expect 0 "ROUGE-1/2/L F1 = " -- "$attn" eval --model "$work/ptr/model.safetensors" --data "$set_dir"

# Other suffixes: train.source / train.target, gzipped.
mkdir -p "$work/other"
for split in train val; do
  gzip -c "$set_dir/$split.article" > "$work/other/$split.source.gz"
  gzip -c "$set_dir/$split.summary" > "$work/other/$split.target.gz"
done
expect 0 "trained 2 steps" -- "$attn" train --task summarize --data "$work/other" --src source --tgt target \
  "${tiny[@]}" --steps 2 --eval-every 2 --out "$work/gz"

# Refused: no --data (exit 2); a folder without the files (exit 1, naming the first missing file).
expect 2 "--task summarize needs --data DIR" -- "$attn" train --task summarize "${tiny[@]}" --out "$work/bad1"
mkdir -p "$work/empty"
expect 1 "train.article" -- "$attn" train --task summarize --data "$work/empty" "${tiny[@]}" --out "$work/bad2"
expect 2 "--src and --tgt must name two different file suffixes" -- "$attn" train --task summarize --data "$set_dir" \
  --src article --tgt article "${tiny[@]}" --out "$work/bad3"
for bad in bad1 bad3; do [[ ! -e "$work/$bad" ]] || fail "a refused train wrote $bad"; done
expect 1 "test.article" -- "$attn" eval --model "$model" --data "$work/empty"

# attn rouge on its own: the one-line form (hand-computed: "the cat was on the mat" against
# "The cat sat on the mat.": 5/6, 3/5, 5/6), and one-line errors.
printf 'The cat sat on the mat.\n' > "$work/ref1.txt"
expect 0 "ROUGE-1/2/L F1 = 83.33/60.00/83.33 (1 sentence, no stemming)" -- bash -c \
  "printf 'the cat was on the mat\n' | '$attn' rouge --ref '$work/ref1.txt'"
expect 1 "rouge: stdin has 2 lines but '$work/ref1.txt' has 1" -- bash -c "printf 'a\nb\n' | '$attn' rouge --ref '$work/ref1.txt'"
expect 1 "cannot read the standard input: Is a directory" -- bash -c "'$attn' rouge --ref '$work/ref1.txt' < '$work'"
expect 2 "--ref is required" -- "$attn" rouge

finish "summarize CLI"
