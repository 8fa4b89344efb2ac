#include "attn/memory.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace attn {
namespace {

constexpr size_t kAlignment = 64;

struct Pool {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free_lists;  // rounded size -> buffers
  AllocatorStats stats;

  ~Pool() {
    for (auto& [size, list] : free_lists)
      for (void* p : list) std::free(p);
  }
};

Pool& pool() {
  static Pool* instance = new Pool();  // never destroyed: buffers may outlive static teardown
  return *instance;
}

// Size classes: multiples of 64 bytes up to 4 KiB, then four classes per power of two
// (m · 2^k, m in 4..7), so at most a quarter of a large buffer is slack. Batches of
// varying shape (real sentences) then reuse each other's buffers instead of asking the
// system for fresh pages on every step.
size_t round_up(size_t bytes) {
  bytes = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (bytes <= 4096) return bytes;
  size_t step = size_t{1} << (63 - __builtin_clzll(bytes) - 2);  // a quarter of the top power of two
  return (bytes + step - 1) / step * step;
}

// Cached bytes above this go back to the system instead of the free lists.
constexpr int64_t kMaxCachedBytes = int64_t{4} << 30;

}  // namespace

Buffer::Buffer(size_t bytes) : data_(nullptr), bytes_(round_up(bytes == 0 ? 1 : bytes)) {
  Pool& p = pool();
  bool reused = false;
  {
    std::lock_guard lock(p.mutex);
    auto it = p.free_lists.find(bytes_);
    if (it != p.free_lists.end() && !it->second.empty()) {
      data_ = it->second.back();
      it->second.pop_back();
      reused = true;
      p.stats.reused++;
      p.stats.cached_bytes -= static_cast<int64_t>(bytes_);
    }
  }
  if (!data_) {
    data_ = std::aligned_alloc(kAlignment, bytes_);
    if (!data_) throw std::bad_alloc();  // before counting it: the destructor will not run
  }
  std::lock_guard lock(p.mutex);
  if (!reused) p.stats.fresh_allocations++;
  p.stats.live_bytes += static_cast<int64_t>(bytes_);
  if (p.stats.live_bytes > p.stats.peak_live_bytes) p.stats.peak_live_bytes = p.stats.live_bytes;
}

Buffer::~Buffer() {
  if (owner_) return;  // borrowed: owner_ releases the memory, the pool never saw it
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  p.stats.live_bytes -= static_cast<int64_t>(bytes_);
  if (p.stats.cached_bytes + static_cast<int64_t>(bytes_) > kMaxCachedBytes) {
    std::free(data_);
    return;
  }
  p.free_lists[bytes_].push_back(data_);
  p.stats.cached_bytes += static_cast<int64_t>(bytes_);
}

AllocatorStats allocator_stats() {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  return p.stats;
}

void allocator_release_cache() {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  for (auto& [size, list] : p.free_lists)
    for (void* ptr : list) std::free(ptr);
  p.free_lists.clear();
  p.stats.cached_bytes = 0;
}

}  // namespace attn
