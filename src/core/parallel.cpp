#include "attn/parallel.h"

#include <cstdlib>
#include <cstring>
#include <thread>

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
  static int count = default_threads();
  return count;
}

}  // namespace

// OpenBLAS follows on its next GEMM (kernels::gemm compares its thread count with ours).
void set_num_threads(int n) {
  if (n <= 0) n = default_threads();
  thread_count() = n;
}

int num_threads() { return thread_count(); }

}  // namespace attn

namespace attn {
namespace {

// The value of NAME in envp, or nullptr.
const char* env_value(const char* const* envp, const char* name) {
  const size_t n = std::strlen(name);
  for (; envp && *envp; ++envp)
    if (std::strncmp(*envp, name, n) == 0 && (*envp)[n] == '=') return *envp + n + 1;
  return nullptr;
}

}  // namespace

const char* omp_wait_policy_default(const char* const* envp) {
  if (env_value(envp, "OMP_WAIT_POLICY") || env_value(envp, "GOMP_SPINCOUNT") || env_value(envp, kDefaultedEnvMarker))
    return nullptr;
  return "PASSIVE";
}

WaitPolicy omp_wait_policy() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  const char* marker = std::getenv(kDefaultedEnvMarker);
  if (policy) {
    const bool ours = marker && std::strstr(marker, "OMP_WAIT_POLICY") && !spin;
    return {policy, ours ? "attn default" : "set by the user"};
  }
  if (spin) return {std::string("GOMP_SPINCOUNT=") + spin, "set by the user"};
  return {"", "libgomp default (spins, then sleeps)"};
}

}  // namespace attn
