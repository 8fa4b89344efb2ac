#!/usr/bin/env bash
# attn train --task sst2 --embeddings FILE: vectors the test writes (fastText .vec, GloVe,
# word2vec binary) for a slice of SST-2; the coverage line, the rows copied into the model,
# --freeze-embeddings keeping them, the file's sha256 and coverage in the checkpoint, and the
# errors (a dimension other than --emb naming both, no word found, --freeze-embeddings alone).
# Usage: embeddings_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
source "$(dirname "$0")/lib.sh"

expect 2 "--freeze-embeddings needs --embeddings FILE" -- "$attn" train --task sst2 --data "$work" --freeze-embeddings \
  --out "$work/x"
have_data sst2/sentiment-train.gz sst2/sentiment-dev || finish "embeddings CLI"

# Vectors of 8 dimensions for 60 % of the words of the first 300 training lines, seeded.
/usr/bin/python3 - "$data/sst2/sentiment-train.gz" "$work" <<'PY' || fail "could not write the vector files"
import gzip, random, struct, sys
words = []
for line in list(gzip.open(sys.argv[1], "rt", encoding="utf-8"))[:300]:
    for w in line.rsplit("\t", 1)[0].split():
        if w not in words:
            words.append(w)
rng = random.Random(1)
keep = words[: int(len(words) * 0.6)]
vec = {w: [round(rng.uniform(-1, 1), 4) for _ in range(8)] for w in keep}
with open(sys.argv[2] + "/v.vec", "w") as f:
    f.write(f"{len(vec) + 1} 8\n")
    for w, v in vec.items():
        f.write(w + " " + " ".join(map(str, v)) + " \n")
    f.write("zzzunseen " + " ".join(["0.5"] * 8) + "\n")
with open(sys.argv[2] + "/v.glove.txt", "w") as f:
    for w, v in vec.items():
        f.write(w + " " + " ".join(map(str, v)) + "\n")
with open(sys.argv[2] + "/v.bin", "wb") as f:
    f.write(f"{len(vec)} 8\n".encode())
    for w, v in vec.items():
        f.write(w.encode() + b" " + struct.pack("<8f", *v) + b"\n")
with open(sys.argv[2] + "/few.vec", "w") as f:
    f.write("2 8\n")
    for w in keep[:2]:
        f.write(w + " " + " ".join(map(str, vec[w])) + "\n")
with open(sys.argv[2] + "/none.vec", "w") as f:
    f.write("1 8\nzzzunseen " + " ".join(["0.5"] * 8) + "\n")
import json
json.dump(vec, open(sys.argv[2] + "/vectors.json", "w"))
PY
tiny=(train --task sst2 --model bilstm-attn --data "$data" --hidden 6 --steps 3 --eval-every 3 --batch 16
      --train-limit 300 --dev-limit 20 --threads 1)

for f in v.vec v.glove.txt v.bin; do
  expect 0 "of the training tokens" -- "$attn" "${tiny[@]}" --emb 8 --embeddings "$work/$f" --out "$work/run-$f"
done
out="$("$attn" "${tiny[@]}" --emb 8 --embeddings "$work/v.vec" --freeze-embeddings --out "$work/frozen" 2>&1)"
[[ "$out" == *"(word2vec text / fastText .vec, "*"; frozen"* ]] || fail "no coverage line: $out"

# The checkpoint: the file's sha256 and coverage; frozen rows equal the file's, trained rows moved.
/usr/bin/python3 - "$work" "$(sha256sum "$work/v.vec" | cut -c1-64)" <<'PY' || fail "the checkpoint's embeddings are wrong"
import json, struct, sys
work, sha = sys.argv[1], sys.argv[2]
def load(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = json.loads(header["__metadata__"]["attn"])
    info = header["embedding.weight"]
    V, E = info["shape"]
    a, b = info["data_offsets"]
    flat = struct.unpack(f"<{V * E}f", raw[8 + n + a:8 + n + b])
    vocab = meta["vocabulary"]["tokens"]
    return meta, {w: flat[i * E:(i + 1) * E] for i, w in enumerate(vocab)}
vec = json.load(open(work + "/vectors.json"))
close = lambda a, b: all(abs(x - y) < 1e-6 for x, y in zip(a, b))
meta, rows = load(work + "/frozen/model.safetensors")
e = meta["embeddings"]
assert e["sha256"] == sha and e["file"] == "v.vec" and e["frozen"] is True, e
assert e["dim"] == 8 and e["file_words"] == e["found"] + 1, e
assert 0.55 < e["type_coverage"] < 0.65 and e["token_coverage"] > e["type_coverage"], e
assert all(close(rows[w], v) for w, v in vec.items()), "a frozen row differs from the file"
_, trained = load(work + "/run-v.vec/model.safetensors")
moved = sum(not close(trained[w], v) for w, v in vec.items())
assert moved > 0, "not frozen, yet no row moved"
PY

expect 1 "--embeddings $work/v.vec has 8-dimensional vectors, but --emb is 16; give --emb 8" -- \
  "$attn" "${tiny[@]}" --emb 16 --embeddings "$work/v.vec" --out "$work/dim"
expect 1 "none of the vocabulary's" -- "$attn" "${tiny[@]}" --emb 8 --embeddings "$work/none.vec" --out "$work/none"
expect 0 "warning: --embeddings covers only" -- "$attn" "${tiny[@]}" --emb 8 --embeddings "$work/few.vec" --out "$work/few"
printf '9 8\nthe 1 2 3 4 5 6 7 8\n' >"$work/count.vec"
expect 1 "count.vec: the header says 9 words, the file has 1" -- "$attn" "${tiny[@]}" --emb 8 --embeddings "$work/count.vec" \
  --out "$work/bad"
finish "embeddings CLI"
