// main() of every test program (instead of GoogleTest's): ATTN_ISA naming a level this CPU
// lacks skips the whole program (exit 77, ctest's SKIP_RETURN_CODE: tests/CMakeLists.txt runs
// the kernel suites once per ISA level), an unknown name fails it.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "attn/cpu.h"
#include "attn/error.h"

int main(int argc, char** argv) {
  const char* attn_isa = std::getenv("ATTN_ISA");
  const attn::CpuFeatures cpu = attn::read_cpu_features();
  for (attn::IsaLevel level : attn::kIsaLevels) {
    if (attn_isa == nullptr || std::strcmp(attn_isa, attn::isa_level_name(level)) != 0) continue;
    const std::string missing = attn::isa_level_missing(level, cpu);
    if (!missing.empty()) {
      std::printf("SKIP: ATTN_ISA=%s: this CPU lacks %s\n", attn_isa, missing.c_str());
      return 77;
    }
  }
  try {
    attn::kernel_isa_level();  // nothing printed: --gtest_list_tests output is parsed
  } catch (const attn::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
