#!/usr/bin/env bash
# Runs every test: installs missing dependencies, then
#   1. the native Release build (-march=native): C++ suite, CLI tests, the browser tests of
#      attn view (headless chromium) and the PyTorch parity suite;
#   2. a portable build (ATTN_NATIVE=OFF: x86-64-v2, SSE4.2 at most) with AddressSanitizer +
#      UndefinedBehaviorSanitizer: the C++ suite and CLI tests;
#   3. the libFuzzer targets of fuzz/ (clang-15, ASan + UBSan), 20 s each (docs/fuzzing.md);
#   4. the portable Python module (no sanitizers, which the parity suite's PyTorch cannot
#      run under) and the portable attn binary beside it (the parity tests that train or
#      export through the CLI, test_load_save.py, test_export.py, test_ctranslate2_export.py,
#      test_safetensors_peer.py and test_sacrebleu.py, run it): the parity suite,
#      with the test venv's python (scripts/test-venv.sh), which adds sacreBLEU, safetensors
#      and CTranslate2 to Debian's torch.
# 2 and 4 use OpenBLAS's generic SSE kernels (OPENBLAS_CORETYPE=Prescott unless you set
# OPENBLAS_CORETYPE), so rounding that depends on the vector width of attn's kernels or of
# the BLAS kernel fails here, on the developer's machine, and not only on a user's CPU.
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
portable_coretype="${OPENBLAS_CORETYPE:-Prescott}"

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

step "build (native)" bash scripts/build.sh
step "tests (native)" ctest --test-dir build --output-on-failure -j 2
# attn view's page in headless chromium (tests/browser/run.sh: npm ci, then node --test).
step "browser tests (attn view)" bash tests/browser/run.sh build/attn

# -O1 -g1 (line tables for ASan's stack traces, no variable info) compiles 2-3x faster
# than RelWithDebInfo's -O2 -g under the sanitizers. Without MPI: the native step runs the
# mpirun tests; this one checks the build without it (OpenMPI's own allocations and threads
# under ASan would bury attn's reports).
step "configure (portable, sanitizers)" configure build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DATTN_NATIVE=OFF -DATTN_SANITIZE=ON -DATTN_WITH_MPI=OFF \
  -DATTN_BUILD_TESTS=ON -DATTN_BUILD_PYTHON=OFF
step "build (portable, sanitizers)" cmake --build build-sanitize
# LeakSanitizer is off: the OpenMP and fontconfig runtimes keep allocations until exit
# that it reports as leaks. ASan's memory-error checks and UBSan stay on.
step "tests (portable, sanitizers, OPENBLAS_CORETYPE=$portable_coretype)" \
  env OPENBLAS_CORETYPE="$portable_coretype" ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-sanitize --output-on-failure -j 2 -LE no-sanitize

# --- fuzz smoke run (docs/fuzzing.md) ---
# The libFuzzer targets (clang-15, ASan + UBSan) link the native build's libattn_core.a,
# with only the code they test (~20 files) compiled again, instrumented; each replays its
# fuzz/regressions/ inputs, then runs 20 s from its committed corpus (fuzz/corpus/). A crash,
# a sanitizer report, an undocumented exception or an input over 2 GiB fails the step.
step "fuzz smoke run (10 targets x 20 s)" bash scripts/fuzz.sh 20
# --- end of the fuzz block ---

step "configure (portable Python module)" configure build-portable -DCMAKE_BUILD_TYPE=Release \
  -DATTN_NATIVE=OFF -DATTN_BUILD_TESTS=OFF -DATTN_BUILD_PYTHON=ON -DPython3_EXECUTABLE=/usr/bin/python3
step "build (portable Python module and CLI)" cmake --build build-portable --target _attn attn
# The parity suite runs in the test venv (scripts/test-venv.sh: Debian's python, torch and
# numpy plus pinned sacreBLEU, safetensors and CTranslate2 from PyPI, which check attn bleu,
# attn's safetensors files and attn export --to ctranslate2; a missing one fails, never skips).
step "parity (portable, OPENBLAS_CORETYPE=$portable_coretype)" \
  env OPENBLAS_CORETYPE="$portable_coretype" PYTHONPATH="$root/build-portable/python" OMP_NUM_THREADS=2 \
  bash scripts/test-venv.sh --exec -m pytest -q -p no:cacheprovider tests/parity
echo "== all tests passed"
