#!/usr/bin/env bash
# Runs every test: installs missing dependencies, then
#   1. the Release build: the library for x86-64-v2, attn's hot kernels once more per ISA
#      level (baseline, avx2, avx512: chosen at run time, docs/architecture.md), the test
#      programs and the Python module. Its tests: the C++ suite, the CLI tests, the kernel
#      suites (tests/ops, tests/attention) and the PyTorch parity suite once per ISA level
#      (ATTN_ISA=...; a level this CPU lacks is reported Skipped; at baseline with OpenBLAS's
#      generic SSE kernels, OPENBLAS_CORETYPE=Prescott, as on an x86-64-v2 CPU, so rounding
#      that depends on the vector width fails on the developer's machine), the pip package
#      test, and the browser tests of attn view (headless chromium);
#   2. the same tree with AddressSanitizer + UndefinedBehaviorSanitizer (-O1): the C++ suite,
#      the CLI tests and the kernel suites at every level, with OpenBLAS's Prescott kernels;
#   3. the libFuzzer targets of fuzz/ (clang-15, ASan + UBSan), 20 s each, one per core at a
#      time (docs/fuzzing.md).
# Each step prints how long it took.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# ccache (CMakeLists.txt): paths under the clone are hashed relative to it, and the build
# folder is not hashed, so a fresh clone in another folder reuses the cached objects.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
export ATTN_NUM_THREADS="${ATTN_NUM_THREADS:-2}"
# ctest runs two test programs at once on 2 cores: spinning OpenMP threads would starve
# each other, so idle threads sleep.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
sanitizer_coretype="${OPENBLAS_CORETYPE:-Prescott}"

# step NAME COMMAND...: runs COMMAND and prints its wall time.
step() {
  local name="$1" start=$SECONDS
  shift
  echo "== $name"
  "$@"
  echo "== $name: $((SECONDS - start)) s"
}

configure() {  # configure DIR CMAKE-ARGS...: every time, so an older folder gets these options
  local dir="$1"
  shift
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
}

step "build" bash scripts/build.sh
step "tests (every ISA level)" ctest --test-dir build --output-on-failure -j 2
# attn view's page in headless chromium (tests/browser/run.sh: npm ci, then node --test).
step "browser tests (attn view)" bash tests/browser/run.sh build/attn

# -O1 -g1 (line tables for ASan's stack traces, no variable info) compiles 2-3x faster
# than RelWithDebInfo's -O2 -g under the sanitizers. Without MPI: the first step runs the
# mpirun tests; this one checks the build without it (OpenMPI's own allocations and threads
# under ASan would bury attn's reports). The kernels are compiled per ISA level here too, and
# the kernel suites run at each (the isa/<level>/ entries).
step "configure (sanitizers)" configure build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DATTN_SANITIZE=ON -DATTN_WITH_MPI=OFF \
  -DATTN_BUILD_TESTS=ON -DATTN_BUILD_PYTHON=OFF
step "build (sanitizers)" cmake --build build-sanitize
# LeakSanitizer is off: the OpenMP and fontconfig runtimes keep allocations until exit
# that it reports as leaks. ASan's memory-error checks and UBSan stay on.
step "tests (sanitizers, OPENBLAS_CORETYPE=$sanitizer_coretype)" \
  env OPENBLAS_CORETYPE="$sanitizer_coretype" ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-sanitize --output-on-failure -j 2 -LE no-sanitize

# --- fuzz smoke run (docs/fuzzing.md) ---
# The libFuzzer targets (clang-15, ASan + UBSan) link build/'s libattn_core.a,
# with only the code they test (~20 files) compiled again, instrumented; each replays its
# fuzz/regressions/ inputs, then runs 20 s from its committed corpus (fuzz/corpus/). A crash,
# a sanitizer report, an undocumented exception or an input over 2 GiB fails the step.
step "fuzz smoke run (every default target of scripts/fuzz.sh, 20 s each)" bash scripts/fuzz.sh 20
# --- end of the fuzz block ---

echo "== all tests passed"
