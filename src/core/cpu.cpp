#include "attn/cpu.h"

#include <cstring>

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
  f.sse4_1 = bit(leaf1.ecx, 19);
  f.sse4_2 = bit(leaf1.ecx, 20);
  f.avx = bit(leaf1.ecx, 28);
  f.f16c = bit(leaf1.ecx, 29);
  if (bit(leaf1.ecx, 27)) {  // OSXSAVE: XGETBV is available
    const unsigned long long xcr0 = xgetbv0();
    f.os_ymm = (xcr0 & 0x6) == 0x6;                 // SSE + AVX state
    f.os_zmm = (xcr0 & 0xe6) == 0xe6;               // + opmask, ZMM0-15 upper halves, ZMM16-31
    f.os_amx = (xcr0 & 0x60000) == 0x60000;         // XTILECFG + XTILEDATA
  }
  if (leaf0.eax >= 7) {
    const Regs l7 = cpuid(7, 0);
    f.avx2 = bit(l7.ebx, 5);
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

}  // namespace attn
