#include "kernels/blas.h"

#include <cblas.h>
#include <dlfcn.h>
#include <strings.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "attn/cpu.h"
#include "attn/error.h"
#include "attn/parallel.h"
#include "attn/precision.h"
#include "attn/thread_limits.h"

namespace attn::kernels {
namespace {

std::atomic<int> g_applied{0};

// BLAS threads follow attn's thread count. Checked on each call (one relaxed load) because
// core's set_num_threads cannot call BLAS: core sits below kernels.
void sync_blas_threads() {
  if (g_applied.load(std::memory_order_relaxed) == num_threads()) return;
#ifdef ATTN_WITH_OPENMP
  if (omp_in_parallel()) return;  // inside our parallel regions BLAS runs one thread anyway
#endif
  prepare_blas_threads();
}

}  // namespace

Fp32Gemm fp32_gemm_choice() {
  static const Fp32Gemm choice = [] {
    const char* v = std::getenv("ATTN_FP32_GEMM");
    if (v == nullptr || *v == '\0' || std::strcmp(v, "auto") == 0) return Fp32Gemm::automatic;
    if (std::strcmp(v, "openblas") == 0) return Fp32Gemm::openblas;
    if (std::strcmp(v, "onednn") == 0) return Fp32Gemm::onednn;
    throw ValueError(std::string("ATTN_FP32_GEMM=") + v + ": unknown (valid: auto, openblas, onednn)");
  }();
  return choice;
}

bool use_onednn_f32(bool transpose_a, int64_t m, int64_t n, int64_t k) {
  const Fp32Gemm choice = fp32_gemm_choice();
  if (choice == Fp32Gemm::openblas) return false;
  const IsaLevel level = kernel_isa_level();
  if (level == IsaLevel::baseline || transpose_a) return false;
  if (choice == Fp32Gemm::onednn) return true;
  if (m < 4 || m * n * k < 64 * 64 * 64) return false;
  return level == IsaLevel::avx512 || m <= 512;
}

void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // BLAS leaves C untouched only for beta == 1; make k == 0 mean C = beta * C.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  if (compute_precision() == Precision::bf16) {
    gemm_bf16(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (use_onednn_f32(transpose_a, m, n, k)) {
    gemm_f32_onednn(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  sync_blas_threads();
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

void gemm_batched(bool transpose_a, bool transpose_b, int64_t batch, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* a, int64_t lda, int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b,
                  float beta, float* c, int64_t ldc, int64_t stride_c) {
  // Small products: one BLAS call per thread-chunk of the batch (BLAS runs single-threaded
  // inside our parallel region). Large products: let BLAS thread each one.
  const int64_t work = m * n * k;
  const bool small = work < 64 * 64 * 64;
  if (small && batch > 1) {
    // A chunk gets at least ~32k multiply-adds, so tiny batches do not pay for a team.
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(work, 1));
    parallel_for(0, batch, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        gemm(transpose_a, transpose_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb, beta,
             c + i * stride_c, ldc);
    });
  } else {
    for (int64_t i = 0; i < batch; ++i)
      gemm(transpose_a, transpose_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb, beta,
           c + i * stride_c, ldc);
  }
}

// ---- OpenBLAS core selection ---------------------------------------------------------------------

const char* blas_core_for(const CpuFeatures& cpu) {
  if (!cpu.x86) return "";
  // SkylakeX: AVX-512 sgemm kernels; Cooperlake: the same plus the BF16 kernels.
  if (has_avx512(cpu)) return cpu.avx512_bf16 ? "Cooperlake" : "SkylakeX";
  if (has_avx2(cpu)) {
    // Both are AVX2 + FMA kernels; Zen's blocking suits AMD's caches (and Hygon's, a Zen).
    const bool zen = std::strcmp(cpu.vendor, "AuthenticAMD") == 0 || std::strcmp(cpu.vendor, "HygonGenuine") == 0;
    return zen ? "Zen" : "Haswell";
  }
  if (cpu.avx && cpu.os_ymm) return "Sandybridge";
  // Not Nehalem or Penryn for SSE4: their kernels ran at 7.4 and 8.6 GFLOP/s against Core2's
  // 10.4 (2048^3, bench/results/2026-12-01-intel-xeon-model167-blas-core-wait-policy.md), and
  // OpenBLAS's table knows the real SSE4 CPUs anyway.
  if (cpu.ssse3) return "Core2";
  return "Prescott";  // SSE3, which every x86-64 OpenBLAS supports
}

int blas_cpu_level(const CpuFeatures& cpu) {
  if (!cpu.x86) return -1;
  if (has_avx512(cpu))
    return cpu.amx_tile && cpu.amx_bf16 && cpu.os_amx && cpu.avx512_bf16 ? 8 : cpu.avx512_bf16 ? 7 : 6;
  if (has_avx2(cpu)) return 5;
  if (cpu.avx && cpu.os_ymm) return 4;
  if (cpu.ssse3 && cpu.sse4_1) return 3;
  return cpu.ssse3 ? 2 : cpu.sse3 ? 1 : 0;
}

int blas_core_level(const std::string& core) {
  struct Entry {
    const char* name;
    int level;
  };
  // Every core name OpenBLAS 0.3.21 reports on x86, and SapphireRapids (0.3.22+).
  static constexpr Entry kLevels[] = {
      {"Unknown", 0},   {"Katmai", 0},     {"Coppermine", 0},    {"Northwood", 0}, {"Banias", 0},    {"Athlon", 0},
      {"Opteron", 0},   {"Prescott", 1},   {"Opteron_SSE3", 1},  {"Nano", 1},      {"Core2", 2},     {"Atom", 2},
      {"Bobcat", 2},    {"Penryn", 3},     {"Dunnington", 3},    {"Nehalem", 3},   {"Barcelona", 3}, {"Sandybridge", 4},
      {"Bulldozer", 4}, {"Piledriver", 4}, {"Steamroller", 4},   {"Haswell", 5},   {"Zen", 5},       {"Excavator", 5},
      {"SkylakeX", 6},  {"Cooperlake", 7}, {"SapphireRapids", 8}};
  for (const auto& e : kLevels)
    if (strcasecmp(core.c_str(), e.name) == 0) return e.level;
  return -1;
}

bool blas_core_should_switch(const char* user_coretype, const std::string& detected, const std::string& best) {
  if (user_coretype != nullptr || best.empty()) return false;
  const int have = blas_core_level(detected);
  return have >= 0 && have < blas_core_level(best);
}

namespace {

// OpenBLAS's DYNAMIC_ARCH entry points, looked up at run time so a single-architecture
// OpenBLAS (which lacks them) still links; switching is then reported as impossible.
template <class Fn>
Fn openblas_symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

bool openblas_has_core(const std::string& core) {
  std::string symbol = "gotoblas_";
  for (char ch : core) symbol += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return dlsym(RTLD_DEFAULT, symbol.c_str()) != nullptr;
}

BlasCoreState apply_blas_core_choice() {
  BlasCoreState s;
  s.detected = openblas_get_corename();
  const CpuFeatures cpu = read_cpu_features();
  s.best = blas_core_for(cpu);
  s.cpu_level = blas_cpu_level(cpu);
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  s.user_set = user != nullptr;
  if (user) {
    s.user_value = user;
    s.user_value_known = blas_core_level(user) >= 0 && openblas_has_core(user);
  }
  if (blas_core_should_switch(user, s.detected, s.best)) {
    auto quit = openblas_symbol<void (*)()>("gotoblas_dynamic_quit");
    auto init = openblas_symbol<void (*)()>("gotoblas_dynamic_init");
    if (!quit || !init || !openblas_has_core(s.best)) {
      s.switch_error = "this OpenBLAS cannot switch to " + s.best + " (not a DYNAMIC_ARCH build with that core)";
    } else {
      // gotoblas_dynamic_init reads OPENBLAS_CORETYPE; the variable is removed again so that
      // the user's environment (and child processes) stay as they were.
      setenv("OPENBLAS_CORETYPE", s.best.c_str(), 1);
      quit();
      init();
      unsetenv("OPENBLAS_CORETYPE");
      s.switched = true;
    }
  }
  s.active = openblas_get_corename();
  s.library = openblas_get_config();
  return s;
}

// At load time: after OpenBLAS's own constructor, before main() and before any GEMM.
[[maybe_unused]] const BlasCoreState& kAppliedAtLoad = blas_core_state();

}  // namespace

const BlasCoreState& blas_core_state() {
  static const BlasCoreState state = apply_blas_core_choice();
  return state;
}

}  // namespace attn::kernels

namespace attn {

void prepare_blas_threads() {
  const int n = num_threads();
  if (kernels::g_applied.load(std::memory_order_relaxed) == n) return;
  check_thread_address_space(n);
  openblas_set_num_threads(n);
  kernels::g_applied.store(n, std::memory_order_relaxed);
  if (!address_space_limited()) return;
  // Under a limit, every thread's buffer is mapped now, while the space is there: a GEMM
  // large enough for OpenBLAS to use every thread (M·N·K above its 64^3 threshold). Later
  // GEMMs reuse the buffers instead of looping in OpenBLAS's allocator when memory is short.
  static std::vector<float> a(256 * 256, 1.0f), b(256 * 256, 1.0f), c(256 * 256);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 256, 256, 256, 1.0f, a.data(), 256, b.data(), 256, 0.0f,
              c.data(), 256);
}

}  // namespace attn
