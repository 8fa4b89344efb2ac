#!/usr/bin/env bash
# Issue 18: files the CLI writes and reads, whatever the path names (docs/reliability.md),
# and option values that used to change silently. Usage: reliability_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
source "$(dirname "$0")/lib.sh"

tiny=(--hidden 16 --emb 8 --min-len 3 --max-len 6 --batch 8 --log-every 5 --eval-every 10 --eval-samples 16 --threads 1)
expect 0 "trained 4 steps" -- "$attn" train --task copy --attention bahdanau "${tiny[@]}" --steps 4 --out "$work/run"
model="$work/run/model.safetensors"

# An output that is (a link to) a device is written in place: /dev/null stays a device,
# /dev/full is an error. (As root, the old rename would have replaced both with files.)
ln -s /dev/null "$work/null.svg" && ln -s /dev/full "$work/full.svg"
expect 0 "heatmap" -- "$attn" align --model "$model" --input "5 9 3" --out "$work/null.svg"
[[ -c /dev/null && -L "$work/null.svg" ]] || fail "/dev/null is no longer a character device"
expect 1 "full.svg: cannot write: No space left on device" -- "$attn" align --model "$model" --input "5 9 3" \
  --out "$work/full.svg"
[[ -c /dev/full && -L "$work/full.svg" ]] || fail "/dev/full is no longer a character device"
# A symlinked output is written through, and a file of the user's named X.tmp survives.
mkdir -p "$work/keep" && ln -s "$work/keep/real.svg" "$work/link.svg" && echo mine > "$work/link.svg.tmp"
expect 0 "heatmap" -- "$attn" align --model "$model" --input "5 9 3" --out "$work/link.svg"
[[ -L "$work/link.svg" && -s "$work/keep/real.svg" ]] || fail "align --out replaced the symlink instead of its target"
[[ "$(cat "$work/link.svg.tmp")" == mine ]] || fail "align --out destroyed the user's link.svg.tmp"

# A FIFO as --model is refused at once instead of blocking in open() (timeout: the old hang).
mkfifo "$work/fifo"
expect 1 "fifo: not a regular file (a FIFO)" -- timeout 20 "$attn" eval --model "$work/fifo" --eval-lengths 4

# Damaged checkpoints: a flipped bit is named by its tensor, trailing bytes are refused, a
# file without checksums (another tool's) loads with a note, and its NaN is still refused.
/usr/bin/python3 - "$model" "$work" <<'PY'
import json, struct, sys
raw = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
name, info = next((k, v) for k, v in header.items() if k != "__metadata__" and v["dtype"] == "F32")
start = 8 + n + info["data_offsets"][0]
flipped = bytearray(raw)
flipped[start + 3] ^= 0x10
open(sys.argv[2] + "/flipped.safetensors", "wb").write(flipped)
open(sys.argv[2] + "/trailing.safetensors", "wb").write(raw + b"garbage!")
del header["__metadata__"]["attn.crc32"]
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
plain = struct.pack("<Q", len(text)) + text + raw[8 + n:]
open(sys.argv[2] + "/unverified.safetensors", "wb").write(plain)
body = bytearray(plain)
body[8 + len(text) + info["data_offsets"][0]:8 + len(text) + info["data_offsets"][0] + 4] = struct.pack("<f", float("nan"))
open(sys.argv[2] + "/nan.safetensors", "wb").write(body)
PY
expect 1 "is damaged: its bytes have CRC-32" -- "$attn" eval --model "$work/flipped.safetensors" --eval-lengths 4
expect 1 "8 bytes after the last tensor" -- "$attn" eval --model "$work/trailing.safetensors" --eval-lengths 4
expect 0 "unverified.safetensors has no checksums" -- "$attn" eval --model "$work/unverified.safetensors" --eval-lengths 4 --samples 2
expect 1 "holds NaN (a diverged or damaged checkpoint)" -- "$attn" eval --model "$work/nan.safetensors" --eval-lengths 4

# Metadata of the wrong type is one line without nlohmann's "[json.exception...]" prefix.
/usr/bin/python3 - "$model" "$work/badtype.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
meta = json.loads(header["__metadata__"]["attn"])
meta = {k: (v if k in ("format", "version") else "x") for k, v in meta.items()}
header["__metadata__"]["attn"] = json.dumps(meta)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
PY
out="$("$attn" eval --model "$work/badtype.safetensors" --eval-lengths 4 2>&1)"; rc=$?
[[ $rc == 1 && "$out" == *badtype.safetensors* && "$out" != *json.exception* && $(echo "$out" | wc -l) == 1 ]] \
  || fail "metadata of the wrong type: rc $rc, output: $out"

# Integer options out of range are usage errors, not clamped to 2^63 - 1.
expect 2 "--steps: 99999999999999999999 is out of range (at most 9223372036854775807)" -- \
  "$attn" train --steps 99999999999999999999 --out "$work/bad1"
[[ ! -e "$work/bad1" ]] || fail "a refused run created its output directory"
# --model-config keys that the data fixes (and would overwrite) are refused.
expect 2 "classifier config: 'classes' is set by the data and the model kind" -- \
  "$attn" train --task sst2 --data "$work" --model-config '{"classes": 3}' --out "$work/bad2"

finish reliability
