#pragma once
// What the bf16 and int8 tests share (tests/precision/).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "attn/cpu.h"
#include "attn/error.h"
#include "attn/precision.h"
#include "attn/tensor.h"

namespace attn::testing {

// An x86-64 CPU with AVX2 and the Skylake-SP AVX-512 set, its OS enabling both; the tests add
// the features they are about (AVX512_BF16, AVX512_VNNI, AMX).
inline CpuFeatures avx512_cpu() {
  CpuFeatures f;
  f.x86 = true;
  f.avx = f.avx2 = f.fma = f.os_ymm = true;
  f.avx512f = f.avx512cd = f.avx512dq = f.avx512bw = f.avx512vl = f.os_zmm = true;
  return f;
}

// ATTN_ISA=baseline forces the feature off on any machine: set_compute_precision(p) refuses with
// one line starting "<name> needs " and naming --precision fp32, and the precision stays fp32.
inline void expect_refused_at_baseline(Precision p) {
  const std::string name = precision_name(p);
  const char* old = std::getenv("ATTN_ISA");
  const std::string saved = old ? old : "";
  setenv("ATTN_ISA", "baseline", 1);
  try {
    set_compute_precision(p);
    ADD_FAILURE() << name << " accepted at ATTN_ISA=baseline";
  } catch (const ValueError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(message.rfind(name + " needs ", 0), 0u) << message;
    EXPECT_NE(message.find("--precision fp32"), std::string::npos) << message;
  }
  if (old)
    setenv("ATTN_ISA", saved.c_str(), 1);
  else
    unsetenv("ATTN_ISA");
  EXPECT_EQ(compute_precision(), Precision::fp32);
}

// ‖actual − expected‖ / ‖expected‖ over the whole tensor, in double.
inline double relative_error(const Tensor& actual, const Tensor& expected) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double e = expected.f32()[i], a = actual.f32()[i];
    diff += (a - e) * (a - e);
    norm += e * e;
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

}  // namespace attn::testing
