#!/usr/bin/env bash
# Creates (once) the test suite's Python environment and prints the path of its python, or
# runs that python with the arguments after --exec:
#   py=$(bash scripts/test-venv.sh)
#   bash scripts/test-venv.sh --exec -m pytest tests/parity     (the parity suite: ctest, test.sh)
# A venv of Debian's /usr/bin/python3 with --system-site-packages (so Debian's torch 1.13,
# numpy and pytest stay the oracle) plus the exact pins of scripts/test-venv-requirements.txt
# from PyPI, installed with --no-deps so nothing unpinned comes in.
#
# It lives outside the clone, under ${XDG_CACHE_HOME:-~/.cache}/attn/, named by a hash of the
# pins and the python version: a fresh clone (CI's) reuses it, and changing a pin makes a new one
# instead of changing one that another clone uses. ATTN_TEST_VENV=DIR puts it elsewhere.
# Idempotent: an existing, complete venv (its marker file written last) costs one stat; a
# lock keeps two clones from building the same one at once. Needs python3-venv and PyPI.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requirements="$root/scripts/test-venv-requirements.txt"
pins=$(sed -n 's/^\([A-Za-z0-9_.-]*==[^[:space:]]*\).*/\1/p' "$requirements")
# The venv's name: the pins (not the comments) and the interpreter they were installed for.
key=$( (echo "$pins"; /usr/bin/python3 --version) | sha256sum | cut -c1-12)
venv="${ATTN_TEST_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/attn/test-venv-$key}"
marker="$venv/.attn-complete"

if [[ ! -f "$marker" ]]; then
  mkdir -p "$(dirname "$venv")"
  exec 9>"$venv.lock"
  flock 9
  if [[ ! -f "$marker" ]]; then  # not built by another clone while we waited
    start=$SECONDS
    echo "test-venv: creating $venv" >&2
    rm -rf "$venv"
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
      -r "$requirements" >&2
    # The pinned packages' own requirements must be met (by a pin or by Debian): pip check,
    # restricted to them (Debian's unrelated packages have complaints of their own).
    names=$(echo "$pins" | sed 's/==.*//' | paste -sd'|')
    problems=$("$venv/bin/python" -m pip check 2>/dev/null | grep -iE "^($names) " || true)
    if [[ -n "$problems" ]]; then
      echo "test-venv: unmet requirements: $problems" >&2
      exit 1
    fi
    "$venv/bin/python" -c 'import ctranslate2, sacrebleu, safetensors.numpy, entmax, numpy, torch, rouge_score.rouge_scorer' >&2
    touch "$marker"
    echo "test-venv: ready in $((SECONDS - start)) s, $(du -sh "$venv" | cut -f1)" >&2
  fi
fi
if [[ "${1:-}" == --exec ]]; then
  shift
  exec "$venv/bin/python" "$@"
fi
echo "$venv/bin/python"
