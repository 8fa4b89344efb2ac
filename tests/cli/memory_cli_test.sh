#!/usr/bin/env bash
# Issue 18 item 3: memory is bounded before allocating. Every case here used to hang, grow
# until killed, or fail only after tens of seconds; each must now fail at once (timeout 20 s
# stands for "at once" on a loaded machine) with one line naming what to change.
# Usage: memory_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
source "$(dirname "$0")/lib.sh"

tiny=(--hidden 16 --emb 8 --min-len 3 --max-len 6 --batch 8 --log-every 5 --eval-every 10 --eval-samples 16 --threads 1)
expect 0 "trained 2 steps" -- "$attn" train --task copy "${tiny[@]}" --steps 2 --out "$work/run"
model="$work/run/model.safetensors"

expect 2 "'layers' must be <= 256, got 1000000000" -- timeout 20 "$attn" train --task copy --layers 1000000000 \
  --steps 1 --out "$work/huge"
# An impossible model asked for by train's options is a usage error (2), refused before the
# run folder is made (docs/reliability.md, exit codes); it exited 1 from the model's constructor.
expect 2 "needs about" -- timeout 20 "$attn" train --task copy --layers 200 --hidden 60000 --steps 1 --out "$work/big"
[[ ! -e "$work/big" ]] || fail "a refused train run created its output directory"
expect 2 "--eval-lengths 1000000: decoding" -- timeout 20 "$attn" eval --model "$model" --eval-lengths 1000000
long=$(/usr/bin/python3 -c "print(' '.join(str(3 + i % 29) for i in range(20000)))")
expect 2 "--input has 20000 symbols" -- timeout 20 "$attn" align --model "$model" --input "$long" --out "$work/a.png"
# The budget can be set (tests, containers): a tiny one refuses even the small model, naming it.
ATTN_MEMORY_LIMIT=4K expect 1 "more than the 4.0 KiB available (ATTN_MEMORY_LIMIT)" -- "$attn" eval --model "$model" \
  --eval-lengths 4 --samples 4
ATTN_MEMORY_LIMIT=lots expect 1 "ATTN_MEMORY_LIMIT must be a positive number of bytes" -- "$attn" eval \
  --model "$model" --eval-lengths 4 --samples 4
# A checkpoint whose metadata claims a billion layers is refused, not built.
/usr/bin/python3 - "$model" "$work/billion.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
meta = header["__metadata__"]
cfg = json.loads(meta["attn"])
cfg["config"]["layers"] = 1000000000
meta["attn"] = json.dumps(cfg)
body = json.dumps(header).encode()
open(sys.argv[2], "wb").write(struct.pack("<Q", len(body)) + body + raw[8 + n:])
PY
expect 1 "'layers' must be <= 256" -- timeout 20 "$attn" eval --model "$work/billion.safetensors" --eval-lengths 4
finish memory
