#!/usr/bin/env bash
# attn train --task asr on synthetic speech this test writes as .speech files
# (fixtures/synthetic_speech.py: a tiny listen-attend-spell model learns to spell it in
# seconds): training with content and location-aware attention, eval's CER and WER on single
# and joined test utterances (greedy and beam), align, and the bad inputs. Usage: asr_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
source "$(dirname "$0")/lib.sh"

/usr/bin/python3 "$(dirname "$0")/fixtures/synthetic_speech.py" "$work" || fail "writing the synthetic speech"

expect 0 "speech recognition on spoken sentences" -- "$attn" train --help
tiny=(--data "$work" --steps 400 --eval-every 200 --log-every 100 --lr 5e-3 --warmup 0 --lr-schedule constant
      --max-tokens 480 --max-sentences 16 --projection 32 --listener-hidden 32 --hidden 64 --emb 16 --threads 2)
for score in additive location_aware; do
  expect 0 "best dev CER" -- "$attn" train --task asr --attention bahdanau --score $score --location-filters 4 \
    --location-width 5 "${tiny[@]}" --out "$work/$score"
  cer=$(grep -o '"val_cer":[0-9.e-]*' "$work/$score/log.jsonl" | tail -1 | cut -d: -f2)
  /usr/bin/python3 -c "import sys; sys.exit(0 if float('$cer') < 0.2 else 1)" || fail "$score: dev CER $cer after 400 steps"
  for join in 1 2; do
    "$attn" eval --model "$work/$score/model.safetensors" --data "$work" --join $join --json > "$work/$score.$join.json" \
      || fail "$score: eval --join $join"
    /usr/bin/python3 - "$work/$score.$join.json" "$join" <<'PY' || fail "$score: eval --join $join JSON"
import json, sys
d, join = json.load(open(sys.argv[1])), int(sys.argv[2])
assert d["metric"] == "cer" and d["score"] == d["cer"] and d["split"] == "test" and d["join"] == join, d
assert d["utterances"] == 24 // join and d["cer"] == d["char_edits"] / d["reference_chars"], d
assert d["wer"] == d["word_edits"] / d["reference_words"], d
assert d["frames_read_per_step"] == d["frames_per_step"] > 0, d  # soft attention reads every frame
if join == 1:
    assert d["cer"] < 0.25, d
PY
  done
done
expect 0 "join 4 (6 utterances, beam 3)" -- "$attn" eval --model "$work/location_aware/model.safetensors" --data "$work" \
  --join 4 --beam 3

# The alignment of one test utterance: characters down, listener frames across; soft attention
# reads every frame before each output row.
expect 0 "heatmap" -- "$attn" align --model "$work/location_aware/model.safetensors" --speech "$work/test.speech" \
  --utterance u3 --beam 2 --out "$work/a.png" --json "$work/a.json"
[[ -s "$work/a.png" ]] || fail "align did not write the picture"
/usr/bin/python3 - "$work/a.json" <<'PY' || fail "align --json"
import json, sys
d = json.load(open(sys.argv[1]))
rows, cols = d["panels"][0]["weights"], len(d["cols"])
assert len(rows) == len(d["rows"]) == len(d["frames_read"]) and d["rows"][-1] == "</s>", d
assert all(abs(sum(r) - 1) < 1e-4 and len(r) == cols for r in rows) and set(d["frames_read"]) == {cols}, d
PY
# --join: eval's groups (u0+u1, u2+u3, ...), the log-mel strip under the map; bad groups refused.
expect 0 "heatmap" -- "$attn" align --model "$work/location_aware/model.safetensors" --speech "$work/test.speech" \
  --utterance u2 --join 2 --out "$work/j.png" --json "$work/j.json"
[[ -s "$work/j.png" ]] || fail "align --join did not write the picture"
/usr/bin/python3 - "$work/j.json" "$work/test.speech" <<'PY' || fail "align --join --json"
import json, struct, sys
d, raw = json.load(open(sys.argv[1])), open(sys.argv[2], "rb").read()
pos, frames, ids = 8 + 16 + len(b"synthetic") + 8, [], []
for _ in range(4):  # u0..u3: id, voice, text, then the frames
    fields = []
    for _ in range(3):
        n = struct.unpack_from("<I", raw, pos)[0]; fields.append(raw[pos + 4:pos + 4 + n].decode()); pos += 4 + n
    f = struct.unpack_from("<I", raw, pos)[0]; pos += 4 + 2 * 80 * f
    ids.append(fields[0]); frames.append(f)
assert d["input_frames"] == frames[2] + frames[3] and d["reduction"] == 4, (d["input_frames"], frames)
assert len(d["cols"]) == -(-d["input_frames"] // 4) and "stops" not in d, d["cols"]
assert d["title"].endswith(": u2+u3"), d["title"]
PY
expect 2 "--join must be >= 1, got 0" -- "$attn" align --model "$work/additive/model.safetensors" \
  --speech "$work/test.speech" --utterance u0 --join 0 --out "$work/bad.png"
expect 2 "--join 25: $work/test.speech has only 24 utterances" -- "$attn" align \
  --model "$work/additive/model.safetensors" --speech "$work/test.speech" --utterance u0 --join 25 --out "$work/bad.png"
expect 2 "utterance 'u3' does not start a group of --join 2 (eval's groups from the set's start); its group starts at 'u2'" \
  -- "$attn" align --model "$work/additive/model.safetensors" --speech "$work/test.speech" --utterance u3 --join 2 --out "$work/bad.png"
expect 2 "utterance 'u20' starts the last group, of fewer than 5 utterances" -- "$attn" align \
  --model "$work/additive/model.safetensors" --speech "$work/test.speech" --utterance u20 --join 5 --out "$work/bad.png"
[[ ! -e "$work/bad.png" ]] || fail "a refused align wrote a picture"

# Hard monotonic attention: the red stop marks ("stops", the marks drawn) are the decoder's
# selections, the one frame each step attends to (a one-hot row; none when it read to the end).
expect 0 "best dev CER" -- "$attn" train --task asr --attention bahdanau --score monotonic "${tiny[@]}" --out "$work/mono"
expect 0 "heatmap" -- "$attn" align --model "$work/mono/model.safetensors" --speech "$work/test.speech" \
  --utterance u0 --join 2 --out "$work/m.png" --json "$work/m.json"
[[ -s "$work/m.png" ]] || fail "monotonic align did not write the picture"
/usr/bin/python3 - "$work/m.json" <<'PY' || fail "monotonic align: stop marks"
import json, sys
d = json.load(open(sys.argv[1]))
rows, stops = d["panels"][0]["weights"], d["stops"]
assert len(stops) == len(rows) == len(d["frames_read"]), d
for r, (row, stop) in enumerate(zip(rows, stops)):
    chosen = [f for f, w in enumerate(row) if w > 0]
    if stop < 0:
        assert not chosen and d["frames_read"][r] == len(d["cols"]), (r, row)
    else:
        assert chosen == [stop] and row[stop] == 1.0 and d["frames_read"][r] == stop + 1, (r, stop, chosen)
marked = [s for s in stops if s >= 0]
assert len(marked) >= len(stops) // 2 and marked == sorted(marked), stops  # stops, left to right
PY
expect 2 "an ASR model needs --speech FILE --utterance ID" -- "$attn" align --model "$work/additive/model.safetensors" \
  --text x
expect 2 "no utterance 'nope' in" -- "$attn" align --model "$work/additive/model.safetensors" --speech "$work/test.speech" \
  --utterance nope

# Bad input.
expect 2 "--task asr needs --data DIR" -- "$attn" train --task asr --steps 2 --out "$work/bad1"
expect 2 "--bidirectional does not apply to --task asr" -- "$attn" train --task asr --bidirectional "${tiny[@]}" \
  --out "$work/bad2"
expect 2 "reduction must be 2, 4 or 8, got 3" -- "$attn" train --task asr --reduction 3 "${tiny[@]}" --out "$work/bad3"
expect 2 "pointer must be off" -- "$attn" train --task asr --pointer "${tiny[@]}" --out "$work/bad4"
[[ ! -e "$work/bad4" ]] || fail "a refused train wrote its folder"
expect 1 "has 1 frames, fewer than the listener's reduction 4" -- "$attn" train --task asr --data "$work/short" \
  --steps 2 --out "$work/bad5"
expect 1 "no train set under $work/none" -- "$attn" train --task asr --data "$work/none" --steps 2 --out "$work/bad6"
expect 2 "--join must be >= 1, got 0" -- "$attn" eval --model "$work/additive/model.safetensors" --data "$work" --join 0
expect 1 "--join 25: the set has only 24 utterances" -- "$attn" eval --model "$work/additive/model.safetensors" \
  --data "$work" --join 25
expect 2 "an ASR checkpoint needs --data DIR" -- "$attn" eval --model "$work/additive/model.safetensors"
finish "ASR CLI"
