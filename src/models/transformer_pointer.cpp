// TransformerSeq2Seq's pointer-generator (See et al. 2017) as OpenNMT-py's copy attention: the
// copy distribution is the last decoder layer's cross-attention averaged over heads, mixed with
// the vocabulary distribution by p_gen in ops/pointer.h's op (the one the RNN decoders use).
#include <algorithm>
#include <vector>

#include "attn/models/transformer.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/heads.h"
#include "attn/ops/pointer.h"
#include "attn/ops/shape_ops.h"
#include "attn/shape.h"
#include "transformer_common.h"

namespace attn::models {

Tensor TransformerSeq2Seq::pointer_output(const Tensor& logits, const Tensor& h, const Tensor& x,
                                          const nn::LayerAttention& copy, const Tensor& src_ext, int64_t extended_vocab,
                                          Tensor* p_gen) const {
  ShapeContract c("TransformerSeq2Seq (pointer)");
  c.check("logits", logits, {"B", "T", "V"}).check("src_ext", src_ext, {"B", "S"}, DType::i32);
  c.check("cross_weights", copy.cross_weights, {"B", "H", "T", "S"});
  const int64_t B = c["B"], T = c["T"], V = c["V"], S = c["S"];
  const Tensor a = mean_heads(copy.cross_weights).reshape({B * T, S});  // (B·T, S): the copy distribution
  // p_gen = σ(w_cᵀ c_t + w_sᵀ s_t + w_xᵀ x_t + b): (B, T, 3D) → (B·T)
  const Tensor gate = sigmoid(pointer_gate->forward(concat({copy.cross_output, h, x}))).reshape({B * T});
  Tensor ids = Tensor::empty({B * T, S}, DType::i32);  // (B·T, S): row b·T + t reads source row b
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) std::copy_n(src_ext.i32() + b * S, S, ids.i32() + (b * T + t) * S);
  if (p_gen != nullptr) *p_gen = gate;
  const Tensor y = pointer_log_probs(logits.reshape({B * T, V}), gate, a, ids, extended_vocab);  // (B·T, Vx)
  return y.reshape({B, T, extended_vocab});
}

Tensor TransformerSeq2Seq::teacher_forced_output(const Tensor& memory, const Batch& batch, const Tensor& src_ext,
                                                 int64_t extended_vocab) {
  const Tensor x = detail::embed_tokens(target_embedding(), positions, dropout_, batch.tgt_in);  // x_t (B, T, D)
  if (!pointer_gate) return output_logits(decoder.forward(x, memory, batch.src_lengths));        // (B, T, V)
  if (!src_ext.defined())
    throw ValueError(
        "TransformerSeq2Seq: the pointer-generator needs the source's ids (src_ext) for its copy "
        "distribution");
  std::vector<nn::LayerAttention> copy;  // the last layer's cross weights (before dropout) and output
  const Tensor h = decoder.forward(x, memory, batch.src_lengths, &copy, config_.decoder_layers - 1);  // s_t (B, T, D)
  return pointer_output(output_logits(h), h, x, copy.back(), src_ext, extended_vocab);                // (B, T, Vx)
}

}  // namespace attn::models
