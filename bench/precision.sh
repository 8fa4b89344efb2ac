#!/usr/bin/env bash
# bf16 against fp32 in one run (docs/performance.md, "bf16 over fp32"): ROUNDS rounds, each running every
# benchmark below once per precision, fp32 then bf16, as separate processes with the same
# threads. One JSON line per run on stdout (the bench's own JSON plus "round").
#   bench/precision.sh [ATTN_BIN] > bench/results/DATE-precision-MACHINE.jsonl
# Environment: ROUNDS (3), THREADS (2). bf16 needs AVX512_BF16 or AMX-BF16 (attn refuses it
# otherwise, and so does this script, at its first bf16 run).
set -euo pipefail
attn="${1:-build/attn}"
rounds="${ROUNDS:-3}" threads="${THREADS:-2}"
export OMP_WAIT_POLICY=PASSIVE
benches=(
  "gemm --seconds 0.5"
  "transformer --steps 4 --warmup 2 --beam-sentences 16 --beam-reps 1"
  "seq2seq --steps 8 --warmup 2 --greedy-reps 2"
  "attention --kind sdpa --mask causal --len 2048 --reps 3"
  "attention --kind mha --len 2048 --reps 3"
)
echo "$("$attn" doctor --summary)" >&2
for round in $(seq 1 "$rounds"); do
  for bench in "${benches[@]}"; do
    for precision in fp32 bf16; do
      # shellcheck disable=SC2086  # $bench holds the bench's words
      "$attn" bench $bench --precision "$precision" --threads "$threads" --json |
        /usr/bin/python3 -c 'import json, sys; j = json.loads(sys.stdin.read()); j["round"] = int(sys.argv[1]); j["args"] = sys.argv[2]; print(json.dumps(j))' \
          "$round" "$bench"
    done
  done
done
