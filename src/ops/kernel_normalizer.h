#pragma once
// Private to the ops: the kernels' normaliser (kernels/normalizer.h) of a public one
// (ops/softmax.h), defined in softmax.cpp. The normaliser must be checked (check_normalizer).
#include "attn/ops/softmax.h"
#include "kernels/normalizer.h"

namespace attn {

kernels::Normalizer kernel_normalizer(const Normalizer& normalizer);

}  // namespace attn
