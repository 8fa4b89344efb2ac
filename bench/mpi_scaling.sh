#!/usr/bin/env bash
# Data-parallel scaling (docs/distributed.md): 2 ranks x 1 thread against 1 rank x 1 thread
# on the copy task and the Multi30k Transformer, alternating the two ROUNDS times, then the
# PyTorch DDP (gloo) peer on the copy task's shapes. Prints one line per run: the step time
# over the logged steps (validation and start-up excluded), the target tokens/s of the
# global batch (the same batches for both rank counts) and, for 2 ranks, the share of the
# step spent in the gradient all-reduce (log.jsonl's allreduce_s). A benchmark, not a test.
# Usage: bench/mpi_scaling.sh [build/attn] [data dir]
#   (environment: ROUNDS=2 STEPS=40 TF_STEPS=12 BATCH=64 HIDDEN=256 LEN=40)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
attn="${1:-$root/build/attn}"
data="${2:-${ATTN_DATA_DIR:-$root/../shared/data}}"
rounds="${ROUNDS:-2}" steps="${STEPS:-40}" tf_steps="${TF_STEPS:-12}"
batch="${BATCH:-64}" hidden="${HIDDEN:-256}" len="${LEN:-40}"
source "$root/tests/distributed/mpi_env.sh"
export OMP_WAIT_POLICY=PASSIVE
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# summarise LOG: "step_ms tokens_per_s allreduce_share" from log.jsonl's training lines
# (from the first logged step on, so the first steps' warm-up is left out).
summarise() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if '"lr"' in l]
tokens_per_step = float(sys.argv[2])
a, b = lines[0], lines[-1]
dt = b["elapsed_s"] - a["elapsed_s"]
n = b["step"] - a["step"]
share = (b["allreduce_s"] - a["allreduce_s"]) / dt if "allreduce_s" in b else 0.0
print(f"{1e3 * dt / n:.1f} ms/step  {tokens_per_step * n / dt:.0f} target tokens/s  all-reduce {100 * share:.1f} % of the step")
PY
}

copy=(--task copy --batch "$batch" --emb 64 --hidden "$hidden" --min-len "$len" --max-len "$len" --steps "$steps"
      --log-every 5 --eval-every "$steps" --eval-samples 16 --threads 1)
copy_tokens=$((batch * (len + 1)))  # B x (length + EOS): every batch of this fixed-length copy task
tf=(--task translate --data "$data" --model transformer --max-tokens 2500 --steps "$tf_steps" --log-every 2
    --eval-every "$tf_steps" --eval-sentences 8 --threads 1)
for round in $(seq "$rounds"); do
  for ranks in 1 2; do
    launch=()
    ((ranks == 1)) || launch=("${mpi2[@]}")
    "${launch[@]}" "$attn" train "${copy[@]}" --out "$work/copy-$ranks-$round" >/dev/null 2>&1
    echo "round $round copy        $ranks rank(s) x 1 thread: $(summarise "$work/copy-$ranks-$round/log.jsonl" $copy_tokens)"
  done
done
if [[ -f "$data/multi30k/raw/train.de.gz" ]]; then
  # The tokenizer is learned once and shared, so every run sees the same batches.
  "$attn" tokenize train --input "$data/multi30k/raw/train.de.gz" --input "$data/multi30k/raw/train.en.gz" \
    --vocab-size 8000 --max-sentences 10000 --out "$work/spm" >/dev/null
  for round in $(seq "$rounds"); do
    for ranks in 1 2; do
      launch=()
      ((ranks == 1)) || launch=("${mpi2[@]}")
      "${launch[@]}" "$attn" train "${tf[@]}" --tokenizer "$work/spm.model" --out "$work/tf-$ranks-$round" >/dev/null 2>&1
      # tokens per step differ by batch: the 1-rank run's mean tokens/s times the step-time ratio says it.
      tokens=$(/usr/bin/python3 -c 'import json,sys; l=[json.loads(x) for x in open(sys.argv[1]) if "tokens_per_s" in x]; print(sum(x["tokens_per_s"] for x in l)/len(l))' \
        "$work/tf-1-$round/log.jsonl")
      echo "round $round transformer $ranks rank(s) x 1 thread: $(summarise "$work/tf-$ranks-$round/log.jsonl" 0 | sed 's/ [0-9]* target tokens\/s//')" \
        "(1 rank: $(printf %.0f "$tokens") target tokens/s)"
    done
  done
fi
for world in 1 2; do
  echo "torch DDP gloo world $world x 1 thread: $(/usr/bin/python3 "$root/bench/torch_peer.py" ddp-seq2seq --world $world \
    --batch "$batch" --emb 64 --hidden "$hidden" --len "$len" --steps $((steps / 2)) --threads 1 --json)"
done
