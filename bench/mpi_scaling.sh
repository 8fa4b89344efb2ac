#!/usr/bin/env bash
# Data-parallel scaling (docs/distributed.md): 2 ranks x 1 thread against 1 rank x 1 thread
# on the copy task and the Multi30k Transformer, the 2-rank runs with the all-reduce
# overlapping backward in buckets of BUCKETS MB and started after backward
# (--reduce-after-backward), all alternated ROUNDS times; then the PyTorch DDP (gloo) peer
# on the copy task's shapes. Prints one line per run and, at the end, the medians over the
# rounds: the step time over the logged steps (validation and start-up excluded), the
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
print(f"round {rnd} {model:11} {config:22} {r['ms']:8.1f} ms/step" + (
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
  cases transformer "$tf_rounds" --task translate --data "$data" --model transformer --max-tokens 2500 --steps "$tf_steps" --log-every 2 \
    --eval-every "$tf_steps" --eval-sentences 8 --threads 1 --tokenizer "$work/spm.model"
fi
for world in 1 2; do
  echo "torch DDP gloo world $world x 1 thread: $(/usr/bin/python3 "$root/bench/torch_peer.py" ddp-seq2seq --world $world \
    --batch "$batch" --emb 64 --hidden "$hidden" --len "$len" --steps $((steps / 2)) --threads 1 --json)"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$work/results.jsonl" "$copy_tokens" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
copy_tokens = float(sys.argv[2])
print("medians over the rounds (speed-up: the median of each round's 1-rank / 2-rank step time):")
for model in dict.fromkeys(r["model"] for r in rows):
    one = {r["round"]: r["ms"] for r in rows if r["model"] == model and r["config"] == "1 rank"}
    for config in dict.fromkeys(r["config"] for r in rows if r["model"] == model):
        rs = [r for r in rows if r["model"] == model and r["config"] == config]
        ms = statistics.median(r["ms"] for r in rs)
        line = f"  {model:11} {config:22} {ms:8.1f} ms/step"
        if model == "copy":
            line += f" ({copy_tokens / ms * 1e3:.0f} target tokens/s)"
        if "reduce" in rs[0]:
            ratios = [one[r["round"]] / r["ms"] for r in rs]
            line += (f"  speed-up {statistics.median(ratios):.2f}x (rounds: {', '.join(f'{x:.2f}' for x in ratios)})"
                     f"  reducer {100 * statistics.median(r['reduce'] for r in rs):.1f} %,"
                     f" waiting {100 * statistics.median(r['wait'] for r in rs):.1f} %,"
                     f" done in backward {100 * statistics.median(r['done'] for r in rs):.0f} %")
        print(line)
PY
