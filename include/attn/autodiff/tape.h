#pragma once
// The tape: ops append one coarse node per call (a fused op is one node); backward()
// replays the nodes in reverse. Nodes live in an arena that is kept between steps, and
// the node list keeps its capacity, so recording does not allocate once warmed up.
//
// Writing an op (see docs/adding-an-op.md):
//
//   Tensor y = Tensor::empty(x.shape());
//   kernels::tanh_forward(x.f32(), y.f32(), n);
//   if (autodiff::needs_grad(x)) {
//     autodiff::record("tanh", {y}, [x, y]() mutable {
//       // dx += dy * (1 - y^2)
//       if (x.requires_grad()) kernels::tanh_backward(...);
//     });
//   }
//
// Backward functions run only when at least one output has received a gradient.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <new>
#include <span>
#include <utility>
#include <vector>

#include "attn/tensor.h"

namespace attn::autodiff {

bool grad_enabled();
void set_grad_enabled(bool enabled);

// Within its scope no op records anything and no tensor is saved for backward.
class NoGradGuard {
 public:
  NoGradGuard() : previous_(grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

namespace detail {
// True while the calling thread's tape watches leaves for a ready hook (Tape::set_ready_hook).
bool watching_leaves();
// Notes a watched leaf among an op's inputs: the tape's next recorded node uses it.
void note_input(const Tensor& t);
}  // namespace detail

// True when grad mode is on and any argument requires grad. An op passes every input it
// differentiates (the canonical pattern above): while a ready hook is set, the watched
// leaves among them are noted for the node the op records next.
template <class... Ts>
bool needs_grad(const Ts&... tensors) {
  const bool any = grad_enabled() && (tensors.requires_grad() || ...);
  if (any && detail::watching_leaves()) (detail::note_input(tensors), ...);
  return any;
}

class Node {
 public:
  virtual ~Node() = default;
  virtual void run_backward() = 0;
  const char* op = "";
  // Outputs of this node, as a range of the tape's output list; backward runs only if
  // one of them has a gradient.
  size_t outputs_begin = 0;
  size_t outputs_end = 0;
};

class Tape {
 public:
  Tape();
  ~Tape();
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  template <class Fn>
  void record(const char* op, std::span<const Tensor> outputs, Fn&& fn);

  // Runs every recorded node in reverse order, then clears the tape.
  void run_backward();
  // Drops every node and the tensors it saved (keeps the arena's memory).
  void clear();
  size_t size() const { return nodes_.size(); }
  // Bytes of arena blocks obtained from the system so far (for churn measurements).
  size_t arena_bytes() const;

  // dW (M, N) += aᵀ b for a (R, M) and b (R, N), contiguous: see accumulate_weight_grad.
  void accumulate_weight_grad(const Tensor& weight, const Tensor& a, const Tensor& b);

  // The "gradient ready" hook (for an all-reduce that overlaps backward, like PyTorch
  // DDP's): set before the forward pass, for the leaves `leaves` (the parameters). While
  // recording, the tape notes for each leaf the first node that takes it as an input (from
  // needs_grad, see above); the next run_backward() calls ready(i) once for every leaf i:
  // right after that node's backward (the last in reverse order that can add to leaves[i]'s
  // gradient), with leaves[i]'s deferred weight products run first, so its gradient is
  // final; a leaf no recorded node noted gets its call at the end of backward. Then the
  // hook is cleared. Unset, nothing changes; set, gradients are the same bits (a weight's
  // deferred products are the same single GEMM, run earlier).
  void set_ready_hook(std::vector<Tensor> leaves, std::function<void(size_t)> ready);
  void clear_ready_hook();
  bool watching() const { return static_cast<bool>(ready_); }
  void note_input(const Tensor& t);

 private:
  template <class Fn>
  struct LambdaNode final : Node {
    explicit LambdaNode(Fn&& f) : fn(std::move(f)) {}
    void run_backward() override { fn(); }
    Fn fn;
  };
  void* allocate(size_t bytes, size_t align);
  void mark_outputs(Node& node, std::span<const Tensor> outputs);

  // The weight-gradient products of one weight waiting to run as one GEMM.
  struct DeferredProducts {
    Tensor weight;
    std::vector<std::pair<Tensor, Tensor>> parts;  // (a, b) pairs, in backward order
    int64_t rows = 0;
  };
  static void run_products(DeferredProducts& d);
  void flush_deferred();
  void flush_deferred_for(const Tensor& weight);

  // The ready hook (set_ready_hook): the watched leaves, the node index that first used
  // each (SIZE_MAX: none yet) and the leaves noted since the last recorded node.
  std::vector<Tensor> watched_;
  std::vector<size_t> first_node_;
  std::vector<size_t> noted_;
  std::function<void(size_t)> ready_;
  void fire_ready(size_t leaf);
  std::vector<DeferredProducts> deferred_;

  std::vector<Node*> nodes_;
  std::vector<Tensor> outputs_;
  struct Block {
    char* data;
    size_t size;
  };
  std::vector<Block> blocks_;
  size_t block_index_ = 0;
  size_t block_used_ = 0;
};

// The calling thread's tape.
Tape& tape();

// dW (M, N) += aᵀ b, where a (R, M) is an output gradient and b (R, N) the op's input (any
// shapes with those trailing sizes, contiguous, R the product of the others): the
// weight-gradient product of a linear map y = b Wᵀ over R rows. When R is small (one
// recurrent step's batch) and the weight is a leaf, the product waits: the products for
// the same weight are stacked and run as one GEMM over all their rows when backward ends
// (or once 4096 rows are waiting). 41 decoder steps of 64 rows become one product with
// K = 2624 instead of 41 with K = 64, which OpenBLAS runs at 64-row efficiency. Only the
// summation order of dW changes; it does not depend on the thread count. Non-leaf weights
// (their gradient flows on during backward) and large R run at once.
inline void accumulate_weight_grad(const Tensor& weight, const Tensor& a, const Tensor& b) {
  tape().accumulate_weight_grad(weight, a, b);
}

template <class Fn>
void Tape::record(const char* op, std::span<const Tensor> outputs, Fn&& fn) {
  using NodeType = LambdaNode<std::decay_t<Fn>>;
  void* memory = allocate(sizeof(NodeType), alignof(NodeType));
  auto* node = new (memory) NodeType(std::forward<Fn>(fn));
  node->op = op;
  if (!noted_.empty()) {  // the watched leaves this op's needs_grad saw
    for (size_t leaf : noted_)
      if (first_node_[leaf] == SIZE_MAX) first_node_[leaf] = nodes_.size();
    noted_.clear();
  }
  mark_outputs(*node, outputs);
  nodes_.push_back(node);
}

// Records a node on the calling thread's tape; its outputs become non-leaf tensors that
// require grad.
template <class Fn>
void record(const char* op, std::initializer_list<Tensor> outputs, Fn&& fn) {
  tape().record(op, std::span<const Tensor>(outputs.begin(), outputs.size()), std::forward<Fn>(fn));
}
// The same for a variable number of outputs (split).
template <class Fn>
void record(const char* op, const std::vector<Tensor>& outputs, Fn&& fn) {
  tape().record(op, std::span<const Tensor>(outputs), std::forward<Fn>(fn));
}

}  // namespace attn::autodiff
