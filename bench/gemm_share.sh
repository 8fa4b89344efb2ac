#!/usr/bin/env bash
# What share of a step both sides spend in the same OpenBLAS GEMM, and the bound that puts on
# attn's speedup over PyTorch (bench/results/2026-12-02-amdahl-bounds-cpu-time.md). Each benchmark
# runs on one thread with bench/gemm_time_shim.c preloaded, which adds up the thread CPU time spent
# inside sgemm; the process CPU time comes from getrusage. Each side runs at two repetition
# counts (alternating attn / PyTorch), and the differences give the cost of one step (or
# decode, or call) without start-up, warm-up and the sgemm measurement. CPU time, not wall
# time, so the figures hold up on a machine other jobs load (a descheduled thread accrues none;
# what the load still changes is the caches).
#
#   bench/gemm_share.sh                      # all of them (about 10 minutes on a loaded 2-core machine)
#   ONLY="bahdanau-train luong-train" bench/gemm_share.sh
#
# Per benchmark: attn's and PyTorch's CPU seconds per step, the GEMM part of each (and its
# GFLOP), the CPU-time ratio, and the bound PyTorch CPU / attn GEMM CPU: the speedup attn
# would reach if everything but its GEMMs cost nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
ATTN=${ATTN:-build/attn}
PYTHON=${PYTHON:-/usr/bin/python3}
OUT=${OUT:-$(mktemp -d /tmp/gemm-share.XXXXXX)}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} ATTN_NUM_THREADS=1
# Both sides run the same OpenBLAS core: a user's OPENBLAS_CORETYPE, else the one attn picks
# from the CPU features (`attn doctor`). PyTorch would otherwise get OpenBLAS's own pick,
# which on a CPU model OpenBLAS 0.3.21 does not know is its generic Prescott kernel
# (Intel family 6 model 207: 19 against 101 GFLOP/s inside the same step's sgemm calls).
if [[ -z ${OPENBLAS_CORETYPE:-} ]]; then
  OPENBLAS_CORETYPE=$("$ATTN" doctor --json --seconds 0 2>/dev/null | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["gemm"]["kernel"])')
  export OPENBLAS_CORETYPE
fi
echo "both sides: OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE" >&2
mkdir -p "$OUT"
gcc -O2 -Wall -shared -fPIC bench/gemm_time_shim.c -o "$OUT/gemm_time_shim.so" -ldl
RESULTS=$OUT/results.txt
: > "$RESULTS"

S2S="--batch 64 --emb 64 --hidden 256 --vocab 32 --len 40 --threads 1 --json"
# name | bench arguments | the repeated flag | low count | high count
BENCHES=(
  "bahdanau-train|seq2seq --attention bahdanau $S2S --warmup 1 --greedy-reps 0|--steps|1|5"
  "bahdanau-greedy|seq2seq --attention bahdanau $S2S --warmup 0 --steps 1|--greedy-reps|1|4"
  "luong-train|seq2seq --attention luong $S2S --warmup 1 --greedy-reps 0|--steps|1|5"
  "luong-greedy|seq2seq --attention luong $S2S --warmup 0 --steps 1|--greedy-reps|1|4"
  "transformer-train|transformer --threads 1 --json --warmup 1 --beam-sentences 4 --beam-reps 1|--steps|1|3"
  "transformer-beam5|transformer --threads 1 --json --warmup 0 --steps 1 --beam-sentences 64|--beam-reps|1|2"
  "mha4096-fwd+fwdbwd|attention --kind mha --batch 1 --heads 8 --len 4096 --dim 256 --threads 1 --json --warmup 0|--reps|1|2"
)

run_side() {  # side name args...
  local side=$1 name=$2
  shift 2
  local file=$OUT/$name.$side.$RANDOM
  if [[ $side == attn ]]; then
    GEMM_SHIM_OUT=$file LD_PRELOAD=$OUT/gemm_time_shim.so "$ATTN" bench "$@" > /dev/null
  else
    GEMM_SHIM_OUT=$file LD_PRELOAD=$OUT/gemm_time_shim.so "$PYTHON" bench/torch_peer.py "$@" > /dev/null
  fi
  cat "$file"
}

for spec in "${BENCHES[@]}"; do
  IFS='|' read -r name args flag low high <<< "$spec"
  [[ -n ${ONLY:-} && " $ONLY " != *" $name "* ]] && continue
  for count in "$low" "$high"; do
    for side in attn torch; do
      # shellcheck disable=SC2086  # args is a word list
      echo "$name $side $count $(run_side $side "$name" $args "$flag" "$count")" >> "$RESULTS"
    done
  done
  echo "measured $name" >&2
done

"$PYTHON" - "$RESULTS" <<'EOF'
import sys
rows = {}
for line in open(sys.argv[1]):
    name, side, count, calls, flops, gemm_s, cpu_s = line.split()
    rows.setdefault(name, {}).setdefault(side, []).append((int(count), float(flops), float(gemm_s), float(cpu_s)))
print("| benchmark (one thread, CPU s per rep) | attn CPU | attn GEMM | attn GEMM share | PyTorch CPU | PyTorch GEMM | PyTorch GEMM share | CPU ratio PyTorch/attn | bound PyTorch CPU / attn GEMM |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for name, sides in rows.items():
    per = {}
    for side, runs in sides.items():
        (n0, f0, g0, c0), (n1, f1, g1, c1) = sorted(runs)
        d = n1 - n0
        per[side] = ((c1 - c0) / d, (g1 - g0) / d, (f1 - f0) / d / 1e9)
    (ac, ag, af), (tc, tg, tf) = per["attn"], per["torch"]
    print(f"| {name} | {ac:.3f} | {ag:.3f} ({af:.1f} GFLOP) | {ag / ac:.0%} | {tc:.3f} | {tg:.3f} ({tf:.1f} GFLOP) "
          f"| {tg / tc:.0%} | {tc / ac:.2f}x | {tc / ag:.2f}x |")
EOF
echo "raw: $RESULTS" >&2
