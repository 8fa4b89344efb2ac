#pragma once
// Threads go through one helper. The split of [begin, end) into chunks depends only on
// the range, the grain and the thread count, so a fixed seed and thread count give
// bit-identical results.
#include <cstdint>

#ifdef ATTN_WITH_OPENMP
#include <omp.h>
#endif

namespace attn {

// Sets the thread count for our kernels and for OpenBLAS. n <= 0 means "from
// ATTN_NUM_THREADS, else the number of cores".
void set_num_threads(int n);
int num_threads();

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
#pragma omp parallel num_threads(static_cast<int>(chunks))
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
