// attn_micro: Google Benchmark microbenchmarks of the hot ops.
//   attn_micro --threads=2 [--benchmark_filter=...] [--benchmark_format=json]
// --threads sets attn's (and OpenBLAS's) thread count; without it ATTN_NUM_THREADS or all
// cores. Every benchmark reports a FLOP rate counter (GFLOP/s) next to the time.
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "attn/parallel.h"

extern "C" void openblas_set_num_threads(int);

int main(int argc, char** argv) {
  std::vector<char*> rest;
  int threads = 0;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::strncmp(argv[i], "--threads=", 10) == 0) {
      threads = std::stoi(argv[i] + 10);
    } else {
      rest.push_back(argv[i]);
    }
  }
  attn::set_num_threads(threads);
  // The direct cblas_sgemm benchmarks too (kernels::gemm syncs OpenBLAS on its first call, but
  // a filter may select only BM_Cblas*, which then ran OpenBLAS's default: every core).
  openblas_set_num_threads(attn::num_threads());
  benchmark::AddCustomContext("attn_threads", std::to_string(attn::num_threads()));
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  if (benchmark::ReportUnrecognizedArguments(n, rest.data())) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
