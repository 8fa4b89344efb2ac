#pragma once
// What a run ran on: the CPU and its vector ISA, the GEMM library and the kernels it uses, a
// measured sgemm rate, threads, the OpenMP wait policy, and the versions of attn and its
// libraries. `attn doctor` prints it, `attn bench --json` records it, a run folder keeps
// its summary(). Needs no data, no network and no write access.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace attn::train {

struct MachineReportOptions {
  double sgemm_seconds = 1.0;  // time spent measuring the sgemm rate; 0 skips the measurement
  int64_t sgemm_size = 2048;   // M = N = K of the measured product
};

struct SgemmMeasurement {
  bool measured = false;
  std::string skipped;  // why not measured, when not
  int64_t size = 0;     // M = N = K
  int calls = 0;        // timed calls (after one untimed warm-up call)
  double seconds = 0.0;
  double gflops_per_s = 0.0;
  // max |C - C_f64| over 256 sampled entries, relative to max |C_f64| there (inputs uniform
  // in [-1, 1)): how far the kernels' float32 products are from a float64 reference.
  double max_relative_error = 0.0;
};

struct MachineReport {
  std::string cpu_model;  // the CPUID brand string
  std::string cpu_vendor;
  int cpu_family = 0;
  int cpu_model_number = 0;
  std::string isa;                             // "SSE4.2 AVX AVX2 FMA AVX-512 VNNI BF16 FP16 AMX"
  std::string kernel_isa;                      // the level attn's kernels run at: "avx512"
  std::vector<std::string> kernel_isa_levels;  // the levels this CPU runs: {"baseline", "avx2", "avx512"}
  bool kernel_isa_forced = false;              // chosen by ATTN_ISA (else: the best the CPU runs)
  std::string gemm_library;                    // "OpenBLAS"
  std::string gemm_version;                    // "0.3.21"
  std::string gemm_config;                     // openblas_get_config()
  std::string gemm_kernel;                     // the kernels in use (openblas_get_corename())
  std::string gemm_kernel_best;                // the best this CPU's features allow (kernels::blas_core_for)
  std::string gemm_kernel_source;              // how gemm_kernel was chosen
  std::string warning;  // one line when the kernels in use are below what the CPU supports, else ""
  // --precision bf16 (attn/precision.h): what it needs that this machine or ATTN_ISA level
  // lacks ("" when it runs), and oneDNN's matmul implementation for it when it runs.
  std::string bf16_missing;
  // The fp32 products' split (kernels::use_onednn_f32): "oneDNN 2.6.3 brg:avx512_core for
  // products of 4+ rows (OpenBLAS: fewer rows, tiny ones, dW)" or "OpenBLAS for every product (...)".
  std::string fp32_gemm;
  std::string bf16_gemm;  // "oneDNN 2.6.3 brg:avx512_core_bf16"
  // The same for --precision int8 (VNNI or AMX-INT8).
  std::string int8_missing;
  std::string int8_gemm;  // "oneDNN 2.6.3 brg:avx512_core_vnni"
  SgemmMeasurement sgemm;
  int threads = 0;
  std::string omp_wait_policy;  // OMP_WAIT_POLICY's value, or "" for libgomp's default
  std::string omp_wait_policy_source;
  std::string attn_version;
  std::string attn_commit;
  std::vector<std::pair<std::string, std::string>> libraries;  // (name, version)

  nlohmann::json to_json() const;
  // One line: "attn 0.1.0 (f8cc27b1c2d3) | Intel(R) Xeon(R) ... | AVX2 ... | kernels avx2 (of
  // baseline avx2) | OpenBLAS 0.3.21 Cooperlake | sgemm 41.2 GFLOP/s | 2 threads |
  // OMP_WAIT_POLICY=PASSIVE (attn default)".
  std::string summary() const;
  // The lines `attn doctor` prints.
  std::string to_text() const;
};

MachineReport machine_report(const MachineReportOptions& options = {});

}  // namespace attn::train
