#include "attn/precision.h"

#include <atomic>
#include <cstdlib>

#include "attn/enum_names.h"
#include "attn/error.h"
#include "attn/printable.h"

namespace attn {
namespace {

std::atomic<Precision> g_precision{Precision::fp32};

std::atomic<uint64_t> g_int8_epoch{0};

}  // namespace

constexpr EnumName<Precision> kPrecisionNames[] = {
    {Precision::fp32, "fp32"}, {Precision::bf16, "bf16"}, {Precision::int8, "int8"}};

const char* precision_name(Precision p) { return enum_name(kPrecisionNames, p, "fp32"); }

Precision parse_precision(std::string_view name) {
  if (const std::optional<Precision> p = enum_from_name(kPrecisionNames, name)) return *p;
  throw ValueError("precision: expected fp32, bf16 or int8, got '" + printable(std::string(name)) + "'");
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

std::string int8_missing(const CpuFeatures& f, IsaLevel level) {
  const char* need = "AVX512_VNNI, AVX-VNNI or AMX-INT8";
  if (!f.x86) return std::string(need) + " (an x86-64 CPU)";
  const bool amx = f.amx_tile && f.amx_int8 && f.os_amx;
  const bool avx512_vnni = f.avx512_vnni && has_avx512(f);
  const bool avx_vnni = f.avx_vnni && has_avx2(f);
  if (!amx && !avx512_vnni && !avx_vnni) {
    if (f.avx512_vnni && !f.os_zmm) return std::string(need) + " (the operating system does not enable AVX-512)";
    if (f.amx_int8 && !f.os_amx) return std::string(need) + " (the operating system does not enable AMX tiles)";
    return std::string(need) + " (this CPU has none)";
  }
  if (level == IsaLevel::avx512 || (level == IsaLevel::avx2 && avx_vnni)) return "";
  return std::string("the ") + (avx_vnni ? "avx2" : "avx512") + " kernel level (ATTN_ISA=" + isa_level_name(level) +
         " limits this process to " + (level == IsaLevel::avx2 ? "AVX2" : "SSE4.2") + ")";
}

uint64_t int8_epoch() { return g_int8_epoch.load(std::memory_order_relaxed); }

Precision compute_precision() { return g_precision.load(std::memory_order_relaxed); }

void set_compute_precision(Precision p) {
  if (p == Precision::bf16) {
    const CpuFeatures f = read_cpu_features();
    // The kernels' level as kernels::kernel_isa_level() chooses it (core sits below kernels).
    const std::string missing = bf16_missing(f, choose_isa_level(std::getenv("ATTN_ISA"), f));
    if (!missing.empty()) throw ValueError("bf16 needs " + missing + "; run with --precision fp32");
  }
  if (p == Precision::int8) {
    const CpuFeatures f = read_cpu_features();
    const std::string missing = int8_missing(f, choose_isa_level(std::getenv("ATTN_ISA"), f));
    if (!missing.empty()) throw ValueError("int8 needs " + missing + "; run with --precision fp32");
  }
  if (g_precision.exchange(p, std::memory_order_relaxed) != Precision::int8 && p == Precision::int8)
    g_int8_epoch.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace attn
