#pragma once
// Pooled, 64-byte aligned storage. Buffers freed by tensors return to a free list keyed
// by size, so a training loop that repeats the same shapes stops allocating after its
// first step (see allocator_stats()).
#include <cstddef>
#include <cstdint>

namespace attn {

class Buffer {
 public:
  explicit Buffer(size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void* data_;
  size_t bytes_;
};

struct AllocatorStats {
  int64_t fresh_allocations = 0;  // buffers that had to come from the system
  int64_t reused = 0;             // buffers served from the free lists
  int64_t cached_bytes = 0;       // bytes held in the free lists now
  int64_t live_bytes = 0;         // bytes held by live buffers now
  int64_t peak_live_bytes = 0;
};
AllocatorStats allocator_stats();
// Returns every cached buffer to the system.
void allocator_release_cache();

}  // namespace attn
