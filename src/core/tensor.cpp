#include "attn/tensor.h"

#include <cstring>

namespace attn {

namespace {
std::shared_ptr<TensorImpl> make_impl(const Shape& shape, DType dtype) {
  // numel() checks the shape (no negative size, at most kMaxElements: attn/checked_size.h),
  // so the byte count below cannot overflow.
  auto impl = std::make_shared<TensorImpl>();
  impl->buffer = std::make_shared<Buffer>(static_cast<size_t>(shape.numel() * dtype_size(dtype)));
  impl->shape = shape;
  impl->dtype = dtype;
  return impl;
}

// A tensor of `shape` holding `values` (as many as the shape has elements: ShapeError otherwise).
template <typename T>
Tensor filled_with(const std::vector<T>& values, const Shape& shape, DType dtype) {
  if (static_cast<int64_t>(values.size()) != shape.numel())
    throw ShapeError("tensor: " + std::to_string(values.size()) + " values cannot fill shape " + shape.str());
  Tensor t = Tensor::empty(shape, dtype);
  std::memcpy(t.impl().buffer->data(), values.data(), values.size() * sizeof(T));
  return t;
}

// The elements of `i` as T, when its dtype is `dtype` (named `what`): ValueError otherwise.
template <typename T>
T* elements(TensorImpl& i, DType dtype, const char* what) {
  if (i.dtype != dtype)
    throw ValueError(std::string("tensor: expected ") + what + " data, tensor is " + dtype_name(i.dtype));
  return static_cast<T*>(i.buffer->data()) + i.offset;
}
}  // namespace

TensorImpl& Tensor::impl() const {
  if (!impl_) throw ValueError("tensor: use of an undefined tensor");
  return *impl_;
}

Tensor Tensor::empty(const Shape& shape, DType dtype) { return Tensor(make_impl(shape, dtype)); }

Tensor Tensor::borrow(void* data, const Shape& shape, DType dtype, std::shared_ptr<void> owner) {
  const int64_t n = shape.numel();  // checks the shape
  if (!owner) throw ValueError("tensor: borrowed memory needs an owner that keeps it alive");
  if (!data && n > 0) throw ValueError("tensor: cannot borrow a null pointer for shape " + shape.str());
  if (reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(dtype_size(dtype)) != 0)
    throw ValueError(std::string("tensor: borrowed ") + dtype_name(dtype) + " memory is not aligned to its " +
                     std::to_string(dtype_size(dtype)) + "-byte elements");
  auto impl = std::make_shared<TensorImpl>();
  impl->buffer = std::make_shared<Buffer>(data, static_cast<size_t>(n * dtype_size(dtype)), std::move(owner));
  impl->shape = shape;
  impl->dtype = dtype;
  return Tensor(impl);
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  std::memset(t.impl().buffer->data(), 0, static_cast<size_t>(t.numel() * dtype_size(dtype)));
  return t;
}

Tensor Tensor::full(const Shape& shape, float value) {
  Tensor t = empty(shape);
  t.fill(value);
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape) {
  return filled_with(values, shape, DType::f32);
}

Tensor Tensor::from_vector(const std::vector<int32_t>& values, const Shape& shape) {
  return filled_with(values, shape, DType::i32);
}

float* Tensor::f32() { return elements<float>(impl(), DType::f32, "float32"); }
const float* Tensor::f32() const { return const_cast<Tensor*>(this)->f32(); }

int32_t* Tensor::i32() { return elements<int32_t>(impl(), DType::i32, "int32"); }
const int32_t* Tensor::i32() const { return const_cast<Tensor*>(this)->i32(); }

std::vector<float> Tensor::to_vector() const {
  const float* p = f32();
  return std::vector<float>(p, p + numel());
}

std::vector<int32_t> Tensor::to_vector_i32() const {
  const int32_t* p = i32();
  return std::vector<int32_t>(p, p + numel());
}

float Tensor::item() const {
  if (numel() != 1) throw ShapeError("item: expected a one-element tensor, got " + shape().str());
  return f32()[0];
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape(), dtype());
  t.copy_from(*this);
  return t;
}

Tensor Tensor::detach() const {
  auto view = std::make_shared<TensorImpl>();
  view->buffer = impl().buffer;
  view->offset = impl().offset;
  view->shape = impl().shape;
  view->dtype = impl().dtype;
  return Tensor(view);
}

void Tensor::copy_from(const Tensor& source) {
  if (source.shape() != shape() || source.dtype() != dtype())
    throw ShapeError("copy_from: expected " + shape().str() + " " + dtype_name(dtype()) + ", got " +
                     source.shape().str() + " " + dtype_name(source.dtype()));
  const void* from = static_cast<const char*>(source.impl().buffer->data()) + source.impl().offset * 4;
  void* to = static_cast<char*>(impl().buffer->data()) + impl().offset * 4;
  std::memmove(to, from, static_cast<size_t>(numel() * dtype_size(dtype())));
}

void Tensor::fill(float value) {
  if (dtype() == DType::i32) {
    int32_t* p = i32();
    for (int64_t i = 0, n = numel(); i < n; ++i) p[i] = static_cast<int32_t>(value);
    return;
  }
  float* p = f32();
  for (int64_t i = 0, n = numel(); i < n; ++i) p[i] = value;
}

Tensor& Tensor::set_requires_grad(bool value) {
  if (value && dtype() != DType::f32) throw ValueError("set_requires_grad: only float32 tensors can require grad");
  if (!value && !is_leaf())
    throw ValueError("set_requires_grad: cannot switch off grad on a non-leaf tensor; use detach()");
  impl().requires_grad = value;
  return *this;
}

Tensor Tensor::grad() const { return impl().grad ? Tensor(impl().grad) : Tensor(); }

Tensor Tensor::grad_accumulator() const {
  TensorImpl& i = impl();
  if (!i.grad) i.grad = Tensor::zeros(i.shape).impl_ptr();
  return Tensor(i.grad);
}

void Tensor::zero_grad() {
  if (impl().grad) Tensor(impl().grad).fill(0.0f);
}

void Tensor::drop_grad() { impl().grad.reset(); }

Tensor& Tensor::set_name(std::string name) {
  impl().name = std::move(name);
  return *this;
}

}  // namespace attn
