#!/usr/bin/env bash
# Creates the peer environment bench/peers/compare.sh runs: a Python venv from PyPI
# with the exact versions of bench/peers/requirements.txt (and requirements.lock for
# what they pull in). Benchmark and test dependencies only, never attn's runtime ones.
#
#   bash bench/peers/setup.sh            # create or bring up to date
#   bash bench/peers/setup.sh --print    # print the venv path and exit
#
# Where: $ATTN_PEERS_VENV, default ~/.cache/attn/peers-venv. Outside the clone on
# purpose: torch's Linux wheel pulls ~4 GB of CUDA libraries that are shared by every
# clone and worktree on the machine, never copied with the tree, and never near git.
# PyPI's Linux torch wheel carries CUDA; the CPU-only index (download.pytorch.org)
# is used only when ATTN_PEERS_TORCH_INDEX names it, since it is often unreachable.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${ATTN_PEERS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/attn/peers-venv}
if [[ ${1:-} == --print ]]; then echo "$venv"; exit 0; fi
if [[ $# -gt 0 ]]; then echo "usage: bash bench/peers/setup.sh [--print]" >&2; exit 2; fi

# Debian's interpreter when there is one (what CI has), else whatever python3 is.
py=/usr/bin/python3
[[ -x $py ]] || py=$(command -v python3)
stamp="$venv/.attn-peers-stamp"
want=$( { cat "$here/requirements.txt"; cat "$here/requirements.lock" 2>/dev/null || true; } | sha256sum | cut -c1-16)
if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
  echo "peer venv up to date: $venv"; exit 0
fi

start=$(date +%s)
if [[ ! -x $venv/bin/python ]]; then
  mkdir -p "$(dirname "$venv")"
  "$py" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
constraints=()
[[ -f $here/requirements.lock ]] && constraints=(-c "$here/requirements.lock")
index=()
[[ -n ${ATTN_PEERS_TORCH_INDEX:-} ]] && index=(--extra-index-url "$ATTN_PEERS_TORCH_INDEX")
"${pip[@]}" install "${index[@]}" "${constraints[@]}" -r "$here/requirements.txt"
# Fail now, not mid-benchmark, when an import is broken.
"$venv/bin/python" - <<'PY'
import torch, ctranslate2, sacrebleu, safetensors, entmax, captum, sentencepiece, numpy
print("torch", torch.__version__, "ctranslate2", ctranslate2.__version__,
      "sacrebleu", sacrebleu.__version__, "numpy", numpy.__version__)
PY
took=$(( $(date +%s) - start ))
size=$(du -sh "$venv" | cut -f1)
echo "$want" > "$stamp"
echo "peer venv ready: $venv ($size on disk, install took ${took}s)"
echo "use: bash bench/peers/compare.sh  (or ATTN_PEERS_VENV=$venv)"
