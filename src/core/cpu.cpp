#include "attn/cpu.h"

#include <cstring>

#include "attn/enum_names.h"
#include "attn/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace attn {
namespace {

#if defined(__x86_64__) || defined(__i386__)
struct Regs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Regs cpuid(unsigned leaf, unsigned subleaf = 0) {
  Regs r;
  if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) r = Regs{};
  return r;
}

bool bit(unsigned word, int n) { return (word >> n) & 1u; }

unsigned long long xgetbv0() {
  unsigned eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

void read_brand(char (&brand)[49]) {
  if (cpuid(0x80000000).eax < 0x80000004) return;
  unsigned words[12];
  for (unsigned i = 0; i < 3; ++i) {
    const Regs r = cpuid(0x80000002 + i);
    words[4 * i] = r.eax, words[4 * i + 1] = r.ebx, words[4 * i + 2] = r.ecx, words[4 * i + 3] = r.edx;
  }
  char raw[49] = {};
  std::memcpy(raw, words, 48);
  const char* start = raw;
  while (*start == ' ') ++start;  // Intel pads the brand string on the left
  size_t n = std::strlen(start);
  while (n > 0 && start[n - 1] == ' ') --n;
  std::memcpy(brand, start, n);
  brand[n] = '\0';
}
#endif

}  // namespace

CpuFeatures read_cpu_features() noexcept {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  const Regs leaf0 = cpuid(0);
  f.x86 = true;
  std::memcpy(f.vendor, &leaf0.ebx, 4);
  std::memcpy(f.vendor + 4, &leaf0.edx, 4);
  std::memcpy(f.vendor + 8, &leaf0.ecx, 4);
  read_brand(f.brand);

  const Regs leaf1 = leaf0.eax >= 1 ? cpuid(1) : Regs{};
  const unsigned base_family = (leaf1.eax >> 8) & 0xf;
  const unsigned base_model = (leaf1.eax >> 4) & 0xf;
  f.family = static_cast<int>(base_family == 0xf ? base_family + ((leaf1.eax >> 20) & 0xff) : base_family);
  f.model = static_cast<int>(base_family == 0x6 || base_family == 0xf ? base_model | (((leaf1.eax >> 16) & 0xf) << 4)
                                                                      : base_model);
  f.sse3 = bit(leaf1.ecx, 0);
  f.ssse3 = bit(leaf1.ecx, 9);
  f.fma = bit(leaf1.ecx, 12);
  f.movbe = bit(leaf1.ecx, 22);
  f.popcnt = bit(leaf1.ecx, 23);
  f.sse4_1 = bit(leaf1.ecx, 19);
  f.sse4_2 = bit(leaf1.ecx, 20);
  f.avx = bit(leaf1.ecx, 28);
  f.f16c = bit(leaf1.ecx, 29);
  if (bit(leaf1.ecx, 27)) {  // OSXSAVE: XGETBV is available
    const unsigned long long xcr0 = xgetbv0();
    f.os_ymm = (xcr0 & 0x6) == 0x6;          // SSE + AVX state
    f.os_zmm = (xcr0 & 0xe6) == 0xe6;        // + opmask, ZMM0-15 upper halves, ZMM16-31
    f.os_amx = (xcr0 & 0x60000) == 0x60000;  // XTILECFG + XTILEDATA
  }
  if (leaf0.eax >= 7) {
    const Regs l7 = cpuid(7, 0);
    f.bmi1 = bit(l7.ebx, 3);
    f.avx2 = bit(l7.ebx, 5);
    f.bmi2 = bit(l7.ebx, 8);
    f.avx512f = bit(l7.ebx, 16);
    f.avx512dq = bit(l7.ebx, 17);
    f.avx512cd = bit(l7.ebx, 28);
    f.avx512bw = bit(l7.ebx, 30);
    f.avx512vl = bit(l7.ebx, 31);
    f.avx512_vnni = bit(l7.ecx, 11);
    f.amx_bf16 = bit(l7.edx, 22);
    f.avx512_fp16 = bit(l7.edx, 23);
    f.amx_tile = bit(l7.edx, 24);
    f.amx_int8 = bit(l7.edx, 25);
    if (l7.eax >= 1) {
      const Regs l71 = cpuid(7, 1);
      f.avx_vnni = bit(l71.eax, 4);
      f.avx512_bf16 = bit(l71.eax, 5);
    }
  }
  if (cpuid(0x80000000).eax >= 0x80000001) f.lzcnt = bit(cpuid(0x80000001).ecx, 5);
#endif
  return f;
}

bool has_avx2(const CpuFeatures& f) { return f.avx && f.avx2 && f.fma && f.os_ymm; }

bool has_avx512(const CpuFeatures& f) {
  return has_avx2(f) && f.os_zmm && f.avx512f && f.avx512cd && f.avx512dq && f.avx512bw && f.avx512vl;
}

std::string cpu_isa_summary(const CpuFeatures& f) {
  if (!f.x86) return "not x86";
  std::string s;
  auto add = [&s](bool on, const char* name) {
    if (on) s += (s.empty() ? "" : " ") + std::string(name);
  };
  add(f.sse4_2, "SSE4.2");
  add(f.avx && f.os_ymm, "AVX");
  add(f.avx2 && f.os_ymm, "AVX2");
  add(f.fma && f.os_ymm, "FMA");
  add(has_avx512(f), "AVX-512");
  add(f.avx512f && f.os_zmm && !has_avx512(f), "AVX-512F(partial)");
  add(f.avx512_vnni && f.os_zmm, "VNNI");
  add(f.avx512_bf16 && f.os_zmm, "BF16");
  add(f.avx512_fp16 && f.os_zmm, "FP16");
  add(f.amx_tile && f.os_amx, "AMX");
  add(f.amx_tile && !f.os_amx, "AMX(disabled by the OS)");
  return s.empty() ? "SSE2" : s;
}

const char* isa_level_name(IsaLevel level) {
  static constexpr EnumName<IsaLevel> kNames[] = {
      {IsaLevel::baseline, "baseline"}, {IsaLevel::avx2, "avx2"}, {IsaLevel::avx512, "avx512"}};
  return enum_name(kNames, level, "baseline");
}

namespace {

// What each level needs: its -march's instruction sets (CMakeLists.txt's ATTN_ISA_LEVELS),
// and the OS saving the registers. A level needs its own lines and those of the levels below.
struct IsaRequirement {
  IsaLevel level;
  bool CpuFeatures::*flag;
  const char* name;
};
constexpr IsaRequirement kIsaRequirements[] = {
    // x86-64-v2 (the whole library is compiled for it)
    {IsaLevel::baseline, &CpuFeatures::sse3, "SSE3"},
    {IsaLevel::baseline, &CpuFeatures::ssse3, "SSSE3"},
    {IsaLevel::baseline, &CpuFeatures::sse4_1, "SSE4.1"},
    {IsaLevel::baseline, &CpuFeatures::sse4_2, "SSE4.2"},
    {IsaLevel::baseline, &CpuFeatures::popcnt, "POPCNT"},
    // x86-64-v3
    {IsaLevel::avx2, &CpuFeatures::avx, "AVX"},
    {IsaLevel::avx2, &CpuFeatures::avx2, "AVX2"},
    {IsaLevel::avx2, &CpuFeatures::fma, "FMA"},
    {IsaLevel::avx2, &CpuFeatures::f16c, "F16C"},
    {IsaLevel::avx2, &CpuFeatures::bmi1, "BMI1"},
    {IsaLevel::avx2, &CpuFeatures::bmi2, "BMI2"},
    {IsaLevel::avx2, &CpuFeatures::lzcnt, "LZCNT"},
    {IsaLevel::avx2, &CpuFeatures::movbe, "MOVBE"},
    {IsaLevel::avx2, &CpuFeatures::os_ymm, "YMM state saved by the OS"},
    // x86-64-v4
    {IsaLevel::avx512, &CpuFeatures::avx512f, "AVX-512F"},
    {IsaLevel::avx512, &CpuFeatures::avx512cd, "AVX-512CD"},
    {IsaLevel::avx512, &CpuFeatures::avx512dq, "AVX-512DQ"},
    {IsaLevel::avx512, &CpuFeatures::avx512bw, "AVX-512BW"},
    {IsaLevel::avx512, &CpuFeatures::avx512vl, "AVX-512VL"},
    {IsaLevel::avx512, &CpuFeatures::os_zmm, "ZMM state saved by the OS"},
};

}  // namespace

std::string isa_level_missing(IsaLevel level, const CpuFeatures& f) {
  if (!f.x86) return level == IsaLevel::baseline ? "" : "an x86-64 CPU";
  std::string missing;
  for (const IsaRequirement& r : kIsaRequirements)
    if (r.level <= level && !(f.*r.flag)) missing += (missing.empty() ? "" : ", ") + std::string(r.name);
  return missing;
}

IsaLevel best_isa_level(const CpuFeatures& f) {
  if (isa_level_missing(IsaLevel::avx512, f).empty()) return IsaLevel::avx512;
  if (isa_level_missing(IsaLevel::avx2, f).empty()) return IsaLevel::avx2;
  return IsaLevel::baseline;
}

IsaLevel choose_isa_level(const char* attn_isa, const CpuFeatures& f) {
  if (attn_isa == nullptr || *attn_isa == '\0') return best_isa_level(f);
  for (IsaLevel level : kIsaLevels) {
    if (std::strcmp(attn_isa, isa_level_name(level)) != 0) continue;
    const std::string missing = isa_level_missing(level, f);
    if (!missing.empty())
      throw ValueError("ATTN_ISA=" + std::string(attn_isa) + ": this CPU lacks " + missing + " (it runs up to " +
                       isa_level_name(best_isa_level(f)) + ")");
    return level;
  }
  throw ValueError("ATTN_ISA=" + std::string(attn_isa) + " is not a level: expected baseline, avx2 or avx512");
}

}  // namespace attn
