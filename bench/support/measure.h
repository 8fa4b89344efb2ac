#pragma once
// What the benchmarks measure besides their own work: wall and CPU time, and the process's
// resident memory from /proc (Linux). Linked into `attn bench` (attn_bench_support).
#include <chrono>
#include <string>
#include <vector>

namespace attn::bench {

using Clock = std::chrono::steady_clock;

// Wall seconds since `start`.
double seconds_since(Clock::time_point start);
// CPU seconds of the whole process (every thread): on a loaded machine steadier than wall
// time, which also counts the time this process waited for a core.
double process_cpu_seconds();
// A field of /proc/self/status in MiB ("VmRSS", "VmHWM"); -1 when unreadable.
double proc_status_mb(const std::string& field);
// Resets the kernel's peak-RSS mark (VmHWM) to the current RSS, so the peak reported later
// covers only what follows. Linux >= 4.0; false when not permitted.
bool reset_peak_rss();
// The median of v (the mean of the middle two for an even count); v non-empty.
double median(std::vector<double> v);

}  // namespace attn::bench
