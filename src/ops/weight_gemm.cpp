#include "weight_gemm.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "attn/autodiff/tape.h"
#include "attn/error.h"
#include "attn/ops/gemm.h"
#include "attn/precision.h"
#include "kernels/blas.h"
#include "kernels/gemm_int8.h"
#include "kernels/linear.h"

namespace attn::detail {
namespace {

// One quantized weight per (where op(B) starts, its layout and size): a block of a weight
// (Luong concat's two halves) is its own entry.
struct Key {
  const float* b;
  bool transpose_b;
  int64_t k, n, ldb;
  auto tied() const { return std::tie(b, transpose_b, k, n, ldb); }
  bool operator<(const Key& o) const { return tied() < o.tied(); }
};

// Valid while `owner` is the weight's storage (not freed and reallocated at the same address)
// and no switch into int8 came since it was quantized.
struct Cached {
  std::weak_ptr<Buffer> owner;
  uint64_t epoch = 0;
  std::shared_ptr<const kernels::Int8Weight> weight;
};

std::mutex g_mutex;
std::map<Key, Cached> g_weights;

std::string weight_name(const Tensor& weight) {
  return weight.name().empty() ? "the weight " + weight.shape().str() : "'" + weight.name() + "'";
}

std::shared_ptr<const kernels::Int8Weight> int8_weight(const char* op, const Tensor& weight, const Key& key) {
  const std::shared_ptr<Buffer>& owner = weight.impl_ptr()->buffer;
  const uint64_t epoch = int8_epoch();
  std::lock_guard<std::mutex> lock(g_mutex);
  if (auto it = g_weights.find(key); it != g_weights.end()) {
    const Cached& cached = it->second;
    if (cached.epoch == epoch && cached.owner.lock() == owner) return cached.weight;
  }
  auto quantized = kernels::quantize_weight_int8(key.transpose_b, key.k, key.n, key.b, key.ldb);
  if (!quantized->finite)
    throw ValueError(std::string(op) + ": int8 needs finite weights; " + weight_name(weight) + " holds NaN or inf");
  // Drop the entries of freed weights and of earlier epochs before adding one.
  for (auto it = g_weights.begin(); it != g_weights.end();)
    it = it->second.owner.expired() || it->second.epoch != epoch ? g_weights.erase(it) : std::next(it);
  g_weights[key] = Cached{owner, epoch, quantized};
  return quantized;
}

// The fp32 packs of this thread's FrozenWeights scope: a weight is packed on its second use
// (one decoder step would not repay the copy), and only while `owner` is still its storage.
struct Packed {
  std::weak_ptr<Buffer> owner;
  int uses = 0;
  std::shared_ptr<const kernels::PackedF32Weight> weight;
};
thread_local int t_frozen_depth = 0;
thread_local std::map<Key, Packed> t_packed;

// The packed copy of op(B) for this call, or null while it is not worth one.
const kernels::PackedF32Weight* packed_f32(const Tensor& weight, const Key& key) {
  const std::shared_ptr<Buffer>& owner = weight.impl_ptr()->buffer;
  Packed& p = t_packed[key];
  if (p.owner.lock() != owner) p = Packed{owner, 0, nullptr};
  if (!p.weight && ++p.uses >= 2) p.weight = kernels::pack_f32_weight(key.transpose_b, key.k, key.n, key.b, key.ldb);
  return p.weight.get();
}

}  // namespace

void weight_gemm(const char* op, const Tensor& weight, bool transpose_b, int64_t m, int64_t n, int64_t k,
                 const float* a, int64_t lda, const float* b, int64_t ldb, const float* bias, float* c, int64_t ldc) {
  const Precision precision = compute_precision();
  const bool int8 = precision == Precision::int8 && m > 0 && n > 0 && k > 0;
  // kernels::gemm and the fp32 packs add A op(B) to C preset to the bias; gemm_int8 adds the bias itself
  if (!int8 && bias && m > 0) kernels::broadcast_rows(bias, c, m, n);
  const float beta = bias ? 1.0f : 0.0f;
  if (precision == Precision::fp32 && t_frozen_depth > 0 && kernels::use_onednn_f32(false, m, n, k) &&
      !autodiff::needs_grad(weight)) {
    if (const kernels::PackedF32Weight* packed = packed_f32(weight, Key{b, transpose_b, k, n, ldb})) {
      kernels::gemm_f32_packed(m, n, k, a, lda, *packed, transpose_b, b, ldb, beta, c, ldc);
      return;
    }
  }
  if (!int8) {
    kernels::gemm(false, transpose_b, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (autodiff::needs_grad(weight))
    throw ValueError(std::string(op) + ": int8 is for inference, but the gradient of " + weight_name(weight) +
                     " is being recorded; run under no_grad, or at fp32 or bf16");
  const auto quantized = int8_weight(op, weight, Key{b, transpose_b, k, n, ldb});
  kernels::gemm_int8(m, n, k, 1.0f, a, lda, *quantized, 0.0f, c, ldc, bias);
}

}  // namespace attn::detail

namespace attn::ops {

FrozenWeights::FrozenWeights() { ++detail::t_frozen_depth; }

FrozenWeights::~FrozenWeights() {
  if (--detail::t_frozen_depth == 0) detail::t_packed.clear();
}

}  // namespace attn::ops
