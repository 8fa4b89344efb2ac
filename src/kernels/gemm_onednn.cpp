// oneDNN's matmul for attn's GEMMs. fp32 (gemm_f32_onednn): A and B read in place through
// their strides; kernels::gemm sends the products where this measured faster than OpenBLAS
// (use_onednn_f32 in blas.cpp; docs/performance.md, "GEMM kernel selection").
// bf16 (attn/precision.h): A and B rounded to bfloat16 by attn's convert_to_bf16 in
// their stored layouts (oneDNN reads a transposed operand through its strides: transposing A
// while copying it held dW = dYᵀ X to 41-44 GFLOP/s, oneDNN's own transposed read 62-75),
// multiplied by oneDNN's matmul primitive with fp32 accumulation into fp32 C. On AVX512_BF16
// CPUs oneDNN 2.6 runs its brgemm kernels (VDPBF16PS), on AMX CPUs the AMX tiles.
//
// A primitive is built once per shape (M, N, K, both layouts and strides, ldc, alpha, beta,
// threads, data type) and
// kept in a cache shared by all threads (a mutex around the map; executing a primitive is
// thread-safe because each call brings its own scratchpad and stream).
#include <algorithm>
#include <bit>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>

#include "attn/parallel.h"
#include "kernels/bf16.h"
#include "kernels/blas.h"
#include "kernels/onednn.h"

namespace attn::kernels {
namespace {

using dt = dnnl::memory::data_type;

// One primitive per key. lda and ldb are the operands' row strides as oneDNN reads them (the
// bf16 copies are dense).
struct Key {
  dt type;  // of A and B: f32 or bf16
  bool transpose_a, transpose_b;
  int64_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  bool packed_b;  // B in the layout oneDNN chooses (pack_f32_weight); ldb and transpose_b unused
  int threads;
  auto tied() const {
    return std::make_tuple(type, transpose_a, transpose_b, m, n, k, lda, ldb, ldc, std::bit_cast<uint32_t>(alpha),
                           std::bit_cast<uint32_t>(beta), packed_b, threads);
  }
  bool operator<(const Key& o) const { return tied() < o.tied(); }
};

Key key(dt type, bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
        int64_t ldc, float alpha, float beta, bool packed_b = false) {
  return Key{type, transpose_a, transpose_b, m, n, k, lda, ldb, ldc, alpha, beta, packed_b, onednn::threads()};
}

onednn::MatmulCache<Key> g_cache;

std::shared_ptr<const onednn::Matmul> primitive_for(const Key& key) {
  return g_cache.get(key, [&] {
    using dims = dnnl::memory::dims;
    // op(A) (M, K): A (M, K) at row stride lda, or stored (K, M) when transposed; op(B) (K, N):
    // B (K, N) at ldb, or stored (N, K) when transposed; C (M, N) at ldc.
    const dnnl::memory::desc a_md(dims{key.m, key.k}, key.type, key.transpose_a ? dims{1, key.lda} : dims{key.lda, 1});
    const dnnl::memory::desc b_md =
        key.packed_b
            ? dnnl::memory::desc(dims{key.k, key.n}, key.type, dnnl::memory::format_tag::any)
            : dnnl::memory::desc(dims{key.k, key.n}, key.type, key.transpose_b ? dims{1, key.ldb} : dims{key.ldb, 1});
    const dnnl::memory::desc c_md(dims{key.m, key.n}, dt::f32, dims{key.ldc, 1});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (key.alpha != 1.0f) attr.set_output_scales(0, {key.alpha});
    if (key.beta != 0.0f) {
      dnnl::post_ops post;
      post.append_sum(key.beta);  // C = alpha A B + beta C
      attr.set_post_ops(post);
    }
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), attr, onednn::engine());
  });
}

// Per-thread buffers: the bf16 copies of A and B and the primitive's scratchpad.
struct Buffers {
  onednn::GrowBuffer<uint16_t> a, b;
  onednn::GrowBuffer<unsigned char> scratch;
};

// dst (rows, cols) dense = bf16(src), src (rows, cols) at row stride ld, in row chunks over the
// threads (one thread inside a parallel region): the large products' copies take ~1 ms each.
void convert_rows(const float* src, int64_t ld, int64_t rows, int64_t cols, uint16_t* dst) {
  parallel_for(0, rows, onednn::row_grain(cols),
               [&](int64_t lo, int64_t hi) { convert_to_bf16(src + lo * ld, ld, hi - lo, cols, dst + lo * cols); });
}

}  // namespace

void gemm_bf16(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  // The bf16 copies are dense: row strides M or K, K or N.
  const std::shared_ptr<const onednn::Matmul> entry = primitive_for(
      key(dt::bf16, transpose_a, transpose_b, m, n, k, transpose_a ? m : k, transpose_b ? k : n, ldc, alpha, beta));

  thread_local Buffers buffers;
  uint16_t* a16 = buffers.a.reserve(static_cast<size_t>(m * k));
  uint16_t* b16 = buffers.b.reserve(static_cast<size_t>(k * n));
  convert_rows(a, lda, transpose_a ? k : m, transpose_a ? m : k, a16);  // A as stored
  convert_rows(b, ldb, transpose_b ? n : k, transpose_b ? k : n, b16);  // B as stored
  onednn::execute(*entry, a16, b16, c, buffers.scratch);
}

void gemm_f32_onednn(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                     int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const std::shared_ptr<const onednn::Matmul> entry =
      primitive_for(key(dt::f32, transpose_a, transpose_b, m, n, k, lda, ldb, ldc, alpha, beta));
  thread_local onednn::GrowBuffer<unsigned char> scratch;
  onednn::execute(*entry, const_cast<float*>(a), const_cast<float*>(b), c, scratch);  // oneDNN only reads A, B
}

struct PackedF32Weight {
  dnnl::memory::desc desc;
  std::unique_ptr<unsigned char[]> data;
};

std::shared_ptr<const PackedF32Weight> pack_f32_weight(bool transpose_b, int64_t k, int64_t n, const float* b,
                                                       int64_t ldb) {
  // The layout for a 64-row product: for the decoders' shapes oneDNN 2.6 chose the same one
  // for every M from 4 to 700 (gemm_f32_packed checks, and reads B as stored if not).
  auto packed = std::make_shared<PackedF32Weight>();
  packed->desc = primitive_for(key(dt::f32, false, false, 64, n, k, k, 0, n, 1.0f, 0.0f, true))->pd.weights_desc();
  packed->data = std::make_unique_for_overwrite<unsigned char[]>(packed->desc.get_size());
  using dims = dnnl::memory::dims;
  const dnnl::memory::desc stored(dims{k, n}, dt::f32, transpose_b ? dims{1, ldb} : dims{ldb, 1});
  dnnl::memory from(stored, onednn::engine(), const_cast<float*>(b));  // only read
  dnnl::memory to(packed->desc, onednn::engine(), packed->data.get());
  thread_local dnnl::stream stream(onednn::engine());
  dnnl::reorder(from, to).execute(stream, from, to);
  stream.wait();
  return packed;
}

void gemm_f32_packed(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const PackedF32Weight& packed,
                     bool transpose_b, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const std::shared_ptr<const onednn::Matmul> entry =
      primitive_for(key(dt::f32, false, false, m, n, k, lda, 0, ldc, 1.0f, beta, true));
  if (entry->pd.weights_desc() != packed.desc) {
    gemm_f32_onednn(false, transpose_b, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  thread_local onednn::GrowBuffer<unsigned char> scratch;
  onednn::execute(*entry, const_cast<float*>(a), packed.data.get(), c, scratch);  // oneDNN only reads A, B
}

namespace {
// The implementation oneDNN picks for dense operands, C = op(A) op(B).
std::string implementation(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, dt type) {
  return primitive_for(
             key(type, transpose_a, transpose_b, m, n, k, transpose_a ? m : k, transpose_b ? k : n, n, 1.0f, 0.0f))
      ->pd.impl_info_str();
}
}  // namespace

std::string gemm_bf16_implementation(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k) {
  return implementation(transpose_a, transpose_b, m, n, k, dt::bf16);
}

std::string gemm_f32_implementation(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k) {
  return implementation(transpose_a, transpose_b, m, n, k, dt::f32);
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

size_t onednn_cached_primitives() { return g_cache.size(); }

}  // namespace attn::kernels
