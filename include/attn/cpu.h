#pragma once
// What the CPU can run, read from CPUID (x86-64). Plain data, no allocation: it is also read
// at process start, before any static constructor runs (see src/core/startup.cpp).
#include <string>

namespace attn {

struct CpuFeatures {
  bool x86 = false;      // false: not an x86 CPU (nothing below is read)
  char vendor[13] = {};  // "GenuineIntel", "AuthenticAMD", ...
  char brand[49] = {};   // "Intel(R) Xeon(R) Platinum 8480+", trimmed
  int family = 0;        // display family (base + extended)
  int model = 0;         // display model (extended model folded in for families 6 and 15)
  // CPUID leaf 1
  bool sse3 = false, ssse3 = false, sse4_1 = false, sse4_2 = false, popcnt = false, avx = false, fma = false,
       f16c = false, movbe = false;
  bool lzcnt = false;  // leaf 0x80000001 (ABM)
  // leaf 7: AVX2 and AVX-512 foundation, conflict detection, doubleword/quadword, byte/word, vector length
  bool bmi1 = false, bmi2 = false;
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

// ---- ISA levels of attn's own kernels ----------------------------------------------------------
// The hot kernels (src/kernels, CMakeLists.txt's ATTN_ISA_KERNELS) are compiled once per level
// into one binary and chosen at run time (docs/architecture.md, "Kernels and ISA levels"):
//   baseline  -march=x86-64-v2 (SSE4.2, POPCNT): what the rest of the library needs anyway
//   avx2      -march=x86-64-v3 (AVX, AVX2, FMA, F16C, BMI1, BMI2, LZCNT, MOVBE)
//   avx512    -march=x86-64-v4 (x86-64-v3 + AVX-512 F, CD, DQ, BW, VL)
enum class IsaLevel { baseline = 0, avx2 = 1, avx512 = 2 };
inline constexpr IsaLevel kIsaLevels[] = {IsaLevel::baseline, IsaLevel::avx2, IsaLevel::avx512};

const char* isa_level_name(IsaLevel level);  // "baseline", "avx2", "avx512"
// What `level` needs that this CPU (or its operating system) lacks, as "AVX-512 BW, VL";
// "" when the CPU runs it.
std::string isa_level_missing(IsaLevel level, const CpuFeatures& f);
// The highest level the CPU runs.
IsaLevel best_isa_level(const CpuFeatures& f);
// The level to run at: the best one, or the one ATTN_ISA names (`attn_isa`, null or "" when
// unset). Throws ValueError, one line, for an unknown name (naming the valid ones) or a level
// the CPU lacks (naming what is missing): never a level that would fault.
IsaLevel choose_isa_level(const char* attn_isa, const CpuFeatures& f);
// The level attn's kernels run at in this process: choose_isa_level(ATTN_ISA, this CPU), on the
// first call, then fixed. Thread-safe. Throws ValueError as choose_isa_level; the CLI, the Python
// module and the test programs call it at start, so that error comes before any work.
// (Defined with the kernels, src/kernels/isa.cpp.)
IsaLevel kernel_isa_level();

}  // namespace attn
