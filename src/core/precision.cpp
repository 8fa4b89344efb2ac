#include "attn/precision.h"

#include <atomic>
#include <cstdlib>

#include "attn/error.h"
#include "attn/printable.h"

namespace attn {
namespace {

std::atomic<Precision> g_precision{Precision::fp32};

}  // namespace

const char* precision_name(Precision p) { return p == Precision::bf16 ? "bf16" : "fp32"; }

Precision parse_precision(std::string_view name) {
  if (name == "fp32") return Precision::fp32;
  if (name == "bf16") return Precision::bf16;
  throw ValueError("precision: expected fp32 or bf16, got '" + printable(std::string(name)) + "'");
}

std::string bf16_missing(const CpuFeatures& f, IsaLevel level) {
  if (!f.x86) return "AVX512_BF16 or AMX-BF16 (an x86-64 CPU)";
  const bool amx = f.amx_tile && f.amx_bf16 && f.os_amx;
  const bool avx512_bf16 = f.avx512_bf16 && has_avx512(f);
  if (level < IsaLevel::avx512) {
    if (!amx && !avx512_bf16) return "AVX512_BF16 or AMX-BF16 (this CPU has neither)";
    return std::string("the avx512 kernel level (ATTN_ISA=") + isa_level_name(level) + " limits this process to " +
           (level == IsaLevel::avx2 ? "AVX2" : "SSE4.2") + ")";
  }
  if (amx || avx512_bf16) return "";
  if (f.avx512_bf16 && !f.os_zmm) return "AVX512_BF16 or AMX-BF16 (the operating system does not enable AVX-512)";
  if (f.amx_bf16 && !f.os_amx) return "AVX512_BF16 or AMX-BF16 (the operating system does not enable AMX tiles)";
  return "AVX512_BF16 or AMX-BF16 (this CPU has neither)";
}

Precision compute_precision() { return g_precision.load(std::memory_order_relaxed); }

void set_compute_precision(Precision p) {
  if (p == Precision::bf16) {
    const CpuFeatures f = read_cpu_features();
    // The kernels' level as kernels::kernel_isa_level() chooses it (core sits below kernels).
    const std::string missing = bf16_missing(f, choose_isa_level(std::getenv("ATTN_ISA"), f));
    if (!missing.empty()) throw ValueError("bf16 needs " + missing + "; run with --precision fp32");
  }
  g_precision.store(p, std::memory_order_relaxed);
}

}  // namespace attn
