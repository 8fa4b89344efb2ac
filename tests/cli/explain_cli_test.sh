#!/usr/bin/env bash
# attn explain: train a tiny bilstm-attn classifier on a slice of SST-2, explain a few test
# sentences (report.json / report.md), one sentence in the terminal and as JSON, and the bad
# inputs. Usage: explain_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
if [[ ! -f "$data/sst2/sentiment-test" ]]; then echo "no SST-2 data under $data: skipped"; exit 0; fi
source "$(dirname "$0")/lib.sh"

tiny=(--task sst2 --data "$data" --emb 16 --hidden 12 --batch 32 --steps 20 --log-every 10 --train-limit 800
      --dev-limit 50 --threads 1)
expect 0 "trained 20 steps" -- "$attn" train "${tiny[@]}" --model bilstm-attn --out "$work/attn"
expect 0 "trained 20 steps" -- "$attn" train "${tiny[@]}" --model bilstm-attn --encoder average --pooling dot \
  --out "$work/average"
expect 0 "trained 20 steps" -- "$attn" train "${tiny[@]}" --model bilstm --out "$work/bilstm"
expect 2 "--pooling does not apply" -- "$attn" train "${tiny[@]}" --model bilstm --pooling dot --out "$work/bad"
expect 2 "'pooling' must be additive, dot or uniform" -- "$attn" train "${tiny[@]}" --model bilstm-attn --pooling max --out "$work/bad"
# Wiegreffe & Pinter's uniform baseline: the attention frozen to 1/n.
expect 0 "trained 20 steps" -- "$attn" train "${tiny[@]}" --model bilstm-attn --pooling uniform --out "$work/uniform"
out="$("$attn" classify --model "$work/uniform/model.safetensors" --text "a gorgeous , witty film" --json)" || fail "uniform classify"
echo "$out" | /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
assert all(abs(a - 0.2) < 1e-7 for a in d["attention"]), d' || fail "uniform attention: $out"
m="$work/attn/model.safetensors"

# classify returns the pooling weights.
out="$("$attn" classify --model "$m" --text "a gorgeous , witty film" --json)" || fail "classify --json"
echo "$out" | /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
assert len(d["attention"]) == 5 and abs(sum(d["attention"]) - 1) < 1e-5, d' || fail "classify attention: $out"

# A split: report.json holds every figure and vector, and they recompute.
for model in attn average; do
  expect 0 "Jain & Wallace, SST BiLSTM+tanh" -- "$attn" explain --model "$work/$model/model.safetensors" --data "$data" \
    --split test --limit 12 --permutations 20 --ig-steps 10 --candidates 3 --adversarial-steps 50 \
    --out "$work/report-$model" --threads 1
  /usr/bin/python3 - "$work/report-$model" <<'PY' || fail "report of $model"
import json, math, sys
r = json.load(open(sys.argv[1] + "/report.json"))
md = open(sys.argv[1] + "/report.md").read()
assert r["sentences_explained"] == 12 and len(r["sentences"]) == 12, r["sentences_explained"]
assert "0.35 ± 0.21" in md and "| attn (this model) |" in md and "## Verdict" in md, md
assert "## Erasure (Serrano & Smith 2019)" in md and r["erasure"]["sentences"] >= 1, r["erasure"]
import os
for picture in ("tau", "erasure", "permutation", "adversarial"):
    for ext, magic in ((".png", b"\x89PNG"), (".svg", b"<?xml")):
        assert open(sys.argv[1] + "/" + picture + ext, "rb").read(5).startswith(magic), picture + ext
right = 0
for s in r["sentences"]:
    n = len(s["tokens"])
    assert len(s["attention"]) == n and len(s["gradient"]) == n and len(s["integrated_gradients"]) == n
    assert len(s["permutation_deltas"]) == 20
    # Jain & Wallace's adversary: 3 candidates, the reported one within |dy| <= 0.05 and its
    # JSD recomputed from its weights.
    adv = s["adversarial"]
    assert len(adv["final_jsd"]) == 3 and adv["delta"] <= 0.05 and 0 <= adv["jsd"] <= math.log(2) + 1e-6, adv
    a, b = adv["attention"], s["attention"]
    jsd = sum(0.5 * x * math.log(2 * x / (x + y)) for x, y in zip(a, b) if x > 0) + \
          sum(0.5 * y * math.log(2 * y / (x + y)) for x, y in zip(a, b) if y > 0)
    assert abs(jsd - adv["jsd"]) < 1e-5, (jsd, adv)
    # nlohmann writes NaN as null: every value is a finite number.
    for key in ("attention", "gradient", "integrated_gradients", "permutation_deltas"):
        assert all(isinstance(x, (int, float)) and math.isfinite(x) for x in s[key]), (key, s)
    assert abs(sum(s["attention"]) - 1) < 1e-4
    right += s["gold"] == s["label"]
    if n >= 2:  # Serrano & Smith: the top-attended deletion is that token's leave-one-out
        top = max(range(n), key=lambda i: (s["attention"][i], -i))
        assert abs(s["erasure"]["top_delta"] - s["leave_one_out"][top]) < 1e-7, s["erasure"]
    else:
        assert s["erasure"] is None
    if n >= 2:
        # τ-b of attention against leave-one-out, recomputed from the vectors (no ties here).
        a, l = s["attention"], s["leave_one_out"]
        sign = lambda v: (v > 0) - (v < 0)
        c = sum(sign(a[j] - a[i]) * sign(l[j] - l[i]) for i in range(n) for j in range(i + 1, n))
        tx = sum(1 for i in range(n) for j in range(i + 1, n) if a[i] == a[j])
        ty = sum(1 for i in range(n) for j in range(i + 1, n) if l[i] == l[j])
        n0 = n * (n - 1) / 2
        if tx < n0 and ty < n0:
            assert abs(s["tau"]["attention-loo"]["tau"] - c / math.sqrt((n0 - tx) * (n0 - ty))) < 1e-6, s
assert abs(r["accuracy"] - right / 12) < 1e-12
assert r["adversarial"]["sentences"] == sum(len(s["tokens"]) >= 2 for s in r["sentences"]), r["adversarial"]
assert "Adversarial attention (Jain & Wallace" in md, md
taus = [s["tau"]["gradient-loo"]["tau"] for s in r["sentences"] if s["tau"]["gradient-loo"]["tau"] is not None]
assert abs(r["tau"]["gradient-loo"]["mean"] - sum(taus) / len(taus)) < 1e-9
PY
done
out="$("$attn" explain --model "$m" --data "$data" --split dev --limit 3 --permutations 5 --ig-steps 5 --out "$work/r3" --json)" \
  || fail "explain --json"
echo "$out" | /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
assert d["sentences_explained"] == 3 and "sentences" not in d and d["run"]["split"] == "dev", d' || fail "summary json: $out"

# --min-length: the dev sentences shorter than 20 tokens left out before --limit, and counted.
out="$("$attn" explain --model "$m" --data "$data" --split dev --min-length 20 --limit 3 --permutations 5 --ig-steps 5 \
  --adversarial-steps 0 --out "$work/r4" --json)" || fail "explain --min-length"
/usr/bin/python3 - "$work/r4/report.json" "$data/sst2/sentiment-dev" <<'PY' || fail "--min-length did not leave out the short sentences"
import json, sys
r = json.load(open(sys.argv[1]))
short = sum(len(l.rsplit("\t", 1)[0].split()) < 20 for l in open(sys.argv[2], encoding="utf-8") if l.strip())
assert r["run"]["min_length"] == 20 and r["run"]["shorter_than_min_length"] == short, (r["run"], short)
assert all(len(s["tokens"]) >= 20 for s in r["sentences"]) and len(r["sentences"]) == 3, r["sentences"]
PY
expect 2 "--min-length must be >= 0, got -1" -- "$attn" explain --model "$m" --data "$data" --min-length -1 --out "$work/x"
expect 2 "--min-length and --split apply to --data" -- "$attn" explain --model "$m" --text "fine" --min-length 5

# One sentence in the terminal, and as JSON; a one-token sentence says why τ is undefined.
expect 0 "grad x in" -- "$attn" explain --model "$m" --text "a gorgeous , witty film"
expect 0 "undefined (fewer than 2 tokens)" -- "$attn" explain --model "$m" --text "brilliant"
out="$("$attn" explain --model "$m" --text "a dull mess" --json)" || fail "explain --text --json"
echo "$out" | /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
assert d["tokens"] == ["a", "dull", "mess"] and len(d["leave_one_out"]) == 3 and d["gold"] is None, d' || fail "$out"
out="$("$attn" explain --model "$m" --text "brilliant" --json)" || fail "one token --json"
echo "$out" | /usr/bin/python3 -c '
import json, math, sys
d = json.loads(sys.stdin.read())
assert d["leave_one_out"] is None and d["tau"]["attention-gradient"]["undefined"] == "fewer than 2 tokens", d
assert all(math.isfinite(x) for x in d["attention"] + d["gradient"] + d["integrated_gradients"]), d' \
  || fail "one-token json: $out"

# transformer-cls: the same measures (full gradient, no permutations), rollout and flow of
# [CLS], the per-head table; the vectors line up with the tokens.
expect 0 "trained 4 steps" -- "$attn" train --task sst2 --model transformer-cls --data "$data" --d-model 16 --heads 2 \
  --ffn 32 --enc-layers 2 --steps 4 --train-limit 200 --dev-limit 20 --threads 1 --out "$work/tf"
expect 0 "## Heads" -- "$attn" explain --model "$work/tf/model.safetensors" --data "$data" --split test --limit 6 \
  --ig-steps 5 --out "$work/report-tf" --threads 1
/usr/bin/python3 - "$work/report-tf" <<'PY' || fail "report of transformer-cls"
import json, math, sys
r = json.load(open(sys.argv[1] + "/report.json"))
md = open(sys.argv[1] + "/report.md").read()
assert r["sentences_explained"] == 6 and r["permutation"] is None, r["permutation"]
assert "| rollout |" in md and "| flow |" in md and "Random permutation" not in md, md
import os
assert os.path.exists(sys.argv[1] + "/tau.png") and os.path.exists(sys.argv[1] + "/erasure.svg")
assert not os.path.exists(sys.argv[1] + "/permutation.png")  # no permutation test for transformer-cls
assert len(r["heads"]) == 2 * 2 and all(0 <= h["cls"] <= 1 for h in r["heads"]), r["heads"]
for s in r["sentences"]:
    n = len(s["tokens"])
    assert len(s["rollout"]) == n and len(s["flow"]) == n and len(s["attention"]) == n, s
    assert s["permutation_deltas"] == [] and s["permutation_median"] is None, s
    assert all(math.isfinite(x) and x >= 0 for x in s["rollout"] + s["flow"]), s
    # The flow row over [CLS] + tokens sums to 1: over the tokens, at most 1.
    assert sum(s["flow"]) <= 1 + 1e-5 and sum(s["rollout"]) <= 1 + 1e-5, s
    if n >= 2:
        assert s["tau"]["rollout-loo"]["tau"] is None or -1 <= s["tau"]["rollout-loo"]["tau"] <= 1, s
PY
expect 0 "rollout      flow" -- "$attn" explain --model "$work/tf/model.safetensors" --text "a gorgeous , witty film" \
  --picture "$work/tf-sentence.png"
grep -q PNG < <(head -c 4 "$work/tf-sentence.png") || fail "--picture wrote no PNG"
expect 0 "grad x in" -- "$attn" explain --model "$m" --text "brilliant" --picture "$work/one.svg"
grep -q "<svg" "$work/one.svg" || fail "--picture wrote no SVG for a one-token sentence"
expect 2 "--picture applies to --text" -- "$attn" explain --model "$m" --data "$data" --out "$work/x" --picture "$work/p.png"
expect 1 "" -- "$attn" explain --model "$m" --text "good film" --picture "$work/p.bmp"

# Wiegreffe & Pinter's diagnostic: the average model with its own, uniform and imposed weights.
avg="$work/average/model.safetensors"
expect 0 "| uniform (1/n) |" -- "$attn" explain --diagnostic --model "$avg" --attention-from "$m" --data "$data" \
  --split test --limit 30 --out "$work/diag"
/usr/bin/python3 - "$work/diag" <<'PY' || fail "diagnostic.json"
import json, sys
d = json.load(open(sys.argv[1] + "/diagnostic.json"))
assert d["sentences"] == 30 and set(d["accuracy"]) == {"average_own_attention", "average_uniform",
    "average_imposed_attention", "attention_from_model"}, d
assert all(0 <= v <= 1 and abs(v * 30 - round(v * 30)) < 1e-9 for v in d["accuracy"].values()), d
PY
# The retrained form: average models trained with uniform pooling and with m's attention frozen in.
expect 0 "trained 20 steps" -- "$attn" train "${tiny[@]}" --model bilstm-attn --encoder average --pooling uniform \
  --out "$work/avg-uniform"
expect 0 "trained 20 steps" -- "$attn" train "${tiny[@]}" --model bilstm-attn --encoder average --attention-from "$m" \
  --out "$work/avg-imposed"
grep -q "^attention-from = \"$m\"$" "$work/avg-imposed/config.toml" || fail "config.toml lacks attention-from"
# config.toml repeats the run: the same model, byte for byte.
expect 0 "trained 20 steps" -- "$attn" train --config "$work/avg-imposed/config.toml" --out "$work/avg-imposed-again"
/usr/bin/python3 - "$work/avg-imposed" "$work/avg-imposed-again" <<'PY' || fail "--config of an --attention-from run"
import json, struct, sys
def tensors(path):
    raw = open(path + "/model.safetensors", "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n]); header.pop("__metadata__", None)
    return header, raw[8 + n:]
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
assert a == b, "the rerun differs"
assert not any(k.startswith("pooling.") for k in a[0]), a[0].keys()
PY
expect 0 "| uniform weights (" -- "$attn" explain --diagnostic --model "$avg" --attention-from "$m" --data "$data" \
  --split test --limit 30 --trained-uniform "$work/avg-uniform/model.safetensors" \
  --trained-imposed "$work/avg-imposed/model.safetensors" --out "$work/diag-trained"
/usr/bin/python3 - "$work/diag-trained" "$work/diag" <<'PY' || fail "diagnostic.json trained"
import json, sys
d = json.load(open(sys.argv[1] + "/diagnostic.json"))
t = d["trained"]
assert set(t) == {"average_own_attention", "uniform", "imposed"}, t
assert t["average_own_attention"] == d["accuracy"]["average_own_attention"], d
# The test-time rows are the same as without the trained variants.
assert d["accuracy"] == json.load(open(sys.argv[2] + "/diagnostic.json"))["accuracy"], d
assert all(abs(v["accuracy"] * 30 - round(v["accuracy"] * 30)) < 1e-9 for v in (t["uniform"], t["imposed"])), t
PY
avg_tiny=(--model bilstm-attn --encoder average --out "$work/bad")
expect 2 "--attention-from: $work/none.safetensors" -- "$attn" train "${tiny[@]}" "${avg_tiny[@]}" \
  --attention-from "$work/none.safetensors"
expect 2 "is a 'bilstm' classifier; it needs a bilstm-attn checkpoint" -- "$attn" train "${tiny[@]}" "${avg_tiny[@]}" \
  --attention-from "$work/bilstm/model.safetensors"
expect 2 "has another vocabulary" -- "$attn" train "${tiny[@]}" "${avg_tiny[@]}" --min-freq 2 --attention-from "$m"
expect 2 "--attention-from needs --model bilstm-attn --encoder average" -- "$attn" train "${tiny[@]}" \
  --model bilstm-attn --attention-from "$m" --out "$work/bad"
expect 2 "--attention-from replaces the pooling weights" -- "$attn" train "${tiny[@]}" "${avg_tiny[@]}" \
  --pooling additive --attention-from "$m"
expect 2 "--attention-from does not apply" -- "$attn" train "${tiny[@]}" --model bilstm --attention-from "$m" \
  --out "$work/bad"
expect 1 "--trained-uniform $m is not an average-encoder" -- "$attn" explain --diagnostic --model "$avg" \
  --attention-from "$m" --trained-uniform "$m" --data "$data" --limit 3
expect 2 "--trained-imposed applies to --diagnostic" -- "$attn" explain --model "$avg" --data "$data" --out "$work/x" \
  --trained-imposed "$work/avg-imposed/model.safetensors"
expect 2 "--diagnostic needs --attention-from" -- "$attn" explain --diagnostic --model "$avg" --data "$data"
expect 2 "--attention-from applies to --diagnostic" -- "$attn" explain --model "$avg" --attention-from "$m" --data "$data" --out "$work/x"
expect 1 "is not a bilstm-attn checkpoint with --encoder average" -- "$attn" explain --diagnostic --model "$m" \
  --attention-from "$m" --data "$data"
expect 1 "--attention-from needs a bilstm-attn checkpoint" -- "$attn" explain --diagnostic --model "$avg" \
  --attention-from "$work/bilstm/model.safetensors" --data "$data"
expect 2 "--adversarial-steps must be >= 0" -- "$attn" explain --model "$m" --text "good" --adversarial-steps -1
expect 2 "--candidates must be >= 1, got 0" -- "$attn" explain --model "$m" --text "good" --candidates 0
expect 0 "adversarial attention (5 candidates)" -- "$attn" explain --model "$m" --text "a gorgeous , witty film"

# Bad input.
expect 2 "--limit must be >= 1, got 0" -- "$attn" explain --model "$m" --data "$data" --limit 0 --out "$work/x"
expect 2 "--limit must be >= 1, got -3" -- "$attn" explain --model "$m" --data "$data" --limit -3 --out "$work/x"
expect 2 "give exactly one of --text or --data" -- "$attn" explain --model "$m"
expect 2 "--data needs --out" -- "$attn" explain --model "$m" --data "$data"
expect 2 "--split must be dev or test" -- "$attn" explain --model "$m" --data "$data" --split train --out "$work/x"
expect 2 "--text has no tokens" -- "$attn" explain --model "$m" --text "   "
expect 1 "attn explain supports 'bilstm-attn' and 'transformer-cls'" -- "$attn" explain --model "$work/bilstm/model.safetensors" --text "good"
expect 1 "" -- "$attn" explain --model "$work/missing.safetensors" --text "good"
finish explain
