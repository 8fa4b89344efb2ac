#!/usr/bin/env bash
# The sparse normalisers from the command line: a model trained with --normalizer sparsemax /
# entmax records it in its checkpoint, evaluates and aligns; --alpha <= 1 or NaN, an unknown
# normaliser and a score without one are refused with one line (exit 2); export --to torch of
# a sparse model is refused rather than exported with a softmax. Usage: normalizer_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
source "$(dirname "$0")/lib.sh"

tiny=(--hidden 16 --emb 8 --min-len 3 --max-len 6 --batch 8 --log-every 5 --eval-every 10 --eval-samples 16 --threads 1)
expect 0 "trained 8 steps" -- "$attn" train --task reverse --normalizer sparsemax "${tiny[@]}" --steps 8 --out "$work/sp"
model="$work/sp/model.safetensors"
grep -q '"normalizer":"sparsemax"' <(head -c 4096 "$model" | tr -d '\\') || fail "the checkpoint does not record sparsemax"
expect 0 "| 4 |" -- "$attn" eval --model "$model" --eval-lengths 4 --samples 8
# The share of exactly-zero weights, reported by align --json (overall and per panel) and view
# --json (per map), equals the share counted from the weights they write.
expect 0 "heatmap" -- "$attn" align --model "$model" --input "5 9 3 17 4" --out "$work/a.svg" --json "$work/a.json"
expect 0 "view:" -- "$attn" view --model "$model" --input "5 9 3 17 4" --out "$work/v.html" --json "$work/v.json"
/usr/bin/python3 - "$work/a.json" "$work/v.json" <<'PY' || fail "zero_share differs from the weights' own share"
import json, sys
a = json.load(open(sys.argv[1]))
cells = [w for p in a["panels"] for row in p["weights"] for w in row]
assert cells and abs(a["zero_share"] - sum(w == 0 for w in cells) / len(cells)) < 1e-12, a["zero_share"]
for p in a["panels"]:
    own = [w for row in p["weights"] for w in row]
    assert abs(p["zero_share"] - sum(w == 0 for w in own) / len(own)) < 1e-12
v = json.load(open(sys.argv[2]))
maps = [m for h in v["hypotheses"] for m in h["maps"]]
assert maps, "no maps"
for m in maps:
    w = [x for layer in m["weights"] for head in layer for row in head for x in row]
    assert abs(m["zero_share"] - sum(x == 0 for x in w) / len(w)) < 1e-12, (m["name"], m["zero_share"])
PY
expect 0 "trained 4 steps" -- "$attn" train --task copy --attention luong --score concat --normalizer entmax --alpha 1.3 \
  "${tiny[@]}" --steps 4 --out "$work/ent"
grep -q '"alpha":1.3' <(head -c 4096 "$work/ent/model.safetensors" | tr -d '\\') || fail "the checkpoint does not record alpha"
expect 0 "trained 2 steps" -- "$attn" train --task copy --normalizer softmax "${tiny[@]}" --steps 2 --out "$work/soft"
if grep -q normalizer < <(head -c 4096 "$work/soft/model.safetensors"); then fail "a softmax checkpoint names a normaliser"; fi

# Refused, exit 2, before anything is written.
expect 2 "--alpha: entmax's alpha must be finite and > 1, got 1" -- "$attn" train --task copy --normalizer entmax \
  --alpha 1 "${tiny[@]}" --steps 2 --out "$work/bad1"
expect 2 "--alpha: entmax's alpha must be finite and > 1, got nan" -- "$attn" train --task copy --normalizer entmax \
  --alpha nan "${tiny[@]}" --steps 2 --out "$work/bad2"
expect 2 "unknown normaliser 'sparsemx': expected softmax, sparsemax, entmax15 or entmax" -- "$attn" train --task copy \
  --normalizer sparsemx "${tiny[@]}" --steps 2 --out "$work/bad3"
expect 2 "normalizer 'entmax15' needs bahdanau or luong attention with an additive" -- "$attn" train --task copy \
  --attention luong --score multihead --normalizer entmax15 "${tiny[@]}" --steps 2 --out "$work/bad4"
for d in bad1 bad2 bad3 bad4; do [[ ! -e "$work/$d" ]] || fail "a refused run wrote $d"; done
expect 1 "normaliser 'sparsemax' has no plain-PyTorch version here" -- "$attn" export --to torch --model "$model" \
  --out "$work/torch"
[[ ! -e "$work/torch" ]] || fail "a refused export wrote its folder"

# The classifiers' pooling and the Transformers take it too (a few steps on SST-2).
if have_data sst2/sentiment-train.gz sst2/sentiment-dev; then
  sst=(--task sst2 --data "$data" --batch 32 --steps 5 --train-limit 200 --dev-limit 20 --threads 1)
  expect 0 "trained 5 steps" -- "$attn" train "${sst[@]}" --model bilstm-attn --emb 16 --hidden 12 --normalizer sparsemax \
    --out "$work/pool"
  grep -q '"normalizer":"sparsemax"' <(head -c 4096 "$work/pool/model.safetensors" | tr -d '\\') ||
    fail "the bilstm-attn checkpoint does not record sparsemax"
  expect 0 "trained 5 steps" -- "$attn" train "${sst[@]}" --model transformer-cls --d-model 16 --ffn 32 \
    --normalizer entmax15 --out "$work/tcls"
  grep -q '"normalizer":"entmax15"' <(head -c 4096 "$work/tcls/model.safetensors" | tr -d '\\') ||
    fail "the transformer-cls checkpoint does not record entmax15"
  expect 0 "accuracy" -- "$attn" eval --model "$work/tcls/model.safetensors" --data "$data" --split dev
  expect 2 "--normalizer does not apply to --task sst2 --model bilstm" -- "$attn" train "${sst[@]}" --model bilstm \
    --normalizer sparsemax --out "$work/bad5"
fi

finish "normalizer CLI"
