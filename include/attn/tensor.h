#pragma once
// Tensor: float32 or int32, contiguous row-major, shapes outermost-first, 64-byte
// aligned pooled storage (or borrowed memory: Tensor::borrow), views along the first
// dimension without copies.
// There is no implicit broadcasting anywhere in attn.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attn/error.h"
#include "attn/memory.h"
#include "attn/shape.h"

namespace attn {

struct TensorImpl {
  std::shared_ptr<Buffer> buffer;  // shared by views
  int64_t offset = 0;              // in elements, into buffer
  Shape shape;
  DType dtype = DType::f32;
  bool requires_grad = false;
  bool is_leaf = true;               // false once an op recorded it as an output
  std::shared_ptr<TensorImpl> grad;  // f32, same shape; allocated on first accumulation
  std::string name;                  // parameters carry their names
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // Uninitialised storage from the pool.
  static Tensor empty(const Shape& shape, DType dtype = DType::f32);
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32);
  static Tensor full(const Shape& shape, float value);
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape);
  static Tensor from_vector(const std::vector<int32_t>& values, const Shape& shape);
  static Tensor scalar(float value) { return full(Shape{}, value); }
  // Zero-copy over memory attn did not allocate: `data` holds shape.numel() contiguous
  // row-major values of `dtype`, aligned to the element size (ValueError otherwise; attn's
  // kernels load unaligned, so element alignment is all they need). `owner` (non-null) keeps
  // the memory alive while any tensor, view or tape entry over it lives. Writes through
  // this tensor (an optimizer step) are writes to that memory.
  static Tensor borrow(void* data, const Shape& shape, DType dtype, std::shared_ptr<void> owner);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  int rank() const { return shape().rank(); }
  int64_t dim(int i) const { return shape()[i]; }
  int64_t numel() const { return shape().numel(); }
  DType dtype() const { return impl().dtype; }

  // Typed data pointers; throw ValueError on a dtype mismatch.
  float* f32();
  const float* f32() const;
  int32_t* i32();
  const int32_t* i32() const;

  std::vector<float> to_vector() const;        // f32 contents
  std::vector<int32_t> to_vector_i32() const;  // i32 contents
  float item() const;                          // the value of a one-element f32 tensor

  Tensor clone() const;                  // deep copy, not connected to the tape
  Tensor detach() const;                 // shares storage, not connected to the tape
  void copy_from(const Tensor& source);  // same shape and dtype; not recorded
  void fill(float value);                // not recorded

  // Views along the first dimension, sharing storage. When grad is being recorded and
  // this tensor requires grad, the view is recorded too (gradients flow back). Declared
  // here, defined in src/ops/view.cpp beside the ops: they record into the tape
  // (autodiff/tape.h), which core does not include.
  Tensor slice(int64_t begin, int64_t end) const;  // rows [begin, end) of dim 0
  Tensor select(int64_t index) const;              // row `index` of dim 0, rank - 1
  Tensor reshape(const Shape& shape) const;        // same numel, shares storage

  // Autodiff state.
  bool requires_grad() const { return defined() && impl().requires_grad; }
  Tensor& set_requires_grad(bool value);
  bool is_leaf() const { return impl().is_leaf; }
  bool has_grad() const { return defined() && impl().grad != nullptr; }
  Tensor grad() const;              // undefined when no gradient has arrived
  Tensor grad_accumulator() const;  // the gradient buffer, created as zeros on first use
  void zero_grad();                 // sets an existing gradient to zeros (keeps the buffer)
  void drop_grad();                 // releases the gradient buffer

  const std::string& name() const { return impl().name; }
  Tensor& set_name(std::string name);

  bool same(const Tensor& other) const { return impl_ == other.impl_; }
  TensorImpl& impl() const;
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// Runs backward from a tensor: a scalar loss (seed 1) or any tensor with an explicit
// seed gradient of its shape. Gradients accumulate into leaves until zeroed. The tape
// is cleared afterwards.
void backward(const Tensor& root, const Tensor& seed = Tensor());

}  // namespace attn
