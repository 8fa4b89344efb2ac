// The kernels' ISA level, chosen once per process (attn/cpu.h, src/kernels/isa.h).
#include "kernels/isa.h"

#include <cstdlib>

namespace attn {

IsaLevel kernel_isa_level() {
  // A throw leaves the static uninitialised: the next call checks again (and throws again).
  static const IsaLevel level = choose_isa_level(std::getenv("ATTN_ISA"), read_cpu_features());
  return level;
}

}  // namespace attn
