#pragma once
// The gradient all-reduce of a data-parallel step: g = Σᵣ scaleᵣ · gᵣ for every parameter,
// where each rank passes scaleᵣ = wᵣ / W (its share of the global batch's tokens), so the
// result is the gradient of the loss over the whole global batch, as one process would
// compute it up to float32 rounding.
//
// The parameters are packed, last first (the order backward finishes them), into buckets
// of about bucket_bytes (PyTorch DDP: 25 MB); each bucket's MPI_Iallreduce starts as soon
// as it is packed, so packing and unpacking overlap the reduction of the other buckets.
//
// deterministic: each bucket is all-gathered and the ranks' contributions added in rank
// order 0, 1, ..., N-1 on every rank, so the result does not depend on MPI's reduction
// algorithm or on timing: repeated runs with the same N are bit-identical. (A 1-rank run
// is not: its GEMMs sum the whole batch in another order.) It moves N times the bytes.
#include <cstddef>
#include <memory>
#include <vector>

#include "attn/distributed/communicator.h"
#include "attn/tensor.h"

namespace attn::distributed {

struct GradientReduceOptions {
  bool deterministic = false;
  size_t bucket_bytes = size_t{25} << 20;
};

class GradientReducer {
 public:
  GradientReducer(Communicator& comm, std::vector<Tensor> parameters, GradientReduceOptions options);
  // Replaces every parameter's gradient by Σᵣ scaleᵣ · gᵣ (a parameter without a gradient
  // on this rank contributes zeros).
  void reduce(float scale);
  size_t bucket_count() const { return buckets_.size(); }
  // Wall time spent in reduce() so far.
  double seconds() const { return seconds_; }

 private:
  struct Bucket {
    std::vector<size_t> parameters;  // indices into parameters_
    std::vector<float> values;       // the packed gradients
  };
  void pack(Bucket& b, float scale);
  void unpack(const Bucket& b, const float* summed);
  void reduce_in_rank_order(Bucket& b);

  Communicator& comm_;
  std::vector<Tensor> parameters_;
  GradientReduceOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<float> gathered_;  // deterministic: N × the largest bucket
  double seconds_ = 0.0;
};

}  // namespace attn::distributed
