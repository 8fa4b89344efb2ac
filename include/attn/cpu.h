#pragma once
// What the CPU can run, read from CPUID (x86-64). Plain data, no allocation: it is also read
// at process start, before any static constructor runs (see src/core/startup.cpp).
#include <string>

namespace attn {

struct CpuFeatures {
  bool x86 = false;       // false: not an x86 CPU (nothing below is read)
  char vendor[13] = {};   // "GenuineIntel", "AuthenticAMD", ...
  char brand[49] = {};    // "Intel(R) Xeon(R) Platinum 8480+", trimmed
  int family = 0;         // display family (base + extended)
  int model = 0;          // display model (extended model folded in for families 6 and 15)
  // CPUID leaf 1
  bool sse3 = false, ssse3 = false, sse4_1 = false, sse4_2 = false, avx = false, fma = false, f16c = false;
  // leaf 7: AVX2 and AVX-512 foundation, conflict detection, doubleword/quadword, byte/word, vector length
  bool avx2 = false, avx512f = false, avx512cd = false, avx512dq = false, avx512bw = false, avx512vl = false;
  bool avx512_vnni = false, avx512_bf16 = false, avx512_fp16 = false, avx_vnni = false;
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;
  // XGETBV: the operating system saves the YMM / ZMM / AMX tile state (else those
  // instructions fault even when CPUID lists them).
  bool os_ymm = false, os_zmm = false, os_amx = false;
};

// This machine's CPU. Cheap (a few CPUID instructions); safe before static initialisation.
CpuFeatures read_cpu_features() noexcept;

// Usable vector ISA, CPUID and operating-system support combined.
bool has_avx2(const CpuFeatures& f);    // AVX2 + FMA
bool has_avx512(const CpuFeatures& f);  // AVX-512 F, CD, DQ, BW, VL (the Skylake-SP set)

// "SSE4.2 AVX AVX2 FMA AVX-512 VNNI BF16 FP16 AMX": the extensions that matter for speed.
std::string cpu_isa_summary(const CpuFeatures& f);

}  // namespace attn
