#!/usr/bin/env bash
# Sparse normalisers against softmax on the synthetic copy and reverse tasks (docs/results.md,
# "Sparse normalisers"): one seed, a small budget, the same for each normaliser. Per model:
# token and sequence accuracy of greedy decoding at source lengths 10 and 20 (attn eval), and
# the share of exactly-zero attention weights over the greedy alignments of 40 random test
# sources (attn align --json). Prints a Markdown table.
#   bash bench/normalizers.sh [build/attn] [steps] [out-dir]
set -euo pipefail
attn="${1:-build/attn}"
steps="${2:-600}"
out="${3:-$(mktemp -d)}"
common=(--hidden 64 --emb 32 --min-len 5 --max-len 20 --batch 32 --lr 3e-3 --seed 1 --log-every 1000
        --eval-every 100000 --eval-samples 64 --threads 2)
echo "| task | normaliser | token acc. (len 10 / 20) | sequence acc. (len 10 / 20) | zero weights | train s |"
echo "|---|---|---|---|---|---|"
for task in copy reverse; do
  for norm in softmax sparsemax entmax15; do
    dir="$out/$task-$norm"
    start=$SECONDS
    "$attn" train --task "$task" --normalizer "$norm" "${common[@]}" --steps "$steps" --out "$dir" >/dev/null
    seconds=$((SECONDS - start))
    "$attn" eval --model "$dir/model.safetensors" --eval-lengths 10,20 --samples 200 --json >"$dir/eval.json"
    # 40 random test sources of length 5..20 over the content symbols 3..31 (data/tasks.h), seed 7.
    /usr/bin/python3 -c 'import random; r = random.Random(7)
for _ in range(40): print(" ".join(str(r.randint(3, 31)) for _ in range(r.randint(5, 20))))' >"$dir/inputs.txt"
    i=0
    while read -r line; do
      "$attn" align --model "$dir/model.safetensors" --input "$line" --out "$dir/a$i.svg" --json "$dir/a$i.json" >/dev/null
      i=$((i + 1))
    done <"$dir/inputs.txt"
    /usr/bin/python3 - "$dir" "$task" "$norm" "$seconds" <<'PY'
import glob, json, sys
d, task, norm, seconds = sys.argv[1:]
e = {r["length"]: r for r in json.load(open(f"{d}/eval.json"))["lengths"]}
cells = [w for f in glob.glob(f"{d}/a*.json") for p in json.load(open(f))["panels"] for row in p["weights"] for w in row]
zero = sum(w == 0 for w in cells) / len(cells)
print(f"| {task} | {norm} | {100 * e[10]['token_accuracy']:.1f} / {100 * e[20]['token_accuracy']:.1f} % | "
      f"{100 * e[10]['sequence_accuracy']:.1f} / {100 * e[20]['sequence_accuracy']:.1f} % | {100 * zero:.1f} % of {len(cells)} | {seconds} |")
PY
  done
done
