#include "attn/autodiff/tape.h"

#include <cstdlib>

#include "attn/kernels/elementwise.h"

namespace attn::autodiff {
namespace {
thread_local bool g_grad_enabled = true;
constexpr size_t kBlockSize = 256 * 1024;
}  // namespace

bool grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool enabled) { g_grad_enabled = enabled; }

Tape& tape() {
  thread_local Tape instance;
  return instance;
}

Tape::Tape() = default;

Tape::~Tape() {
  clear();
  for (Block& b : blocks_) std::free(b.data);
}

void* Tape::allocate(size_t bytes, size_t align) {
  for (;;) {
    if (block_index_ < blocks_.size()) {
      Block& b = blocks_[block_index_];
      size_t start = (block_used_ + align - 1) / align * align;
      if (start + bytes <= b.size) {
        block_used_ = start + bytes;
        return b.data + start;
      }
      ++block_index_;
      block_used_ = 0;
      continue;
    }
    size_t size = bytes + align > kBlockSize ? bytes + align : kBlockSize;
    char* data = static_cast<char*>(std::aligned_alloc(64, (size + 63) / 64 * 64));
    if (!data) throw std::bad_alloc();
    blocks_.push_back({data, size});
  }
}

void Tape::mark_outputs(Node& node, std::span<const Tensor> outputs) {
  node.outputs_begin = outputs_.size();
  for (const Tensor& t : outputs) {
    TensorImpl& impl = t.impl();
    impl.requires_grad = true;
    impl.is_leaf = false;
    outputs_.push_back(t);
  }
  node.outputs_end = outputs_.size();
}

size_t Tape::arena_bytes() const {
  size_t total = 0;
  for (const Block& b : blocks_) total += b.size;
  return total;
}

void Tape::clear() {
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) (*it)->~Node();
  nodes_.clear();
  outputs_.clear();
  block_index_ = 0;
  block_used_ = 0;
}

void Tape::run_backward() {
  struct ClearOnExit {
    Tape& t;
    ~ClearOnExit() { t.clear(); }
  } guard{*this};
  NoGradGuard no_grad;  // backward functions never record
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    Node& node = **it;
    bool any = false;
    for (size_t i = node.outputs_begin; i < node.outputs_end; ++i) any = any || outputs_[i].has_grad();
    if (!any) continue;
    node.run_backward();
    // Every consumer of these outputs came later on the tape and has run: their
    // gradients are no longer needed.
    for (size_t i = node.outputs_begin; i < node.outputs_end; ++i) outputs_[i].drop_grad();
  }
}

}  // namespace attn::autodiff

namespace attn {

void backward(const Tensor& root, const Tensor& seed) {
  if (!root.defined()) throw ValueError("backward: undefined tensor");
  if (!root.requires_grad())
    throw ValueError("backward: the tensor does not require grad (no recorded op produced it from a tensor that requires grad)");
  Tensor r = root;
  if (seed.defined()) {
    if (seed.shape() != root.shape())
      throw ShapeError("backward: 'seed' expected " + root.shape().str() + ", got " + seed.shape().str());
    Tensor g = r.grad_accumulator();
    kernels::add_into(g.f32(), seed.f32(), g.numel());
  } else {
    if (root.numel() != 1)
      throw ShapeError("backward: expected a scalar loss, got " + root.shape().str() + " (pass a seed gradient)");
    r.grad_accumulator().f32()[0] += 1.0f;
  }
  if (root.is_leaf()) return;
  autodiff::tape().run_backward();
}

}  // namespace attn
