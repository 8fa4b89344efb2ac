#pragma once
// What the bf16 and int8 tests share (tests/precision/).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "attn/cpu.h"
#include "attn/data/tasks.h"
#include "attn/error.h"
#include "attn/models/transformer.h"
#include "attn/precision.h"
#include "attn/tensor.h"

namespace attn::testing {

// Zen 4 as CPUID reports it: AVX2 and the Skylake-SP AVX-512 set, its OS enabling both, and
// AVX512_BF16 and AVX512_VNNI; the tests take features away from it (and add AMX).
inline CpuFeatures zen4_cpu() {
  CpuFeatures f;
  f.x86 = true;
  f.avx = f.avx2 = f.fma = f.os_ymm = true;
  f.avx512f = f.avx512cd = f.avx512dq = f.avx512bw = f.avx512vl = f.os_zmm = true;
  f.avx512_bf16 = f.avx512_vnni = true;
  return f;
}

// `f` with AMX listed (tiles, AMX-BF16 and AMX-INT8, as Sapphire Rapids has them), its tile
// state enabled by the OS or not.
inline CpuFeatures with_amx(CpuFeatures f, bool os_enables_tiles) {
  f.amx_tile = f.amx_bf16 = f.amx_int8 = true;
  f.os_amx = os_enables_tiles;
  return f;
}

// One row of a "who may run it" table: a CPU, a kernel level, and what bf16_missing or
// int8_missing names there ("" where the precision runs).
struct MissingRow {
  const char* cpu;  // in messages
  CpuFeatures features;
  IsaLevel level;
  std::string missing;
};

inline void expect_missing(std::string (*missing)(const CpuFeatures&, IsaLevel), const std::vector<MissingRow>& rows) {
  for (const MissingRow& row : rows)
    EXPECT_EQ(missing(row.features, row.level), row.missing) << row.cpu << " at " << isa_level_name(row.level);
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

// A reduced-precision `actual` against fp32's `expected`: the relative error within `tol`, and,
// for a result that a reduced-precision GEMM computed (`ran_at_least` > 0), at least
// `ran_at_least`, since a result equal to fp32's means the precision did not run.
inline ::testing::AssertionResult precision_close(Precision p, const std::string& what, const Tensor& actual,
                                                  const Tensor& expected, double tol, double ran_at_least) {
  const std::string name = precision_name(p);
  if (actual.shape() != expected.shape())
    return ::testing::AssertionFailure() << what << ": shape " << actual.shape().str() << " against "
                                         << expected.shape().str();
  const double err = relative_error(actual, expected);
  if (!(err <= tol))
    return ::testing::AssertionFailure() << what << ": relative error " << err << " above the " << name << " tolerance "
                                         << tol << " " << expected.shape().str();
  if (err < ran_at_least)
    return ::testing::AssertionFailure() << what << ": relative error " << err << ": equal to fp32, so " << name
                                         << " did not run";
  return ::testing::AssertionSuccess();
}

// A fixed batch of the copy task (8 sequences of length 12).
inline data::Batch copy_batch(uint64_t seed) {
  data::TaskGenerator tasks(data::TaskKind::copy, 12, 12, seed);
  return tasks.fixed_length(8, 12);
}

// A Transformer big enough that its GEMMs run the reduced-precision kernels: d_model 64, 4
// heads, 2 + 2 layers, no dropout.
inline models::TransformerConfig small_transformer() {
  models::TransformerConfig c;
  c.src_vocab = c.tgt_vocab = data::kVocabSize;
  c.d_model = 64;
  c.heads = 4;
  c.ffn = 128;
  c.encoder_layers = c.decoder_layers = 2;
  c.dropout = 0.0f;
  c.seed = 5;
  return c;
}

}  // namespace attn::testing
