#include "attn/train/machine_report.h"

#include <cairo.h>
#include <fmt/format.h>
#include <gnu/libc-version.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "attn/cpu.h"
#include "attn/parallel.h"
#include "attn/precision.h"
#include "attn/version.h"
#include "kernels/blas.h"
#include "kernels/gemm_int8.h"
#include "kernels/isa.h"

namespace attn::train {
namespace {

using json = nlohmann::json;

// "OpenBLAS 0.3.21 NO_LAPACKE ..." -> "0.3.21".
std::string second_word(const std::string& text) {
  const size_t start = text.find(' ');
  if (start == std::string::npos) return "unknown";
  const size_t end = text.find(' ', start + 1);
  return text.substr(start + 1, end == std::string::npos ? std::string::npos : end - start - 1);
}

std::string kernel_source(const kernels::BlasCoreState& s) {
  if (s.user_set && s.user_value_known) return "OPENBLAS_CORETYPE=" + s.user_value + " set by the user";
  if (s.user_set)
    return "OPENBLAS_CORETYPE=" + s.user_value + " set by the user names no core in this OpenBLAS; it uses " + s.active;
  if (s.switched) return "chosen by attn from the CPU features (OpenBLAS's own pick: " + s.detected + ")";
  if (!s.switch_error.empty()) return s.switch_error;
  if (s.best.empty()) return "OpenBLAS's own pick (attn chooses only on x86)";
  return "OpenBLAS's own pick, at least the CPU features' best (" + s.best + ")";
}

// The one-line warning, or "".
std::string kernel_warning(const kernels::BlasCoreState& s) {
  if (s.best.empty()) return "";
  const int best = kernels::blas_core_level(s.best);
  const int active = kernels::blas_core_level(s.active);
  const std::string user = s.user_set ? " (OPENBLAS_CORETYPE=" + s.user_value + " is set)" : "";
  // A core name OpenBLAS 0.3.21 does not know ran Cooperlake on the development machine.
  if (active > s.cpu_level)
    return "warning: GEMM kernels " + s.active + " need instructions this CPU lacks (its best is " + s.best + ")" +
           user + "; GEMM may fault";
  if (active < 0 || active >= best) return "";
  return "warning: GEMM kernels " + s.active + " are below what this CPU supports (" + s.best +
         "): " + (s.user_set ? "unset OPENBLAS_CORETYPE or set it to " + s.best : s.switch_error);
}

SgemmMeasurement measure_sgemm(const MachineReportOptions& o) {
  using Clock = std::chrono::steady_clock;
  SgemmMeasurement m;
  const int64_t n = o.sgemm_size;
  m.size = n;
  std::vector<float> a(n * n), b(n * n), c(n * n);
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto uniform = [&state] {  // [-1, 1), a 64-bit LCG: fixed, independent of attn's generators
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(static_cast<double>(state >> 40) / 8388608.0 - 1.0);
  };
  for (auto& x : a) x = uniform();
  for (auto& x : b) x = uniform();
  auto product = [&] { kernels::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n); };
  product();  // warm-up: first-touch of C, OpenBLAS's buffers
  const auto start = Clock::now();
  do {
    product();
    ++m.calls;
    m.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  } while (m.seconds < o.sgemm_seconds);
  m.gflops_per_s = 2.0 * n * n * n * m.calls / m.seconds / 1e9;
  double max_error = 0.0, max_ref = 0.0;
  for (int sample = 0; sample < 256; ++sample) {
    const int64_t i = static_cast<int64_t>((uniform() + 1.0f) * 0.5f * n) % n;
    const int64_t j = static_cast<int64_t>((uniform() + 1.0f) * 0.5f * n) % n;
    double ref = 0.0;
    for (int64_t k = 0; k < n; ++k) ref += static_cast<double>(a[i * n + k]) * b[k * n + j];
    max_error = std::max(max_error, std::fabs(ref - c[i * n + j]));
    max_ref = std::max(max_ref, std::fabs(ref));
  }
  m.max_relative_error = max_ref > 0.0 ? max_error / max_ref : max_error;
  m.measured = true;
  return m;
}

std::string fmt_version() {
  return fmt::format("{}.{}.{}", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100);
}

}  // namespace

MachineReport machine_report(const MachineReportOptions& options) {
  MachineReport r;
  const CpuFeatures cpu = read_cpu_features();
  r.cpu_model = cpu.brand[0] ? cpu.brand : "unknown";
  r.cpu_vendor = cpu.vendor[0] ? cpu.vendor : "unknown";
  r.cpu_family = cpu.family;
  r.cpu_model_number = cpu.model;
  r.isa = cpu_isa_summary(cpu);
  r.kernel_isa = isa_level_name(kernels::kernel_isa_level());
  for (IsaLevel level : kIsaLevels)
    if (isa_level_missing(level, cpu).empty()) r.kernel_isa_levels.push_back(isa_level_name(level));
  const char* attn_isa = std::getenv("ATTN_ISA");
  r.kernel_isa_forced = attn_isa != nullptr && *attn_isa != '\0';

  const kernels::BlasCoreState& blas = kernels::blas_core_state();
  r.gemm_library = "OpenBLAS";
  r.gemm_config = blas.library;
  r.gemm_version = second_word(blas.library);
  r.gemm_kernel = blas.active;
  r.gemm_kernel_best = blas.best;
  r.gemm_kernel_source = kernel_source(blas);
  r.warning = kernel_warning(blas);
  if (kernels::fp32_gemm_choice() == kernels::Fp32Gemm::openblas)
    r.fp32_gemm = "OpenBLAS for every product (ATTN_FP32_GEMM=openblas)";
  else if (kernels::kernel_isa_level() == IsaLevel::baseline)
    r.fp32_gemm = "OpenBLAS for every product (oneDNN's fp32 path is off at the baseline level)";
  else
    r.fp32_gemm =
        "oneDNN " + kernels::onednn_version() + " " + kernels::gemm_f32_implementation(false, true, 64, 1024, 256) +
        (kernels::fp32_gemm_choice() == kernels::Fp32Gemm::onednn ? " for every product but dW (ATTN_FP32_GEMM=onednn)"
         : kernels::kernel_isa_level() == IsaLevel::avx2
             ? " for products of 4-512 rows (OpenBLAS: the rest, dW)"
             : " for products of 4+ rows (OpenBLAS: fewer rows, tiny ones, dW)");
  r.bf16_missing = bf16_missing(cpu, kernels::kernel_isa_level());
  if (r.bf16_missing.empty())
    r.bf16_gemm =
        "oneDNN " + kernels::onednn_version() + " " + kernels::gemm_bf16_implementation(false, true, 1024, 1024, 1024);
  r.int8_missing = int8_missing(cpu, kernels::kernel_isa_level());
  if (r.int8_missing.empty())
    r.int8_gemm = "oneDNN " + kernels::onednn_version() + " " + kernels::gemm_int8_implementation(1024, 1024, 1024);

  r.threads = num_threads();
  const WaitPolicy policy = omp_wait_policy();
  r.omp_wait_policy = policy.value;
  r.omp_wait_policy_source = policy.source;

  r.attn_version = version();
  r.attn_commit = build_commit();
  r.libraries = {{"OpenBLAS", r.gemm_version},
                 {"oneDNN", kernels::onednn_version()},
                 {"fmt", fmt_version()},
                 {"nlohmann_json", fmt::format("{}.{}.{}", NLOHMANN_JSON_VERSION_MAJOR, NLOHMANN_JSON_VERSION_MINOR,
                                               NLOHMANN_JSON_VERSION_PATCH)},
                 {"cairo", cairo_version_string()},
                 {"SentencePiece", sentencepiece_version()},
                 {"zlib", zlibVersion()},
                 {"glibc", gnu_get_libc_version()},
#ifdef _OPENMP
                 {"OpenMP", fmt::format("{} (libgomp)", _OPENMP)},
#endif
                 {"compiler", __VERSION__}};

  if (options.sgemm_seconds <= 0.0)
    r.sgemm.skipped = "not asked for";
  else if (r.warning.find("may fault") != std::string::npos)
    r.sgemm.skipped = "OPENBLAS_CORETYPE names kernels this CPU cannot run";
  else
    r.sgemm = measure_sgemm(options);
  return r;
}

nlohmann::json MachineReport::to_json() const {
  json libs = json::object();
  for (const auto& [name, v] : libraries) libs[name] = v;
  json sg = {{"measured", sgemm.measured}};
  if (sgemm.measured) {
    sg["size"] = sgemm.size;
    sg["calls"] = sgemm.calls;
    sg["seconds"] = sgemm.seconds;
    sg["gflops_per_s"] = sgemm.gflops_per_s;
    sg["max_relative_error"] = sgemm.max_relative_error;
  } else {
    sg["skipped"] = sgemm.skipped;
  }
  return {{"attn", {{"version", attn_version}, {"commit", attn_commit}}},
          {"cpu",
           {{"model", cpu_model},
            {"vendor", cpu_vendor},
            {"family", cpu_family},
            {"model_number", cpu_model_number},
            {"isa", isa}}},
          {"kernels",
           {{"isa", kernel_isa},
            {"isa_available", kernel_isa_levels},
            {"isa_source", kernel_isa_forced ? "ATTN_ISA" : "best for this CPU"}}},
          {"gemm",
           {{"library", gemm_library},
            {"version", gemm_version},
            {"config", gemm_config},
            {"kernel", gemm_kernel},
            {"kernel_best", gemm_kernel_best},
            {"kernel_source", gemm_kernel_source}}},
          {"fp32_gemm", fp32_gemm},
          {"bf16", {{"runs", bf16_missing.empty()}, {"missing", bf16_missing}, {"gemm", bf16_gemm}}},
          {"int8", {{"runs", int8_missing.empty()}, {"missing", int8_missing}, {"gemm", int8_gemm}}},
          {"sgemm", sg},
          {"threads", threads},
          {"omp_wait_policy", {{"value", omp_wait_policy}, {"source", omp_wait_policy_source}}},
          {"libraries", libs},
          {"warning", warning.empty() ? json(nullptr) : json(warning)}};
}

namespace {
// "avx2 (of baseline avx2 avx512, set by ATTN_ISA)"
std::string kernel_isa_text(const MachineReport& r) {
  std::string levels;
  for (const std::string& level : r.kernel_isa_levels) levels += (levels.empty() ? "" : " ") + level;
  return r.kernel_isa + " (of " + levels + (r.kernel_isa_forced ? ", set by ATTN_ISA)" : ")");
}

std::string policy_text(const MachineReport& r) {
  return (r.omp_wait_policy.empty()                  ? std::string("OMP_WAIT_POLICY unset")
          : r.omp_wait_policy.rfind("GOMP_", 0) == 0 ? r.omp_wait_policy
                                                     : "OMP_WAIT_POLICY=" + r.omp_wait_policy) +
         " (" + r.omp_wait_policy_source + ")";
}
}  // namespace

std::string MachineReport::summary() const {
  std::string s = fmt::format("attn {} ({}) | {} | {} | kernels {} | {} {} {}", attn_version, attn_commit, cpu_model,
                              isa, kernel_isa_text(*this), gemm_library, gemm_version, gemm_kernel);
  if (sgemm.measured) s += fmt::format(" | sgemm {:.1f} GFLOP/s", sgemm.gflops_per_s);
  s += fmt::format(" | {} threads | {}", threads, policy_text(*this));
  return s;
}

std::string MachineReport::to_text() const {
  std::string t;
  t += fmt::format("attn        {} (commit {})\n", attn_version, attn_commit);
  t += fmt::format("cpu         {} ({}, family {}, model {})\n", cpu_model, cpu_vendor, cpu_family, cpu_model_number);
  t += fmt::format("vector isa  {}\n", isa);
  t += fmt::format("kernels     {}: attn's own kernels, chosen at run time (ATTN_ISA=baseline|avx2|avx512)\n",
                   kernel_isa_text(*this));
  t += fmt::format("gemm        {} {}, kernels {}: {}\n", gemm_library, gemm_version, gemm_kernel, gemm_kernel_source);
  t += fmt::format("            {}\n", gemm_config);
  t += fmt::format("fp32        {}\n", fp32_gemm);
  if (bf16_missing.empty())
    t += fmt::format("bf16        --precision bf16 runs: {} (bf16 GEMMs, fp32 accumulation)\n", bf16_gemm);
  else
    t += fmt::format("bf16        --precision bf16 is refused: it needs {}\n", bf16_missing);
  if (int8_missing.empty())
    t += fmt::format("int8        --precision int8 runs: {} (u8 x s8 GEMMs, s32 sums; inference)\n", int8_gemm);
  else
    t += fmt::format("int8        --precision int8 is refused: it needs {}\n", int8_missing);
  if (sgemm.measured)
    t += fmt::format(
        "sgemm       {:.1f} GFLOP/s ({}^3, {} threads, {} calls in {:.2f} s; max error vs float64 {:.1e} "
        "of max|C|)\n",
        sgemm.gflops_per_s, sgemm.size, threads, sgemm.calls, sgemm.seconds, sgemm.max_relative_error);
  else
    t += fmt::format("sgemm       not measured: {}\n", sgemm.skipped);
  t += fmt::format("threads     {}\n", threads);
  t += fmt::format("openmp      {}\n", policy_text(*this));
  std::string libs;
  for (const auto& [name, v] : libraries) libs += (libs.empty() ? "" : ", ") + name + " " + v;
  t += fmt::format("libraries   {}\n", libs);
  if (!warning.empty()) t += warning + "\n";
  return t;
}

}  // namespace attn::train
