#!/usr/bin/env bash
# Issue 34 defect 7: a run's config.toml repeats the run. For EVERY option of `attn train`
# (read from its --help, so a new option is covered without editing this file) the value
# given on the command line is recorded, and `attn train --config` of the record records the
# same again. A flag takes only true or false: `--bidirectional=on` trained a bidirectional
# model whose config.toml said false. One real run checks that the model trained from the
# record is the model trained from the command line.
# Usage: config_roundtrip_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
source "$(dirname "$0")/lib.sh"

# The task flags under which an option of this --help heading applies.
target_of() {
  case "$1" in
    "Every task"* | "Synthetic seq2seq"* | "RNN seq2seq model"*) echo "--task copy" ;;
    "Text data"* | "Classifier"*) echo "--task sst2" ;;
    "BiLSTM classifier"*) echo "--task sst2 --model bilstm" ;;
    "Attention pooling"*) echo "--task sst2 --model bilstm-attn" ;;
    "Translation"*) echo "--task translate" ;;
    "Character LM"* | "Transformer ("*) echo "--task charlm" ;;
    "Transformer encoder-decoder"*) echo "--task translate --model transformer" ;;
    "Transformer classifier"*) echo "--task sst2 --model transformer-cls" ;;
    "ASR"*) echo "--task asr" ;;
    *) echo "" ;;
  esac
}

# options LINES: "heading|name|type" for every option line of `attn train --help`.
"$attn" train --help > "$work/help.txt" || fail "attn train --help failed"
heading="" tested=0
while IFS= read -r line; do
  if [[ "$line" =~ ^([A-Z][^:]*):$ ]]; then heading="${BASH_REMATCH[1]}"; continue; fi
  [[ "$line" =~ ^\ \ (-[a-z],)?--([a-z0-9-]+)(\{false\})?(\ ([A-Z]+))? ]] || continue
  name="${BASH_REMATCH[2]}" type="${BASH_REMATCH[5]:-FLAG}"
  # Not run options: how this invocation treats the folder, where it reads options from.
  case "$name" in help | config | print-config | resume | overwrite | out | task) continue ;; esac
  target="$(target_of "$heading")"
  [[ -n "$target" ]] || { fail "--$name: no target for the --help heading '$heading' (add it to target_of)"; continue; }
  case "$type" in
    INT | UINT) given=(--"$name" 7) recorded="$name = 7" ;;
    FLOAT) given=(--"$name" 0.25) recorded="$name = 0.25" ;;
    TEXT) given=(--"$name" "value-of-$name") recorded="$name = \"value-of-$name\"" ;;
    FLAG) given=(--"$name") recorded="$name = true" ;;
    *) fail "--$name: a type this test does not know ($type)"; continue ;;
  esac
  # --model picks the target: one its task has.
  [[ "$name" == model ]] && given=(--model bilstm-attn) recorded='model = "bilstm-attn"'
  # --precision takes fp32 or bf16 (fp32: every CPU runs it).
  [[ "$name" == precision ]] && given=(--precision fp32) recorded='precision = "fp32"'
  # shellcheck disable=SC2086
  "$attn" train $target "${given[@]}" --out "$work/unused" --print-config > "$work/a.toml" 2> "$work/a.err" ||
    { fail "--$name: --print-config failed: $(cat "$work/a.err")"; continue; }
  grep -qxF "$recorded" "$work/a.toml" || fail "--$name: config.toml lacks '$recorded': $(grep -v '^#' "$work/a.toml")"
  "$attn" train --config "$work/a.toml" --out "$work/unused" --print-config > "$work/b.toml" 2> "$work/b.err" ||
    { fail "--$name: --config of its own record failed: $(cat "$work/b.err")"; continue; }
  diff <(grep -v '^#' "$work/a.toml") <(grep -v '^#' "$work/b.toml") > "$work/diff.txt" ||
    fail "--$name: the record of the record differs: $(cat "$work/diff.txt")"
  tested=$((tested + 1))
done < "$work/help.txt"
((tested >= 40)) || fail "only $tested options were read from attn train --help"
[[ ! -e "$work/unused" ]] || fail "--print-config made the run folder"

# --resume's help promised bit-identity without the condition on --steps (issue 34 defect 15).
grep -q "bit-identical to an uninterrupted run of the same --steps" "$work/help.txt" ||
  fail "attn train --help does not say that --resume is bit-identical only for the same --steps"

# Flags take true or false, on the command line and in a file; what is recorded is what was parsed.
expect 2 "--bidirectional: must be true or false, got 'on'" -- "$attn" train --task copy --bidirectional=on --out "$work/x" --print-config
expect 2 "must be true or false, got '5'" -- "$attn" train --task copy --bidirectional=5 --out "$work/x" --print-config
printf 'task = "copy"\nbidirectional = "on"\n' > "$work/on.toml"
expect 2 "must be true or false, got 'on'" -- "$attn" train --config "$work/on.toml" --out "$work/x" --print-config
expect 0 "bidirectional = false" -- "$attn" train --task copy --bidirectional=false --out "$work/x" --print-config
expect 0 "no-input-feeding = false" -- "$attn" train --task copy --no-input-feeding=false --out "$work/x" --print-config
printf 'task = "copy"\nno-input-feeding = true\n' > "$work/nif.toml"
expect 0 "no-input-feeding = true" -- "$attn" train --config "$work/nif.toml" --out "$work/x" --print-config

# A value with a control character cannot be recorded: refused, from a file or the command line.
# (fuzz/train_config_fuzz: a NUL in a --config value cut --print-config's output short, losing
# the options after it; fuzz/regressions/train_config_fuzz/ holds that input.)
printf 'task = "sst2"\nmodel = "bilstm-attn"\npooling = "dot\001\000\000gs = false\nemb = 8\n' > "$work/nul.toml"
expect 2 "--pooling: a value holding a control character (0x01) cannot be recorded in the run's config.toml" -- \
  "$attn" train --config "$work/nul.toml" --out "$work/x" --print-config
expect 2 "--data: a value holding a control character (0x09)" -- \
  "$attn" train --task sst2 --data $'a\tb' --out "$work/x" --print-config
for input in "$(dirname "$0")"/../../fuzz/regressions/train_config_fuzz/*; do
  expect 2 "cannot be recorded in the run's config.toml" -- "$attn" train --config "$input" --out "$work/x" --print-config
done

# A real round trip: the model trained from config.toml is the model trained from the command line.
tiny=(--task copy --hidden 16 --emb 8 --min-len 3 --max-len 6 --batch 8 --steps 2 --eval-every 2 --eval-samples 8 --threads 1)
model_config() {
  /usr/bin/python3 -c '
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    print(json.dumps(json.loads(json.loads(f.read(n))["__metadata__"]["attn"])["config"], sort_keys=True))' "$1"
}
"$attn" train "${tiny[@]}" --bidirectional=true --attention luong --no-input-feeding --out "$work/r1" > /dev/null 2>&1 ||
  fail "the first real run failed"
"$attn" train --config "$work/r1/config.toml" --out "$work/r2" > /dev/null 2>&1 || fail "the run from config.toml failed"
[[ "$(model_config "$work/r1/model.safetensors")" == "$(model_config "$work/r2/model.safetensors")" ]] ||
  fail "config.toml trained another model: $(model_config "$work/r1/model.safetensors") vs $(model_config "$work/r2/model.safetensors")"
[[ "$(model_config "$work/r1/model.safetensors")" == *'"bidirectional": true'* ]] || fail "--bidirectional=true trained no bidirectional model"

finish "config round trip CLI"
