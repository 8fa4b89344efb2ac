#!/usr/bin/env bash
# Coverage (See et al. 2017) and GNMT's coverage penalty from the command line: a coverage
# model trains, evaluates, aligns and decodes with a penalty, and `attn view` shows its coverage
# beside the alignment; a decoder that cannot carry
# coverage, a penalty without a beam or without attention, and an export that cannot hold
# coverage are refused with one line. Usage: coverage_cli_test.sh path/to/attn
set -uo pipefail
attn="$1"
source "$(dirname "$0")/lib.sh"

tiny=(--hidden 16 --emb 8 --min-len 3 --max-len 6 --batch 8 --log-every 5 --eval-every 10 --eval-samples 16 --threads 1)
expect 0 "trained 12 steps" -- "$attn" train --task reverse --coverage see --coverage-loss 0.5 "${tiny[@]}" --steps 12 \
  --out "$work/cov"
model="$work/cov/model.safetensors"
grep -q '"coverage":"see"' <(head -c 4096 "$model" | tr -d '\\') || fail "the checkpoint does not record coverage 'see'"
grep -q 'coverage = "see"' "$work/cov/config.toml" || fail "config.toml does not repeat --coverage see"
expect 0 "| 4 |" -- "$attn" eval --model "$model" --eval-lengths 4 --samples 8 --beam 3 --coverage-penalty 0.2
expect 0 "trained 6 steps" -- "$attn" train --task copy --coverage tu "${tiny[@]}" --steps 6 --out "$work/tu"
expect 0 "heatmap:" -- "$attn" align --model "$work/tu/model.safetensors" --input "5 9 3" --beam 2 --out "$work/tu.svg"
expect 0 "heatmap:" -- "$attn" align --model "$model" --input "5 9 3 17" --beam 2 --coverage-penalty 1 --out "$work/a.svg"

# attn view shows the coverage beside the alignment: each hypothesis's final coverage (the
# cross-attention's column sums) in its JSON and column labels, and a "coverage" map of the
# running sums clipped at 1, whose last row is the final coverage clipped; a model without
# coverage shows none.
coverage_ok() {
  /usr/bin/python3 - "$1" "$2" <<'PY' || fail "view's coverage: $1"
import json, sys
v, want = json.load(open(sys.argv[1])), sys.argv[2] == "yes"
assert v["hypotheses"], "no hypotheses"
for h in v["hypotheses"]:
    maps = {m["name"]: m for m in h["maps"]}
    cross = maps["cross"]["weights"][0][0]  # (T, S): one layer, one head
    if not want:
        assert "coverage" not in h and "coverage" not in maps, h.keys()
        assert not any("cov " in c for c in maps["cross"]["cols"]), maps["cross"]["cols"]
        continue
    final = h["coverage"]["final"]
    sums = [sum(row[i] for row in cross) for i in range(len(final))]
    assert len(final) == len(maps["cross"]["cols"]) == 4, (final, maps["cross"]["cols"])
    assert all(abs(f - s) < 1e-5 for f, s in zip(final, sums)), (final, sums)
    assert h["coverage"]["under_translated"] == [i for i, f in enumerate(final) if f < 0.5], h["coverage"]
    assert all(c.endswith(f" · cov {f:.2f}") for c, f in zip(maps["cross"]["cols"], final)), maps["cross"]["cols"]
    running = maps["coverage"]["weights"][0][0]
    assert len(running) == len(cross) and all(0 <= w <= 1 for row in running for w in row), running
    assert all(abs(w - min(f, 1)) < 1e-5 for w, f in zip(running[-1], final)), (running[-1], final)
assert any(n.startswith("coverage:") for n in v["notes"]) == want, v["notes"]
PY
}
expect 0 "" -- "$attn" view --model "$model" --input "5 9 3 17" --beam 2 --out "$work/v.html" --json "$work/v.json"
coverage_ok "$work/v.json" yes
grep -q "cov 0\.\|cov 1\." "$work/v.html" || fail "the page does not label the columns with the coverage"
expect 0 "" -- "$attn" view --model "$work/tu/model.safetensors" --input "5 9 3 17" --out "$work/tu.html" \
  --json "$work/tu.json"
coverage_ok "$work/tu.json" yes
expect 0 "trained 2 steps" -- "$attn" train --task reverse "${tiny[@]}" --steps 2 --out "$work/plain"
expect 0 "" -- "$attn" view --model "$work/plain/model.safetensors" --input "5 9 3 17" --beam 2 --out "$work/p.html" \
  --json "$work/p.json"
coverage_ok "$work/p.json" no

# Refused, exit 2: coverage on a decoder without an additive score, on a task without the
# RNN decoder, a negative weight; a penalty without a beam, or negative.
expect 2 "coverage 'see' needs bahdanau attention" -- "$attn" train --task copy --attention luong --coverage see \
  "${tiny[@]}" --steps 1 --out "$work/bad1"
expect 2 "--coverage does not apply to --task sst2" -- "$attn" train --task sst2 --coverage see --out "$work/bad2"
expect 2 "coverage_loss must be finite and >= 0" -- "$attn" train --task copy --coverage see --coverage-loss -1 \
  "${tiny[@]}" --steps 1 --out "$work/bad3"
expect 2 "unknown coverage 'tu2' (valid: none, see, tu)" -- "$attn" train --task copy --coverage tu2 "${tiny[@]}" \
  --steps 1 --out "$work/bad4"
for bad in bad1 bad2 bad3 bad4; do [[ ! -e "$work/$bad" ]] || fail "a refused train wrote $bad"; done
expect 2 "--coverage-penalty applies to beam search (--beam > 1)" -- "$attn" eval --model "$model" --eval-lengths 4 \
  --coverage-penalty 0.2
expect 2 "--coverage-penalty must be finite and >= 0, got -1" -- "$attn" align --model "$model" --input "5 9" \
  --beam 2 --coverage-penalty -1 --out "$work/b.svg"
[[ ! -e "$work/b.svg" ]] || fail "a refused align wrote its picture"

# A model without attention has no weights to sum: one line, not a crash (OpenNMT-py #2471).
expect 0 "trained 2 steps" -- "$attn" train --task copy --attention none "${tiny[@]}" --steps 2 --out "$work/none"
expect 1 "coverage_penalty needs the attention weights, and this model has none" -- "$attn" eval \
  --model "$work/none/model.safetensors" --eval-lengths 4 --samples 4 --beam 2 --coverage-penalty 1
# PyTorch export has no coverage decoder: refused rather than exported without it.
expect 1 "coverage 'see' has no plain-PyTorch version here" -- "$attn" export --to torch --model "$model" \
  --out "$work/torch"
[[ ! -e "$work/torch" ]] || fail "a refused export wrote its folder"

finish "coverage CLI"
