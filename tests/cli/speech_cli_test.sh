#!/usr/bin/env bash
# attn data speech: 12 Tatoeba sentences spoken by espeak-ng into a temporary folder (seconds),
# read back by a reader written here from the format of include/attn/data/speech.h (not attn's),
# checked against manifest.json; the same seed gives the same files, --snr changes only the
# features; and the bad inputs: espeak-ng missing from PATH (one line naming the Debian package,
# no folder made), a non-empty --out, --sentences 0, a --data without fra.txt.gz.
# Usage: speech_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
source "$(dirname "$0")/lib.sh"

command -v espeak-ng >/dev/null || fail "espeak-ng is not installed (scripts/install-deps.sh installs it)"

if have_data tatoeba-fra-eng/fra.txt.gz; then
  expect 0 "12 sentences" -- "$attn" data speech --data "$data" --out "$work/set" --sentences 12 --seed 3
  /usr/bin/python3 - "$work/set" <<'PY' || fail "the set does not read back as its manifest says"
import json, os, struct, sys
import numpy as np

folder = sys.argv[1]
manifest = json.load(open(os.path.join(folder, "manifest.json")))
assert manifest["espeak_ng"].startswith("eSpeak NG text-to-speech: "), manifest["espeak_ng"]
assert manifest["features"]["bins"] == 80 and manifest["features"]["bytes_per_frame"] == 160
test_voices = set(manifest["voices"]["test"])
assert len(test_voices | set(manifest["voices"]["train_and_dev"])) >= 8
assert not test_voices & set(manifest["voices"]["train_and_dev"])

def read(path):
    b = open(path, "rb").read()
    at = 0
    def take(n):
        nonlocal at
        assert at + n <= len(b), f"{path}: truncated at {at}"
        at += n
        return b[at - n:at]
    def u32():
        return struct.unpack("<I", take(4))[0]
    def text():
        return take(u32()).decode("utf-8")
    assert take(8) == b"ATTNSPCH"
    version, bins, encoding = u32(), u32(), u32()
    assert (version, bins, encoding) == (1, 80, 1)
    provenance = text()
    count = struct.unpack("<Q", take(8))[0]
    utterances = []
    for _ in range(count):
        uid, voice, transcript, frames = text(), text(), text(), u32()
        features = np.frombuffer(take(frames * bins * 2), "<f2").reshape(frames, bins)
        utterances.append((uid, voice, transcript, features))
    assert at == len(b), f"{path}: {len(b) - at} bytes after the last utterance"
    return provenance, utterances

ids, total = set(), 0
for split, info in manifest["splits"].items():
    path = os.path.join(folder, info["file"])
    assert os.path.getsize(path) == info["bytes"], (split, os.path.getsize(path), info["bytes"])
    provenance, utterances = read(path)
    assert provenance.startswith("attn data speech: eSpeak NG"), provenance
    assert len(utterances) == info["utterances"], (split, len(utterances), info)
    assert sum(u[3].shape[0] for u in utterances) == info["frames"], split
    for uid, voice, transcript, features in utterances:
        assert uid not in ids
        ids.add(uid)
        assert (voice in test_voices) == (split == "test"), (split, voice)
        assert transcript and set(transcript) <= set("abcdefghijklmnopqrstuvwxyz' "), transcript
        assert features.shape[0] >= 20, (uid, features.shape)  # >= 0.2 s of speech
        assert np.isfinite(features).all()
        assert features.max() > 0 and features.min() >= np.log(1e-10) - 0.05, (uid, features.min(), features.max())
    total += len(utterances)
assert total == 12, total
print("read back", total, "utterances")
PY
  # Deterministic: the same seed, the same bytes; --snr changes the features and nothing else.
  "$attn" data speech --data "$data" --out "$work/again" --sentences 12 --seed 3 >/dev/null 2>&1 || fail "second build"
  for f in train dev test; do
    cmp -s "$work/set/$f.speech" "$work/again/$f.speech" || fail "$f.speech differs between two builds with seed 3"
  done
  "$attn" data speech --data "$data" --out "$work/noisy" --sentences 12 --seed 3 --snr 10 >/dev/null 2>&1 || fail "--snr 10"
  /usr/bin/python3 - "$work/set" "$work/noisy" <<'PY' || fail "--snr 10 did not change only the features"
import json, sys
a, b = (json.load(open(d + "/manifest.json")) for d in sys.argv[1:])
for split in a["splits"]:  # the bytes differ by the provenance's noise clause
    assert [a["splits"][split][k] for k in ("utterances", "frames")] == \
        [b["splits"][split][k] for k in ("utterances", "frames")], (split, a["splits"], b["splits"])
assert a["snr_db"] is None and b["snr_db"] == 10
PY
  cmp -s "$work/set/train.speech" "$work/noisy/train.speech" && fail "--snr 10 gave the same features"

  # Bad input: one line, exit 1 (2 for usage), and no folder made.
  mkdir -p "$work/empty-path"
  expect 1 "attn data speech: espeak-ng not found; install the Debian package espeak-ng (scripts/install-deps.sh does)" \
    -- env PATH="$work/empty-path" "$attn" data speech --data "$data" --out "$work/none" --sentences 2
  [[ -e "$work/none" ]] && fail "a folder was made although espeak-ng is missing"
  lines=$(PATH="$work/empty-path" "$attn" data speech --data "$data" --out "$work/none" --sentences 2 2>&1 | wc -l)
  [[ "$lines" == 1 ]] || fail "missing espeak-ng: $lines lines, expected one"
  expect 1 "exists and is not empty" -- "$attn" data speech --data "$data" --out "$work/set" --sentences 2
  expect 2 "--sentences must be >= 1, got 0" -- "$attn" data speech --data "$data" --out "$work/zero" --sentences 0
  expect 1 "fra.txt.gz: no such file" -- "$attn" data speech --data "$work" --out "$work/nodata" --sentences 2
  [[ -e "$work/nodata" ]] && fail "a folder was left behind by a failed build"
fi
expect 0 "--snr" -- "$attn" data speech --help

finish speech
