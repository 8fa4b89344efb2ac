#!/usr/bin/env bash
# attn explain on encoder-decoders: a tiny copy-task seq2seq model, and tiny RNN and
# Transformer translators trained on a tiny parallel text written here (no data set needed):
# one source in the terminal and as JSON, a report (report.json's τ recomputed from its
# vectors, report.md, the pictures), and the bad inputs.
# Usage: explain_seq2seq_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-}"
source "$(dirname "$0")/lib.sh"

# report.json: every target token's τ recomputes from its vectors (τ-b written out here), the
# agreement counts from the argmaxes, and each row has one value per source token.
check_report() {
  /usr/bin/python3 - "$1" "$2" <<'EOF' || fail "$1: report.json does not recompute"
import json, math, sys
r = json.load(open(sys.argv[1] + "/report.json"))
assert r["sources_explained"] == int(sys.argv[2]), r["sources_explained"]
def tau_b(x, y):
    n = len(x); c = d = tx = ty = 0
    for i in range(n):
        for j in range(i + 1, n):
            a, b = (x[i] > x[j]) - (x[i] < x[j]), (y[i] > y[j]) - (y[i] < y[j])
            if a == 0 and b == 0: continue
            if a == 0: tx += 1
            elif b == 0: ty += 1
            elif a == b: c += 1
            else: d += 1
    return (c - d) / math.sqrt((c + d + tx) * (c + d + ty))
def argmax(v): return max(range(len(v)), key=lambda i: (v[i], -i))
agree = {"attention-gradient": 0, "attention-loo": 0, "gradient-loo": 0}
tokens = 0
for p in r["pairs"]:
    S = len(p["source_ids"])
    for t in p["targets"]:
        rows = {"attention": t["attention"], "gradient": [abs(g) for g in t["gradient"]], "loo": t["loo"]}
        assert len(rows["attention"]) == S and len(rows["gradient"]) == S and len(rows["loo"]) == S
        assert abs(sum(rows["attention"]) - 1) < 1e-4, rows["attention"]
        assert t["log_prob"] <= 1e-6
        tokens += 1
        for name in agree:
            a, b = name.split("-")
            agree[name] += argmax(rows[a]) == argmax(rows[b])
            k = t["tau"][name]
            if "tau" in k:
                assert abs(k["tau"] - tau_b(rows[a], rows[b])) < 1e-6, (name, k, rows)
assert tokens == r["target_tokens"], (tokens, r["target_tokens"])
for name, n in agree.items():
    assert r["alignment_agreement"][name]["agreed"] == n, (name, n, r["alignment_agreement"][name])
assert set(r["tau"]) == set(agree), r["tau"]
EOF
  grep -q "## Verdict" "$1/report.md" || fail "$1/report.md has no verdict"
  for f in tau.png tau.svg pair.png pair.svg; do [[ -s "$1/$f" ]] || fail "$1/$f missing"; done
}

# A copy-task model with attention, and one without.
tiny=(--task copy --min-len 3 --max-len 7 --emb 16 --hidden 24 --batch 16 --steps 60 --log-every 30 --eval-every 60
      --threads 1)
expect 0 "trained 60 steps" -- "$attn" train "${tiny[@]}" --out "$work/copy"
expect 0 "trained 60 steps" -- "$attn" train "${tiny[@]}" --attention none --out "$work/none"
m="$work/copy/model.safetensors"
expect 0 "tau attention-gradient" -- "$attn" explain --model "$m" --input "5 9 3 17"
out="$("$attn" explain --model "$m" --input "5 9 3 17" --json)" || fail "explain --input --json"
echo "$out" | /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
assert d["source_ids"] == [5, 9, 3, 17] and d["targets"], d
assert all(len(t["attention"]) == 4 and len(t["gradient"]) == 4 and len(t["loo"]) == 4 for t in d["targets"]), d' \
  || fail "explain --input --json: $out"
expect 0 "no leave-one-out" -- "$attn" explain --model "$m" --input "12"
expect 0 "" -- "$attn" explain --model "$m" --input "5 9 3 17" --picture "$work/one.svg"
[[ -s "$work/one.svg" ]] || fail "--picture wrote nothing"
expect 0 "## Verdict" -- "$attn" explain --model "$m" --limit 6 --out "$work/copy-report"
check_report "$work/copy-report" 6
"$attn" explain --model "$m" --limit 3 --out "$work/copy-json" --json | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["sources_explained"] == 3 and "pairs" not in d and d["run"]["split"] == "generated", d' \
  || fail "explain --limit --json summary"

# Bad input.
expect 1 "bahdanau or luong" -- "$attn" explain --model "$work/none/model.safetensors" --input "5 9 3"
expect 2 "--limit must be >= 1, got 0" -- "$attn" explain --model "$m" --limit 0 --out "$work/x"
expect 2 "--limit must be >= 1, got -2" -- "$attn" explain --model "$m" --limit -2 --out "$work/x"
expect 2 "symbols" -- "$attn" explain --model "$m" --input "  "
expect 2 "outside the vocabulary" -- "$attn" explain --model "$m" --input "5 99"
expect 2 "--text is for translation checkpoints" -- "$attn" explain --model "$m" --text "5 9"
expect 2 "a report needs --out" -- "$attn" explain --model "$m" --limit 3
expect 2 "give --input" -- "$attn" explain --model "$m"
expect 2 "--data is for translation checkpoints" -- "$attn" explain --model "$m" --data "$work" --out "$work/x"
[[ ! -e "$work/x" ]] || fail "a refused explain run created its output directory"

# A tiny parallel text: a word-for-word "language" (de) and its English, 200 training pairs.
mkdir -p "$work/par/raw"
/usr/bin/python3 - "$work/par/raw" <<'EOF'
import gzip, random, sys
words = {"hund": "dog", "katze": "cat", "haus": "house", "baum": "tree", "rot": "red", "blau": "blue",
         "gross": "big", "klein": "small", "laeuft": "runs", "schlaeft": "sleeps", "der": "the", "ein": "a"}
rng = random.Random(7)
de = list(words)
for split, n in (("train", 200), ("val", 20), ("test_2016_flickr", 10)):
    src, tgt = [], []
    for _ in range(n):
        s = [rng.choice(de) for _ in range(rng.randint(2, 5))]
        src.append(" ".join(s)); tgt.append(" ".join(words[w] for w in s))
    for lang, lines in (("de", src), ("en", tgt)):
        with gzip.open(f"{sys.argv[1]}/{split}.{lang}.gz", "wt") as f: f.write("\n".join(lines) + "\n")
EOF
common=(--task translate --data "$work/par" --vocab-size 40 --max-tokens 400 --steps 40 --lr 3e-3 --warmup 4
        --eval-every 40 --eval-sentences 5 --log-every 20 --threads 1)
expect 0 "best validation BLEU" -- "$attn" train "${common[@]}" --model rnn --emb 16 --hidden 24 --out "$work/rnn"
expect 0 "best validation BLEU" -- "$attn" train "${common[@]}" --model transformer --d-model 16 --heads 2 --ffn 32 \
  --enc-layers 1 --dec-layers 2 --out "$work/tf"
for run in rnn tf; do
  tm="$work/$run/model.safetensors"
  [[ -f "$tm" ]] || { fail "$run: no model"; continue; }
  expect 0 "tau attention-gradient" -- "$attn" explain --model "$tm" --text "der hund laeuft"
  expect 0 "## Verdict" -- "$attn" explain --model "$tm" --data "$work/par" --split test --limit 5 --out "$work/$run-report"
  check_report "$work/$run-report" 5
  expect 2 "--text has no tokens" -- "$attn" explain --model "$tm" --text "   "
  expect 2 "--input is for synthetic-task" -- "$attn" explain --model "$tm" --input "5 9"
  expect 2 "give --text" -- "$attn" explain --model "$tm"
  expect 2 "--picture applies to --text" -- "$attn" explain --model "$tm" --data "$work/par" --out "$work/y" --picture "$work/p.png"
done
grep -q "last decoder layer, averaged over heads" "$work/tf-report/report.md" || fail "the Transformer report does not say which attention"
expect 2 "--limit must be >= 1, got 0" -- "$attn" explain --model "$work/rnn/model.safetensors" --data "$work/par" --limit 0 --out "$work/x"

finish "explain_seq2seq_cli_test"
