#include "attn/distributed/gradient_reducer.h"

#include <algorithm>
#include <chrono>

#include "attn/autodiff/tape.h"

namespace attn::distributed {
namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

GradientReducer::GradientReducer(Communicator& comm, std::vector<Tensor> parameters, GradientReduceOptions options)
    : comm_(comm), parameters_(std::move(parameters)), options_(options) {
  // Last parameter first: backward finishes the layers nearest the loss first.
  bucket_of_.resize(parameters_.size());
  offset_of_.resize(parameters_.size());
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
  for (size_t b = 0; b < buckets_.size(); ++b) {
    size_t n = 0;
    for (size_t i : buckets_[b].parameters) {
      bucket_of_[i] = b;
      offset_of_[i] = n;
      n += static_cast<size_t>(parameters_[i].numel());
    }
    buckets_[b].values.resize(n);
    buckets_[b].waiting = buckets_[b].parameters.size();
    largest = std::max(largest, n);
  }
  packed_.assign(parameters_.size(), false);
  if (options_.deterministic) gathered_.resize(largest * static_cast<size_t>(comm_.size()));
}

GradientReducer::~GradientReducer() {
  if (hooked_) autodiff::tape().clear_ready_hook();
}

void GradientReducer::begin_step() {
  if (!options_.overlap || options_.deterministic) return;
  autodiff::tape().set_ready_hook(parameters_, [this](size_t i) { on_ready(i); });
  hooked_ = true;
}

void GradientReducer::set_scale(float scale) { scale_ = scale; }

// The ready hook: parameter i's gradient is final on this rank.
void GradientReducer::on_ready(size_t i) {
  const auto start = std::chrono::steady_clock::now();
  pack(i);
  start_ready_buckets();
  for (size_t k = 0; k < next_start_; ++k) {  // lets the buckets in flight progress
    Bucket& b = buckets_[k];
    if (!b.pending || b.done || !b.pending->test()) continue;
    b.done = true;  // complete during backward: not tested or waited for again this step
    done_in_backward_bytes_ += static_cast<double>(b.values.size() * sizeof(float));
  }
  hook_seconds_ += seconds_since(start);
}

void GradientReducer::pack(size_t i) {
  if (packed_[i]) return;
  packed_[i] = true;
  Bucket& b = buckets_[bucket_of_[i]];
  float* out = b.values.data() + offset_of_[i];
  const Tensor& p = parameters_[i];
  const int64_t n = p.numel();
  if (p.has_grad()) {
    const float* g = p.grad().f32();
    for (int64_t k = 0; k < n; ++k) out[k] = g[k] * scale_;
  } else {
    std::fill(out, out + n, 0.0f);
  }
  --b.waiting;
}

// Starts the complete buckets in bucket order (every rank issues the collectives alike).
void GradientReducer::start_ready_buckets() {
  for (; next_start_ < buckets_.size() && buckets_[next_start_].waiting == 0; ++next_start_) {
    Bucket& b = buckets_[next_start_];
    if (!options_.deterministic) b.pending = comm_.start_all_reduce_sum(std::span(b.values));
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
  comm_.all_gather(std::as_bytes(std::span(b.values)),
                   std::as_writable_bytes(std::span(gathered_.data(), n * comm_.size())));
  std::copy(gathered_.begin(), gathered_.begin() + static_cast<std::ptrdiff_t>(n), b.values.begin());
  for (int r = 1; r < comm_.size(); ++r) {
    const float* other = gathered_.data() + static_cast<size_t>(r) * n;
    for (size_t k = 0; k < n; ++k) b.values[k] += other[k];
  }
}

void GradientReducer::finish_step() {
  const auto start = std::chrono::steady_clock::now();
  if (hooked_) {
    autodiff::tape().clear_ready_hook();  // (backward has cleared it, unless it never ran)
    hooked_ = false;
  }
  for (size_t i = 0; i < parameters_.size(); ++i) pack(i);  // those the hook did not see
  start_ready_buckets();
  for (Bucket& b : buckets_) {
    if (options_.deterministic)
      reduce_in_rank_order(b);
    else if (!b.done)
      b.pending->wait();
    unpack(b, b.values.data());
    b.pending.reset();
    b.done = false;
    total_bytes_ += static_cast<double>(b.values.size() * sizeof(float));
  }
  // The next step.
  std::fill(packed_.begin(), packed_.end(), false);
  for (Bucket& b : buckets_) b.waiting = b.parameters.size();
  next_start_ = 0;
  wait_seconds_ += seconds_since(start);
}

}  // namespace attn::distributed
