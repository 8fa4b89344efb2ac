#!/usr/bin/env bash
# Data-parallel scaling (docs/distributed.md): 2 ranks x 1 thread against 1 rank x 1 thread
# on the copy task and the Multi30k Transformer, the 2-rank runs with the all-reduce
# overlapping backward in buckets of BUCKETS MB and started after backward
# (--reduce-after-backward), all alternated ROUNDS times; then the PyTorch DDP (gloo) peer,
# 1 and 2 processes x 1 thread, on the copy task's shapes and on the Transformer's (the
# same model sizes, token budget and tokenizer as attn's runs, on the Multi30k training
# pairs that attn's tokenizer encodes; bench/torch_peer.py ddp-transformer). Prints one line
# per run and, at the end, the medians over the rounds (the DDP rows: their one run): the step time over the logged steps (validation and start-up excluded), the
# speed-up against the same round's 1-rank run (the global batches are the same for every
# rank count, so it is the tokens/s ratio), the share of the step in the reducer
# (log.jsonl's allreduce_s: packing, starting buckets and MPI_Test during backward, plus the
# wait after it), the share spent waiting after backward (allreduce_wait_s), and the share
# of the gradient bytes whose all-reduce had completed before backward ended
# (allreduce_done_in_backward, over the same logged steps).
# The load average before and after is printed too. A benchmark, not a test.
# Usage: bench/mpi_scaling.sh [build/attn] [data dir]
#   (environment: ROUNDS=3 TF_ROUNDS=ROUNDS STEPS=40 TF_STEPS=12 BATCH=64 HIDDEN=256 LEN=40 BUCKETS="1 5 25")
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
attn="${1:-$root/build/attn}"
data="${2:-${ATTN_DATA_DIR:-$root/../shared/data}}"
rounds="${ROUNDS:-3}" tf_rounds="${TF_ROUNDS:-${ROUNDS:-3}}" steps="${STEPS:-40}" tf_steps="${TF_STEPS:-12}"
batch="${BATCH:-64}" hidden="${HIDDEN:-256}" len="${LEN:-40}" buckets="${BUCKETS:-1 5 25}"
source "$root/tests/distributed/mpi_env.sh"
export OMP_WAIT_POLICY=PASSIVE
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $("$attn" doctor --summary 2>/dev/null | head -1)"

# record MODEL ROUND CONFIG LOG: one result line (results.jsonl) from log.jsonl's training
# lines, from the first logged step on (the first steps' warm-up left out).
record() {
  /usr/bin/python3 - "$@" "$work/results.jsonl" <<'PY'
import json, sys
model, rnd, config, log, out = sys.argv[1:6]
lines = [json.loads(l) for l in open(log) if '"lr"' in l]
a, b = lines[0], lines[-1]
dt, n = b["elapsed_s"] - a["elapsed_s"], b["step"] - a["step"]
r = {"model": model, "round": int(rnd), "config": config, "ms": 1e3 * dt / n}
if "allreduce_s" in b:
    r["reduce"] = (b["allreduce_s"] - a["allreduce_s"]) / dt
    r["wait"] = (b["allreduce_wait_s"] - a["allreduce_wait_s"]) / dt
    # log.jsonl's share is over every step so far; every step reduces the same bytes, so the
    # share over the logged steps is the difference of share x steps.
    r["done"] = (b["allreduce_done_in_backward"] * b["step"] - a["allreduce_done_in_backward"] * a["step"]) / n
open(out, "a").write(json.dumps(r) + "\n")
print(f"round {rnd} {model:15} {config:23} {r['ms']:8.1f} ms/step" + (
    f"  reducer {100 * r['reduce']:.1f} %, waiting after backward {100 * r['wait']:.1f} %, done in backward {100 * r['done']:.0f} % of bytes"
    if "reduce" in r else ""))
PY
}

# cases MODEL ROUNDS ARGS...: per round, 1 rank, then 2 ranks with each bucket size and after backward.
cases() {
  local model="$1" n="$2"
  shift 2
  for round in $(seq "$n"); do
    "$attn" train "$@" --out "$work/$model-1-$round" >/dev/null 2>&1
    record "$model" "$round" "1 rank" "$work/$model-1-$round/log.jsonl"
    for mb in $buckets after; do
      local how=(--bucket-mb "$mb") config="2 ranks, $mb MB buckets"
      [[ $mb == after ]] && how=(--reduce-after-backward) config="2 ranks, after backward"
      "${mpi2[@]}" "$attn" train "$@" "${how[@]}" --out "$work/$model-2-$mb-$round" >/dev/null 2>&1
      record "$model" "$round" "$config" "$work/$model-2-$mb-$round/log.jsonl"
    done
  done
}

cases copy "$rounds" --task copy --batch "$batch" --emb 64 --hidden "$hidden" --min-len "$len" --max-len "$len" --steps "$steps" \
  --log-every 5 --eval-every "$steps" --eval-samples 16 --threads 1
copy_tokens=$((batch * (len + 1)))  # B x (length + EOS): every batch of this fixed-length copy task
if [[ -f "$data/multi30k/raw/train.de.gz" ]]; then
  # The tokenizer is learned once and shared, so every run sees the same batches.
  "$attn" tokenize train --input "$data/multi30k/raw/train.de.gz" --input "$data/multi30k/raw/train.en.gz" \
    --vocab-size 8000 --max-sentences 10000 --out "$work/spm" >/dev/null
  # The Transformer's shapes, given to attn and to the DDP peer alike (attn's defaults for
  # translate --model transformer: dropout 0.1, label smoothing 0.1, --max-sentences 128).
  tf_shape=(--d-model 256 --heads 4 --ffn 1024 --max-tokens 2500)
  tf_layers=3
  cases transformer "$tf_rounds" --task translate --data "$data" --model transformer "${tf_shape[@]}" \
    --enc-layers "$tf_layers" --dec-layers "$tf_layers" --steps "$tf_steps" --log-every 2 \
    --eval-every "$tf_steps" --eval-sentences 8 --threads 1 --tokenizer "$work/spm.model"
fi

# peer NAME WORLD ARGS...: one run of bench/torch_peer.py ARGS at WORLD processes x 1 thread,
# printed and recorded as model "DDP NAME".
peer() {
  local name="$1" world="$2" out
  shift 2
  out="$(/usr/bin/python3 "$root/bench/torch_peer.py" "$@" --world "$world" --threads 1 --json)"
  echo "torch DDP gloo $name, world $world x 1 thread: $out"
  /usr/bin/python3 -c 'import json, sys
r = json.loads(sys.argv[2])
print(json.dumps({"model": "DDP " + sys.argv[1], "round": 1, "config": sys.argv[3], "ms": r["step_ms"],
                  "tokens_per_s": r["global_target_tokens_per_s"]}))' "$name" "$out" \
    "$world process$([[ $world == 1 ]] || echo es)" >>"$work/results.jsonl"
}
for world in 1 2; do
  peer copy "$world" ddp-seq2seq --batch "$batch" --emb 64 --hidden "$hidden" --len "$len" --steps $((steps / 2))
done
if [[ -f "$work/spm.model" ]]; then
  # The Multi30k training pairs as attn's tokenizer encodes them; the peer cuts them into
  # token-budget batches as attn does and trains on an even spread of them, the first 2 as
  # warm-up, then as many steps as attn's logged ones.
  for side in de en; do
    zcat "$data/multi30k/raw/train.$side.gz" | "$attn" tokenize encode --model "$work/spm.model" --ids >"$work/train.$side.ids"
  done
  for world in 1 2; do
    peer transformer "$world" ddp-transformer "${tf_shape[@]}" --layers "$tf_layers" --vocab "$(wc -l <"$work/spm.vocab")" \
      --src-ids "$work/train.de.ids" --tgt-ids "$work/train.en.ids" --warmup 2 --steps $((tf_steps - 2))
  done
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$work/results.jsonl" "$copy_tokens" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
copy_tokens = float(sys.argv[2])
print("medians over the rounds (speed-up: the median of each round's 1-rank / 2-rank step time):")
for model in dict.fromkeys(r["model"] for r in rows):
    baseline = next(r["config"] for r in rows if r["model"] == model)  # "1 rank" or "1 process"
    one = {r["round"]: r["ms"] for r in rows if r["model"] == model and r["config"] == baseline}
    for config in dict.fromkeys(r["config"] for r in rows if r["model"] == model):
        rs = [r for r in rows if r["model"] == model and r["config"] == config]
        ms = statistics.median(r["ms"] for r in rs)
        line = f"  {model:15} {config:23} {ms:8.1f} ms/step"
        if model == "copy":
            line += f" ({copy_tokens / ms * 1e3:.0f} target tokens/s)"
        if "tokens_per_s" in rs[0]:  # the DDP peer: one run per configuration
            line += f" ({statistics.median(r['tokens_per_s'] for r in rs):.0f} target tokens/s)"
            if config != baseline:
                line += f"  speed-up {one[1] / ms:.2f}x"
        if "reduce" in rs[0]:
            ratios = [one[r["round"]] / r["ms"] for r in rs]
            line += (f"  speed-up {statistics.median(ratios):.2f}x (rounds: {', '.join(f'{x:.2f}' for x in ratios)})"
                     f"  reducer {100 * statistics.median(r['reduce'] for r in rs):.1f} %,"
                     f" waiting {100 * statistics.median(r['wait'] for r in rs):.1f} %,"
                     f" done in backward {100 * statistics.median(r['done'] for r in rs):.0f} %")
        print(line)
PY
