// attn_gemm_limits: the GEMM rates this CPU reaches through oneDNN's matmul primitive, in
// fp32, bf16 (bf16 x bf16 -> f32) and int8 (u8 x s8 -> s32), on one square product. The
// "limits" rows of bench/peers/compare.sh: what a bf16 or int8 engine (torch's autocast,
// CTranslate2's int8) can at most gain over fp32 on this machine.
//
//   attn_gemm_limits [--n 2048] [--reps 5] [--threads 2]
//
// Prints one JSON line: per data type the median GFLOP/s (GOP/s for int8) and the oneDNN
// implementation that ran ("brg:avx512_core_amx_bf16", "gemm:jit", ...), or why it did not
// ("n/a (...)": the CPU lacks the ISA, so oneDNN would emulate or refuse). The thread count is
// OMP_NUM_THREADS's (oneDNN's OpenMP runtime); compare.sh sets it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

namespace {
using Clock = std::chrono::steady_clock;
using dnnl::memory;
using dt = memory::data_type;

bool cpu_has(const std::string& flag) {  // a flag of /proc/cpuinfo
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

// C (n, n) = A (n, n) B (n, n) in the given types: median GFLOP/s over reps, and the impl.
std::pair<double, std::string> matmul_rate(dnnl::engine& eng, dnnl::stream& s, int64_t n, dt a_type, dt b_type,
                                           dt c_type, int reps) {
  const memory::dims dims = {n, n};
  memory::desc a_md(dims, a_type, memory::format_tag::ab), b_md(dims, b_type, memory::format_tag::any),
      c_md(dims, c_type, memory::format_tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), eng);
  memory a(a_md, eng), b(pd.weights_desc(), eng), c(c_md, eng);
  // Small values, any pattern: the rate does not depend on them; zero pages would.
  for (memory* m : {&a, &b}) {
    auto* p = static_cast<unsigned char*>(m->get_data_handle());
    for (size_t i = 0; i < m->get_desc().get_size(); ++i) p[i] = static_cast<unsigned char>((i * 7 + 3) % 29);
  }
  dnnl::matmul mm(pd);
  std::vector<double> gflops;
  for (int r = 0; r < reps + 1; ++r) {
    const auto t0 = Clock::now();
    mm.execute(s, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    s.wait();
    const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
    if (r > 0) gflops.push_back(2.0 * static_cast<double>(n) * n * n / sec / 1e9);  // first: warm-up
  }
  std::sort(gflops.begin(), gflops.end());
  return {gflops[gflops.size() / 2], pd.impl_info_str()};
}
}  // namespace

int main(int argc, char** argv) {
  int64_t n = 2048;
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i];
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if (f == "--n" && v > 0)
      n = v;
    else if (f == "--reps" && v > 0)
      reps = static_cast<int>(v);
    else {
      std::fprintf(stderr, "usage: attn_gemm_limits [--n 2048] [--reps 5]\n");
      return 2;
    }
  }
  if (argc % 2 == 0) {
    std::fprintf(stderr, "usage: attn_gemm_limits [--n 2048] [--reps 5]\n");
    return 2;
  }
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  struct Kind {
    const char* name;
    dt a, b, c;
    bool runs;
    const char* why;
  };
  const bool bf16 = cpu_has("avx512_bf16") || cpu_has("amx_bf16");
  const bool int8 = cpu_has("avx512_vnni") || cpu_has("avx_vnni") || cpu_has("amx_int8");
  const Kind kinds[] = {
      {"f32", dt::f32, dt::f32, dt::f32, true, ""},
      {"bf16", dt::bf16, dt::bf16, dt::f32, bf16, "n/a (no avx512_bf16 or amx_bf16: oneDNN would emulate bf16)"},
      {"int8", dt::u8, dt::s8, dt::s32, int8, "n/a (no VNNI or AMX-INT8)"},
  };
  const dnnl::version_t* v = dnnl::version();
  std::printf("{\"bench\": \"gemm_limits\", \"n\": %ld, \"reps\": %d, \"onednn\": \"%d.%d.%d\"", static_cast<long>(n),
              reps, v->major, v->minor, v->patch);
  for (const Kind& k : kinds) {
    if (!k.runs) {
      std::printf(", \"%s_gflops\": null, \"%s_impl\": %s", k.name, k.name, json_string(k.why).c_str());
      continue;
    }
    const auto [rate, impl] = matmul_rate(eng, s, n, k.a, k.b, k.c, reps);
    std::printf(", \"%s_gflops\": %.2f, \"%s_impl\": %s", k.name, rate, k.name, json_string(impl).c_str());
  }
  std::printf("}\n");
  return 0;
}
