#!/usr/bin/env bash
# CLI tests of `attn train --task translate` (RNN and Transformer), `attn translate`,
# `attn eval` (BLEU), `attn align` on a translation model, and `attn train --task charlm` +
# `attn sample`, on a few hundred lines of the real data sets. Tiny models and few steps:
# these check that the commands work and the training loss falls, not translation quality.
# Usage: translate_cli_test.sh path/to/attn   (skips without the data)
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
source "$(dirname "$0")/lib.sh"

# first and last "loss" of a log.jsonl: the last must be below 0.8 x the first.
loss_falls() {
  local first last
  first=$(grep -o '"loss":[0-9.e+-]*' "$1" | head -n 1 | cut -d: -f2)
  last=$(grep -o '"loss":[0-9.e+-]*' "$1" | tail -n 1 | cut -d: -f2)
  awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < 0.8 * f) }' || fail "$1: loss did not fall ($first -> $last)"
}

# Bad options fail before any work, with exit code 2.
# (From a folder with no ../shared/data and an empty data folder: the default data is not found.)
attn_path="$(cd "$(dirname "$attn")" && pwd)/$(basename "$attn")"
# From $work/cwd/run, whose ../shared/data is $work/cwd/shared/data: never there, wherever /tmp is.
mkdir -p "$work/cwd/run"
expect 2 "--task translate needs --data" -- env -C "$work/cwd/run" XDG_DATA_HOME="$work/no-data" "$attn_path" train \
  --task translate --out "$work/x"
expect 2 "--task translate: unknown --model 'bilstm' (valid: rnn, transformer)" -- "$attn" train --task translate --model bilstm --data "$data" --out "$work/x"
expect 2 "--label-smoothing" -- "$attn" train --task translate --data "$data" --label-smoothing 1.5 --out "$work/x"
expect 2 "--norm must be pre or post" -- "$attn" train --task translate --model transformer --norm mid --data "$data" --out "$work/x"

if have_data multi30k/raw/train.de.gz; then
  # A --tokenizer that is not a SentencePiece model, or --resume with no run: refused before
  # anything is written.
  echo "not a model" > "$work/fake.model"
  expect 1 "fake.model': not a SentencePiece model file" -- "$attn" train --task translate --data "$data" \
    --tokenizer "$work/fake.model" --out "$work/fake-run"
  expect 1 "nothing to resume" -- "$attn" train --task translate --data "$data" --resume --out "$work/no-run"
  [[ ! -e "$work/fake-run" && ! -e "$work/no-run" ]] || fail "a refused translate run created its output directory"
  # --resume of another task's run (issue 18 item 13): refused before a tokenizer is learned
  # into that run's folder (it wrote spm.model and spm.vocab there, then failed).
  expect 0 "trained 2 steps" -- "$attn" train --task copy --hidden 8 --emb 4 --min-len 3 --max-len 4 --batch 4 \
    --steps 2 --out "$work/copy-run"
  expect 1 "is not a translation run (format 'attn-seq2seq')" -- "$attn" train --task translate --data "$data" \
    --resume --out "$work/copy-run"
  [[ ! -e "$work/copy-run/spm.model" && ! -e "$work/copy-run/spm.vocab" ]] || fail "translate --resume wrote spm.* into a copy run"
  common=(--task translate --data "$data" --train-limit 300 --vocab-size 300 --max-tokens 1200 --steps 60
          --lr 3e-3 --warmup 5 --eval-every 60 --eval-sentences 20 --log-every 5 --threads 2)
  expect 0 "best validation BLEU" -- "$attn" train "${common[@]}" --model rnn --emb 32 --hidden 48 --out "$work/rnn"
  expect 0 "best validation BLEU" -- "$attn" train "${common[@]}" --model transformer --d-model 32 --heads 2 --ffn 64 \
    --enc-layers 1 --dec-layers 2 --out "$work/tf"
  for run in rnn tf; do
    [[ -f "$work/$run/model.safetensors" && -f "$work/$run/spm.model" ]] || fail "$run: run directory incomplete"
    loss_falls "$work/$run/log.jsonl"
    # translate: one output line per input line, in order, empty lines stay empty.
    zcat "$data/multi30k/raw/test_2016_flickr.de.gz" | head -n 5 > "$work/in.de"
    printf '\n' >> "$work/in.de"
    "$attn" translate --model "$work/$run/model.safetensors" --beam 3 < "$work/in.de" > "$work/$run.en" \
      || fail "$run: translate failed"
    [[ "$(wc -l < "$work/$run.en")" == 6 ]] || fail "$run: translate wrote $(wc -l < "$work/$run.en") lines for 6"
    [[ -z "$(tail -n 1 "$work/$run.en")" ]] || fail "$run: an empty input line did not give an empty output line"
    # eval: BLEU JSON on the first sentences of test2016, and the hypotheses file.
    expect 0 '"bleu":' -- "$attn" eval --model "$work/$run/model.safetensors" --data "$data" --split test2016 --limit 10 \
      --beam 2 --json --hypotheses "$work/$run.hyp"
    [[ "$(wc -l < "$work/$run.hyp")" == 10 ]] || fail "$run: eval --hypotheses wrote the wrong number of lines"
    # eval --json names the model, its score and the beam; without --beam a translation model
    # is decoded with beam 5, as --help says.
    "$attn" eval --model "$work/$run/model.safetensors" --data "$data" --limit 3 --json | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["model"].endswith("model.safetensors") and d["beam"] == 5 and d["score"] == d["bleu"] and d["metric"] == "bleu", d' \
      || fail "$run: eval --json lacks model, score or beam 5"
    # the printed BLEU equals `attn bleu` on the written hypotheses.
    zcat "$data/multi30k/raw/test_2016_flickr.en.gz" | head -n 10 > "$work/ref.en"
    want=$("$attn" bleu --ref "$work/ref.en" < "$work/$run.hyp" | cut -d' ' -f3)
    got=$("$attn" eval --model "$work/$run/model.safetensors" --data "$data" --limit 10 --beam 2 | grep -o 'BLEU = [0-9.]*' | cut -d' ' -f3)
    [[ "$want" == "$got" ]] || fail "$run: eval BLEU $got differs from attn bleu $want"
    # align: a heatmap with word pieces.
    expect 0 "heatmap" -- "$attn" align --model "$work/$run/model.safetensors" --text "Ein Mann fährt Fahrrad." \
      --out "$work/$run.svg"
    [[ -s "$work/$run.svg" ]] || fail "$run: align wrote no SVG"
  done
  # translate --pieces: the output pieces up to EOS, which decode to the text output.
  "$attn" translate --model "$work/tf/model.safetensors" --beam 2 --pieces < "$work/in.de" > "$work/tf.pieces" \
    || fail "translate --pieces failed"
  "$attn" translate --model "$work/tf/model.safetensors" --beam 2 < "$work/in.de" > "$work/tf.text"
  "$attn" tokenize decode --model "$work/tf/spm.model" < "$work/tf.pieces" > "$work/tf.decoded"
  cmp -s "$work/tf.decoded" "$work/tf.text" || fail "translate --pieces does not decode to translate's text"
  ! grep -q '</s>' "$work/tf.pieces" || fail "translate --pieces printed EOS"
  # export --to ctranslate2 takes Transformers only (the task registry's answer): the RNN
  # translator is refused, naming what goes there and where it goes, before anything is
  # written (tests/parity/test_ctranslate2_export.py checks the export itself).
  refusal="is an attn-translation checkpoint of --model rnn; ctranslate2 takes --task translate | summarize"
  expect 1 "$refusal --model transformer (this one goes --to torch)" \
    -- "$attn" export --to ctranslate2 --model "$work/rnn/model.safetensors" --out "$work/rnn-ct2"
  [[ ! -e "$work/rnn-ct2" && -z "$(find "$work" -maxdepth 1 -name '.rnn-ct2*')" ]] || fail "a refused export wrote files"
  expect 2 "--python is for --to ctranslate2" -- "$attn" export --to torch --model "$work/tf/model.safetensors" \
    --out "$work/tf-torch" --python python3
  expect 0 "heatmap" -- "$attn" align --model "$work/tf/model.safetensors" --text "Zwei Hunde." --layer 0 --head 1 \
    --out "$work/tf_l0h1.png"
  expect 2 "--layer must be in [0, 2)" -- "$attn" align --model "$work/tf/model.safetensors" --text "Hund" --layer 5
  expect 2 "needs --text" -- "$attn" align --model "$work/tf/model.safetensors" --input "5 6"
  expect 1 "spm.model is missing" -- bash -c "cp '$work/rnn/model.safetensors' '$work/lonely.safetensors' && \
    '$attn' translate --model '$work/lonely.safetensors' < /dev/null"
fi

if have_data tatoeba-fra-eng/fra.txt.gz; then
  expect 0 "bits/char" -- "$attn" train --task charlm --data "$data" --train-limit 500 --d-model 32 --heads 2 --ffn 64 \
    --dec-layers 1 --batch 32 --steps 60 --lr 3e-3 --warmup 5 --eval-every 60 --log-every 5 --threads 2 --out "$work/lm"
  loss_falls "$work/lm/log.jsonl"
  out=$("$attn" sample --model "$work/lm/model.safetensors" --prompt "I " -n 3 --temperature 0.8 --seed 3)
  [[ "$(printf '%s\n' "$out" | wc -l)" == 3 ]] || fail "sample -n 3 printed: $out"
  [[ "$(printf '%s\n' "$out" | grep -c '^I ')" == 3 ]] || fail "samples do not continue the prompt: $out"
  a=$("$attn" sample --model "$work/lm/model.safetensors" --temperature 0 -n 1)
  b=$("$attn" sample --model "$work/lm/model.safetensors" --temperature 0 -n 1)
  [[ "$a" == "$b" ]] || fail "greedy sampling is not deterministic: '$a' vs '$b'"
  expect 2 "--temperature must be finite and >= 0, got -1" -- "$attn" sample --model "$work/lm/model.safetensors" --temperature -1
  expect 2 "is not a language-model checkpoint (format 'attn-translation')" -- "$attn" sample --model "$work/tf/model.safetensors"
  # align on an LM checkpoint names its kind (issue 18 item 13: it asked for a synthetic task's --input).
  expect 2 "is not a seq2seq, translation, G2P or ASR checkpoint (format 'attn-lm')" -- "$attn" align \
    --model "$work/lm/model.safetensors" --text "I " --out "$work/lm.svg"
  # A run shorter than the default warm-up (200 steps) caps it at a tenth of the run.
  expect 0 "bits/char" -- "$attn" train --task charlm --data "$data" --train-limit 200 --d-model 16 --heads 2 --ffn 32 \
    --dec-layers 1 --batch 16 --steps 10 --eval-every 10 --eval-sentences 20 --threads 2 --out "$work/lm-short"
fi

finish "translate CLI"
