#!/usr/bin/env bash
# attn export dispatches through the task registry (tools/attn/train_tasks.h: each task's
# models name their export targets): a checkpoint that does not go to --to is refused with one
# line naming what the target takes and where the checkpoint goes instead, before anything is
# written; `attn export --help` lists the tasks of each target. No data needed.
# Usage: export_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
source "$(dirname "$0")/lib.sh"

torch_takes="--task copy | reverse | sort, --task translate | summarize --model rnn | transformer"
ct2_takes="--task translate | summarize --model transformer"

expect 0 "trained 2 steps" -- "$attn" train --task copy --hidden 16 --emb 8 --min-len 3 --max-len 6 --batch 8 \
  --steps 2 --log-every 1 --eval-every 2 --eval-samples 8 --threads 1 --out "$work/copy"
model="$work/copy/model.safetensors"

# The RNN seq2seq goes to torch, not to ctranslate2: the whole error line, exit 1.
expect 0 "wrote" -- "$attn" export --to torch --model "$model" --out "$work/torch"
[[ -f "$work/torch/model.py" && -f "$work/torch/model.safetensors" ]] || fail "export --to torch wrote no model"
out="$("$attn" export --to ctranslate2 --model "$model" --out "$work/ct2" 2>&1)"; rc=$?
want="attn: error: export --to ctranslate2: $model is an attn-seq2seq checkpoint; ctranslate2 takes $ct2_takes \
(attn-seq2seq checkpoints go --to torch)"
[[ $rc == 1 && "$out" == "$want" ]] || fail "export --to ctranslate2 of a seq2seq: exit $rc, '$out', expected '$want'"

# A kind no task exports (its metadata made attn-lm's: refused before the model is read), and a
# safetensors file that is no attn checkpoint.
/usr/bin/python3 - "$model" "$work/lm.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
attn = json.loads(header["__metadata__"]["attn"])
attn["format"] = "attn-lm"
header["__metadata__"] = {"attn": json.dumps(attn)}
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
header.pop("__metadata__")
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[2].replace("lm.", "plain."), "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
PY
for to in torch ctranslate2; do
  takes="$torch_takes"; [[ $to == ctranslate2 ]] && takes="$ct2_takes"
  expect 1 "export --to $to: $work/lm.safetensors is an attn-lm checkpoint; $to takes $takes" \
    -- "$attn" export --to "$to" --model "$work/lm.safetensors" --out "$work/lm-$to"
  expect 1 "export --to $to: $work/plain.safetensors is not an attn checkpoint; $to takes $takes" \
    -- "$attn" export --to "$to" --model "$work/plain.safetensors" --out "$work/plain-$to"
done
"$attn" export --to torch --model "$work/lm.safetensors" --out "$work/x" 2>&1 | grep -q "checkpoints go" &&
  fail "an attn-lm checkpoint was sent to a target, though no task exports it"
left="$(find "$work" -maxdepth 1 \( -name 'ct2*' -o -name '.ct2*' -o -name '*-torch*' -o -name '*-ctranslate2*' \))"
[[ -z "$left" ]] || fail "a refused export wrote: $left"

# --help: each target with the tasks that go to it; an unknown target is a usage error.
expect 0 "torch ($torch_takes), or ctranslate2 ($ct2_takes)" -- "$attn" export --help
expect 2 "onnx not in {torch,ctranslate2}" -- "$attn" export --to onnx --model "$model" --out "$work/onnx"

finish "export CLI"
