#include "attn/ops/loss.h"

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "attn/autodiff/tape.h"
#include "kernels/loss.h"

namespace attn {
namespace {

// Checks shapes and values; returns (rows N, vocabulary V).
std::pair<int64_t, int64_t> check_cross_entropy(const char* op, const Tensor& logits, const Tensor& targets,
                                                const CrossEntropyOptions& options) {
  const std::string name(op);
  if (!(options.label_smoothing >= 0.0f && options.label_smoothing <= 1.0f))
    throw ValueError(name + ": label_smoothing must be in [0, 1], got " + fmt::format("{}", options.label_smoothing));
  if (!logits.defined()) throw ShapeError(name + ": 'logits' expected (N, V) or (B, T, V), got an undefined tensor");
  ShapeContract c(op);
  if (logits.rank() == 2) {
    c.check("logits", logits, {"N", "V"});
    c.check("targets", targets, {"N"}, DType::i32);
  } else if (logits.rank() == 3) {
    c.check("logits", logits, {"B", "T", "V"});
    c.check("targets", targets, {"B", "T"}, DType::i32);
  } else {
    throw ShapeError(name + ": 'logits' expected (N, V) or (B, T, V), got " + logits.shape().str());
  }
  const int64_t v = c["V"];
  const int64_t rows = targets.numel();
  const int32_t* t = targets.i32();
  for (int64_t i = 0; i < rows; ++i) {
    if (t[i] == options.ignore_index) continue;
    if (t[i] < 0 || t[i] >= v)
      throw ValueError(name + ": target " + std::to_string(t[i]) + " at index " + std::to_string(i) +
                       " is outside [0, V=" + std::to_string(v) + ") and is not ignore_index (" +
                       std::to_string(options.ignore_index) + ")");
  }
  return {rows, v};
}

Tensor cross_entropy_impl(const char* op, const Tensor& logits, const Tensor& targets,
                          const CrossEntropyOptions& options, bool mean) {
  // Not a structured binding: the backward lambda captures both, which clang 15 cannot do.
  const std::pair<int64_t, int64_t> rows_v = check_cross_entropy(op, logits, targets, options);
  const int64_t rows = rows_v.first, v = rows_v.second;
  const int64_t count = cross_entropy_count(targets, options.ignore_index);
  Tensor lse = Tensor::empty({rows});       // (N) log Σ exp, saved for backward
  Tensor row_loss = Tensor::empty({rows});  // (N)
  kernels::cross_entropy_forward(logits.f32(), targets.i32(), rows, v, options.ignore_index, options.label_smoothing,
                                 lse.f32(), row_loss.f32());
  // Fixed-order sum in double: independent of the thread count.
  double total = 0.0;
  const float* lp = row_loss.f32();
  for (int64_t i = 0; i < rows; ++i) total += lp[i];
  const double divisor = mean && count > 0 ? static_cast<double>(count) : 1.0;
  Tensor loss = Tensor::scalar(count > 0 ? static_cast<float>(total / divisor) : 0.0f);
  if (autodiff::needs_grad(logits)) {
    const float inv = static_cast<float>(1.0 / divisor);
    autodiff::record(op, {loss}, [logits, targets, lse, loss, rows, v, options, inv, count]() mutable {
      // dlogits_i += g · inv · (p_i − (1 − ε) onehot(y_i) − ε / V)
      if (count == 0) {  // every target ignored: zero gradient
        logits.grad_accumulator();
        return;
      }
      const float g = loss.grad().f32()[0];
      kernels::cross_entropy_backward(logits.f32(), targets.i32(), lse.f32(), rows, v, options.ignore_index,
                                      options.label_smoothing, g * inv, logits.grad_accumulator().f32());
    });
  }
  return loss;
}

}  // namespace

int64_t cross_entropy_count(const Tensor& targets, int32_t ignore_index) {
  if (!targets.defined() || targets.dtype() != DType::i32)
    throw ShapeError("cross_entropy_count: 'targets' expected an int32 tensor");
  const int32_t* t = targets.i32();
  int64_t count = 0;
  for (int64_t i = 0; i < targets.numel(); ++i) count += t[i] != ignore_index ? 1 : 0;
  return count;
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, CrossEntropyOptions options) {
  return cross_entropy_impl("cross_entropy", logits, targets, options, true);
}

Tensor cross_entropy_sum(const Tensor& logits, const Tensor& targets, CrossEntropyOptions options) {
  return cross_entropy_impl("cross_entropy_sum", logits, targets, options, false);
}

}  // namespace attn
