// The kernels' ISA level, chosen once per process (include/attn/kernels/isa.h).
#include "attn/kernels/isa.h"

#include <cstdlib>

namespace attn::kernels {

IsaLevel kernel_isa_level() {
  // A throw leaves the static uninitialised: the next call checks again (and throws again).
  static const IsaLevel level = choose_isa_level(std::getenv("ATTN_ISA"), read_cpu_features());
  return level;
}

}  // namespace attn::kernels
