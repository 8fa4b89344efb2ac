#!/usr/bin/env bash
# attn against PyTorch, side by side in one run: builds attn, the microbenchmarks and the
# oneDNN GRU anchor (Release, ATTN_BUILD_BENCH=ON), picks the OpenBLAS core with the best
# large-square sgemm rate (both sides then run with it), then alternates attn / PyTorch for
# every benchmark, ROUNDS times, and prints a markdown ratio table (medians over the rounds;
# the range of the per-round ratios beside them) and the table of issue 22's targets.
#
#   bench/compare.sh                       # everything, 3 rounds, 2 threads
#   ROUNDS=1 ONLY=seq2seq bench/compare.sh # a quicker subset
#   bench/compare.sh --peers               # against PyTorch 2.15 and CTranslate2 instead:
#                                          # bench/peers/compare.sh (its own environment)
#
# Environment:
#   THREADS (2)  ROUNDS (3)  ONLY (all | seq2seq | attention | transformer | gru)
#   CORETYPES    OpenBLAS cores to try for the peak ("default SkylakeX Cooperlake"; default =
#                OPENBLAS_CORETYPE unset). The fastest is exported to both sides as
#                OPENBLAS_CORETYPE. A user's OPENBLAS_CORETYPE wins: then only it is measured.
#   SEQ_ATTENTIONS   seq2seq attentions (default "bahdanau luong"; add none for the baseline)
#   BUILD        build directory (default build-compare); NO_BUILD=1 uses what is there
#   OUT          where the raw JSON lines go (default $BUILD/compare-<time>)
#   PYTHON       the PyTorch interpreter (default /usr/bin/python3)
#   OMP_WAIT_POLICY  passed to both sides; PASSIVE unless set (on a shared, loaded machine
#                spinning OpenMP workers make every parallel region wait for a descheduled
#                thread; both libraries use libgomp, so both get the same policy).
#   SEQ_STEPS    timed seq2seq training steps (20)
#   SEQ_ARGS, ATTN_ARGS, TF_ARGS  extra arguments for the seq2seq, attention and transformer runs
#   ATTENTION_SPECS  kind:len pairs (default "mha:4096"; the earlier set: "mha:4096 sdpa:4096 additive:1024")
set -euo pipefail
if [[ ${1:-} == --peers ]]; then
  shift
  exec bash "$(dirname "$0")/peers/compare.sh" "$@"
fi
if [[ $# -gt 0 ]]; then
  echo "usage: bench/compare.sh [--peers]  (settings through the environment; see the header)" >&2
  exit 2
fi
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
  ninja -C "$BUILD" -j"$THREADS" attn attn_micro attn_gru_anchor >/dev/null
fi
ATTN=$BUILD/attn
MICRO=$BUILD/attn_micro
GRU_ANCHOR=$BUILD/attn_gru_anchor
PEER="$PYTHON $ROOT/bench/torch_peer.py"

# The GEMM peak: the best of kernels::gemm and cblas_sgemm on large square products, under
# each candidate OpenBLAS core. Measured at the start and again at the end of the run.
measure_peak() {  # measure_peak <file> [coretype]: prints the best GFLOP/s
  local file=$1 core=${2:-default}
  if [[ $core == default ]]; then
    env -u OPENBLAS_CORETYPE "$MICRO" --threads="$THREADS" --benchmark_filter='BM_(Gemm|CblasSgemm)/.*(1024|2048)' \
      --benchmark_min_time=0.5 --benchmark_format=json >"$file" 2>/dev/null
  else
    OPENBLAS_CORETYPE=$core "$MICRO" --threads="$THREADS" --benchmark_filter='BM_(Gemm|CblasSgemm)/.*(1024|2048)' \
      --benchmark_min_time=0.5 --benchmark_format=json >"$file" 2>/dev/null
  fi
  $PYTHON -c "import json; print('%.2f' % max(x['GFLOPS'] for x in json.load(open('$file'))['benchmarks']))"
}
corename() {  # the core OpenBLAS picks under the current environment
  $PYTHON -c "import ctypes; l = ctypes.CDLL('libopenblas.so.0'); l.openblas_get_corename.restype = ctypes.c_char_p; print(l.openblas_get_corename().decode())"
}

echo "# attn vs PyTorch ($(date -u +%Y-%m-%dT%H:%MZ))"
echo
echo "- machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1) (family $(sed -n 's/^cpu family\t*: //p' /proc/cpuinfo | head -1), model $(sed -n 's/^model\t*: //p' /proc/cpuinfo | head -1)), $(nproc) cores; vector ISA: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_bf16|amx_tile)$' | tr '\n' ' ')"
echo "- threads $THREADS; OMP_WAIT_POLICY=$OMP_WAIT_POLICY"
echo "- torch $($PYTHON -c 'import torch; print(torch.__version__)'); attn $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?') (+ working tree)"
echo "- load before: $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -n ${OPENBLAS_CORETYPE:-} ]]; then
  CORETYPES=$OPENBLAS_CORETYPE
fi
BEST_CORE=""
PEAK=0
for core in ${CORETYPES:-default SkylakeX Cooperlake}; do
  rate=$(measure_peak "$OUT/gemm_peak_$core.json" "$core")
  echo "- sgemm peak with OpenBLAS core $core: $rate GFLOP/s"
  if $PYTHON -c "import sys; sys.exit(0 if $rate > $PEAK else 1)"; then PEAK=$rate; BEST_CORE=$core; fi
done
if [[ $BEST_CORE == default ]]; then unset OPENBLAS_CORETYPE; else export OPENBLAS_CORETYPE=$BEST_CORE; fi
echo "- both sides run with OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)}: OpenBLAS $(corename)"

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

SEQ=(--batch 64 --emb 64 --hidden 256 --vocab 32 --len 40 --steps "${SEQ_STEPS:-20}" --threads "$THREADS" ${SEQ_ARGS:-})
ATT=(--batch 1 --heads 8 --dim 256 --threads "$THREADS" ${ATTN_ARGS:-})
TF=(--threads "$THREADS" ${TF_ARGS:-})
for ROUND in $(seq 1 "$ROUNDS"); do
  # Alternate which side goes first from round to round.
  if ((ROUND % 2)); then order=(attn torch); else order=(torch attn); fi
  if [[ $ONLY == all || $ONLY == seq2seq ]]; then
    for att in ${SEQ_ATTENTIONS:-bahdanau luong}; do
      for side in "${order[@]}"; do
        if [[ $side == attn ]]; then run "seq2seq $att" "$ATTN" bench seq2seq --attention $att "${SEQ[@]}" --json
        else run "seq2seq $att" $PEER seq2seq --attention $att "${SEQ[@]}" --json; fi
      done
    done
  fi
  if [[ $ONLY == all || $ONLY == attention ]]; then
    # additive at T = 1024: PyTorch's composed form keeps (T, S, A) floats for backward
    # (16 GiB at T = 4096 with A = 256: 4096 · 4096 · 256 · 4 bytes).
    for spec in ${ATTENTION_SPECS:-mha:4096}; do
      spec=${spec/:/ }
      set -- $spec
      for side in "${order[@]}"; do
        if [[ $side == attn ]]; then run "attention $1 T=$2" "$ATTN" bench attention --kind "$1" --len "$2" "${ATT[@]}" --json
        else run "attention $1 T=$2" $PEER attention --kind "$1" --len "$2" "${ATT[@]}" --json; fi
      done
    done
  fi
  if [[ $ONLY == all || $ONLY == transformer ]]; then
    for side in "${order[@]}"; do
      if [[ $side == attn ]]; then run "transformer" "$ATTN" bench transformer "${TF[@]}" --json
      else run "transformer" $PEER transformer "${TF[@]}" --json; fi
    done
  fi
  if [[ $ONLY == all || $ONLY == gru ]]; then
    run "gru anchor" "$GRU_ANCHOR" --threads "$THREADS"  # both sides in one process
  fi
done
PEAK_END=$(measure_peak "$OUT/gemm_peak_end.json" "${OPENBLAS_CORETYPE:-default}")
echo "- sgemm peak at the end (core ${OPENBLAS_CORETYPE:-default}): $PEAK_END GFLOP/s"
PEAK=$($PYTHON -c "print(max($PEAK, $PEAK_END))")
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
                ("greedy_gflops_per_s", True), ("train_tokens_per_cpu_s", True), ("greedy_tokens_per_cpu_s", True)],
    "attention": [("forward_ms", False), ("forward_backward_ms", False), ("growth_mb", False)],
    "transformer": [("train_tokens_per_s", True), ("beam_tokens_per_s", True), ("beam_sentences_per_s", True),
                    ("gflops_per_s", True)],
}


def paired(label, key):
    """{round: value} for attn and for PyTorch."""
    mine = [r for r in rows if r["label"] == label]
    a = {r["round"]: r[key] for r in mine if r["impl"] == "attn" and r.get(key) is not None}
    t = {r["round"]: r[key] for r in mine if r["impl"] == "torch" and r.get(key) is not None}
    return a, t


print("| benchmark | metric | attn | PyTorch | attn/PyTorch (range) | attn speedup | attn % of GEMM peak |")
print("|---|---|---:|---:|---:|---:|---:|")
labels = list(dict.fromkeys(r["label"] for r in rows if r["bench"] in metrics))
for label in labels:
    bench = next(r["bench"] for r in rows if r["label"] == label)
    for key, higher in metrics[bench]:
        a, t = paired(label, key)
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
gru = [r for r in rows if r["bench"] == "gru_anchor"]
if gru:
    print()
    print("| GRU layer (B 64, S 40, in 64, hidden 256) | attn ms | oneDNN ms | oneDNN/attn (range) |")
    print("|---|---:|---:|---:|")
    for phase in ("forward", "forward_backward", "forward_cpu", "forward_backward_cpu"):
        ratios = [r[f"{phase}_ratio"] for r in gru]
        rng = f" ({min(ratios):.2f}–{max(ratios):.2f})" if len(ratios) > 1 else ""
        print(f"| {phase} | {statistics.median(r[f'attn_{phase}_ms'] for r in gru):.2f} | "
              f"{statistics.median(r[f'onednn_{phase}_ms'] for r in gru):.2f} | "
              f"{statistics.median(ratios):.2f}{rng} |")
    print(f"\nLargest forward output difference attn − oneDNN: {max(r['forward_max_abs_diff'] for r in gru):.2g} "
          f"(oneDNN {gru[0]['onednn']}).")
print()
print(f"GEMM peak {peak:.1f} GFLOP/s; speedup = attn/PyTorch for rates, PyTorch/attn for times and memory growth "
      "(peak RSS − RSS after inputs and weights exist).")


# ---- issue 22, item 4: every target, from the same rounds --------------------------------------
def ratio_of_rounds(label, key, higher=True):
    """Median and range of the per-round attn/PyTorch ratios (PyTorch/attn for times)."""
    a, t = paired(label, key)
    r = [(a[k] / t[k]) if higher else (t[k] / a[k]) for k in a if k in t and a[k] and t[k]]
    return (statistics.median(r), min(r), max(r)) if r else None


def times(r):
    return f"{r[0]:.2f}× ({r[1]:.2f}–{r[2]:.2f})"


def needs(label, gflops_key, goal):
    """What the goal asks of attn: goal x PyTorch's median GFLOP/s, as % of the run's peak."""
    _, t = paired(label, gflops_key)
    if not t:
        return "—"
    g = goal * statistics.median(t.values())
    return f"{g:.1f} GFLOP/s = {100 * g / peak:.0f} % of peak"


targets = []  # (what, measured, met, target, what the target needs)
for att in ("bahdanau", "luong"):
    label = f"seq2seq {att}"
    a, _ = paired(label, "gflops_per_s")
    if a:
        v = 100 * statistics.median(a.values()) / peak
        targets.append((f"seq2seq {att}: training step, % of the run's sgemm peak", f"{v:.0f} %", v >= 50, "≥ 50 %",
                        f"{0.5 * peak:.1f} GFLOP/s"))
    for key, gkey, what, goal in (("train_tokens_per_s", "gflops_per_s", "training", 3.5),
                                  ("greedy_tokens_per_s", "greedy_gflops_per_s", "greedy decoding", 4.5),
                                  ("train_tokens_per_cpu_s", None, "training, CPU time", 3.5),
                                  ("greedy_tokens_per_cpu_s", None, "greedy decoding, CPU time", 4.5)):
        r = ratio_of_rounds(label, key)
        if r:
            targets.append((f"seq2seq {att}: {what} vs PyTorch", times(r), r[0] >= goal, f"≥ {goal}×",
                            needs(label, gkey, goal) if gkey else ""))
r = ratio_of_rounds("attention mha T=4096", "forward_ms", higher=False)
if r:
    targets.append(("MHA T=4096 forward vs nn.MultiheadAttention", times(r), r[0] >= 4.5, "≥ 4.5×",
                    f"{statistics.median(paired('attention mha T=4096', 'forward_ms')[1].values()) / 4.5:.0f} ms"))
    a, t = paired("attention mha T=4096", "growth_mb")
    g = [100 * a[k] / t[k] for k in a if k in t and t[k]]
    if g:
        m = statistics.median(g)
        targets.append(("MHA T=4096 memory growth, % of PyTorch's", f"{m:.1f} %", m <= 10, "≤ 10 %", ""))
for key, gkey, what, goal in (("train_tokens_per_s", "gflops_per_s", "training", 2.5),
                              ("beam_tokens_per_s", None, "beam-5 decoding", 3.0)):
    r = ratio_of_rounds("transformer", key)
    if r:
        targets.append((f"Transformer {what} vs PyTorch", times(r), r[0] >= goal, f"≥ {goal}×",
                        needs("transformer", gkey, goal) if gkey else ""))
for phase in ("forward", "forward_backward"):
    if gru:
        ratios = [x[f"{phase}_ratio"] for x in gru]
        r = (statistics.median(ratios), min(ratios), max(ratios))
        targets.append((f"GRU layer {phase.replace('_', '+')} vs oneDNN lbr_gru", times(r), r[0] >= 1.0, "≥ 1×", ""))
if targets:
    print()
    print(f"| target (issue 22, item 4) | measured (range over rounds) | target | | the target asks attn for |")
    print("|---|---:|---:|---|---|")
    for what, measured, met, goal, asks in targets:
        print(f"| {what} | {measured} | {goal} | {'met' if met else 'not met'} | {asks} |")
    print(f"\nPer-round ratios are attn/PyTorch of alternating runs (PyTorch/attn for times; oneDNN/attn for "
          f"the GRU layer); the sgemm peak is the best large-square rate measured in this run ({peak:.1f} GFLOP/s).")
EOF
