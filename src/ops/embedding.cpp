#include "attn/ops/embedding.h"

#include "attn/autodiff/tape.h"
#include "kernels/embedding.h"

namespace attn {
namespace {

// "(1, 2)": the multi-index of flat position p in `shape`.
std::string position_str(const Shape& shape, int64_t p) {
  std::vector<int64_t> index(static_cast<size_t>(shape.rank()));
  for (int i = shape.rank() - 1; i >= 0; --i) {
    index[static_cast<size_t>(i)] = p % shape[i];
    p /= shape[i];
  }
  return Shape(index).str();
}

}  // namespace

Tensor embedding(const Tensor& ids, const Tensor& weight, EmbeddingOptions options) {
  if (!ids.defined()) throw ShapeError("embedding: 'ids' expected an int32 tensor (...), got an undefined tensor");
  if (ids.dtype() != DType::i32)
    throw ShapeError(std::string("embedding: 'ids' expected dtype int32, got ") + dtype_name(ids.dtype()));
  ShapeContract c("embedding");
  c.check("weight", weight, {"V", "D"});
  const int64_t vocab = c["V"], d = c["D"];
  const int32_t padding_idx = options.padding_idx;
  if (padding_idx != -1 && (padding_idx < 0 || padding_idx >= vocab))
    throw ValueError("embedding: padding_idx " + std::to_string(padding_idx) +
                     " is outside [0, V=" + std::to_string(vocab) + ") (use -1 for none)");
  const int64_t n = ids.numel();
  const int32_t* id = ids.i32();
  for (int64_t p = 0; p < n; ++p)
    if (id[p] < 0 || id[p] >= vocab)
      throw ValueError("embedding: id " + std::to_string(id[p]) + " at position " + position_str(ids.shape(), p) +
                       " is outside the vocabulary [0, V=" + std::to_string(vocab) + ")");

  std::vector<int64_t> dims = ids.shape().dims();
  dims.push_back(d);
  Tensor y = Tensor::empty(Shape(dims));  // (..., D)
  kernels::embedding_forward(id, weight.f32(), y.f32(), n, d);

  if (autodiff::needs_grad(weight)) {
    // The ids are copied: a caller may refill its batch tensor before backward runs.
    autodiff::record("embedding", {y}, [ids = ids.clone(), weight, y, n, d, padding_idx]() mutable {
      // dW[ids[p]] += dy[p], except the padding row
      kernels::embedding_backward(ids.i32(), y.grad().f32(), weight.grad_accumulator().f32(), n, d, padding_idx);
    });
  }
  return y;
}

}  // namespace attn
