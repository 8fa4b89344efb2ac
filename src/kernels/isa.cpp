// The kernels' ISA level, chosen once per process (attn/cpu.h, src/kernels/isa.h).
#include "kernels/isa.h"

#include <cstdlib>

#include "kernels/blas.h"

namespace attn {

IsaLevel kernel_isa_level() {
  // A throw leaves the static uninitialised: the next call checks again (and throws again).
  static const IsaLevel level = [] {
    kernels::fp32_gemm_choice();  // ATTN_FP32_GEMM: a bad value throws here too
    return choose_isa_level(std::getenv("ATTN_ISA"), read_cpu_features());
  }();
  return level;
}

}  // namespace attn
