#!/usr/bin/env bash
# Two attn binaries side by side: runs the same `attn bench` command with each, alternating
# (the side that goes first flips every round), and prints each metric's median per binary,
# the per-round ratios B/A and their median. For before/after checks of a kernel change on a
# noisy, shared machine, where runs minutes apart differ by up to 30 %.
#
#   bench/ab.sh OLD_ATTN NEW_ATTN [ROUNDS] -- bench seq2seq --attention luong --steps 8 --threads 2 --json
#
# The arguments after `--` are passed to both binaries and must include --json. Every
# numeric top-level field of the JSON (and of phase_ms_per_step) is compared. Rates
# (…_per_s) are better when higher, times (…_ms, seconds) when lower; the ratio is
# always B/A of the value itself. OMP_WAIT_POLICY is PASSIVE unless set, as in compare.sh.
set -euo pipefail
if [[ $# -lt 4 || " $* " != *" -- "* ]]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
A=$1
B=$2
shift 2
ROUNDS=3
if [[ $1 != "--" ]]; then
  ROUNDS=$1
  shift
fi
[[ $1 == "--" ]] || { echo "ab.sh: expected -- before the bench arguments" >&2; exit 2; }
shift
for bin in "$A" "$B"; do
  [[ -x $bin ]] || { echo "ab.sh: $bin is not an executable" >&2; exit 2; }
done
[[ " $* " == *" --json "* ]] || { echo "ab.sh: the bench arguments must include --json" >&2; exit 2; }
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
PYTHON=${PYTHON:-/usr/bin/python3}

OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
for ((round = 1; round <= ROUNDS; ++round)); do
  order=("A" "B")
  ((round % 2 == 0)) && order=("B" "A")
  for side in "${order[@]}"; do
    bin=$A
    [[ $side == B ]] && bin=$B
    line=$("$bin" "$@")
    echo "$side $round $line" >>"$OUT"
    echo "round $round/$ROUNDS: $side done" >&2
  done
done

"$PYTHON" - "$OUT" "$A" "$B" <<'EOF'
import json, statistics, sys
path, name_a, name_b = sys.argv[1:4]
runs = {"A": {}, "B": {}}
for line in open(path):
    side, rnd, text = line.split(" ", 2)
    d = json.loads(text)
    flat = {k: v for k, v in d.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    flat.update({f"phase.{k}": v for k, v in d.get("phase_ms_per_step", {}).items()})
    runs[side][int(rnd)] = flat
rounds = sorted(runs["A"])
keys = [k for k in runs["A"][rounds[0]] if all(k in runs[s][r] for s in "AB" for r in rounds)]
print(f"A = {name_a}\nB = {name_b}\n")
print("| metric | A median | B median | B/A per round | B/A median |")
print("|---|---:|---:|---|---:|")
for k in keys:
    a = [runs["A"][r][k] for r in rounds]
    b = [runs["B"][r][k] for r in rounds]
    if any(x == 0 for x in a):
        continue
    if len(set(a + b)) == 1 and "loss" not in k:  # settings (steps, threads, FLOP counts)
        continue
    ratios = [y / x for x, y in zip(a, b)]
    print(f"| {k} | {statistics.median(a):.4g} | {statistics.median(b):.4g} | "
          f"{' '.join(f'{r:.2f}' for r in ratios)} | {statistics.median(ratios):.3f} |")
EOF
