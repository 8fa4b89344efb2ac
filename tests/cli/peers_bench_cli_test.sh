#!/usr/bin/env bash
# bench/compare.sh --peers without its environment (how to create it, exit 2), and
# bench/peers/table.py on made-up results: the per-round ratio, the fastest peer picked by its
# median, "attn slower" where it is, n/a rows kept with their reason. No venv, no torch.
# Usage: peers_bench_cli_test.sh path/to/attn
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$(dirname "$0")/lib.sh"

expect 2 "create it with: bash bench/peers/setup.sh" -- env ATTN_PEERS_VENV="$work/none" bash "$root/bench/compare.sh" --peers
expect 2 "usage: bench/compare.sh [--peers]" -- bash "$root/bench/compare.sh" --bogus
expect 2 "usage: bench/peers/compare.sh" -- bash "$root/bench/peers/compare.sh" extra
expect 2 "usage: bash bench/peers/setup.sh [--print]" -- bash "$root/bench/peers/setup.sh" --bogus
expect 0 "peers-venv" -- env -u ATTN_PEERS_VENV HOME="$work" bash "$root/bench/peers/setup.sh" --print

# Two rounds. seq2seq training: attn 100, 120; torch eager 50, 40; compile 80, 60 (median 70,
# the fastest) -> per-round ratios 1.25, 2.00, median 1.62. SDPA forward (a time): attn 10,
# 12 ms, torch 8, 8 -> 0.80, 0.67: attn slower. The beam row's peer is n/a.
cat >"$work/results.jsonl" <<'EOF'
{"label": "seq2seq bahdanau", "impl": "attn", "config": "fp32", "round": 1, "train_tokens_per_s": 100, "greedy_tokens_per_s": 10}
{"label": "seq2seq bahdanau", "impl": "torch", "config": "eager fp32", "round": 1, "train_tokens_per_s": 50, "greedy_tokens_per_s": 5}
{"label": "seq2seq bahdanau", "impl": "torch", "config": "torch.compile fp32", "round": 1, "train_tokens_per_s": 80, "greedy_tokens_per_s": 5}
{"label": "seq2seq bahdanau", "impl": "attn", "config": "fp32", "round": 2, "train_tokens_per_s": 120, "greedy_tokens_per_s": 10}
{"label": "seq2seq bahdanau", "impl": "torch", "config": "eager fp32", "round": 2, "train_tokens_per_s": 40, "greedy_tokens_per_s": 5}
{"label": "seq2seq bahdanau", "impl": "torch", "config": "torch.compile fp32", "round": 2, "train_tokens_per_s": 60, "greedy_tokens_per_s": 5}
{"label": "sdpa T=512 causal", "impl": "attn", "config": "fused sdpa", "round": 1, "forward_ms": 10, "forward_backward_ms": 30, "growth_mb": 1}
{"label": "sdpa T=512 causal", "impl": "torch", "config": "F.sdpa", "round": 1, "forward_ms": 8, "forward_backward_ms": 60, "growth_mb": 5}
{"label": "sdpa T=512 causal", "impl": "attn", "config": "fused sdpa", "round": 2, "forward_ms": 12, "forward_backward_ms": 30, "growth_mb": 1}
{"label": "sdpa T=512 causal", "impl": "torch", "config": "F.sdpa", "round": 2, "forward_ms": 8, "forward_backward_ms": 60, "growth_mb": 5}
{"label": "beam-5 test2016", "impl": "attn", "config": "translate fp32", "round": 1, "sentences_per_s": 5, "tokens_per_s": 50, "peak_rss_mb": 100, "bleu": 20.0}
{"label": "beam-5 test2016", "impl": "ctranslate2", "config": "bfloat16", "round": 1, "na": "n/a (no bf16 here)"}
{"label": "transformer training", "impl": "attn", "config": "fp32", "round": 1, "train_tokens_per_s": 100}
{"label": "transformer training", "impl": "attn", "config": "bf16", "round": 1, "train_tokens_per_s": 150}
{"label": "transformer training", "impl": "torch", "config": "eager bf16 autocast", "round": 1, "train_tokens_per_s": 120}
{"label": "transformer training", "impl": "attn", "config": "fp32", "round": 2, "train_tokens_per_s": 100}
{"label": "transformer training", "impl": "attn", "config": "bf16", "round": 2, "train_tokens_per_s": 160}
{"label": "transformer training", "impl": "torch", "config": "eager bf16 autocast", "round": 2, "train_tokens_per_s": 120}
EOF
table="$(python3 "$root/bench/peers/table.py" "$work/results.jsonl")" || fail "table.py failed"
row() { grep -F "| $1 | $2 |" <<<"$table" | head -1; }
[[ "$(row "seq2seq bahdanau" "training tokens/s")" == *"| torch: torch.compile fp32 | 70.0 | 1.62× (1.25–2.00) | attn faster |"* ]] ||
  fail "seq2seq row: $(row "seq2seq bahdanau" "training tokens/s")"
[[ "$(row "sdpa T=512 causal" "forward ms")" == *"| 0.73× (0.67–0.80) | **attn slower** |"* ]] ||
  fail "sdpa forward row: $(row "sdpa T=512 causal" "forward ms")"
[[ "$(row "sdpa T=512 causal" "forward+backward ms")" == *"| 2.00× (2.00–2.00) | attn faster |"* ]] ||
  fail "sdpa forward+backward row: $(row "sdpa T=512 causal" "forward+backward ms")"
# Two attn configurations (fp32 100, 100; bf16 150, 160): the row takes attn's fastest, named,
# against torch's 120 -> 1.25, 1.33, median 1.29.
[[ "$(row "transformer training" "training target tokens/s")" == *"| 155 (bf16) | torch: eager bf16 autocast | 120 | 1.29× (1.25–1.33) | attn faster |"* ]] ||
  fail "transformer row with two attn configurations: $(row "transformer training" "training target tokens/s")"
[[ "$table" == *"| ctranslate2: bfloat16 | n/a (no bf16 here) |"* ]] || fail "the n/a row is missing: $table"
[[ "$(row "beam-5 test2016" "sentences/s")" == *"ctranslate2 bfloat16: n/a (no bf16 here)"* ]] ||
  fail "beam row without a runnable peer: $(row "beam-5 test2016" "sentences/s")"

# The beam table: every row against CTranslate2 float32 in the same rounds (attn with its own
# rules 5, 6 against 10, 12 -> 0.50; with CTranslate2's 8, 12 -> 0.80, 1.00), BLEU beside.
cat >"$work/beam.jsonl" <<'EOF'
{"label": "beam-5 test2016", "impl": "attn", "config": "translate fp32", "round": 1, "sentences_per_s": 5, "tokens_per_s": 50, "peak_rss_mb": 100, "bleu": 20.0}
{"label": "beam-5 test2016", "impl": "attn", "config": "translate fp32, ctranslate2 rules", "round": 1, "sentences_per_s": 8, "tokens_per_s": 80, "peak_rss_mb": 100, "bleu": 21.0}
{"label": "beam-5 test2016", "impl": "ctranslate2", "config": "float32", "round": 1, "sentences_per_s": 10, "tokens_per_s": 100, "peak_rss_mb": 50, "bleu": 21.0}
{"label": "beam-5 test2016", "impl": "attn", "config": "translate fp32", "round": 2, "sentences_per_s": 6, "tokens_per_s": 60, "peak_rss_mb": 100, "bleu": 20.0}
{"label": "beam-5 test2016", "impl": "attn", "config": "translate fp32, ctranslate2 rules", "round": 2, "sentences_per_s": 12, "tokens_per_s": 120, "peak_rss_mb": 100, "bleu": 21.0}
{"label": "beam-5 test2016", "impl": "ctranslate2", "config": "float32", "round": 2, "sentences_per_s": 12, "tokens_per_s": 120, "peak_rss_mb": 50, "bleu": 21.0}
EOF
beam="$(python3 "$root/bench/peers/table.py" "$work/beam.jsonl")" || fail "table.py failed on the beam rows"
[[ "$beam" == *"| attn: translate fp32 | 5.50 (5.00–6.00) | 55.0 (50.0–60.0) | 100 (100–100) | 20.0 | 0.50× (0.50–0.50) |"* ]] ||
  fail "attn's own rules against CTranslate2 float32: $beam"
[[ "$beam" == *"| attn: translate fp32, ctranslate2 rules | 10.0 (8.00–12.0) | 100 (80.0–120) | 100 (100–100) | 21.0 | 0.90× (0.80–1.00) |"* ]] ||
  fail "attn with CTranslate2's rules against CTranslate2 float32: $beam"
[[ "$beam" == *"| ctranslate2: float32 | 11.0 (10.0–12.0) | 110 (100–120) | 50.0 (50.0–50.0) | 21.0 | 1.00× (1.00–1.00) |"* ]] ||
  fail "CTranslate2 float32 against itself: $beam"

finish "peers_bench_cli_test"
