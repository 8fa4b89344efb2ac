#include "attn/autodiff/tape.h"

#include <algorithm>
#include <cstdlib>

#include "kernels/blas.h"
#include "kernels/elementwise.h"

namespace attn::autodiff {
namespace {
thread_local bool g_grad_enabled = true;
constexpr size_t kBlockSize = 256 * 1024;
// Weight-gradient products with fewer rows than this are deferred and stacked...
constexpr int64_t kDeferBelowRows = 256;
// ...until this many rows are waiting for one weight (bounds the memory they keep alive).
constexpr int64_t kFlushRows = 4096;
}  // namespace

bool grad_enabled() { return g_grad_enabled; }

namespace detail {
bool watching_leaves() { return tape().watching(); }
void note_input(const Tensor& t) { tape().note_input(t); }
}  // namespace detail
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

void Tape::accumulate_weight_grad(const Tensor& weight, const Tensor& a, const Tensor& b) {
  const int64_t rows = a.numel() / weight.dim(0);
  if (rows >= kDeferBelowRows || !weight.is_leaf()) {
    DeferredProducts now{weight, {{a, b}}, rows};
    run_products(now);
    return;
  }
  auto it = std::find_if(deferred_.begin(), deferred_.end(),
                         [&](const DeferredProducts& d) { return d.weight.same(weight); });
  if (it == deferred_.end()) it = deferred_.insert(deferred_.end(), DeferredProducts{weight, {}, 0});
  it->parts.emplace_back(a, b);
  it->rows += rows;
  if (it->rows >= kFlushRows) {
    run_products(*it);
    deferred_.erase(it);
  }
}

// dW (M, N) += Σ_i a_iᵀ b_i = [a_1; a_2; ...]ᵀ [b_1; b_2; ...]: one product over the parts
// stacked (a single part is used where it lies).
void Tape::run_products(DeferredProducts& d) {
  const int64_t M = d.weight.dim(0), N = d.weight.numel() / M;
  Tensor a_all = d.parts.front().first, b_all = d.parts.front().second;
  if (d.parts.size() > 1) {
    a_all = Tensor::empty({d.rows, M});
    b_all = Tensor::empty({d.rows, N});
    int64_t row = 0;
    for (const auto& [a, b] : d.parts) {
      std::copy(a.f32(), a.f32() + a.numel(), a_all.f32() + row * M);
      std::copy(b.f32(), b.f32() + b.numel(), b_all.f32() + row * N);
      row += a.numel() / M;
    }
  }
  kernels::gemm(true, false, M, N, d.rows, 1.0f, a_all.f32(), M, b_all.f32(), N, 1.0f,
                d.weight.grad_accumulator().f32(), N);
}

void Tape::flush_deferred_for(const Tensor& weight) {
  auto it = std::find_if(deferred_.begin(), deferred_.end(),
                         [&](const DeferredProducts& d) { return d.weight.same(weight); });
  if (it == deferred_.end()) return;
  run_products(*it);
  deferred_.erase(it);
}

void Tape::set_ready_hook(std::vector<Tensor> leaves, std::function<void(size_t)> ready) {
  watched_ = std::move(leaves);
  first_node_.assign(watched_.size(), SIZE_MAX);
  noted_.clear();
  ready_ = std::move(ready);
}

void Tape::clear_ready_hook() {
  ready_ = nullptr;
  watched_.clear();
  first_node_.clear();
  noted_.clear();
}

// A linear search: called only while watching, for the inputs of ops that need grad, and
// a model has tens to a few hundred parameters.
void Tape::note_input(const Tensor& t) {
  if (!t.defined() || !t.is_leaf() || !t.requires_grad()) return;
  for (size_t i = 0; i < watched_.size(); ++i)
    if (watched_[i].same(t)) {
      if (first_node_[i] == SIZE_MAX && std::find(noted_.begin(), noted_.end(), i) == noted_.end()) noted_.push_back(i);
      return;
    }
}

void Tape::fire_ready(size_t leaf) {
  flush_deferred_for(watched_[leaf]);
  ready_(leaf);
}

void Tape::flush_deferred() {
  for (DeferredProducts& d : deferred_) run_products(d);
  deferred_.clear();
}

void Tape::clear() {
  deferred_.clear();
  std::fill(first_node_.begin(), first_node_.end(), SIZE_MAX);
  noted_.clear();
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) (*it)->~Node();
  nodes_.clear();
  outputs_.clear();
  block_index_ = 0;
  block_used_ = 0;
}

void Tape::run_backward() {
  struct ClearOnExit {
    Tape& t;
    ~ClearOnExit() {
      t.clear();
      t.clear_ready_hook();
    }
  } guard{*this};
  NoGradGuard no_grad;  // backward functions never record
  // The ready hook's leaves by the node after which they are final, last node first.
  std::vector<std::pair<size_t, size_t>> ready_after;  // (node index, leaf)
  if (ready_) {
    for (size_t leaf = 0; leaf < first_node_.size(); ++leaf)
      if (first_node_[leaf] != SIZE_MAX) ready_after.emplace_back(first_node_[leaf], leaf);
    std::sort(ready_after.begin(), ready_after.end(), std::greater<>());
  }
  auto next_ready = ready_after.begin();
  for (size_t k = nodes_.size(); k-- > 0;) {
    Node& node = *nodes_[k];
    bool any = false;
    for (size_t i = node.outputs_begin; i < node.outputs_end; ++i) any = any || outputs_[i].has_grad();
    if (any) {
      node.run_backward();
      // Every consumer of these outputs came later on the tape and has run: their
      // gradients are no longer needed.
      for (size_t i = node.outputs_begin; i < node.outputs_end; ++i) outputs_[i].drop_grad();
    }
    for (; next_ready != ready_after.end() && next_ready->first == k; ++next_ready) fire_ready(next_ready->second);
  }
  flush_deferred();
  if (ready_)
    for (size_t leaf = 0; leaf < first_node_.size(); ++leaf)
      if (first_node_[leaf] == SIZE_MAX) ready_(leaf);
}

}  // namespace attn::autodiff

namespace attn {

void backward(const Tensor& root, const Tensor& seed) {
  if (!root.defined()) throw ValueError("backward: undefined tensor");
  if (!root.requires_grad())
    throw ValueError(
        "backward: the tensor does not require grad (no recorded op produced it from a tensor that requires grad)");
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
