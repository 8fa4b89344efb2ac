#pragma once
// Threads and the address-space limit.
#include <cstdint>

namespace attn {

// Under an address-space limit (ulimit -v, RLIMIT_AS) OpenBLAS loops for ever in its
// allocator when it cannot map a thread's GEMM buffer (--threads 8 under ulimit -v 1000000 hung
// with no message). Each thread takes about this much address space: OpenBLAS's buffer
// (128 MiB in Debian's build), a glibc malloc arena (64 MiB) and its stack (8 MiB), measured
// as the ulimit -v at which `attn train --threads N` still runs (about 200 MiB a thread).
inline constexpr int64_t kThreadAddressBytes = int64_t{208} << 20;
// Threads beyond this many per CPU only wait on each other: the CLI refuses more.
inline constexpr int kMaxThreadsPerCpu = 4;
// The CPUs of this machine (at least 1), and kMaxThreadsPerCpu times that.
int machine_cpus();
int max_threads();
// ValueError, one line, when an address-space limit is set and `threads` threads would not
// fit in what is left of it (tried with a reservation that is released at once): "8 threads
// need about 1.6 GiB of address space (208 MiB each: ...), and the address-space limit
// (ulimit -v) of 977 MiB leaves 850 MiB: use --threads 4 or fewer, or raise the limit".
// Nothing when there is no limit.
void check_thread_address_space(int threads);
// Whether RLIMIT_AS is set (not unlimited).
bool address_space_limited();

}  // namespace attn
