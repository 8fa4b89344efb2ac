#pragma once
// Cross-entropy loss, fused with its log-softmax (one op, one tape node).
//
//   logits   (N, V) or (B, T, V) float32
//   targets  (N)    or (B, T)    int32, each in [0, V) or equal to ignore_index
//
// Matches torch.nn.functional.cross_entropy(logits.view(-1, V), targets.view(-1),
// ignore_index=..., label_smoothing=...), reduction "mean":
//
//   loss_i = (1 − ε)(−log p_{y_i}) + ε · mean_j(−log p_j),  p = softmax(logits_i)
//   loss   = Σ_{i not ignored} loss_i / #(not ignored)
//
// Difference from PyTorch: when every target is ignore_index the loss is 0 with zero
// gradient (PyTorch returns NaN).
// Errors: a target outside [0, V) that is not ignore_index → ValueError naming the
// target, its flat index and V; label_smoothing outside [0, 1] (or NaN) → ValueError;
// wrong ranks/shapes/dtypes → ShapeError.
#include <cstdint>

#include "attn/tensor.h"

namespace attn {

struct CrossEntropyOptions {
  int32_t ignore_index = -100;   // targets equal to this contribute nothing
  float label_smoothing = 0.0f;  // ε in [0, 1]
};

// Scalar () mean over non-ignored targets.
// Backward: dlogits_i = g / count · (p_i − (1 − ε) onehot(y_i) − ε / V), 0 for ignored rows.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, CrossEntropyOptions options = {});

// Scalar () sum over non-ignored targets (reduction "sum"); 0 when all are ignored.
Tensor cross_entropy_sum(const Tensor& logits, const Tensor& targets, CrossEntropyOptions options = {});

// The number of targets that are not ignore_index (the divisor of cross_entropy).
// targets: int32 of any shape.
int64_t cross_entropy_count(const Tensor& targets, int32_t ignore_index = -100);

}  // namespace attn
