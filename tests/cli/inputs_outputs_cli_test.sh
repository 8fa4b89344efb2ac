#!/usr/bin/env bash
# Issue 34 (defects 2, 3, 4, 8, 10, 12 and two of 13): what attn reads and where it writes,
# run as a user would (docs/reliability.md, sections 1 and 3). Each check failed before
# its fix. Usage: inputs_outputs_cli_test.sh path/to/attn   (the LM part skips without data)
set -uo pipefail
attn="$1"
data="${ATTN_DATA_DIR:-$(dirname "$0")/../../../shared/data}"
source "$(dirname "$0")/lib.sh"

# one_line CODE "fragment" -- command...: as expect, and the output is one line without an ESC.
one_line() {
  local code="$1" fragment="$2"; shift 3
  local out rc
  out="$("$@" 2>&1)"; rc=$?
  [[ $rc == "$code" && "$out" == *"$fragment"* ]] || fail "'$*' exited $rc, expected $code with '$fragment': $out"
  [[ $(printf '%s\n' "$out" | wc -l) == 1 ]] || fail "'$*' printed more than one line: $out"
  [[ "$out" != *$'\e'* ]] || fail "'$*' printed an ESC: $(printf '%q' "$out")"
}
# same FILE COPY: FILE still holds the bytes of COPY.
same() { cmp -s "$1" "$2" || fail "$1 was changed"; }

tiny=(--hidden 16 --emb 8 --min-len 3 --max-len 6 --batch 8 --log-every 2 --eval-every 4 --eval-samples 16 --threads 1)
expect 0 "trained 4 steps" -- "$attn" train --task copy --attention bahdanau "${tiny[@]}" --steps 4 --out "$work/run"
model="$work/run/model.safetensors"
cp "$model" "$work/model.copy"

# --- Defect 4: an output that names an input is refused before the work; the input stays. ---
one_line 2 "--out $model: is also an input of this command" -- "$attn" view --model "$model" --input "5 9 3" --out "$model"
one_line 2 "--json $model: is also an input" -- "$attn" view --model "$model" --input "5 9 3" --out "$work/v.html" --json "$model"
[[ ! -e "$work/v.html" ]] || fail "view wrote its page before refusing --json"
# By device and inode: a hard link, a symlink and another spelling of the path.
ln "$model" "$work/hard.safetensors" && ln -s "$model" "$work/soft.safetensors"
one_line 2 "is also an input" -- "$attn" align --model "$model" --input "5 9 3" --out "$work/hard.safetensors"
one_line 2 "is also an input" -- "$attn" align --model "$work/soft.safetensors" --input "5 9 3" --out "$work/run/./model.safetensors"
one_line 2 "--json" -- "$attn" align --model "$model" --input "5 9 3" --out "$work/a.svg" --json "$work/soft.safetensors"
# view --run: the log it reads is an input too.
cp "$work/run/log.jsonl" "$work/log.copy"
one_line 2 "--out $work/run/log.jsonl: is also an input" -- "$attn" view --run "$work/run" --out "$work/run/log.jsonl"
same "$work/run/log.jsonl" "$work/log.copy"
same "$model" "$work/model.copy"
expect 0 "heatmap" -- "$attn" align --model "$model" --input "5 9 3" --out "$work/a.svg" --json "$work/a.json"

# A translation checkpoint: its tokenizer is an input too, and so is the data it reads
# (that one is found when the output is written: exit 1, nothing written).
mkdir -p "$work/par/raw"
/usr/bin/python3 - "$work/par/raw" <<'PY'
import gzip, random, sys
words = {"hund": "dog", "katze": "cat", "haus": "house", "baum": "tree", "der": "the", "ein": "a"}
rng = random.Random(7)
for split, n in (("train", 100), ("val", 10), ("test_2016_flickr", 5)):
    src = [[rng.choice(list(words)) for _ in range(rng.randint(2, 4))] for _ in range(n)]
    for lang, lines in (("de", [" ".join(s) for s in src]), ("en", [" ".join(words[w] for w in s) for s in src])):
        with gzip.open(f"{sys.argv[1]}/{split}.{lang}.gz", "wt") as f: f.write("\n".join(lines) + "\n")
PY
expect 0 "best validation BLEU" -- "$attn" train --task translate --data "$work/par" --vocab-size 30 --max-tokens 400 \
  --steps 2 --warmup 1 --eval-every 2 --eval-sentences 5 --threads 1 --model rnn --emb 8 --hidden 8 --out "$work/mt"
cp "$work/mt/spm.model" "$work/spm.copy" && cp "$work/mt/model.safetensors" "$work/mt.copy"
cp "$work/par/raw/test_2016_flickr.en.gz" "$work/ref.copy"
for target in "$work/mt/model.safetensors" "$work/mt/spm.model"; do
  one_line 2 "--hypotheses $target: is also an input" -- \
    "$attn" eval --model "$work/mt/model.safetensors" --data "$work/par" --hypotheses "$target"
done
one_line 1 "test_2016_flickr.en.gz: is also an input" -- \
  "$attn" eval --model "$work/mt/model.safetensors" --data "$work/par" --hypotheses "$work/par/raw/test_2016_flickr.en.gz"
same "$work/mt/spm.model" "$work/spm.copy"
same "$work/mt/model.safetensors" "$work/mt.copy"
same "$work/par/raw/test_2016_flickr.en.gz" "$work/ref.copy"
expect 0 "BLEU" -- "$attn" eval --model "$work/mt/model.safetensors" --data "$work/par" --hypotheses "$work/hyp.txt"
# The standard output appended to an input (translate writes only there).
one_line 2 "the standard output is the input $work/mt/spm.model" -- \
  bash -c 'echo "der hund" | "$1" translate --model "$2" 2>&1 >> "$3"' _ "$attn" "$work/mt/model.safetensors" "$work/mt/spm.model"
same "$work/mt/spm.model" "$work/spm.copy"

# --- Defect 2: JSON nested 100,000 deep (200 KB) is refused by name, not a stack overflow. ---
deep="$(/usr/bin/python3 -c 'print("[" * 100000 + "]" * 100000)')"
mkdir -p "$work/deep1" "$work/deep2" "$work/deep3"
{ echo '{"step": 1, "loss": 2.0}'; echo "$deep"; echo '{"step": 2, "loss": 1.0}'; } > "$work/deep1/log.jsonl"
one_line 1 "log.jsonl: line 2 nests deeper than 64 levels" -- "$attn" view --run "$work/deep1" --out "$work/d.html"
echo "$deep" > "$work/deep2/results.json"
one_line 1 "results.json nests deeper than 64 levels" -- "$attn" view --run "$work/deep2" --out "$work/d.html"
# The last line of a log: skipped with a warning (defect 8's rule), the rest shown.
{ echo '{"step": 1, "loss": 2.0}'; echo "$deep"; } > "$work/deep3/log.jsonl"
expect 0 "line 2 nests deeper than 64 levels; skipped" -- "$attn" view --run "$work/deep3" --out "$work/d3.html"
# The same reader for a checkpoint's metadata (the class, another surface): a deep value
# where the configuration wants a number was dumped into the error message, recursively.
/usr/bin/python3 - "$model" "$work/deepmeta.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
meta = json.loads(header["__metadata__"]["attn"])
meta["config"]["layers"] = "DEEP"
header["__metadata__"]["attn"] = json.dumps(meta).replace('"DEEP"', "[" * 100000 + "]" * 100000)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
PY
one_line 1 "deepmeta.safetensors" -- "$attn" eval --model "$work/deepmeta.safetensors" --eval-lengths 4
one_line 1 "deepmeta.safetensors: no readable attn metadata" -- "$attn" explain --model "$work/deepmeta.safetensors" --input "5 9 3"

# --- Defect 3: every input of view --run is a regular file; --stdin is bounded. ---
for kind in fifo zero folder; do
  for file in log.jsonl results.json; do
    dir="$work/special-$kind-${file%%.*}"
    mkdir -p "$dir"
    case $kind in
      fifo) mkfifo "$dir/$file"; why="not a regular file (a FIFO)" ;;
      zero) ln -s /dev/zero "$dir/$file"; why="not a regular file (a character device)" ;;
      folder) mkdir "$dir/$file"; why="not a regular file (a directory)" ;;
    esac
    one_line 1 "$file: $why" -- timeout 20 "$attn" view --run "$dir" --out "$work/s.html"
  done
done
[[ ! -e "$work/s.html" ]] || fail "view --run wrote a page for a special file"
one_line 1 "the standard input holds more than 1048576 bytes" -- \
  timeout 20 bash -c '"$1" view --model "$2" --stdin --out "$3" < /dev/zero' _ "$attn" "$model" "$work/z.html"
[[ ! -e "$work/z.html" ]] || fail "view --stdin < /dev/zero wrote a page"

# --- Defect 8: resume after a cut-short last line: a fresh line, and the run stays readable. ---
/usr/bin/python3 - "$work/run/log.jsonl" <<'PY'
import sys
p = sys.argv[1]
text = open(p).read()
open(p, "w").write(text[:-7])  # the last line cut short, no newline
PY
expect 0 "trained 8 steps" -- "$attn" train --task copy --attention bahdanau "${tiny[@]}" --steps 8 --out "$work/run" --resume
/usr/bin/python3 - "$work/run/log.jsonl" <<'PY' || fail "the resumed session's first record is not a line of its own"
import json, sys
lines = [l for l in open(sys.argv[1]).read().splitlines() if '"resume":true' in l]
sys.exit(0 if lines and all(json.loads(l)["resume"] is True for l in lines) else 1)
PY
expect 0 "skipped (cut short before a resumed session)" -- "$attn" view --run "$work/run" --out "$work/r.html"

# --- Defect 10: Latin-1 names and text; JSON output replaces the bad bytes, nothing fails late. ---
latin=$'mod\xe8le.safetensors'
cp "$model" "$work/$latin"
out="$("$attn" eval --model "$work/$latin" --eval-lengths 4 --samples 4 --json 2>&1)" || fail "eval --json on a Latin-1 name: $out"
/usr/bin/python3 -c 'import json, sys; j = json.loads(sys.stdin.read()); assert j["model"].endswith("mod\ufffdle.safetensors"), j["model"]' \
  <<<"$out" || fail "eval --json did not print valid JSON naming the model: $out"
mkdir -p "$work/run"$'\xe9' && cp "$work/run/log.jsonl" "$work/run"$'\xe9/'
expect 0 "view:" -- "$attn" view --run "$work/run"$'\xe9' --out "$work/l.html" --json "$work/l.json"
/usr/bin/python3 -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$work/l.json" || fail "view --json is not UTF-8 JSON"
expect 0 "heatmap" -- "$attn" align --model "$work/$latin" --input "5 9 3" --out "$work/l.svg" --json "$work/l"$'\xe9'.json
/usr/bin/python3 -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$work/l"$'\xe9'.json || fail "align --json is not UTF-8 JSON"
expect 0 "wrote" -- "$attn" export --to torch --model "$work/$latin" --out "$work/exp"$'\xe9'
[[ -f "$work/exp"$'\xe9'/model.py ]] || fail "export with a Latin-1 model path wrote no model.py"

# Text that is not UTF-8 given to a translation model: the JSON outputs replace it, as above.
expect 0 "heatmap" -- "$attn" align --model "$work/mt/model.safetensors" --text $'caf\xe9 der hund' --out "$work/t.svg" \
  --json "$work/t.json"
expect 0 "view:" -- "$attn" view --model "$work/mt/model.safetensors" --text $'caf\xe9 der hund' --out "$work/t.html" \
  --json "$work/t2.json"
for j in t.json t2.json; do
  /usr/bin/python3 -c 'import json, sys; assert "caf\ufffd" in json.load(open(sys.argv[1], encoding="utf-8"))["input"]' \
    "$work/$j" || fail "$j: the input is not the text with U+FFFD"
done

# --- Defect 12: control characters in what an error quotes are escaped, the line stays one. ---
one_line 1 'x\x0a\x1b[31my: not a folder' -- "$attn" view --run "$work/x"$'\n\e[31m'"y" --out "$work/e.html"

# --- The character LM: a crafted character list, max_len 1, --temperature inf (defects 12, 13). ---
if have_data tatoeba-fra-eng/fra.txt.gz; then
  expect 0 "bits/char" -- "$attn" train --task charlm --data "$data/tatoeba-fra-eng" --train-limit 200 --d-model 16 \
    --heads 2 --ffn 32 --dec-layers 1 --batch 16 --steps 2 --eval-every 2 --eval-sentences 10 --threads 1 --out "$work/lm"
  lm="$work/lm/model.safetensors"
  /usr/bin/python3 - "$lm" "$work" <<'PY'
import json, struct, sys, zlib
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
def write(name, change):
    h = json.loads(json.dumps(header))
    meta = json.loads(h["__metadata__"]["attn"])
    change(meta)
    h["__metadata__"]["attn"] = json.dumps(meta)
    text = json.dumps(h).encode()
    text += b" " * (-len(text) % 8)
    open(sys.argv[2] + "/" + name, "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
def crafted(meta):
    c = meta["characters"]
    c[0], c[1], c[2] = "ab", "\n", "\x1b[2J"
write("crafted.safetensors", crafted)
def dup(meta):
    meta["characters"][1] = meta["characters"][0]
write("dup.safetensors", dup)
def short(meta):
    meta["config"]["max_len"] = 1
write("short.safetensors", short)
def escape(meta):
    meta["config"]["positions"] = "x\n\x1b[31mred"
write("escape.safetensors", escape)
PY
  one_line 1 'bad '"'"'attn'"'"' metadata: character list: entry 0 ("ab") is not one UTF-8 character' -- \
    "$attn" sample --model "$work/crafted.safetensors" -n 2
  one_line 1 "appears twice" -- "$attn" sample --model "$work/dup.safetensors" -n 2
  one_line 1 "max_len 1 leaves no position for a character after the start symbol" -- \
    "$attn" sample --model "$work/short.safetensors" -n 2
  # A metadata string quoted by a library message: the newline and ESC escaped in main.
  one_line 1 "unknown positions 'x\\x0a\\x1b[31mred'" -- "$attn" sample --model "$work/escape.safetensors" -n 2
  one_line 2 "--temperature must be finite and >= 0, got inf" -- "$attn" sample --model "$lm" --temperature inf
  out="$("$attn" sample --model "$lm" -n 2 --max-chars 20 2>&1)" || fail "sample: $out"
  [[ $(printf '%s\n' "$out" | wc -l) == 2 ]] || fail "sample -n 2 printed other than 2 lines: $out"
fi

finish "inputs and outputs"
