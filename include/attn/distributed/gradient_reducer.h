#pragma once
// The gradient all-reduce of a data-parallel step: g = Σᵣ scaleᵣ · gᵣ for every parameter,
// where each rank passes scaleᵣ = wᵣ / W (its share of the global batch's tokens), so the
// result is the gradient of the loss over the whole global batch, as one process would
// compute it up to float32 rounding.
//
// The parameters are packed, last registered first (about the order backward finishes
// them, as PyTorch DDP does), into buckets of about bucket_bytes (DDP: 25 MB).
//
// overlap (the default; a step is begin_step() before the forward pass, set_scale() before
// backward, finish_step() after it): the tape's ready hook (autodiff/tape.h) packs each
// parameter the moment backward has finished its gradient; a bucket's MPI_Iallreduce starts
// once all its parameters are packed and every earlier bucket has started (every rank starts
// them in the same order), and each hook call lets the buckets in flight progress
// (MPI_Test). finish_step() packs what the hook did not see, starts the rest, waits for
// those not complete yet (MPI_Wait) and writes the sums back. Without overlap, or without begin_step(),
// everything is packed and started in finish_step(). The sums are the same either way:
// the same buckets, the same MPI reduction.
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
  bool overlap = true;  // start buckets during backward (deterministic: always after it)
  size_t bucket_bytes = size_t{25} << 20;
};

class GradientReducer {
 public:
  GradientReducer(Communicator& comm, std::vector<Tensor> parameters, GradientReduceOptions options);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Before the forward pass: sets the calling thread's tape's ready hook (with overlap).
  void begin_step();
  // Before backward: this rank's share of the global batch, scaleᵣ = wᵣ / W.
  void set_scale(float scale);
  // After backward: every parameter's gradient becomes Σᵣ scaleᵣ · gᵣ (a parameter without
  // a gradient on this rank contributes zeros).
  void finish_step();
  // set_scale(scale) and finish_step(), for a step without begin_step().
  void reduce(float scale) {
    set_scale(scale);
    finish_step();
  }
  size_t bucket_count() const { return buckets_.size(); }
  // Wall time spent in the reducer so far: in the ready hook during backward (packing,
  // starting buckets, MPI_Test) plus in finish_step() after it.
  double seconds() const { return hook_seconds_ + wait_seconds_; }
  // The part after backward: what the step waits for beyond backward.
  double wait_seconds() const { return wait_seconds_; }
  // Bytes of gradient whose all-reduce had completed before backward ended (a bucket's
  // test() returned true in a ready-hook call), and all bytes reduced, so far. Their ratio is
  // the share of the all-reduce that backward hid completely; a bucket started in the hook
  // but still in flight when finish_step() begins does not count.
  double done_in_backward_bytes() const { return done_in_backward_bytes_; }
  double total_bytes() const { return total_bytes_; }

 private:
  struct Bucket {
    std::vector<size_t> parameters;  // indices into parameters_
    std::vector<float> values;       // the packed gradients
    size_t waiting = 0;              // this step: parameters not packed yet
    std::unique_ptr<PendingReduce> pending;
    bool done = false;  // this step: pending->test() returned true in the ready hook
  };
  void on_ready(size_t parameter);
  void pack(size_t parameter);
  void start_ready_buckets();
  void unpack(const Bucket& b, const float* summed);
  void reduce_in_rank_order(Bucket& b);

  Communicator& comm_;
  std::vector<Tensor> parameters_;
  GradientReduceOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_, offset_of_;  // per parameter: its bucket, its place there
  std::vector<bool> packed_;                   // this step
  size_t next_start_ = 0;                      // the first bucket not started this step
  bool hooked_ = false;                        // the tape's ready hook is ours this step
  float scale_ = 1.0f;
  std::vector<float> gathered_;  // deterministic: N × the largest bucket
  double hook_seconds_ = 0.0, wait_seconds_ = 0.0, done_in_backward_bytes_ = 0.0, total_bytes_ = 0.0;
};

}  // namespace attn::distributed
