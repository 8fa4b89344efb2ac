#!/usr/bin/env bash
# attn bench online at two short lengths: every attention kind timed at each length, the
# multiply-adds of bench/support/flops.h (recomputed here from its formulas), a fitted exponent
# per kind, and the bad options. Usage: online_bench_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
source "$(dirname "$0")/lib.sh"

"$attn" bench online --lengths 16,32,48 --reps 1 --threads 1 --json > "$work/b.json" || fail "bench online --json"
/usr/bin/python3 - "$work/b.json" <<'PY' || fail "bench online JSON"
import json, math, sys
d = json.load(open(sys.argv[1]))
kinds = ["additive", "local_m", "local_p", "monotonic", "mocha", "monotonic (training)", "mocha (training)"]
assert [r["attention"] for r in d["rows"]] == [k for k in kinds for _ in range(3)], d["rows"]
D, E, W, C = 128, 256, 10, 2  # C: the chunk
for r in d["rows"]:
    T, U, kind = r["T"], r["U"], r["attention"]
    assert U == T // 2 and r["ms"] > 0 and r["cpu_ms"] >= 0, r
    A, K = D, min(2 * W + 1, T)
    macs = {"additive": T * E * A + U * (D * A + T * A + T * E),
            "local_m": U * (D * E + 2 * K * E),
            "local_p": U * (D * E + 2 * K * E) + U * (A * D + A),
            # hard inference: at most T + U frames scored, the context over the stop's chunk
            "monotonic": T * E * A + U * (D * A + E) + (T + U) * A,
            "mocha": 2 * T * E * A + U * (2 * D * A + C * A + C * E) + (T + U) * A,
            "mocha (training)": 2 * T * E * A + U * (2 * D * A + 2 * T * A + T * E)}
    macs["monotonic (training)"] = macs["additive"]
    assert r["macs"] == macs[kind], (r, macs[kind])
assert sorted(d["exponents"]) == sorted(kinds), d["exponents"]
assert all(isinstance(k, (int, float)) for k in d["exponents"].values()), d["exponents"]
assert d["config"]["chars_per_frame"] == 0.5 and d["threads"] == 1 and "cpu" in d["machine"], d["config"]
PY
expect 0 "CPU time ∝ T^k over the four longest lengths: additive" -- "$attn" bench online --lengths 8,16 --reps 1
expect 2 "--lengths: 1 is not in [2, 65536]" -- "$attn" bench online --lengths 8,1
expect 2 "bad length 'x' (expected positive integers, e.g. 5,10,20)" -- "$attn" bench online --lengths x
expect 2 "bad length '' (expected positive integers" -- "$attn" bench online --lengths 8,,16
expect 2 "--chars-per-frame must be in (0, 4], got 0" -- "$attn" bench online --chars-per-frame 0
expect 2 "--query, --memory, --window, --chunk and --reps must be >= 1" -- "$attn" bench online --reps 0
finish "bench online CLI"
