#!/usr/bin/env bash
# `pip install .` of the attn Python package, checked from outside the repository:
# --target install, a venv install and uninstall, and a wheel (python3 -m build).
#   bash tests/python/package_test.sh [PYTHON]     (default /usr/bin/python3)
# setup.py's build_ext reuses $ATTN_CMAKE_BUILD_DIR (ctest sets it to the tested build).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/tests/cli/lib.sh"
python="${1:-/usr/bin/python3}"
pip_install=("$python" -m pip install --no-build-isolation --no-index --no-deps --quiet --disable-pip-version-check)
cd "$work"  # never import the source tree's python/attn by accident

# The installed package imports from anywhere, says the version pip recorded, ships its stubs.
check_package() {  # check_package PYTHON PYTHONPATH
  local out
  out="$(cd "$work" && PYTHONPATH="$2" "$1" -c '
import importlib.metadata, pathlib, attn, attn.nn, attn.torch, numpy as np, torch
assert attn.__version__ == importlib.metadata.version("attn"), (attn.__version__, importlib.metadata.version("attn"))
folder = pathlib.Path(attn.__file__).parent
assert (folder / "_attn.pyi").stat().st_size > 1000 and (folder / "py.typed").exists()
x = attn.tensor(np.array([[1.0, -2.0]], np.float32), requires_grad=True)
attn.backward(attn.sum(attn.tanh(x)))
out, weights = attn.torch.sdpa(*(torch.ones(1, 1, 2, 3) for _ in range(3)))
assert weights.shape == (1, 1, 2, 2) and attn.nn.MultiheadAttention(4, 2).state_dict()
print(attn.__version__, folder, [round(float(g), 4) for g in x.grad.numpy().ravel()])' 2>&1)" || { fail "import from $2: $out"; return; }
  [[ "$out" == *"$work"* && "$out" == *"[0.42, 0.0707]"* ]] || fail "unexpected import result: $out"
}

(cd "$root" && "${pip_install[@]}" --target "$work/target" .) >"$work/target.log" 2>&1 ||
  fail "pip install --target failed: $(tail -5 "$work/target.log")"
check_package "$python" "$work/target"

# A venv that sees Debian's numpy (and torch): install, import, uninstall.
"$python" -m venv --system-site-packages "$work/venv" || fail "python3 -m venv failed"
(cd "$root" && "$work/venv/bin/python" -m pip install --no-build-isolation --no-index --quiet \
  --disable-pip-version-check .) >"$work/venv.log" 2>&1 || fail "pip install in a venv failed: $(tail -5 "$work/venv.log")"
check_package "$work/venv/bin/python" ""
"$work/venv/bin/python" -m pip uninstall -y --quiet attn >/dev/null 2>&1 || fail "pip uninstall attn failed"
if (cd "$work" && "$work/venv/bin/python" -c 'import attn' 2>/dev/null); then fail "attn still imports after pip uninstall"; fi
[[ -z "$(find "$work/venv" -path '*attn*' -name '*.so')" ]] || fail "pip uninstall left the extension behind"

# A wheel holding the extension, its stubs and the version of CMakeLists.txt.
version="$(sed -n 's/^project(attn VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")"
(cd "$root" && "$python" -m build --no-isolation --wheel --outdir "$work/dist") >"$work/wheel.log" 2>&1 ||
  fail "python3 -m build --wheel failed: $(tail -5 "$work/wheel.log")"
wheel=("$work/dist/attn-$version-"*.whl)
if [[ -f "${wheel[0]}" ]]; then
  listing="$("$python" -m zipfile -l "${wheel[0]}")"
  for member in attn/__init__.py attn/_attn.pyi attn/py.typed "attn/_attn.cpython"; do
    [[ "$listing" == *"$member"* ]] || fail "wheel lacks $member"
  done
else
  fail "no wheel attn-$version-*.whl in $work/dist: $(ls "$work/dist" 2>&1)"
fi
finish "python package"
