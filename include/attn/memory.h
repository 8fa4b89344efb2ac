#pragma once
// Pooled, 64-byte aligned storage. Buffers freed by tensors return to a free list keyed
// by size, so a training loop that repeats the same shapes stops allocating after its
// first step (see allocator_stats()). A borrowed buffer instead wraps memory attn did not
// allocate (a numpy array's, a torch tensor's): no copy, not pooled, not counted.
#include <cstddef>
#include <cstdint>
#include <memory>

namespace attn {

class Buffer {
 public:
  explicit Buffer(size_t bytes);
  // Borrows `bytes` at `data`; `owner` keeps that memory alive and is released with the
  // buffer (its deleter must be safe on any thread). Only as aligned as the owner made it.
  Buffer(void* data, size_t bytes, std::shared_ptr<void> owner)
      : data_(data), bytes_(bytes), owner_(std::move(owner)) {}
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  bool borrowed() const { return owner_ != nullptr; }

 private:
  void* data_;
  size_t bytes_;
  std::shared_ptr<void> owner_;  // set for borrowed memory only
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
