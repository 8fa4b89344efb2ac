#!/usr/bin/env bash
# The responsiveness target of `attn view` (issue 20): the 200-token, 6-layer x 8-head
# transformer-cls page of tests/browser/view.test.mjs, with the bound asserted: no event or
# long task in the browser's performance timeline over ATTN_VIEW_MAX_INTERACTION_MS after
# loading (default 100 ms). A benchmark, not a test: run it on a quiet machine.
#   bench/view_responsiveness.sh [path/to/attn]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ATTN_VIEW_MAX_INTERACTION_MS="${ATTN_VIEW_MAX_INTERACTION_MS:-100}"
export ATTN_VIEW_TEST_PATTERN="200 tokens"
exec bash "$root/tests/browser/run.sh" "${1:-$root/build/attn}"
