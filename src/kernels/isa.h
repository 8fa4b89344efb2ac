#pragma once
// Run-time choice of the kernels' ISA level (docs/architecture.md, "Kernels and ISA levels").
//
// Every source in CMakeLists.txt's ATTN_ISA_KERNELS is compiled three times, with
// -march=x86-64-v2, -v3 and -v4 and ATTN_ISA_NS defined as isa_baseline, isa_avx2 and
// isa_avx512, so each copy's functions live in their own namespace:
//   attn::kernels::isa_avx2::softmax_forward, ...
// Their headers declare each function once with ATTN_KERNEL. Seen from a per-level source
// the declaration names that level's function (kernels call each other directly, within one
// level). Seen from the rest of the library, it declares the three copies and an object of
// the plain name, attn::kernels::softmax_forward, that calls the copy of the level chosen once
// per process: the best the CPU runs, or ATTN_ISA=baseline|avx2|avx512.
//
// A header's inline helpers (fast_exp) go in `namespace attn::kernels::inline ATTN_ISA_NS`, so each
// level keeps its own copy: the linker never merges an AVX-512 copy into baseline code.
#include <type_traits>

#include "attn/cpu.h"

namespace attn::kernels {

// The level the dispatched kernels run at (attn/cpu.h).
using attn::kernel_isa_level;

// A kernel as the library sees it: converts to the function pointer of the chosen level's
// copy, so it is called like a function (kernels::softmax_forward(x, ...), the arguments
// converted as for a function), and passes where a function pointer is expected.
template <auto Baseline, auto Avx2, auto Avx512>
struct Dispatched {
  using Function = decltype(Baseline);
  operator Function() const {
    switch (kernel_isa_level()) {
      case IsaLevel::avx512:
        return Avx512;
      case IsaLevel::avx2:
        return Avx2;
      case IsaLevel::baseline:
        break;
    }
    return Baseline;
  }
};

}  // namespace attn::kernels

#ifdef ATTN_ISA_NS
// A per-level kernel source: ATTN_KERNEL declares this level's function.
namespace attn::kernels {
inline namespace ATTN_ISA_NS {}
}  // namespace attn::kernels
#define ATTN_KERNEL(name, ...)            \
  inline namespace ATTN_ISA_NS {          \
  std::type_identity_t<__VA_ARGS__> name; \
  }
#else
// The rest of the library: the header helpers' own copy (compiled with the library's flags),
// and each kernel as a function object over its three copies.
#define ATTN_ISA_NS lib
namespace attn::kernels {
inline namespace lib {}
namespace isa_baseline {}
namespace isa_avx2 {}
namespace isa_avx512 {}
}  // namespace attn::kernels
#define ATTN_KERNEL(name, ...)            \
  namespace isa_baseline {                \
  std::type_identity_t<__VA_ARGS__> name; \
  }                                       \
  namespace isa_avx2 {                    \
  std::type_identity_t<__VA_ARGS__> name; \
  }                                       \
  namespace isa_avx512 {                  \
  std::type_identity_t<__VA_ARGS__> name; \
  }                                       \
  inline constexpr Dispatched<&isa_baseline::name, &isa_avx2::name, &isa_avx512::name> name {}
#endif
