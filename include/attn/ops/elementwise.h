#pragma once
// Elementwise ops. Operands of binary ops must have identical shapes: there is no
// broadcasting in attn.
#include "attn/tensor.h"

namespace attn {

Tensor add(const Tensor& a, const Tensor& b);  // a + b
Tensor mul(const Tensor& a, const Tensor& b);  // a * b (elementwise)
Tensor scale(const Tensor& x, float alpha);    // alpha * x
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor exp(const Tensor& x);  // e^x; overflows to inf past x ≈ 88.7, as torch.exp
// ln x for x >= 0 (log 0 = -inf, as torch.log); a negative or NaN entry is a ValueError
// naming its flat index (torch would give NaN).
Tensor log(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x);  // exact (erf) form, as torch.nn.functional.gelu

}  // namespace attn
