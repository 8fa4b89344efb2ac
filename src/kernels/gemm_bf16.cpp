// The bf16 GEMM (attn/precision.h): A and B rounded to bfloat16 by attn's convert_to_bf16 in
// their stored layouts (oneDNN reads a transposed operand through its strides: transposing A
// while copying it held dW = dYᵀ X to 41-44 GFLOP/s, oneDNN's own transposed read 62-75),
// multiplied by oneDNN's matmul primitive with fp32 accumulation into fp32 C. On AVX512_BF16
// CPUs oneDNN 2.6 runs its brgemm kernels (VDPBF16PS), on AMX CPUs the AMX tiles.
//
// A primitive is built once per shape (M, N, K, both layouts, ldc, alpha, beta, threads) and
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

struct Key {
  int64_t m, n, k, ldc;
  bool transpose_a, transpose_b;
  uint32_t alpha_bits, beta_bits;
  int threads;
  auto tied() const { return std::tie(m, n, k, ldc, transpose_a, transpose_b, alpha_bits, beta_bits, threads); }
  bool operator<(const Key& o) const { return tied() < o.tied(); }
};

onednn::MatmulCache<Key> g_cache;

std::shared_ptr<const onednn::Matmul> primitive_for(const Key& key, float alpha, float beta) {
  return g_cache.get(key, [&] {
    using dims = dnnl::memory::dims;
    // op(A) (M, K): A dense, or stored (K, M) when transposed; op(B) (K, N): B dense, or stored
    // (N, K) when transposed; C (M, N) at ldc.
    const dnnl::memory::desc a_md(dims{key.m, key.k}, dt::bf16, key.transpose_a ? dims{1, key.m} : dims{key.k, 1});
    const dnnl::memory::desc b_md(dims{key.k, key.n}, dt::bf16, key.transpose_b ? dims{1, key.k} : dims{key.n, 1});
    const dnnl::memory::desc c_md(dims{key.m, key.n}, dt::f32, dims{key.ldc, 1});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops post;
      post.append_sum(beta);  // C = alpha A B + beta C
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
  const int threads = onednn::threads();
  const Key key{
      m, n, k, ldc, transpose_a, transpose_b, std::bit_cast<uint32_t>(alpha), std::bit_cast<uint32_t>(beta), threads};
  const std::shared_ptr<const onednn::Matmul> entry = primitive_for(key, alpha, beta);

  thread_local Buffers buffers;
  uint16_t* a16 = buffers.a.reserve(static_cast<size_t>(m * k));
  uint16_t* b16 = buffers.b.reserve(static_cast<size_t>(k * n));
  convert_rows(a, lda, transpose_a ? k : m, transpose_a ? m : k, a16);  // A as stored
  convert_rows(b, ldb, transpose_b ? n : k, transpose_b ? k : n, b16);  // B as stored
  onednn::execute(*entry, a16, b16, c, buffers.scratch);
}

std::string gemm_bf16_implementation(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k) {
  const int threads = num_threads();
  const Key key{m,      n, k, n, transpose_a, transpose_b, std::bit_cast<uint32_t>(1.0f), std::bit_cast<uint32_t>(0.0f),
                threads};
  return primitive_for(key, 1.0f, 0.0f)->pd.impl_info_str();
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

size_t gemm_bf16_cached_primitives() { return g_cache.size(); }

}  // namespace attn::kernels
