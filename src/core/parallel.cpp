#include "attn/parallel.h"

#include <cstdlib>
#include <thread>

#include "attn/kernels/blas.h"

namespace attn {
namespace {

int default_threads() {
  if (const char* env = std::getenv("ATTN_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  unsigned cores = std::thread::hardware_concurrency();
  return cores == 0 ? 1 : static_cast<int>(cores);
}

int& thread_count() {
  static int count = [] {
    int n = default_threads();
    kernels::blas_set_num_threads(n);
    return n;
  }();
  return count;
}

}  // namespace

void set_num_threads(int n) {
  if (n <= 0) n = default_threads();
  thread_count() = n;
  kernels::blas_set_num_threads(n);
}

int num_threads() { return thread_count(); }

}  // namespace attn
