#!/usr/bin/env bash
# CLI tests: train a tiny model, evaluate it, align it, resume it, and the bad inputs
# (exit code 2 with a clear message, nothing written). Usage: cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
source "$(dirname "$0")/lib.sh"

tiny=(--hidden 16 --emb 8 --min-len 3 --max-len 6 --batch 8 --log-every 5 --eval-every 10 --eval-samples 16 --threads 1)

expect 0 "trained 20 steps" -- "$attn" train --task copy --attention bahdanau "${tiny[@]}" --steps 20 --out "$work/run"
for f in model.safetensors last.safetensors log.jsonl; do [[ -s "$work/run/$f" ]] || fail "train did not write $f"; done
grep -q '"tokens_per_s"' "$work/run/log.jsonl" || fail "log.jsonl lacks tokens_per_s"

expect 0 '"token_accuracy"' -- "$attn" eval --model "$work/run/model.safetensors" --eval-lengths 3,6 --samples 10 --json
expect 0 '"length": 6' -- "$attn" eval --model "$work/run/model.safetensors" --eval-lengths 3,6 --samples 10 --json --beam 3
"$attn" eval --model "$work/run/model.safetensors" --eval-lengths 3,6 --samples 10 --json --beam 3 --length-penalty 0.5 \
  | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
mean = sum(r["token_accuracy"] for r in d["lengths"]) / len(d["lengths"])
assert d["beam"] == 3 and d["length_penalty"] == 0.5 and abs(d["score"] - mean) < 1e-12 and d["model"].endswith("model.safetensors"), d' \
  || fail "eval --json lacks the model, beam, length penalty or score"
expect 0 "heatmap" -- "$attn" align --model "$work/run/model.safetensors" --input "5 9 3 17" --out "$work/a.svg"
[[ -s "$work/a.svg" ]] || fail "align did not write the SVG"
# align's seq2seq beam takes the length penalty, as eval and translate do; a bad one is refused.
expect 0 "heatmap" -- "$attn" align --model "$work/run/model.safetensors" --input "5 9 3 17" --beam 3 --length-penalty 0.5 \
  --out "$work/lp.svg"
[[ -s "$work/lp.svg" ]] || fail "align --beam 3 --length-penalty 0.5 did not write the SVG"
expect 2 "--length-penalty must be finite and >= 0, got -1" -- "$attn" align --model "$work/run/model.safetensors" \
  --input "5 9 3" --beam 3 --length-penalty -1 --out "$work/lp_bad.svg"
[[ ! -e "$work/lp_bad.svg" ]] || fail "a refused align wrote its picture"
expect 2 "--join needs an ASR checkpoint; $work/run/model.safetensors is 'attn-seq2seq'" -- "$attn" align \
  --model "$work/run/model.safetensors" --input "5 9 3 17" --join 2 --out "$work/join_bad.svg"
[[ ! -e "$work/join_bad.svg" ]] || fail "a refused align --join wrote its picture"
# The translation beam's rules are refused for other checkpoints, not ignored.
for option in "--beam-stop top" "--beam-rules ctranslate2"; do
  expect 2 "${option% *} needs a translation checkpoint; $work/run/model.safetensors is 'attn-seq2seq'" -- "$attn" \
    eval --model "$work/run/model.safetensors" --eval-lengths 3 --samples 4 --beam 3 $option
done
# --help states the defaults that apply: eval's beam by kind of checkpoint, the length
# penalty's 1 (GNMT's alpha) in eval and align.
[[ "$("$attn" eval --help)" == *"1 for synthetic-task checkpoints, 5 for translation checkpoints"* ]] ||
  fail "eval --help does not state the beam defaults"
for cmd in eval align; do
  [[ "$("$attn" $cmd --help | grep -E -- '--length-penalty')" == *"FLOAT=1 "*"((5 + length) / 6)^alpha"* ]] ||
    fail "$cmd --help does not show --length-penalty's default 1 and what it does"
done

# Checkpoints written by main's binary at d9ec48d, before the configuration's choices became
# enums (their JSON holds the names: gru/bahdanau/score "", lstm/luong/concat bidirectional,
# none with score "none") load and evaluate as they did then (tests/cli/fixtures/main-d9ec48d:
# *.eval.json is that binary's `eval --json` without "model", *.align.txt its align output).
# The names and options must match exactly; the accuracies within 0.1 (on another instruction
# set a near tie of two logits may decode differently).
fixtures="$(dirname "$0")/fixtures/main-d9ec48d"
for old in bahdanau luong none; do
  "$attn" eval --model "$fixtures/$old.safetensors" --eval-lengths 3,5 --samples 8 --beam 2 --length-penalty 0.5 --json \
    --threads 1 | /usr/bin/python3 -c '
import json, sys
got, want = json.load(sys.stdin), json.load(open(sys.argv[1]))
for key in ("attention", "beam", "length_penalty", "samples", "seed", "metric"):
    assert got[key] == want[key], (key, got[key], want[key])
assert [r["length"] for r in got["lengths"]] == [r["length"] for r in want["lengths"]], got
assert abs(got["score"] - want["score"]) <= 0.1, (got["score"], want["score"])' "$fixtures/$old.eval.json" \
    || fail "the checkpoint $old.safetensors written by main at d9ec48d no longer evaluates as it did"
done
for old in bahdanau luong; do
  expect 0 "heatmap" -- "$attn" align --model "$fixtures/$old.safetensors" --input "5 9 3 17 4" --beam 2 --threads 1 \
    --out "$work/old_$old.svg"
done

# Every other decoder choice trains, evaluates and aligns (multi-head: one panel per head).
for score in multihead local_m local_p hard; do
  expect 0 "trained 6 steps" -- "$attn" train --task copy --attention luong --score $score --heads 2 --window 2 \
    "${tiny[@]}" --steps 6 --bucket 2 --out "$work/$score"
  expect 0 '"sequence_accuracy"' -- "$attn" eval --model "$work/$score/model.safetensors" --eval-lengths 4 --samples 4 --json --beam 2
  expect 0 "heatmap" -- "$attn" align --model "$work/$score/model.safetensors" --input "5 9 3 17" --out "$work/$score.png"
  [[ -s "$work/$score.png" ]] || fail "align did not write $score.png"
done
# Location-aware attention (its state, the previous alignment, goes through greedy and beam
# decoding and align); an even filter width is a usage error.
expect 0 "trained 6 steps" -- "$attn" train --task copy --attention bahdanau --score location_aware --location-filters 3 \
  --location-width 5 --location-sharpen 2 --location-smooth "${tiny[@]}" --steps 6 --out "$work/location_aware"
expect 0 '"sequence_accuracy"' -- "$attn" eval --model "$work/location_aware/model.safetensors" --eval-lengths 4 \
  --samples 4 --json --beam 3
for beam in 1 3; do
  expect 0 "heatmap" -- "$attn" align --model "$work/location_aware/model.safetensors" --input "5 9 3 17" --beam $beam \
    --out "$work/location_aware_$beam.png"
done
# Monotonic and MoChA attention: eval with beam, align and view decode online (their state, the
# reading position, goes through beam search).
for score in monotonic mocha; do
  expect 0 "trained 6 steps" -- "$attn" train --task copy --attention bahdanau --score $score --chunk 3 \
    --monotonic-bias -1 --monotonic-noise 0.5 "${tiny[@]}" --steps 6 --out "$work/$score"
  expect 0 '"sequence_accuracy"' -- "$attn" eval --model "$work/$score/model.safetensors" --eval-lengths 4 \
    --samples 4 --json --beam 3
  expect 0 "heatmap" -- "$attn" align --model "$work/$score/model.safetensors" --input "5 9 3 17" --beam 2 \
    --out "$work/$score.png"
  expect 0 "view:" -- "$attn" view --model "$work/$score/model.safetensors" --input "5 9 3 17" --out "$work/$score.html"
done
expect 2 "location_width must be odd (a filter centred on the position), got 4" -- "$attn" train --task copy \
  --attention bahdanau --score location_aware --location-width 4 "${tiny[@]}" --out "$work/bad_width"
[[ ! -e "$work/bad_width" ]] || fail "a refused train wrote its folder"
expect 0 "trained 6 steps" -- "$attn" train --attention bahdanau "${tiny[@]}" --steps 6 --lr-schedule cosine --warmup 2 \
  --out "$work/cosine"
grep -q '"lr":0.0' "$work/cosine/log.jsonl" || fail "cosine schedule did not reach lr 0 at the last step"
expect 2 "unknown kind 'cosin'" -- "$attn" train --lr-schedule cosin "${tiny[@]}" --out "$work/bad4"
expect 2 "--steps 3 must be larger than --warmup 5" -- "$attn" train --lr-schedule cosine --warmup 5 --steps 3 \
  "${tiny[@]}" --out "$work/bad5"
expect 2 "multihead: hidden=16 is not divisible by heads=3" -- "$attn" train --attention luong --score multihead --heads 3 \
  "${tiny[@]}" --out "$work/bad0"

# Resume: 10 + 10 steps give the same model as 20 uninterrupted steps.
expect 0 "" -- "$attn" train --task copy --attention luong "${tiny[@]}" --steps 20 --out "$work/full"
expect 0 "" -- "$attn" train --task copy --attention luong "${tiny[@]}" --steps 10 --out "$work/half"
expect 0 "" -- "$attn" train --task copy --attention luong "${tiny[@]}" --steps 20 --out "$work/half" --resume
cmp -s "$work/full/last.safetensors" "$work/half/last.safetensors" || fail "resumed run differs from the uninterrupted one"
expect 1 "has done 20 steps already; --steps 20 asks for none more" -- "$attn" train --task copy --attention luong "${tiny[@]}" \
  --steps 20 --out "$work/half" --resume

# Bad input: exit code 2, one clear line, no output files.
expect 2 "unknown attention 'foo' (valid: none, bahdanau, luong)" -- "$attn" train --attention foo --out "$work/bad1"
expect 2 "unknown task 'nope'" -- "$attn" train --task nope --out "$work/bad2"
expect 2 "--min-len 9 is larger than --max-len 3" -- "$attn" train --min-len 9 --max-len 3 --out "$work/bad3"
[[ ! -e "$work/bad1" && ! -e "$work/bad2" && ! -e "$work/bad3" ]] || fail "a refused run created its output directory"
expect 2 "--beam must be >= 1" -- "$attn" eval --model "$work/run/model.safetensors" --beam 0
expect 2 "symbols outside the vocabulary (valid: 3..31): '40', 'x'" -- "$attn" align --model "$work/run/model.safetensors" --input "5 40 x"
expect 2 "" -- "$attn" train --no-such-flag
# A training log that cannot be written (here: a full device) stops the run with an error.
mkdir -p "$work/fulllog" && ln -s /dev/full "$work/fulllog/log.jsonl"
expect 1 "log.jsonl: cannot write (is the disk full?)" -- "$attn" train "${tiny[@]}" --steps 2 --out "$work/fulllog"
# demo and sweep check their evaluation options before training anything.
expect 2 "--samples must be >= 1, got 0" -- "$attn" demo --steps 2 --hidden 8 --samples 0 --out "$work/bad7"
expect 2 "--attention lists 'luong' twice" -- "$attn" sweep --attention luong,luong --steps 2 --out "$work/bad8"
[[ ! -e "$work/bad7" && ! -e "$work/bad8" ]] || fail "a refused demo/sweep created its output directory"
expect 2 "bad length ''" -- "$attn" eval --model "$work/run/model.safetensors" --eval-lengths 5,,10
expect 2 "ATTN_NUM_THREADS must be a positive integer, got 'abc'" -- env ATTN_NUM_THREADS=abc "$attn" eval --model "$work/run/model.safetensors"
# Parse errors are one line each, with the command's --help named.
expect 2 "attn: usage error: unknown command 'bogus' (commands: demo, train," -- "$attn" bogus
expect 2 "--threads: must be a positive integer, got '0' (see attn train --help)" -- "$attn" train --threads 0 --out "$work/bad5"
[[ "$("$attn" train --steps abc --out "$work/bad6" 2>&1 | wc -l)" == 1 ]] || fail "a parse error printed more than one line"
# Output that cannot be written is a failure (here: a full device).
expect 1 "cannot write the standard output: No space left on device" -- bash -c "'$attn' eval --model '$work/run/model.safetensors' --eval-lengths 5 --samples 2 > /dev/full"
expect 1 "model.safetensors" -- "$attn" eval --model "$work/missing/model.safetensors"
head -c 100 "$work/run/model.safetensors" > "$work/truncated.safetensors"
expect 1 "truncated.safetensors" -- "$attn" eval --model "$work/truncated.safetensors"
# A checkpoint whose parameters hold NaN (one value of the first float tensor) is refused by name.
/usr/bin/python3 - "$work/run/model.safetensors" "$work/nan.safetensors" <<'EOF'
import json, struct, sys
raw = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
name, info = next((k, v) for k, v in header.items() if k != "__metadata__" and v["dtype"] == "F32")
raw[8 + n + info["data_offsets"][0]:8 + n + info["data_offsets"][0] + 4] = struct.pack("<f", float("nan"))
open(sys.argv[2], "wb").write(raw)
EOF
expect 1 "is damaged: its bytes have CRC-32" -- "$attn" eval --model "$work/nan.safetensors"  # caught by its checksum
# Damaged attn metadata is named as such by every command that reads checkpoints.
/usr/bin/python3 - "$work/run/model.safetensors" "$work/badmeta.safetensors" <<'EOF'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
header["__metadata__"]["attn"] = "{broken"
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
EOF
for cmd in "eval" "align --text x" "classify --text x"; do
  expect 1 "badmeta.safetensors: no readable attn metadata" -- "$attn" $cmd --model "$work/badmeta.safetensors"
done

# bench: tiny runs print one JSON line that parses; bad --kind / --attention are usage errors.
"$attn" bench seq2seq --batch 2 --emb 4 --hidden 8 --len 3 --steps 1 --warmup 0 --greedy-reps 1 --threads 1 --json \
  | /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); assert d["train_tokens_per_s"] > 0 and d["greedy_tokens_per_s"] > 0' \
  || fail "bench seq2seq --json"
for kind in sdpa additive mha; do
  "$attn" bench attention --kind $kind --len 16 --dim 16 --heads 2 --reps 1 --threads 1 --json \
    | /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); assert d["forward_ms"] > 0 and d["peak_rss_mb"] >= d["baseline_rss_mb"] > 0' \
    || fail "bench attention --kind $kind --json"
done
for mask in causal padding; do
  "$attn" bench attention --kind sdpa --mask $mask --len 16 --dim 16 --heads 2 --reps 1 --threads 1 --json \
    | /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); assert d["forward_ms"] > 0 and d["config"]["mask"] == sys.argv[1]' $mask \
    || fail "bench attention --mask $mask --json"
done
expect 2 "unknown --mask 'diagonal' (valid: none, causal, padding)" -- "$attn" bench attention --mask diagonal
expect 2 "--mask is for --kind sdpa" -- "$attn" bench attention --kind mha --mask causal
expect 2 "unknown --kind 'foo' (valid: sdpa, additive, mha)" -- "$attn" bench attention --kind foo
expect 2 "unknown attention 'foo' (valid: none, bahdanau, luong)" -- "$attn" bench seq2seq --attention foo
expect 2 "is not divisible by --heads" -- "$attn" bench attention --dim 10 --heads 3
# bench transformer: every beam hypothesis runs longest target + 1 steps (EOS's row is zeroed).
"$attn" bench transformer --d-model 16 --heads 2 --ffn 32 --layers 1 --vocab 50 --max-tokens 200 --steps 1 \
  --warmup 0 --beam 2 --beam-sentences 3 --threads 1 --json \
  | /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); assert d["train_tokens_per_s"] > 0 and d["gflops_per_s"] > 0 and d["beam_tokens_per_sentence"] == d["config"]["beam_max_len"]' \
  || fail "bench transformer --json"
expect 2 "--steps, --beam, --beam-sentences, --beam-reps must be >= 1" -- "$attn" bench transformer --beam 0
expect 2 "--vocab must be >= 4" -- "$attn" bench transformer --vocab 3
expect 2 "--max-tokens must hold one pair" -- "$attn" bench transformer --max-tokens 50

finish "CLI"
