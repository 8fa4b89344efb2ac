#include "attn/distributed/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "attn/error.h"

namespace attn::distributed {
namespace {

// FNV-1a: the same on every rank's binary for the same text (std::hash need not be).
uint64_t fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::span<std::byte> bytes_of(Tensor& t) {
  return {reinterpret_cast<std::byte*>(t.f32()), static_cast<size_t>(t.numel()) * 4};
}

}  // namespace

void require_same_configuration(Communicator& comm, const std::string& description) {
  const uint64_t mine = fnv1a(description);
  std::vector<uint64_t> all(static_cast<size_t>(comm.size()));
  comm.all_gather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all)));
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      throw ValueError("rank " + std::to_string(r) + " runs another attn binary or configuration than rank 0 (their " +
                       "hashes of version + options differ): start every rank with the same binary and options");
}

void broadcast_parameters(Communicator& comm, const std::vector<Tensor>& parameters) {
  for (Tensor p : parameters) comm.broadcast(bytes_of(p), 0);
}

bool any_rank(Communicator& comm, bool flag) {
  double v = flag ? 1.0 : 0.0;
  comm.all_reduce_sum(std::span(&v, 1));
  return v > 0.0;
}

GlobalLoss reduce_loss(Communicator& comm, double loss, double weight) {
  double v[2] = {loss * weight, weight};
  comm.all_reduce_sum(std::span(v));
  return {v[1] > 0 ? v[0] / v[1] : (std::isfinite(v[0]) ? 0.0 : v[0]), v[1]};
}

}  // namespace attn::distributed
