#!/usr/bin/env bash
# The browser tests of `attn view` (view.test.mjs): installs playwright-core from the
# committed lock (npm ci; it downloads no browser) when node_modules is missing or older
# than the lock, then drives Debian's /usr/bin/chromium (scripts/install-deps.sh installs it).
#   tests/browser/run.sh build/attn [--screenshots DIR]
# --screenshots DIR also saves a PNG of each view there (docs/images holds the committed ones).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
attn="$(realpath "${1:?usage: run.sh path/to/attn [--screenshots DIR]}")"
shift
if [[ "${1:-}" == --screenshots ]]; then
  export ATTN_SCREENSHOTS="$(realpath -m "${2:?--screenshots needs a folder}")"
fi
if [[ ! -f "$here/node_modules/.package-lock.json" || "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi
export ATTN="$attn"
export ATTN_DATA_DIR="${ATTN_DATA_DIR:-$(realpath -m "$here/../../../shared/data")}"
export ATTN_NUM_THREADS="${ATTN_NUM_THREADS:-2}" OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
cd "$here"
if [[ -n "${ATTN_VIEW_TEST_PATTERN:-}" ]]; then
  node --test --test-name-pattern="$ATTN_VIEW_TEST_PATTERN" view.test.mjs
else
  node --test view.test.mjs
fi
