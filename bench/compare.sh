#!/usr/bin/env bash
# attn against PyTorch, side by side in one run: builds attn and the microbenchmarks
# (Release, ATTN_BUILD_BENCH=ON), measures the machine's GEMM peak, then alternates
# attn / PyTorch for every benchmark, ROUNDS times, and prints a markdown ratio table
# (medians over the rounds; the range of the per-round ratios beside them).
#
#   bench/compare.sh                       # everything, 3 rounds, 2 threads
#   ROUNDS=1 ONLY=seq2seq bench/compare.sh # a quicker subset
#
# Environment:
#   THREADS (2)  ROUNDS (3)  ONLY (all | seq2seq | attention)
#   BUILD        build directory (default build-compare); NO_BUILD=1 uses what is there
#   OUT          where the raw JSON lines go (default $BUILD/compare-<time>)
#   PYTHON       the PyTorch interpreter (default /usr/bin/python3)
#   OMP_WAIT_POLICY  passed to both sides; PASSIVE unless set (on a shared, loaded machine
#                spinning OpenMP workers make every parallel region wait for a descheduled
#                thread; both libraries use libgomp, so both get the same policy).
#   SEQ_ARGS, ATTN_ARGS  extra arguments for the seq2seq and attention runs
#   ATTENTION_SPECS  kind:len pairs (default "mha:4096 sdpa:4096 additive:1024")
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
ONLY=${ONLY:-all}
BUILD=${BUILD:-$ROOT/build-compare}
PYTHON=${PYTHON:-/usr/bin/python3}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
export ATTN_NUM_THREADS=$THREADS
OUT=${OUT:-$BUILD/compare-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
RESULTS=$OUT/results.jsonl
: >"$RESULTS"

if [[ -z "${NO_BUILD:-}" ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTN_BUILD_BENCH=ON -DATTN_BUILD_TESTS=OFF >/dev/null
  ninja -C "$BUILD" -j"$THREADS" attn attn_micro >/dev/null
fi
ATTN=$BUILD/attn
MICRO=$BUILD/attn_micro
PEER="$PYTHON $ROOT/bench/torch_peer.py"

echo "# attn vs PyTorch ($(date -u +%Y-%m-%dT%H:%MZ))"
echo
echo "- machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; threads $THREADS; OMP_WAIT_POLICY=$OMP_WAIT_POLICY"
echo "- torch $($PYTHON -c 'import torch; print(torch.__version__)'); attn $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?') (+ working tree)"
echo "- load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# The GEMM peak: the best of kernels::gemm and cblas_sgemm on large square products.
"$MICRO" --threads="$THREADS" --benchmark_filter='BM_(Gemm|CblasSgemm)/.*(1024|2048)' \
  --benchmark_min_time=0.5 --benchmark_format=json >"$OUT/gemm_peak.json" 2>/dev/null
PEAK=$($PYTHON -c "
import json,sys
b=json.load(open('$OUT/gemm_peak.json'))['benchmarks']
print('%.2f' % max(x['GFLOPS'] for x in b))")
echo "- GEMM peak (kernels::gemm / cblas_sgemm, n = 1024, 2048): $PEAK GFLOP/s"

run() {  # run <label> <command...>: appends one JSON line tagged with the label and round
  local label=$1
  shift
  local line
  if ! line=$("$@" 2>"$OUT/stderr.txt"); then
    echo "FAILED: $*" >&2
    cat "$OUT/stderr.txt" >&2
    return 1
  fi
  $PYTHON -c "import json,sys; d=json.loads(sys.argv[1]); d['label']=sys.argv[2]; d['round']=int(sys.argv[3]); print(json.dumps(d))" \
    "$line" "$label" "$ROUND" >>"$RESULTS"
}

SEQ=(--batch 64 --emb 64 --hidden 256 --vocab 32 --len 40 --steps 20 --threads "$THREADS" ${SEQ_ARGS:-})
ATT=(--batch 1 --heads 8 --dim 256 --threads "$THREADS" ${ATTN_ARGS:-})
for ROUND in $(seq 1 "$ROUNDS"); do
  # Alternate which side goes first from round to round.
  if ((ROUND % 2)); then order=(attn torch); else order=(torch attn); fi
  if [[ $ONLY == all || $ONLY == seq2seq ]]; then
    for att in bahdanau none luong; do
      for side in "${order[@]}"; do
        if [[ $side == attn ]]; then run "seq2seq $att" "$ATTN" bench seq2seq --attention $att "${SEQ[@]}" --json
        else run "seq2seq $att" $PEER seq2seq --attention $att "${SEQ[@]}" --json; fi
      done
    done
  fi
  if [[ $ONLY == all || $ONLY == attention ]]; then
    # additive at T = 1024: PyTorch's composed form keeps (T, S, A) floats for backward
    # (16 GiB at T = 4096; see docs/performance.md).
    for spec in ${ATTENTION_SPECS:-mha:4096 sdpa:4096 additive:1024}; do
      spec=${spec/:/ }
      set -- $spec
      for side in "${order[@]}"; do
        if [[ $side == attn ]]; then run "attention $1 T=$2" "$ATTN" bench attention --kind "$1" --len "$2" "${ATT[@]}" --json
        else run "attention $1 T=$2" $PEER attention --kind "$1" --len "$2" "${ATT[@]}" --json; fi
      done
    done
  fi
done
echo "- load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- raw results: $RESULTS"
echo

$PYTHON - "$RESULTS" "$PEAK" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
peak = float(sys.argv[2])
# metric, higher is better?
metrics = {
    "seq2seq": [("train_tokens_per_s", True), ("greedy_tokens_per_s", True), ("gflops_per_s", True),
                ("greedy_gflops_per_s", True)],
    "attention": [("forward_ms", False), ("forward_backward_ms", False), ("growth_mb", False)],
}
print("| benchmark | metric | attn | PyTorch | attn/PyTorch (range) | attn speedup | attn % of GEMM peak |")
print("|---|---|---:|---:|---:|---:|---:|")
labels = list(dict.fromkeys(r["label"] for r in rows))
for label in labels:
    mine = [r for r in rows if r["label"] == label]
    for key, higher in metrics[mine[0]["bench"]]:
        a = {r["round"]: r[key] for r in mine if r["impl"] == "attn" and r.get(key) is not None}
        t = {r["round"]: r[key] for r in mine if r["impl"] == "torch" and r.get(key) is not None}
        if not a or not t:
            print(f"| {label} | {key} | {statistics.median(a.values()) if a else '—'} | "
                  f"{statistics.median(t.values()) if t else '—'} | — | — | |")
            continue
        ma, mt = statistics.median(a.values()), statistics.median(t.values())
        per_round = [a[k] / t[k] for k in a if k in t and t[k]]
        rng = f" ({min(per_round):.2f}–{max(per_round):.2f})" if len(per_round) > 1 else ""
        speedup = ma / mt if higher else (mt / ma if ma else float("nan"))
        pct = f"{100 * ma / peak:.0f} %" if key.endswith("gflops_per_s") else ""
        fmt = (lambda v: f"{v:.1f}") if abs(ma) < 1000 else (lambda v: f"{v:.0f}")
        print(f"| {label} | {key} | {fmt(ma)} | {fmt(mt)} | {ma / mt:.2f}{rng} | {speedup:.2f}× | {pct} |")
print()
print(f"GEMM peak {peak:.1f} GFLOP/s; speedup = attn/PyTorch for rates, PyTorch/attn for times and memory growth "
      "(peak RSS − RSS after inputs and weights exist).")
EOF
