#!/usr/bin/env bash
# Installs missing dependencies, then configures and builds attn (Release) in build/.
# Extra arguments go to the build step, e.g. `scripts/build.sh --target attn`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/install-deps.sh"
if [[ ! -f "$root/build/build.ninja" ]]; then
  cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DATTN_BUILD_TESTS=ON -DATTN_BUILD_PYTHON=ON -DPython3_EXECUTABLE=/usr/bin/python3 >/dev/null
fi
cmake --build "$root/build" "$@"
