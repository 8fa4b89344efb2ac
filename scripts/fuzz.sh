#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang-15, AddressSanitizer + UndefinedBehaviorSanitizer)
# in $ATTN_FUZZ_BUILD (default build-fuzz/), replays each target's inputs in
# fuzz/regressions/<target>/ (the defects fuzzing found), then runs each target for N seconds
# (default 30) from its committed seed corpus in fuzz/corpus/<target>/. New inputs go to
# <build>/corpus/<target>/ (the committed corpus is only read); a crash is saved as
# <build>/crashes/<target>/crash-* and fails the script.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
# Prints one line per target: executions, executions/s, coverage, result. Targets run one per core
# at a time (ATTN_FUZZ_JOBS).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# ccache (CMakeLists.txt): paths under the clone are hashed relative to it, and the build
# folder is not hashed, so a fresh clone in another folder reuses the cached objects.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
seconds="${1:-30}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(safetensors_fuzz config_fuzz subword_fuzz text_readers_fuzz parallel_fuzz option_parsing_fuzz
  embeddings_fuzz run_folder_fuzz lm_metadata_fuzz train_config_fuzz
  cmudict_fuzz speech_set_fuzz)

cxx="${ATTN_FUZZ_CXX:-$(command -v clang++-15 || command -v clang++ || true)}"
[[ -n "$cxx" ]] || { echo "fuzz.sh: clang++-15 not found: run scripts/install-deps.sh" >&2; exit 1; }
build="${ATTN_FUZZ_BUILD:-build-fuzz}"
# The library the targets link (fuzz/CMakeLists.txt): a GCC build's libattn_core.a of this
# tree, so that only the ~20 files under test are compiled with clang, instrumented. By
# default build/'s (brought up to date first); ATTN_FUZZ_CORE_LIBRARY=PATH names
# another; ATTN_FUZZ_CORE_LIBRARY= (empty) instruments all of attn_core instead (~15 min).
if [[ -z "${ATTN_FUZZ_CORE_LIBRARY+set}" ]]; then
  ATTN_FUZZ_CORE_LIBRARY=""
  if [[ -f build/build.ninja ]]; then
    cmake --build build --target attn_core
    ATTN_FUZZ_CORE_LIBRARY="$root/build/libattn_core.a"
  fi
fi
# -O1 -g1 as the sanitizer build; no OpenMP (the readers under test are single-threaded).
# Configured every time, so that a folder made with other options gets these.
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DATTN_FUZZ=ON -DATTN_WITH_OPENMP=OFF \
  -DATTN_FUZZ_CORE_LIBRARY="$ATTN_FUZZ_CORE_LIBRARY" -DATTN_BUILD_TESTS=OFF -DATTN_BUILD_PYTHON=OFF >/dev/null
cmake --build "$build" --target fuzz_targets

export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export ATTN_NUM_THREADS=1
# fuzz_target T: replays T's regression inputs, then fuzzes it for $seconds; writes its result line
# to $build/T.result and returns non-zero on a finding.
fuzz_target() {
  local t="$1" log="$build/$1.log" result="$build/$1.result"
  mkdir -p "$build/corpus/$t" "$build/crashes/$t"
  # Each input that once found a defect runs once (libFuzzer runs the files it is given).
  if [[ -d "fuzz/regressions/$t" ]] && ! "$build/fuzz/$t" fuzz/regressions/"$t"/* >"$build/$t.regressions.log" 2>&1; then
    echo "$t: FAILED on a regression input (see $build/$t.regressions.log)" >"$result"
    return 1
  fi
  # -rss_limit_mb: an input that makes a loader allocate more than 2 GiB is a finding.
  if ! "$build/fuzz/$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 \
      -artifact_prefix="$build/crashes/$t/" "$build/corpus/$t" "fuzz/corpus/$t" >"$log" 2>&1; then
    { echo "$t: FAILED (see $log and $build/crashes/$t/)"
      grep -a -m3 -E "ERROR|SUMMARY|runtime error|broken promise" "$log" || true; } >"$result"
    return 1
  fi
  local runs speed cov
  runs=$(grep -a -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  speed=$(grep -a -m1 -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  cov=$(grep -a -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo '?')
  echo "$t: ok, $runs executions in ${seconds} s ($speed/s), coverage $cov edges" >"$result"
}

# The targets run ATTN_FUZZ_JOBS at a time (default: one per core). Each is single-threaded, so
# each still gets a whole core for its $seconds; the results print in the order above.
jobs="${ATTN_FUZZ_JOBS:-$(nproc)}"
status=0
running=0
for t in "${targets[@]}"; do
  if ((running >= jobs)); then
    wait -n || status=1
    running=$((running - 1))
  fi
  rm -f "$build/$t.result"
  fuzz_target "$t" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || status=1
  running=$((running - 1))
done
for t in "${targets[@]}"; do cat "$build/$t.result"; done
exit $status
