#pragma once
// What a data-parallel run agrees on besides the gradients (gradient_reducer.h):
// the configuration at start-up, the initial weights, the step's loss and when to stop.
#include <cstdint>
#include <string>
#include <vector>

#include "attn/distributed/communicator.h"
#include "attn/tensor.h"

namespace attn::distributed {

// Every rank hashes `description` (binary version + configuration); ValueError on every rank
// naming the first rank whose hash differs from rank 0's.
void require_same_configuration(Communicator& comm, const std::string& description);

// Copies rank 0's parameter values to every rank.
void broadcast_parameters(Communicator& comm, const std::vector<Tensor>& parameters);

// True on every rank when `flag` is true on any.
bool any_rank(Communicator& comm, bool flag);

// The step's loss over the global batch: each rank's `loss` is a mean over `weight` items
// (tokens, examples); returns Σ wᵣ·lossᵣ / Σ wᵣ and W = Σ wᵣ. A non-finite loss on any rank
// makes the result non-finite on every rank.
struct GlobalLoss {
  double loss = 0.0;
  double weight = 0.0;
};
GlobalLoss reduce_loss(Communicator& comm, double loss, double weight);

}  // namespace attn::distributed
