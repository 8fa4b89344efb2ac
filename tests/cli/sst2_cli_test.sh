#!/usr/bin/env bash
# SST-2 CLI tests: train a tiny BiLSTM classifier on a slice of the data, evaluate it
# (JSON), classify text (argument and stdin), and the bad inputs (exit code 2 or 1 with a
# clear message). Usage: sst2_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
source "$(dirname "$0")/lib.sh"
have_data sst2/sentiment-dev || finish "SST-2 CLI"

tiny=(--task sst2 --model bilstm --data "$data" --emb 16 --hidden 12 --batch 32 --steps 30 --eval-every 15
      --log-every 10 --train-limit 1500 --dev-limit 100 --threads 1)

expect 0 "trained 30 steps" -- "$attn" train "${tiny[@]}" --out "$work/run"
for f in model.safetensors log.jsonl; do [[ -s "$work/run/$f" ]] || fail "train did not write $f"; done
grep -q '"dev_accuracy"' "$work/run/log.jsonl" || fail "log.jsonl lacks dev_accuracy"
grep -q '"examples_per_s"' "$work/run/log.jsonl" || fail "log.jsonl lacks examples_per_s"
# Without --lr / --lr-schedule / --warmup the documented recipe applies: lr 1e-3, cosine
# decay after a warm-up of 100 steps capped at a tenth of the run (3 of these 30).
/usr/bin/python3 - "$work/run/log.jsonl" <<'EOF' || fail "the default learning-rate schedule is not the recipe's"
import json, math, sys
lr = {r["step"]: r["lr"] for r in map(json.loads, open(sys.argv[1])) if "lr" in r}
w, T = 3, 30
want = {s: 1e-3 * 0.5 * (1 + math.cos(math.pi * (s - w) / (T - w))) for s in (10, 20, 30)}
assert all(abs(lr[s] - want[s]) < 1e-8 for s in want), (lr, want)
EOF
# transformer-cls takes the Transformer options; a bad one is refused before training.
expect 2 "--norm must be pre or post, got 'bogus'" -- "$attn" train --task sst2 --model transformer-cls --data "$data" \
  --norm bogus --out "$work/bad6"
expect 0 "trained 2 steps" -- "$attn" train --task sst2 --model transformer-cls --data "$data" --enc-layers 1 --norm post \
  --positions learned --activation gelu --steps 2 --train-limit 100 --dev-limit 20 --threads 1 --out "$work/tf-options"
/usr/bin/python3 - "$work/tf-options" <<'EOF' || fail "transformer-cls ignored --enc-layers/--norm/--positions/--activation"
import json, struct, sys
raw = open(sys.argv[1] + "/model.safetensors", "rb").read()
config = json.loads(json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])["__metadata__"]["attn"])["config"]
assert (config["encoder_layers"], config["norm_first"], config["positions"], config["activation"]) == \
    (1, False, "learned", "gelu"), config
EOF
# transformer-cls's recipe: d_model 128, ffn 512, lr 5e-4 (warm-up 2 of these 20 steps).
expect 0 "trained 20 steps" -- "$attn" train --task sst2 --model transformer-cls --data "$data" --steps 20 \
  --log-every 5 --train-limit 300 --dev-limit 50 --threads 1 --out "$work/tf"
/usr/bin/python3 - "$work/tf" <<'EOF' || fail "transformer-cls defaults are not the recipe's"
import json, math, struct, sys
raw = open(sys.argv[1] + "/model.safetensors", "rb").read()
header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
config = json.loads(header["__metadata__"]["attn"])["config"]
assert (config["d_model"], config["ffn"], config["encoder_layers"]) == (128, 512, 2), config
lr = {r["step"]: r["lr"] for r in map(json.loads, open(sys.argv[1] + "/log.jsonl")) if "lr" in r}
assert abs(lr[5] - 5e-4 * 0.5 * (1 + math.cos(math.pi * 3 / 18))) < 1e-8, lr
EOF

out="$("$attn" eval --model "$work/run/model.safetensors" --data "$data" --split dev --json)" || fail "eval --json failed"
echo "$out" | /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
assert set(d) == {"accuracy", "examples", "loss", "model", "kind", "split", "score", "metric"}, d
assert d["score"] == d["accuracy"] and d["model"].endswith("model.safetensors") and d["split"] == "dev", d
assert d["examples"] == 872 and 0.0 <= d["accuracy"] <= 1.0 and d["loss"] > 0, d' || fail "eval --json output: $out"
expect 0 "(1821 examples)" -- "$attn" eval --model "$work/run/model.safetensors" --data "$data" --split test
expect 0 "attention (" -- "$attn" classify --model "$work/run/model.safetensors" --text "a gorgeous , witty film"
out="$(printf 'a dull mess\n\nbrilliant\n' | "$attn" classify --model "$work/run/model.safetensors" --json)" || fail "classify stdin"
echo "$out" | /usr/bin/python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin.read().splitlines()]
assert len(rows) == 3 and rows[1] is None, rows  # the blank line is answered, so outputs line up with inputs
assert rows[2]["tokens"] == ["brilliant"], rows[2]
assert rows[0]["tokens"] == ["a", "dull", "mess"] and len(rows[0]["attention"]) == 3, rows[0]
assert abs(sum(rows[0]["probabilities"]) - 1) < 1e-5 and rows[0]["label_name"] in ("negative", "positive")' \
  || fail "classify --json output: $out"
# Raw text is tokenised like the data (it used to be all <unk>); mostly unknown words warn.
out="$("$attn" classify --model "$work/run/model.safetensors" --text "A gorgeous, witty, seductive movie." --json)"
echo "$out" | /usr/bin/python3 -c '
import json, sys
assert json.loads(sys.stdin.read())["tokens"] == ["a", "gorgeous", ",", "witty", ",", "seductive", "movie", "."]' \
  || fail "classify did not normalise raw text: $out"
expect 0 "warning: 3 of 3 tokens are not in the model's vocabulary" -- "$attn" classify --model "$work/run/model.safetensors" \
  --text "qqqzx vvvbn xxcvq"
# align names the kind of model it got (it used to ask a classifier for --input).
expect 2 "is not a seq2seq, translation, G2P or ASR checkpoint (format 'attn-classifier')" -- \
  "$attn" align --model "$work/run/model.safetensors" --text "a film"

# Bad input: a clear message and a non-zero exit code.
expect 2 "unknown --model 'cnn' (valid: bilstm, bilstm-attn, transformer-cls)" -- "$attn" train --task sst2 --model cnn --data "$data" --out "$work/bad1"
expect 2 "--task sst2 needs --data DIR" -- "$attn" train --task sst2 --out "$work/bad2"
# Jain & Wallace's training unit: the 6,885 full sentences (data::sst2_sentences), not the phrases.
expect 0 "trained 2 steps" -- "$attn" train --task sst2 --model bilstm --data "$data" --sst2-train sentences --emb 8 \
  --hidden 4 --steps 2 --dev-limit 10 --threads 1 --out "$work/sentences"
expect 2 "--sst2-train must be sentences or phrases, got 'words'" -- "$attn" train --task sst2 --data "$data" \
  --sst2-train words --out "$work/bad7"
expect 2 "unknown key 'hiden'" -- "$attn" train "${tiny[@]}" --model-config '{"hiden": 3}' --out "$work/bad3"
# --resume: 15 + 15 steps give the very checkpoint of 30 uninterrupted steps (dropout 0.5
# included); a constant rate without warm-up, since a schedule's length (and the default
# warm-up, capped at a tenth of the run) follow the run's --steps.
part=(--task sst2 --model bilstm --data "$data" --emb 16 --hidden 12 --batch 32 --eval-every 15 --log-every 10
      --train-limit 1500 --dev-limit 100 --threads 1 --lr-schedule constant --warmup 0)
expect 0 "trained 30 steps" -- "$attn" train "${part[@]}" --steps 30 --out "$work/whole"
expect 0 "trained 15 steps" -- "$attn" train "${part[@]}" --steps 15 --out "$work/parts"
expect 0 "trained 30 steps" -- "$attn" train "${part[@]}" --steps 30 --out "$work/parts" --resume
cmp -s "$work/whole/last.safetensors" "$work/parts/last.safetensors" || fail "a resumed sst2 run differs from the uninterrupted one"
# Options that would be ignored are refused.
expect 2 "--attention does not apply to --task sst2" -- "$attn" train "${tiny[@]}" --attention luong --out "$work/bad7"
expect 2 "--d-model does not apply to --task sst2 --model bilstm" -- "$attn" train "${tiny[@]}" --d-model 64 --out "$work/bad8"
expect 2 "--seed: must be a non-negative integer, got '-1'" -- "$attn" train "${tiny[@]}" --seed -1 --out "$work/bad9"
expect 1 "sentiment-train.gz" -- "$attn" train --task sst2 --data "$work/nowhere" --out "$work/bad5"
expect 2 "unknown --split 'valid' (valid: train, dev, test)" -- "$attn" eval --model "$work/run/model.safetensors" --data "$data" --split valid
expect 2 "needs --data DIR" -- "$attn" eval --model "$work/run/model.safetensors"
expect 2 "the text has no tokens" -- "$attn" classify --model "$work/run/model.safetensors" --text "  "
expect 1 "missing.safetensors" -- "$attn" classify --model "$work/missing.safetensors" --text "good"

# A seq2seq checkpoint is still evaluated as before, and refused by classify.
expect 0 "trained 2 steps" -- "$attn" train --task copy --hidden 8 --emb 4 --min-len 3 --max-len 4 --batch 4 --steps 2 \
  --eval-samples 4 --threads 1 --out "$work/s2s"
expect 0 '"token_accuracy"' -- "$attn" eval --model "$work/s2s/model.safetensors" --eval-lengths 3 --samples 2 --json
expect 2 "is not a classifier checkpoint (format 'attn-seq2seq')" -- "$attn" classify --model "$work/s2s/model.safetensors" --text "x"

finish "SST-2 CLI"
