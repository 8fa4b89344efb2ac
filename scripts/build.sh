#!/usr/bin/env bash
# Installs missing dependencies, then configures and builds attn (Release) in build/.
# Extra arguments go to the build step, e.g. `scripts/build.sh --target attn`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/install-deps.sh"
# ccache (CMakeLists.txt): paths under the clone are hashed relative to it, and the build
# folder is not hashed, so a fresh clone in another folder reuses the cached objects.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
if [[ ! -f "$root/build/build.ninja" ]]; then
  cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DATTN_BUILD_TESTS=ON -DATTN_BUILD_PYTHON=ON -DPython3_EXECUTABLE=/usr/bin/python3 >/dev/null
fi
cmake --build "$root/build" "$@"
