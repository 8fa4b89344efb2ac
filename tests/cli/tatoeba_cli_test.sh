#!/usr/bin/env bash
# `attn train --task translate --src fr --tgt en` on Tatoeba's file layout (a generated
# tatoeba-fra-eng/fra.txt.gz of a few hundred pairs, so no shared data is needed): it trains in
# seconds, the checkpoint records the corpus, and eval (dev and test, whose sizes are checked
# against the documented hash split computed here in Python), translate, align, view and
# explain --data work on it; eval's BLEU by source length matches attn bleu per bucket, and
# attn plot buckets draws it; a checkpoint without the corpus field loads as Multi30k, as before. Bad input: a bad
# line of fra.txt.gz (exit 1, its line number), a pair Tatoeba has not (exit 2, naming the
# supported ones), an unknown split.
# Usage: tatoeba_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
source "$(dirname "$0")/lib.sh"

mkdir -p "$work/data/tatoeba-fra-eng"
# 400 lines, a word-for-word grammar (learnable in a few hundred steps), 1 to 12 French words,
# one exact duplicate pair and one French sentence with two English translations; then the
# expected number of pairs per split: FNV-1a 64 of the French sentence mod 100, 0-1 test, 2-3
# dev (docs/data.md), duplicates left out.
/usr/bin/python3 - "$work/data/tatoeba-fra-eng/fra.txt.gz" "$work/counts" <<'PY'
import gzip, random, sys
rng = random.Random(7)
nouns = {"chat": "cat", "chien": "dog", "homme": "man", "femme": "woman", "enfant": "child", "oiseau": "bird"}
verbs = {"voit": "sees", "aime": "likes", "suit": "follows", "cherche": "seeks"}
def clause():
    a, b, v = rng.choice(list(nouns)), rng.choice(list(nouns)), rng.choice(list(verbs))
    return f"le {a} {v} le {b}", f"the {nouns[a]} {verbs[v]} the {nouns[b]}"
pairs = []
while len(pairs) < 398:
    parts = [clause() for _ in range(rng.choice([1, 1, 2, 3]))]
    fr, en = " et ".join(p[0] for p in parts), " and ".join(p[1] for p in parts)
    pairs.append((en[0].upper() + en[1:] + ".", fr[0].upper() + fr[1:] + "."))
pairs.append(pairs[0])                          # an exact duplicate
pairs.append(("The cat looks at the dog.", pairs[1][1]))  # a second translation, with attribution
lines = [f"{en}\t{fr}" for en, fr in pairs[:-1]] + [f"{pairs[-1][0]}\t{pairs[-1][1]}\tCC-BY 2.0 (France)"]
with gzip.open(sys.argv[1], "wt", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
def fnv(b):
    h = 14695981039346656037
    for c in b:
        h = ((h ^ c) * 1099511628211) % 2**64
    return h
splits, seen = {"train": [], "dev": [], "test": []}, set()
for en, fr in pairs:
    if (en, fr) in seen: continue
    seen.add((en, fr))
    b = fnv(fr.encode()) % 100
    splits["test" if b < 2 else "dev" if b < 4 else "train"].append((fr, en))
open(sys.argv[2], "w").write(" ".join(str(len(splits[s])) for s in ("train", "dev", "test")))
for lang, k in (("fr", 0), ("en", 1)):
    open(f"{sys.argv[2]}.train.{lang}", "w").write("".join(p[k] + "\n" for p in splits["train"]))
PY
read -r n_train n_dev n_test < "$work/counts"
((n_dev > 0 && n_test > 0)) || fail "the generated set has an empty split: $n_train $n_dev $n_test"

tiny=(--vocab-size 40 --max-tokens 1200 --warmup 5 --log-every 50 --emb 32 --hidden 48 --lr 5e-3 --threads 1)
# --data: the folder holding tatoeba-fra-eng/ (as ../shared/data).
expect 0 "best validation BLEU" -- "$attn" train --task translate --src fr --tgt en --data "$work/data" "${tiny[@]}" \
  --steps 150 --eval-every 150 --out "$work/run"
model="$work/run/model.safetensors"
grep -q '"corpus":"tatoeba"' <(head -c 4096 "$model" | tr -d '\\') || fail "the checkpoint does not record the corpus"
grep -q "$n_train training pairs" <("$attn" train --task translate --src fr --tgt en --data "$work/data/tatoeba-fra-eng" \
  "${tiny[@]}" --steps 1 --eval-every 1 --out "$work/run1" 2>&1) || fail "training did not read the $n_train train pairs"

# eval on dev and test: the documented split sizes; --data as the folder or the one holding it.
for split in dev test; do
  want=$([[ $split == dev ]] && echo "$n_dev" || echo "$n_test")
  for dir in "$work/data" "$work/data/tatoeba-fra-eng"; do
    "$attn" eval --model "$model" --data "$dir" --split "$split" --beam 2 --json > "$work/$split.json" || fail "eval $split failed"
    /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["split"] == sys.argv[2] and d["sentences"] == int(sys.argv[3]) and d["corpus"] == "tatoeba", d
assert d["metric"] == "bleu" and 0 <= d["bleu"] <= 100, d' "$work/$split.json" "$split" "$want" \
      || fail "eval --split $split --data $dir: $(cat "$work/$split.json")"
  done
done
expect 0 "rnn test ($n_test sentences, beam 5): BLEU = " -- "$attn" eval --model "$model" --data "$work/data"
# BLEU by source-length bucket: each bucket's BLEU is `attn bleu` on that bucket's lines (60
# training pairs: 5, 11 and 17 French words, so 6-10 is empty: no BLEU, count 0).
"$attn" eval --model "$model" --data "$work/data" --split train --limit 60 --beam 2 --json --hypotheses "$work/hyp.en" \
  > "$work/buckets.json" || fail "eval --split train failed"
/usr/bin/python3 - "$attn" "$work/buckets.json" "$work/hyp.en" "$work/counts.train.fr" "$work/counts.train.en" "$work" <<'PY' \
  || fail "eval's BLEU by source length"
import json, subprocess, sys
attn, result, hyp, src, ref, work = sys.argv[1:]
e = json.load(open(result))
hyps, srcs, refs = (open(p).read().splitlines() for p in (hyp, src, ref))
rows = [i * len(srcs) // 60 for i in range(60)]  # --limit 60: spread over the split (tatoeba.h)
srcs, refs = [srcs[i] for i in rows], [refs[i] for i in rows]
buckets = e["length_buckets"]
assert [b["words"] for b in buckets] == ["1-5", "6-10", "11-15", "16-20", "21-25", "26-30", "31+"], buckets
assert sum(b["sentences"] for b in buckets) == e["sentences"] == 60, buckets
scored = 0
for b in buckets:
    rows = [i for i, s in enumerate(srcs) if b["min_words"] <= len(s.split()) and (b["max_words"] is None or len(s.split()) <= b["max_words"])]
    assert b["sentences"] == len(rows), (b, len(rows))
    if not rows:
        assert b["bleu"] is None, b
        continue
    open(f"{work}/b.hyp", "w").write("".join(hyps[i] + "\n" for i in rows))
    open(f"{work}/b.ref", "w").write("".join(refs[i] + "\n" for i in rows))
    want = json.loads(subprocess.run([attn, "bleu", "--ref", f"{work}/b.ref", "--json"], stdin=open(f"{work}/b.hyp"),
                                     capture_output=True, check=True).stdout)["exact_score"]
    assert abs(b["bleu"] - want) < 1e-9, (b, want)
    scored += want > 0
assert buckets[1]["sentences"] == 0 and scored >= 1, buckets
PY
expect 0 "6-10                   0       -" -- "$attn" eval --model "$model" --data "$work/data" --split train --limit 60
expect 1 "unknown Tatoeba split 'test2016' (valid: train, dev, test)" -- "$attn" eval --model "$model" --data "$work/data" \
  --split test2016

# attn plot buckets: BLEU against source length for several eval results, the counts in the x
# labels (the SVG's description repeats them); bad input refused with one line, nothing written.
expect 0 "plot: $work/b.png" -- "$attn" plot buckets "$work/buckets.json" "$work/test.json" --labels "train 60,test" \
  --out "$work/b.png"
[[ "$(head -c 8 "$work/b.png" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] || fail "plot buckets wrote no PNG"
expect 0 "" -- "$attn" plot buckets "$work/buckets.json" --out "$work/b.svg"
counts=$(/usr/bin/python3 -c '
import json, sys
print(", ".join("%s n=%d" % (b["words"], b["sentences"]) for b in json.load(open(sys.argv[1]))["length_buckets"]))' \
  "$work/buckets.json")
grep -q "series: buckets; x ticks: $counts</desc>" "$work/b.svg" || fail "the SVG lacks the counts '$counts'"
echo '{"bleu": 3}' > "$work/nobuckets.json"
echo '{"length_buckets": [{"words": "1-5", "sentences": 0, "bleu": 4.0}]}' > "$work/badbucket.json"
echo '{"length_buckets": [{"words": "1-9", "sentences": 2, "bleu": 4.0}]}' > "$work/otherbuckets.json"
echo '{"length_buckets": [' > "$work/broken.json"
expect 1 "nobuckets.json: no \"length_buckets\" (write it with attn eval --json of a translation checkpoint)" -- \
  "$attn" plot buckets "$work/nobuckets.json" --out "$work/x.png"
expect 1 "badbucket.json: bucket 0 has no sentences but a BLEU" -- "$attn" plot buckets "$work/badbucket.json" --out "$work/x.png"
expect 1 "otherbuckets.json: its length buckets differ from those of $work/buckets.json" -- "$attn" plot buckets \
  "$work/buckets.json" "$work/otherbuckets.json" --out "$work/x.png"
expect 1 "broken.json is not valid JSON" -- "$attn" plot buckets "$work/broken.json" --out "$work/x.png"
expect 1 "missing.json: cannot open" -- "$attn" plot buckets "$work/missing.json" --out "$work/x.png"
expect 2 "--labels has 1 names for 2 result files" -- "$attn" plot buckets "$work/buckets.json" "$work/test.json" \
  --labels one --out "$work/x.png"
expect 2 "results is required" -- "$attn" plot buckets --out "$work/x.png"
expect 2 "--out is required" -- "$attn" plot buckets "$work/buckets.json"
expect 1 "unsupported picture format '.jpg'" -- "$attn" plot buckets "$work/buckets.json" --out "$work/x.jpg"
expect 2 "--out" -- "$attn" plot buckets "$work/buckets.json" --out "$work/buckets.json"
[[ ! -e "$work/x.png" && ! -e "$work/x.jpg" ]] || fail "a refused plot wrote a file"
grep -q length_buckets "$work/buckets.json" || fail "plot --out over its input replaced it"

# translate, align and view on the Tatoeba model.
printf 'Le chat voit le chien.\n\nLe chien aime le chat.\n' > "$work/in.fr"
"$attn" translate --model "$model" --beam 2 < "$work/in.fr" > "$work/out.en" || fail "translate failed"
[[ "$(wc -l < "$work/out.en")" == 3 && -z "$(sed -n 2p "$work/out.en")" ]] || fail "translate output: $(cat "$work/out.en")"
expect 0 "heatmap" -- "$attn" align --model "$model" --text "Le chat voit le chien." --out "$work/a.svg"
[[ -s "$work/a.svg" ]] || fail "align wrote no SVG"
expect 0 "view:" -- "$attn" view --model "$model" --text "Le chat voit le chien." --out "$work/v.html"
[[ -s "$work/v.html" ]] || fail "view wrote no page"
# explain over a split finds the model's corpus too (its dev split, as eval's).
expect 0 "## Verdict" -- "$attn" explain --model "$model" --data "$work/data" --split dev --limit 3 --out "$work/report"
grep -q "dev" "$work/report/report.json" || fail "explain's report does not name the dev split"

# A checkpoint without "corpus" (as every checkpoint before it) loads as Multi30k: eval then
# looks for Multi30k's files.
/usr/bin/python3 - "$model" "$work/old/model.safetensors" <<'PY' || fail "could not write the old-style checkpoint"
import json, os, shutil, struct, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(os.path.dirname(dst))
shutil.copy(os.path.join(os.path.dirname(src), "spm.model"), os.path.dirname(dst))
blob = open(src, "rb").read()
n = struct.unpack("<Q", blob[:8])[0]
header = json.loads(blob[8:8 + n])
attn = json.loads(header["__metadata__"]["attn"])
del attn["corpus"]
header["__metadata__"]["attn"] = json.dumps(attn)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + blob[8 + n:])
PY
expect 1 "raw/test_2016_flickr.fr.gz" -- "$attn" eval --model "$work/old/model.safetensors" --data "$work/data" --split test2016

# Bad input: a bad line names its number (exit 1, nothing written); a pair Tatoeba has not (exit 2).
mkdir -p "$work/bad"
printf 'Go.\tVa !\nHi.\tSalut !\nno tab here\n' | gzip > "$work/bad/fra.txt.gz"
expect 1 "fra.txt.gz:3: no tab (expected English<TAB>French, optionally <TAB>attribution)" -- "$attn" train \
  --task translate --src fr --tgt en --data "$work/bad" "${tiny[@]}" --steps 2 --out "$work/bad-run"
[[ ! -e "$work/bad-run" ]] || fail "a run refused for its data created its folder"
expect 2 "has no de-en pairs (supported: fr-en, en-fr" -- "$attn" train --task translate --src de --tgt en \
  --data "$work/data" "${tiny[@]}" --steps 2 --out "$work/bad-pair"
[[ ! -e "$work/bad-pair" ]] || fail "a refused run wrote its folder"

finish "Tatoeba CLI"
