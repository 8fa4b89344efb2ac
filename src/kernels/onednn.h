#pragma once
// What the oneDNN GEMMs (gemm_onednn.cpp: fp32 and bf16; gemm_int8.cpp) share: the CPU engine, the thread count,
// a row-chunk grain for attn's own passes over their operands, and a cache of matmul
// primitives, one per shape key, shared by all threads (a mutex around the map; executing a
// primitive is thread-safe because each call brings its own scratchpad and stream).
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "attn/cpu.h"
#include "attn/parallel.h"

namespace attn::kernels::onednn {

// ATTN_ISA=avx2 keeps oneDNN at AVX2 too (with AVX-VNNI): a process limited below AVX-512 runs
// none, in attn's kernels, OpenBLAS or oneDNN. Called before the engine exists, so before any
// oneDNN kernel is built (oneDNN refuses the limit after its first one).
inline void limit_isa() {
  if (kernel_isa_level() != IsaLevel::avx2) return;
  try {
    dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2_vnni);
  } catch (const dnnl::error&) {
    // a kernel was built before this engine (another library in the process): it keeps its choice
  }
}

inline dnnl::engine& engine() {
  static dnnl::engine cpu = [] {
    limit_isa();
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return cpu;
}

// oneDNN's OpenMP threads follow attn's count (inside a parallel region it runs on one).
inline int threads() {
#ifdef ATTN_WITH_OPENMP
  const bool nested = omp_in_parallel();
  const int n = nested ? 1 : num_threads();
  if (!nested && omp_get_max_threads() != n) omp_set_num_threads(n);
  return n;
#else
  return 1;
#endif
}

// Rows of about 64k elements per chunk of a parallel_for over a (rows, cols) operand.
inline int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(cols, 1)); }

struct Matmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
};

// A buffer that only grows and never initialises: std::vector::resize zero-filled every
// grown element, again whenever a large shape followed a small one (1.5 % of a bf16
// Transformer step in memset).
template <class T>
class GrowBuffer {
 public:
  T* reserve(size_t n) {
    if (n > capacity_) {
      data_ = std::make_unique_for_overwrite<T[]>(n);
      capacity_ = n;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<T[]> data_;
  size_t capacity_ = 0;
};

// Runs `m` on the calling thread's stream: src, weights and dst in m.pd's layouts, `scratch`
// grown to the primitive's scratchpad (a per-thread buffer), and waits for it.
inline void execute(const Matmul& m, void* src, void* weights, void* dst, GrowBuffer<unsigned char>& scratch) {
  thread_local dnnl::stream stream(engine());
  const dnnl::memory::desc scratch_md = m.pd.scratchpad_desc();
  const size_t scratch_bytes = scratch_md.get_size();
  unsigned char* scratch_data = scratch.reserve(scratch_bytes);
  dnnl::memory src_mem(m.pd.src_desc(), engine(), src);
  dnnl::memory weights_mem(m.pd.weights_desc(), engine(), weights);
  dnnl::memory dst_mem(m.pd.dst_desc(), engine(), dst);
  dnnl::memory scratch_mem(scratch_md, engine(), scratch_bytes == 0 ? nullptr : scratch_data);
  m.primitive.execute(stream, {{DNNL_ARG_SRC, src_mem},
                               {DNNL_ARG_WEIGHTS, weights_mem},
                               {DNNL_ARG_DST, dst_mem},
                               {DNNL_ARG_SCRATCHPAD, scratch_mem}});
  stream.wait();
}

template <class Key>
class MatmulCache {
 public:
  // The primitive for `key`, built by make_pd() (-> matmul::primitive_desc) on a miss.
  template <class MakePd>
  std::shared_ptr<const Matmul> get(const Key& key, MakePd&& make_pd) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    dnnl::matmul::primitive_desc pd = make_pd();
    if (cache_.size() >= kMaxCached) cache_.clear();
    auto entry = std::make_shared<const Matmul>(Matmul{pd, dnnl::matmul(pd)});
    cache_.emplace(key, entry);
    return entry;
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cache_.size();
  }

 private:
  // A run of many distinct shapes (decoding of varying lengths) must not grow without bound:
  // past this many primitives the cache starts again.
  static constexpr size_t kMaxCached = 4096;
  std::mutex mutex_;
  std::map<Key, std::shared_ptr<const Matmul>> cache_;
};

}  // namespace attn::kernels::onednn
