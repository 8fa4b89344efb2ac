#include "attn/thread_limits.h"

#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "attn/error.h"

namespace attn {

int machine_cpus() {
  const unsigned cores = std::thread::hardware_concurrency();
  return cores == 0 ? 1 : static_cast<int>(cores);
}

int max_threads() { return kMaxThreadsPerCpu * machine_cpus(); }

bool address_space_limited() {
  struct rlimit limit {};
  return ::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
}

void check_thread_address_space(int threads) {
  struct rlimit limit {};
  if (threads < 1 || ::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  const size_t need = static_cast<size_t>(threads) * static_cast<size_t>(kThreadAddressBytes);
  // The kernel counts a reservation against the limit like any mapping: if it fits, the
  // threads' buffers fit now (they are made at once, by prepare_blas_threads' first GEMM).
  void* trial = ::mmap(nullptr, need, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (trial != MAP_FAILED) {
    ::munmap(trial, need);
    return;
  }
  // What is left: the limit less this process's mappings (VmSize).
  int64_t used = 0;
  if (std::FILE* status = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, status))
      if (std::strncmp(line, "VmSize:", 7) == 0) used = std::atoll(line + 7) * 1024;
    std::fclose(status);
  }
  const int64_t left = std::max<int64_t>(0, static_cast<int64_t>(limit.rlim_cur) - used);
  const int64_t fit = left / kThreadAddressBytes;
  auto mib = [](int64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; };
  throw ValueError(
      std::to_string(threads) + " threads need about " + mib(static_cast<int64_t>(need)) + " of address space (" +
      mib(kThreadAddressBytes) +
      " each: a BLAS buffer, an allocator arena, a stack), and the address-space limit (ulimit -v) of " +
      mib(static_cast<int64_t>(limit.rlim_cur)) + " leaves " + mib(left) + ": " +
      (fit >= 1 ? "use --threads " + std::to_string(fit) + " or fewer, or raise the limit" : "raise the limit"));
}

}  // namespace attn
