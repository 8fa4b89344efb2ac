#pragma once
// Threads go through one helper. The split of [begin, end) into chunks depends only on
// the range, the grain and the thread count, so a fixed seed and thread count give
// bit-identical results.
#include <cstdint>
#include <string>

#ifdef ATTN_WITH_OPENMP
#include <omp.h>
#endif

namespace attn {

// Sets the thread count for our kernels and for OpenBLAS. n <= 0 means "from
// ATTN_NUM_THREADS, else the number of cores".
void set_num_threads(int n);
int num_threads();
// Sets OpenBLAS's thread count to num_threads(), after check_thread_address_space (ValueError
// when an address-space limit leaves too little for that many threads), and under such a limit
// maps every thread's GEMM buffer at once. The kernels' GEMM calls it when the thread count
// changed; the CLI calls it before a command starts its work. (Defined with the kernels,
// src/kernels/blas.cpp.)
void prepare_blas_threads();

// ---- OpenMP wait policy ------------------------------------------------------------------------
// libgomp's default spins idle workers for ~300,000 iterations before sleeping; beside any
// other busy process that makes each parallel region wait for descheduled spinners. attn's
// executables therefore start with OMP_WAIT_POLICY=PASSIVE (src/core/startup.cpp re-executes
// the program with it before any library initialises: libgomp reads it only when it loads),
// and the Python package sets it before the extension loads. A user's OMP_WAIT_POLICY or
// GOMP_SPINCOUNT wins.

// The variable attn adds to the environment it sets a default in ("OMP_WAIT_POLICY").
inline constexpr const char* kDefaultedEnvMarker = "ATTN_DEFAULTED_ENV";

// The value attn should set OMP_WAIT_POLICY to, or nullptr when the environment `envp`
// ("NAME=value" strings, null-terminated) already decides, or attn already set it.
// Allocates nothing: it runs before static initialisation.
const char* omp_wait_policy_default(const char* const* envp);

struct WaitPolicy {
  std::string value;   // OMP_WAIT_POLICY, or "GOMP_SPINCOUNT=<n>", or "" for libgomp's default
  std::string source;  // "attn default", "set by the user", or "libgomp default (spins, then sleeps)"
};
// This process's OpenMP wait policy and where it came from.
WaitPolicy omp_wait_policy();

// Calls fn(chunk_begin, chunk_end) over a static partition of [begin, end) into at most
// num_threads() contiguous chunks of at least `grain` items. Runs inline when the range
// is small, when one thread is set, or when already inside a parallel region.
// fn must not throw.
template <class Fn>
void parallel_for(int64_t begin, int64_t end, int64_t grain, Fn&& fn) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int64_t chunks = n / grain;
  const int threads = num_threads();
  if (chunks > threads) chunks = threads;
#ifdef ATTN_WITH_OPENMP
  if (chunks <= 1 || omp_in_parallel()) {
    fn(begin, end);
    return;
  }
#pragma omp parallel num_threads(static_cast <int>(chunks))
  {
    const int64_t t = omp_get_thread_num();
    const int64_t team = omp_get_num_threads();
    const int64_t lo = begin + n * t / team;
    const int64_t hi = begin + n * (t + 1) / team;
    if (lo < hi) fn(lo, hi);
  }
#else
  (void)chunks;
  fn(begin, end);
#endif
}

}  // namespace attn
