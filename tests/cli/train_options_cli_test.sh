#!/usr/bin/env bash
# `attn train`'s option groups and run configuration (issue 16 items 4 and 6, issue 18):
# an option outside the chosen task's groups is refused (exit 2, naming the option and the
# task), on the command line or from --config; --help shows the groups and each task's
# defaults; every run folder gets a config.toml with the provenance, and
# `attn train --config RUN/config.toml` trains the same model, bit for bit, with the command
# line overriding the file. Usage: train_options_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
source "$(dirname "$0")/lib.sh"

# refused "FLAG ... TARGET" args...: exit 2 naming the option and the target, no folder made.
refused() {
  local message="$1"; shift
  expect 2 "$message" -- "$attn" train "$@" --out "$work/refused"
  [[ ! -e "$work/refused" ]] || fail "'train $*' was refused but created its run folder"
  rm -rf "$work/refused"
}

# An option each task or model would ignore (none of these needs data: the refusal comes first).
refused "--bucket does not apply to --task translate --model rnn" --task translate --bucket 4
refused "--batch does not apply to --task translate --model transformer" --task translate --model transformer --batch 8
refused "--emb does not apply to --task translate --model transformer" --task translate --model transformer --emb 8
refused "--norm does not apply to --task translate --model rnn" --task translate --norm post
refused "--epochs does not apply to --task charlm" --task charlm --epochs 3
refused "--enc-layers does not apply to --task charlm" --task charlm --enc-layers 2
refused "--attention does not apply to --task charlm" --task charlm --attention luong
refused "--model-config does not apply to --task copy" --task copy --model-config '{"hidden": 8}'
refused "--model does not apply to --task reverse" --task reverse --model bilstm
refused "--data does not apply to --task sort" --task sort --data "$work"
refused "--eval-sentences does not apply to --task copy" --task copy --eval-sentences 5
refused "--d-model does not apply to --task sst2 --model bilstm" --task sst2 --d-model 64
refused "--heads does not apply to --task sst2 --model bilstm-attn" --task sst2 --model bilstm-attn --heads 2
refused "--dec-layers does not apply to --task sst2 --model transformer-cls" --task sst2 --model transformer-cls --dec-layers 2
refused "--emb does not apply to --task sst2 --model transformer-cls" --task sst2 --model transformer-cls --emb 8
refused "--min-len does not apply to --task sst2 --model bilstm" --task sst2 --min-len 2
refused "--pooling does not apply to --task sst2 --model bilstm" --task sst2 --pooling dot
refused "--src does not apply to --task charlm" --task charlm --src fr
# The message says where the option belongs.
refused "(it is an option of Synthetic seq2seq (--task copy | reverse | sort); Classifier (--task sst2))" \
  --task translate --bucket 4
refused "unknown --model 'cnn' (valid: bilstm, bilstm-attn, transformer-cls)" --task sst2 --model cnn
refused "unknown task 'nope' (valid: copy, reverse, sort, sst2, translate, summarize, g2p, asr, charlm)" --task nope
refused "--task charlm: unknown --model 'rnn' (valid: transformer)" --task charlm --model rnn
# issue 18: an impossible model is a usage error (2), not a runtime one.
refused "needs about" --task copy --hidden 60000 --layers 200

# --help shows the groups, and no single default where the task decides it.
help="$("$attn" train --help)"
# ... and lists the registered tasks (tools/attn/train_tasks.h), each on a line of its own.
for task in copy reverse sort sst2 translate charlm; do
  grep -qE "^  $task +[a-z]" <<<"$help" || fail "train --help does not list the task '$task'"
done
for heading in "Every task:" "Synthetic seq2seq (--task copy | reverse | sort):" "Text data (--task sst2 | translate | summarize | charlm | g2p):" \
  "Classifier (--task sst2):" "Translation (--task translate | summarize):" "Transformer (--task translate | g2p --model transformer"; do
  [[ "$help" == *"$heading"* ]] || fail "train --help lacks the group '$heading'"
done
for option in steps lr lr-schedule warmup clip log-every eval-every dropout max-len bucket emb hidden layers encoder \
  eval-sentences enc-layers dec-layers model; do
  line="$(grep -E -- "^ +--$option " <<<"$help")"
  [[ -n "$line" ]] || fail "train --help lacks --$option"
  if grep -qE -- "^ +--$option [A-Z:]+=" <<<"$line" || [[ "$line" != *"default"* ]]; then
    fail "train --help shows one default for --$option, whose default depends on the task: $line"
  fi
done
[[ "$(grep -E -- '^ +--dec-layers ' <<<"$help")" == *"charlm 4"* ]] || fail "--dec-layers' help lacks charlm's default 4"
[[ "$(grep -E -- '^ +--eval-sentences ' <<<"$help")" == *"charlm 2000"* ]] || fail "--eval-sentences' help lacks charlm's 2000"

# config.toml: the options given, the threads and the provenance; --config repeats the run.
tiny=(--task copy --hidden 16 --emb 8 --min-len 3 --max-len 6 --batch 8 --log-every 5 --eval-every 10 --eval-samples 16)
run=("${tiny[@]}" --attention luong --score general --bidirectional --no-input-feeding --dropout 0.2 --layers 2 --seed 7)
ATTN_NUM_THREADS=2 expect 0 "trained 20 steps" -- "$attn" train "${run[@]}" --steps 20 --out "$work/r1"
config="$work/r1/config.toml"
[[ -s "$config" ]] || fail "the run folder has no config.toml"
for line in "# command line: $attn train --task copy" "# attn version: " "# threads: 2" "# machine: " 'task = "copy"' \
  "steps = 20" "no-input-feeding = true" "bidirectional = true" "dropout = 0.2" "seed = 7" "threads = 2"; do
  grep -qF -- "$line" "$config" || fail "config.toml lacks '$line': $(cat "$config")"
done
grep -q "^resume\|^overwrite\|^config" "$config" && fail "config.toml records a per-invocation option: $(cat "$config")"
version="$("$attn" --version | sed -n 's/^attn \([^ ]*\) (commit \(.*\))$/\1 (\2)/p')"  # "0.1.0 (8a4ce13729d5)"
[[ -n "$version" ]] && grep -qF "# attn version: $version" "$config" ||
  fail "config.toml's version is not attn --version's '$version' with its commit: $(grep version "$config")"
# log.jsonl's first record carries the same provenance.
first="$(head -n 1 "$work/r1/log.jsonl")"
for field in "\"attn_version\":\"$version\"" '"threads":2' '"machine":"' '"command_line":"'; do
  [[ "$first" == *"$field"* ]] || fail "log.jsonl's first record lacks $field: $first"
done
# Another thread count in the environment: the file's threads = 2 applies, and the weights match.
ATTN_NUM_THREADS=1 expect 0 "trained 20 steps" -- "$attn" train --config "$config" --out "$work/r2"
for f in model.safetensors last.safetensors; do
  cmp -s "$work/r1/$f" "$work/r2/$f" || fail "train --config r1/config.toml gave a different $f"
done
grep -q "^steps = 20$" "$work/r2/config.toml" || fail "a run from --config did not record its options again"
# The command line overrides the file.
expect 0 "trained 10 steps" -- "$attn" train --config "$config" --steps 10 --out "$work/r3"
grep -q "^steps = 10$" "$work/r3/config.toml" || fail "config.toml lacks the overriding --steps 10"
# ... and --resume from it continues to the run of r1, bit for bit (a constant rate).
expect 0 "trained 20 steps" -- "$attn" train --config "$config" --out "$work/r3" --resume
cmp -s "$work/r1/last.safetensors" "$work/r3/last.safetensors" || fail "10 + 10 steps from --config differ from 20"
# A refused run leaves the folder's config.toml alone (--out from the file is r1: it holds a run).
cp "$config" "$work/r1-config.toml"
expect 1 "holds another run" -- "$attn" train --config "$config"
cmp -s "$config" "$work/r1-config.toml" || fail "a refused run replaced r1/config.toml"

# A file's option outside the task's groups is refused like a flag; so are bad files.
printf 'task = "translate"\nbucket = 4\n' > "$work/ignored.toml"
refused "--bucket does not apply to --task translate --model rnn" --config "$work/ignored.toml"
printf 'hiden = 16\n' > "$work/typo.toml"
refused "typo.toml: unknown option 'hiden'" --config "$work/typo.toml"
printf 'resume = true\n' > "$work/resume.toml"
refused "--resume cannot come from a file" --config "$work/resume.toml"
printf '[train]\nsteps = 3\n' > "$work/section.toml"
refused "sections are not supported ([train])" --config "$work/section.toml"
printf 'steps = "many"\n' > "$work/value.toml"
refused "value.toml: Could not convert: --steps = many" --config "$work/value.toml"
printf 'steps = 3\nsteps = 4\n' > "$work/twice.toml"
refused "twice.toml: steps takes one value, got 2 (set twice, or a list)" --config "$work/twice.toml"
printf 'steps = 3\nlr = 0.01\nsteps = 4\n' > "$work/twice.toml"
refused "twice.toml: steps is set twice" --config "$work/twice.toml"
printf 'threads = 0\n' > "$work/threads.toml"
refused "--threads: must be a positive integer, got '0'" --config "$work/threads.toml"
expect 1 "missing.toml: not a readable regular file" -- "$attn" train --config "$work/missing.toml" --out "$work/x"
expect 1 "not a readable regular file" -- "$attn" train --config "$work" --out "$work/x"
[[ ! -e "$work/x" ]] || fail "a run with an unreadable --config created its folder"

# A text task's configuration (a JSON --model-config, a path with a space) round-trips too.
if have_data sst2/sentiment-dev; then
  sst2=(--task sst2 --data "$data" --model bilstm --model-config '{"emb": 16, "hidden": 8}' --batch 32 --steps 6
        --eval-every 3 --log-every 3 --train-limit 300 --dev-limit 50 --threads 1)
  expect 0 "trained 6 steps" -- "$attn" train "${sst2[@]}" --out "$work/s 1"
  grep -qF "model-config = '{\"emb\": 16, \"hidden\": 8}'" "$work/s 1/config.toml" ||
    fail "config.toml lacks the --model-config: $(cat "$work/s 1/config.toml")"
  expect 0 "trained 6 steps" -- "$attn" train --config "$work/s 1/config.toml" --out "$work/s2"
  cmp -s "$work/s 1/model.safetensors" "$work/s2/model.safetensors" || fail "sst2 from config.toml gave another model"
fi
if have_data tatoeba-fra-eng/fra.txt.gz; then
  lm=(--task charlm --data "$data" --train-limit 200 --d-model 16 --heads 2 --ffn 32 --dec-layers 1 --batch 16
      --steps 10 --eval-every 10 --eval-sentences 20 --dropout 0.1)
  expect 0 "bits/char" -- "$attn" train "${lm[@]}" --out "$work/lm1"
  expect 0 "bits/char" -- "$attn" train --config "$work/lm1/config.toml" --out "$work/lm2"
  cmp -s "$work/lm1/model.safetensors" "$work/lm2/model.safetensors" || fail "charlm from config.toml gave another model"
fi
# Translation learns its tokenizer again: the weights must match. (spm.model's bytes, and so
# the checkpoints' tokenizer_crc32, differ between any two runs: SentencePiece stores the
# temporary model prefix it was trained under.)
if have_data multi30k/raw/train.de.gz; then
  mt=(--task translate --model transformer --data "$data" --train-limit 200 --vocab-size 200 --max-tokens 800 --steps 8
      --eval-every 8 --eval-sentences 10 --d-model 16 --heads 2 --ffn 32 --enc-layers 1 --dec-layers 1 --warmup 2)
  expect 0 "best validation BLEU" -- "$attn" train "${mt[@]}" --out "$work/mt1"
  expect 0 "best validation BLEU" -- "$attn" train --config "$work/mt1/config.toml" --out "$work/mt2"
  /usr/bin/python3 - "$work/mt1/model.safetensors" "$work/mt2/model.safetensors" <<'PY' ||
import json, struct, sys
def tensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__")
    return header, raw[8 + n:]
sys.exit(0 if tensors(sys.argv[1]) == tensors(sys.argv[2]) else 1)
PY
    fail "translate from config.toml gave other weights"
fi
finish "train options"
