#!/usr/bin/env bash
# Issue 18 item 13: the same kind of error gives the same exit code in every command
# (docs/reliability.md: 2 for what the command line asks, 1 for what files, data or the
# machine do), options a model kind would ignore are refused, and no raw library message
# reaches the user. Usage: exit_codes_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
source "$(dirname "$0")/lib.sh"
here="$(cd "$(dirname "$0")" && pwd)"

tiny=(--hidden 16 --emb 8 --min-len 3 --max-len 6 --batch 8 --log-every 5 --eval-every 10 --eval-samples 16 --threads 1)
expect 0 "trained 2 steps" -- "$attn" train --task copy "${tiny[@]}" --steps 2 --out "$work/run"
model="$work/run/model.safetensors"

# A checkpoint of the wrong kind is a usage error (2) in every command (translate and sample
# said 1, classify and align 2).
expect 2 "is not a translation or G2P checkpoint (format 'attn-seq2seq')" -- "$attn" translate --model "$model" </dev/null
expect 2 "is not a language-model checkpoint (format 'attn-seq2seq')" -- "$attn" sample --model "$model"
expect 2 "is not a classifier checkpoint (format 'attn-seq2seq')" -- "$attn" classify --model "$model" --text "good"
# eval --hypotheses on a model that writes no translations was silently ignored.
expect 2 "--hypotheses needs a translation checkpoint" -- "$attn" eval --model "$model" --eval-lengths 4 \
  --hypotheses "$work/hyp.txt"
[[ ! -e "$work/hyp.txt" ]] || fail "eval wrote --hypotheses for a seq2seq model"
# fuzz/option_parsing_fuzz: white space before a '-' slipped past the sign check, and
# --seed " -1" silently became 2^64 - 1.
expect 2 "--seed: must be a non-negative integer, got ' -1'" -- "$attn" eval --model "$model" --eval-lengths 4 \
  --seed " -1"
# Standard input that cannot be read (a directory) is an error naming it, not an empty input.
echo "a b" > "$work/ref.txt"
expect 1 "cannot read the standard input: Is a directory" -- "$attn" bleu --ref "$work/ref.txt" < "$work"
expect 1 "cannot read the standard input: Is a directory" -- "$attn" tokenize encode \
  --model "$here/../../fuzz/corpus/subword_fuzz/unigram_80_identity.model" < "$work"
# A SentencePiece model the fuzzer found (an empty piece): SentencePiece's own exception
# (darts.h, no file name) became a one-line error naming the model.
bad="$here/../../fuzz/regressions/subword_fuzz/empty_piece_darts_exception.model"
expect 1 "empty_piece_darts_exception.model': a damaged model" -- "$attn" tokenize encode --model "$bad" </dev/null
finish "exit code"
