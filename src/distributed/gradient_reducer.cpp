#include "attn/distributed/gradient_reducer.h"

#include <algorithm>
#include <chrono>

namespace attn::distributed {

GradientReducer::GradientReducer(Communicator& comm, std::vector<Tensor> parameters, GradientReduceOptions options)
    : comm_(comm), parameters_(std::move(parameters)), options_(options) {
  // Last parameter first: backward finishes the layers nearest the loss first.
  Bucket current;
  size_t bytes = 0;
  for (size_t i = parameters_.size(); i-- > 0;) {
    current.parameters.push_back(i);
    bytes += static_cast<size_t>(parameters_[i].numel()) * sizeof(float);
    if (bytes >= options_.bucket_bytes) {
      buckets_.push_back(std::move(current));
      current = {};
      bytes = 0;
    }
  }
  if (!current.parameters.empty()) buckets_.push_back(std::move(current));
  size_t largest = 0;
  for (Bucket& b : buckets_) {
    size_t n = 0;
    for (size_t i : b.parameters) n += static_cast<size_t>(parameters_[i].numel());
    b.values.resize(n);
    largest = std::max(largest, n);
  }
  if (options_.deterministic) gathered_.resize(largest * static_cast<size_t>(comm_.size()));
}

void GradientReducer::pack(Bucket& b, float scale) {
  float* out = b.values.data();
  for (size_t i : b.parameters) {
    const Tensor& p = parameters_[i];
    const int64_t n = p.numel();
    if (p.has_grad()) {
      const float* g = p.grad().f32();
      for (int64_t k = 0; k < n; ++k) out[k] = g[k] * scale;
    } else {
      std::fill(out, out + n, 0.0f);
    }
    out += n;
  }
}

void GradientReducer::unpack(const Bucket& b, const float* summed) {
  for (size_t i : b.parameters) {
    const Tensor& p = parameters_[i];
    const int64_t n = p.numel();
    std::copy(summed, summed + n, p.grad_accumulator().f32());
    summed += n;
  }
}

// Every rank's bucket, added in rank order, so the sum is the same whatever MPI does.
void GradientReducer::reduce_in_rank_order(Bucket& b) {
  const size_t n = b.values.size();
  comm_.all_gather(std::as_bytes(std::span(b.values)), std::as_writable_bytes(std::span(gathered_.data(), n * comm_.size())));
  std::copy(gathered_.begin(), gathered_.begin() + static_cast<std::ptrdiff_t>(n), b.values.begin());
  for (int r = 1; r < comm_.size(); ++r) {
    const float* other = gathered_.data() + static_cast<size_t>(r) * n;
    for (size_t k = 0; k < n; ++k) b.values[k] += other[k];
  }
}

void GradientReducer::reduce(float scale) {
  const auto start = std::chrono::steady_clock::now();
  if (options_.deterministic) {
    for (Bucket& b : buckets_) {
      pack(b, scale);
      reduce_in_rank_order(b);
      unpack(b, b.values.data());
    }
  } else {
    std::vector<std::unique_ptr<PendingReduce>> pending;
    for (Bucket& b : buckets_) {
      pack(b, scale);
      pending.push_back(comm_.start_all_reduce_sum(std::span(b.values)));
      for (auto& p : pending) p->test();  // lets the buckets in flight progress
    }
    for (size_t k = 0; k < buckets_.size(); ++k) {
      pending[k]->wait();
      unpack(buckets_[k], buckets_[k].values.data());
    }
  }
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace attn::distributed
