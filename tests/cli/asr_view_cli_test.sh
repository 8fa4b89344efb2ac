#!/usr/bin/env bash
# attn view of an ASR checkpoint (docs/viewer.md, "ASR"): one utterance's alignment (characters
# × listener frames) per hypothesis with its log-mel spectrogram, and for monotonic attention
# each step's stopping frame, checked in the page's data against the .speech file and against
# attn align --json; a soft-attention model's page has no stops; and the refusals.
# Synthetic speech (fixtures/synthetic_speech.py) and tiny models trained here in seconds.
# Usage: asr_view_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
source "$(dirname "$0")/lib.sh"

/usr/bin/python3 "$(dirname "$0")/fixtures/synthetic_speech.py" "$work" || fail "writing the synthetic speech"
tiny=(--data "$work" --eval-every 200 --log-every 100 --lr 5e-3 --warmup 0 --lr-schedule constant
      --max-tokens 480 --max-sentences 16 --projection 32 --listener-hidden 32 --hidden 64 --emb 16 --threads 2)
expect 0 "best dev CER" -- "$attn" train --task asr --attention bahdanau --score monotonic --steps 400 "${tiny[@]}" \
  --out "$work/mono"
expect 0 "best dev CER" -- "$attn" train --task asr --attention bahdanau --score additive --steps 20 "${tiny[@]}" \
  --out "$work/soft"
mono="$work/mono/model.safetensors" soft="$work/soft/model.safetensors"

# The page's data (the JSON in <script id="attn-data">, weights and features unpacked as
# viewer.js unpacks them) against the .speech file, the raw --json and attn align --json.
check_page() {  # check_page PAGE RAW_JSON ALIGN_JSON UTTERANCE JOIN BEAM ONLINE
  /usr/bin/python3 - "$@" "$work/test.speech" <<'PY'
import base64, json, re, struct, sys, zlib
import numpy as np
page, raw, align = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
first, join, beam, online = int(sys.argv[4][1:]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7] == "1"
html = open(page, encoding="utf-8").read()
d = json.loads(re.search(r'<script type="application/json" id="attn-data">(.*?)</script>', html, re.S).group(1))
def unpack(b64, count):
    b = np.frombuffer(zlib.decompress(base64.b64decode(b64)), dtype=np.uint8).astype(np.int64)
    assert b.size == 3 * count, (b.size, count)
    return (b[0::3] | b[1::3] << 8 | b[2::3] << 16) / 16777215.0
# The utterances of the .speech file (speech.h): id, voice, text, frames, fp16 features.
blob, pos, utts = open(sys.argv[8], "rb").read(), 8 + 16 + len(b"synthetic") + 8, []
while pos < len(blob):
    fields = []
    for _ in range(3):
        n = struct.unpack_from("<I", blob, pos)[0]; fields.append(blob[pos + 4:pos + 4 + n].decode()); pos += 4 + n
    f = struct.unpack_from("<I", blob, pos)[0]; pos += 4
    utts.append((fields, np.frombuffer(blob, dtype="<f2", count=80 * f, offset=pos).astype(np.float32).reshape(f, 80)))
    pos += 2 * 80 * f
group = utts[first:first + join]
features = np.concatenate([u[1] for u in group])
uid, reference = "+".join(u[0][0] for u in group), " ".join(u[0][2] for u in group)

assert d["kind"] == "attention" and d["model"] == "asr" and d["input"] == uid, (d["kind"], d["model"], d["input"])
s = d["speech"]
C = -(-len(features) // 4)  # listener frames: the model's reduction is 4
assert (s["utterance"], s["reference"], s["online"]) == (uid, reference, online), s["utterance"]
assert (s["reduction"], s["bins"], s["input_frames"], s["listener_frames"], s["frames"]) == (4, 80, len(features), C, 4 * C), s
# The spectrogram: the features, the last listener frame padded with their minimum.
spec = s["min"] + unpack(s["data"], s["frames"] * 80).reshape(-1, 80) * (s["max"] - s["min"])
want = np.full((4 * C, 80), features.min()); want[:len(features)] = features
tol = 1e-6 * (s["max"] - s["min"]) + 1e-6
assert np.abs(spec - want).max() <= tol, np.abs(spec - want).max()
assert np.array_equal(np.asarray(raw["speech"]["values"], dtype=np.float32), want.astype(np.float32)), "raw features"
# The alignment: greedy and, with a beam, its best; characters (and EOS) down, C frames across.
assert [h["name"] for h in d["hypotheses"]] == ["greedy"] + ([f"beam {beam} #1"] if beam > 1 else []), d["hypotheses"]
for h, rh in zip(d["hypotheses"], raw["hypotheses"]):
    (m,), (rm,) = h["maps"], rh["maps"]
    R = len(m["rows"])
    assert m["cols"] == [str(c) for c in range(C)] and (m["layers"], m["heads"]) == (1, 1), m["cols"]
    assert m["rows"][-1] == "</s>" and "".join(m["rows"][:-1]).replace("_", " ") == h["text"], (m["rows"], h["text"])
    w = unpack(m["data"], R * C).reshape(R, C)
    assert np.abs(w - np.asarray(rm["weights"][0][0])).max() <= 3e-8, "packed weights differ from --json's"
    reads = h["frames_read"]
    assert len(reads) == R and all(1 <= n <= C for n in reads), reads
    if online:
        stops = h["stops"]
        assert len(stops) == R, stops
        for r, stop in enumerate(stops):  # the last frame with weight; -1: none, read to the end
            chosen = np.nonzero(w[r] > 0)[0]
            assert (stop == -1 and chosen.size == 0 and reads[r] == C) or (stop == chosen[-1] and reads[r] == stop + 1), (r, stop)
        assert sum(x >= 0 for x in stops) >= R // 2, stops
    else:
        assert "stops" not in h and set(reads) == {C} and np.allclose(w.sum(1), 1, atol=1e-4), reads
# attn align draws the same greedy alignment (rows, weights, stops).
assert align["rows"] == d["hypotheses"][0]["maps"][0]["rows"] and align["output"] == d["hypotheses"][0]["text"], align["rows"]
assert np.abs(np.asarray(align["panels"][0]["weights"]) - np.asarray(raw["hypotheses"][0]["maps"][0]["weights"][0][0])).max() == 0
assert align.get("stops") == raw["hypotheses"][0].get("stops") and align["frames_read"] == raw["hypotheses"][0]["frames_read"]
PY
}

for model in mono soft; do
  online=$([[ $model == mono ]] && echo 1 || echo 0)
  for args in "u2 2 2" "u5 1 1"; do
    read -r utterance join beam <<< "$args"
    name="$model-$utterance-$join"
    expect 0 "view: $work/$name.html" -- "$attn" view --model "$work/$model/model.safetensors" --speech "$work/test.speech" \
      --utterance "$utterance" --join "$join" --beam "$beam" --out "$work/$name.html" --json "$work/$name.json"
    expect 0 "heatmap" -- "$attn" align --model "$work/$model/model.safetensors" --speech "$work/test.speech" \
      --utterance "$utterance" --join "$join" --out "$work/$name.png" --json "$work/$name.align.json"
    check_page "$work/$name.html" "$work/$name.json" "$work/$name.align.json" "$utterance" "$join" "$beam" "$online" \
      || fail "view $name: the page's data"
  done
done

# Refusals: one line, exit 2 (a damaged file: exit 1), and no page.
bad="$work/bad.html"
view_mono=("$attn" view --model "$mono" --out "$bad")
expect 2 "an ASR model needs --speech FILE --utterance ID" -- "${view_mono[@]}"
expect 2 "an ASR model needs --speech FILE --utterance ID" -- "${view_mono[@]}" --speech "$work/test.speech"
expect 2 "an ASR model needs --speech FILE --utterance ID" -- "${view_mono[@]}" --utterance u0
expect 2 "no utterance 'nope' in $work/test.speech" -- "${view_mono[@]}" --speech "$work/test.speech" --utterance nope
expect 2 "--join 25: $work/test.speech has only 24 utterances" -- "${view_mono[@]}" --speech "$work/test.speech" \
  --utterance u0 --join 25
expect 2 "--join must be >= 1, got 0" -- "${view_mono[@]}" --speech "$work/test.speech" --utterance u0 --join 0
expect 2 "utterance 'u3' does not start a group of --join 2" -- "${view_mono[@]}" --speech "$work/test.speech" \
  --utterance u3 --join 2
expect 2 "utterance 'u20' starts the last group, of fewer than 5 utterances" -- "${view_mono[@]}" \
  --speech "$work/test.speech" --utterance u20 --join 5
expect 2 "--beam must be >= 1, got 0" -- "${view_mono[@]}" --speech "$work/test.speech" --utterance u0 --beam 0
expect 2 "--run excludes --speech" -- "$attn" view --run "$work/mono" --speech "$work/test.speech" --out "$bad"
head -c 100 "$work/test.speech" > "$work/cut.speech"
expect 1 "$work/cut.speech" -- "${view_mono[@]}" --speech "$work/cut.speech" --utterance u0
expect 1 "$work/none.speech" -- "${view_mono[@]}" --speech "$work/none.speech" --utterance u0
expect 0 "" -- "$attn" train --task copy --steps 2 --hidden 8 --emb 4 --threads 2 --out "$work/copy"
expect 2 "--speech needs an ASR checkpoint; $work/copy/model.safetensors is 'attn-seq2seq'" -- "$attn" view \
  --model "$work/copy/model.safetensors" --input "5 9 3" --speech "$work/test.speech" --out "$bad"
expect 2 "--join needs an ASR checkpoint" -- "$attn" align --model "$work/copy/model.safetensors" --input "5 9 3" \
  --join 2 --out "$work/bad.png"
[[ ! -e "$bad" && ! -e "$work/bad.png" ]] || fail "a refused view or align wrote a file"
finish "ASR view CLI"
