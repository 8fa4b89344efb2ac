// The int8 GEMM (kernels/gemm_int8.h). The activations are quantized per row to s8 and
// shifted to u8 (+128), so oneDNN runs its plain u8 x s8 kernels (VPDPBUSD on AVX512_VNNI and
// AVX-VNNI, the AMX tiles on AMX-INT8) with no compensation of its own; the shift's share,
// 128 Σ_k q[n, k], is subtracted here, once per output, with the dequantization
// (sa[i] · sw[n], a per-row scale that oneDNN 2.6's per-column output scales cannot express).
//
// A primitive is built once per shape (M, N, K, threads) with the weights' layout left to
// oneDNN ("any"); each weight is reordered into the layout a primitive asks for once, and the
// copy kept with the weight (Int8Packs), so a call reorders nothing but its activations.
#include "kernels/gemm_int8.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <utility>

#include "attn/cpu.h"
#include "attn/parallel.h"
#include "kernels/onednn.h"
#include "kernels/quantize.h"

namespace attn::kernels {

struct Int8Packs {
  std::mutex mutex;
  std::vector<std::pair<dnnl::memory::desc, std::shared_ptr<std::vector<int8_t>>>> copies;
};

namespace {

using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;

struct Key {
  int64_t m, n, k;
  int threads;
  auto tied() const { return std::tie(m, n, k, threads); }
  bool operator<(const Key& o) const { return tied() < o.tied(); }
};

// The weights' plain layout: q (N, K) dense read as op(B) (K, N).
dnnl::memory::desc plain_weights(int64_t k, int64_t n) { return {dims{k, n}, dt::s8, dims{1, k}}; }

onednn::MatmulCache<Key> g_cache;

// u8 A (M, K) dense x s8 B (K, N) in oneDNN's choice of layout -> s32 C (M, N) dense.
std::shared_ptr<const onednn::Matmul> primitive_for(const Key& key) {
  return g_cache.get(key, [&] {
    const dnnl::memory::desc a_md(dims{key.m, key.k}, dt::u8, dims{key.k, 1});
    const dnnl::memory::desc b_md(dims{key.k, key.n}, dt::s8, dnnl::memory::format_tag::any);
    const dnnl::memory::desc c_md(dims{key.m, key.n}, dt::s32, dims{key.n, 1});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), attr, onednn::engine());
  });
}

// The weight in the layout `want`: its own q when that is the plain layout, else a copy
// reordered once and kept with the weight.
void* weights_in(const Int8Weight& w, const dnnl::memory::desc& want) {
  const dnnl::memory::desc plain = plain_weights(w.k, w.n);
  if (want == plain) return const_cast<int8_t*>(w.q.data());
  std::lock_guard<std::mutex> lock(w.packs->mutex);
  for (auto& [desc, copy] : w.packs->copies)
    if (desc == want) return copy->data();
  auto copy = std::make_shared<std::vector<int8_t>>(want.get_size());
  dnnl::memory from(plain, onednn::engine(), const_cast<int8_t*>(w.q.data()));
  dnnl::memory to(want, onednn::engine(), copy->data());
  dnnl::stream stream(onednn::engine());
  dnnl::reorder(from, to).execute(stream, from, to);
  stream.wait();
  w.packs->copies.emplace_back(want, copy);
  return copy->data();
}

// A thread's operands of one call. GrowBuffers: std::vector::resize zero-filled the grown part
// each time a large shape (the output layer's M × V sums) followed a small one, every step.
struct Buffers {
  onednn::GrowBuffer<uint8_t> a;
  onednn::GrowBuffer<float> a_scale;
  onednn::GrowBuffer<int32_t> c;
  onednn::GrowBuffer<unsigned char> scratch;
};

}  // namespace

std::shared_ptr<const Int8Weight> quantize_weight_int8(bool transpose_b, int64_t k, int64_t n, const float* b,
                                                       int64_t ldb) {
  auto w = std::make_shared<Int8Weight>();
  w->k = k;
  w->n = n;
  w->q.resize(static_cast<size_t>(n * k));
  w->scale.resize(static_cast<size_t>(n));
  w->shift.resize(static_cast<size_t>(n));
  w->packs = std::make_shared<Int8Packs>();
  // op(B)[kk, j]: B[j, kk] when transposed (a row per channel), else B[kk, j] (a column).
  auto at = [&](int64_t kk, int64_t j) { return transpose_b ? b[j * ldb + kk] : b[kk * ldb + j]; };
  for (int64_t j = 0; j < n; ++j) {
    float amax = 0.0f;
    for (int64_t kk = 0; kk < k; ++kk) {
      const float v = std::fabs(at(kk, j));
      if (!(v <= 3.4028235e38f)) w->finite = false;  // NaN or inf
      amax = std::max(amax, v);
    }
    if (!w->finite) return w;
    w->scale[j] = amax / 127.0f;
    const float inverse = amax == 0.0f ? 0.0f : 127.0f / amax;
    int32_t sum = 0;
    int8_t* q = w->q.data() + j * k;
    for (int64_t kk = 0; kk < k; ++kk) {
      q[kk] = static_cast<int8_t>(std::clamp(std::nearbyint(at(kk, j) * inverse), -127.0f, 127.0f));
      sum += q[kk];
    }
    w->shift[j] = 128 * sum;
  }
  return w;
}

void gemm_int8(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const Int8Weight& w,
               float beta, float* c, int64_t ldc, const float* bias) {
  const std::shared_ptr<const onednn::Matmul> entry = primitive_for(Key{m, n, k, onednn::threads()});

  thread_local Buffers buffers;
  uint8_t* qa = buffers.a.reserve(static_cast<size_t>(m * k));   // (M, K) u8
  float* sa = buffers.a_scale.reserve(static_cast<size_t>(m));   // (M)
  int32_t* acc = buffers.c.reserve(static_cast<size_t>(m * n));  // (M, N) s32
  parallel_for(0, m, onednn::row_grain(k),
               [&](int64_t lo, int64_t hi) { quantize_rows_u8(a + lo * lda, lda, hi - lo, k, qa + lo * k, sa + lo); });
  onednn::execute(*entry, qa, weights_in(w, entry->pd.weights_desc()), acc, buffers.scratch);

  // C[i, j] = alpha sa[i] sw[j] (acc[i, j] − shift[j]) + bias[j] + beta C[i, j]
  parallel_for(0, m, onednn::row_grain(n), [&](int64_t lo, int64_t hi) {
    dequantize_rows(acc + lo * n, hi - lo, n, sa + lo, alpha, w.scale.data(), w.shift.data(), bias, beta, c + lo * ldc,
                    ldc);
  });
}

std::string gemm_int8_implementation(int64_t m, int64_t n, int64_t k) {
  return primitive_for(Key{m, n, k, num_threads()})->pd.impl_info_str();
}

}  // namespace attn::kernels
