// Views along the first dimension and reshape: no copies. When recorded, the backward
// adds the view's gradient into the matching rows of the source's gradient.
#include "attn/autodiff/tape.h"
#include "attn/tensor.h"
#include "kernels/elementwise.h"

namespace attn {
namespace {

Tensor make_view(const Tensor& source, int64_t element_offset, const Shape& shape) {
  auto view = std::make_shared<TensorImpl>();
  view->buffer = source.impl().buffer;
  view->offset = source.impl().offset + element_offset;
  view->shape = shape;
  view->dtype = source.dtype();
  return Tensor(view);
}

// Records y as a view of rows of x starting at element `offset`: dx[offset:] += dy.
void record_view(const char* op, const Tensor& x, const Tensor& y, int64_t offset) {
  if (!autodiff::needs_grad(x)) return;
  autodiff::record(op, {y}, [x, y, offset]() mutable {
    kernels::add_into(x.grad_accumulator().f32() + offset, y.grad().f32(), y.numel());
  });
}

}  // namespace

Tensor Tensor::slice(int64_t begin, int64_t end) const {
  if (rank() == 0) throw ShapeError("slice: expected a tensor of rank >= 1, got a scalar");
  const int64_t rows = dim(0);
  if (begin < 0 || end > rows || begin > end)
    throw ValueError("slice: rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") out of range for a first dimension of " + std::to_string(rows));
  std::vector<int64_t> dims = shape().dims();
  dims[0] = end - begin;
  const int64_t row_size = rows == 0 ? 0 : numel() / rows;
  Tensor y = make_view(*this, begin * row_size, Shape(dims));
  record_view("slice", *this, y, begin * row_size);
  return y;
}

Tensor Tensor::select(int64_t index) const {
  if (rank() == 0) throw ShapeError("select: expected a tensor of rank >= 1, got a scalar");
  if (index < 0 || index >= dim(0))
    throw ValueError("select: index " + std::to_string(index) + " out of range for a first dimension of " +
                     std::to_string(dim(0)));
  std::vector<int64_t> dims(shape().dims().begin() + 1, shape().dims().end());
  const int64_t row_size = numel() / dim(0);
  Tensor y = make_view(*this, index * row_size, Shape(dims));
  record_view("select", *this, y, index * row_size);
  return y;
}

Tensor Tensor::reshape(const Shape& new_shape) const {
  if (new_shape.numel() != numel())
    throw ShapeError("reshape: cannot view " + shape().str() + " as " + new_shape.str() + " (" +
                     std::to_string(numel()) + " vs " + std::to_string(new_shape.numel()) + " elements)");
  Tensor y = make_view(*this, 0, new_shape);
  record_view("reshape", *this, y, 0);
  return y;
}

}  // namespace attn
