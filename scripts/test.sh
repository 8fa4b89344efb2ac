#!/usr/bin/env bash
# Runs every test: installs missing dependencies, builds, runs the suite (C++ tests and
# the PyTorch parity suite) in Release, then the C++ suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export ATTN_NUM_THREADS="${ATTN_NUM_THREADS:-2}"
# ctest runs two test programs at once on 2 cores: spinning OpenMP threads would starve
# each other, so idle threads sleep.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"

echo "== build (Release)"
bash scripts/build.sh
echo "== tests (Release)"
ctest --test-dir build --output-on-failure -j 2

echo "== build (ATTN_SANITIZE=ON)"
# -O1 -g1 (line tables for ASan's stack traces, no variable info) compiles 2-3x faster
# than RelWithDebInfo's -O2 -g under the sanitizers, which made this build most of CI.
if [[ ! -f build-sanitize/build.ninja ]]; then
  cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DATTN_SANITIZE=ON \
    -DATTN_BUILD_TESTS=ON -DATTN_BUILD_PYTHON=OFF >/dev/null
fi
cmake --build build-sanitize
echo "== tests (ATTN_SANITIZE=ON)"
# LeakSanitizer is off: the OpenMP and fontconfig runtimes keep allocations until exit
# that it reports as leaks. ASan's memory-error checks and UBSan stay on.
ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-sanitize --output-on-failure -j 2 -LE no-sanitize
echo "== all tests passed"
