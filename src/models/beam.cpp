// Seq2Seq::beam: batched beam search over the RNN decoder (bookkeeping in beam_search.h).
#include <algorithm>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/models/memory_estimate.h"
#include "attn/models/seq2seq.h"
#include "attn/ops/gemm.h"
#include "attn/ops/select.h"
#include "attn/ops/softmax.h"
#include "beam_search.h"
#include "rnn_decoding.h"

namespace attn::models {

DecodeResult Seq2Seq::beam(const Tensor& src, const Tensor& src_lengths, const BeamOptions& options,
                           const Tensor& src_ext, int64_t extended_vocab) {
  const int64_t B = src.dim(0), S = src.dim(1);
  const int64_t W = decoder.attention ? decoder.attention->weight_heads() * S : 0;  // weights per row and step
  detail::BeamSearch search("beam", B, options, W, detail::beam_source(src_lengths, S));
  check_decoding_memory(config_, search.rows(), S, options.max_len);
  autodiff::NoGradGuard no_grad;
  const EncoderOutput enc = encoder.forward(src, src_lengths);
  return detail::beam_decode(decoder, config_, search, options.width, options.max_len, enc, src_lengths,
                             config_.pointer ? (src_ext.defined() ? src_ext : src) : Tensor(), extended_vocab);
}

namespace detail {

DecodeResult beam_decode(Decoder& decoder, const Seq2SeqConfig& config, BeamSearch& search, int width, int max_len,
                         const EncoderOutput& enc_b, const Tensor& src_lengths, const Tensor& src_ext,
                         int64_t extended_vocab) {
  ops::FrozenWeights frozen_weights;  // packed fp32 weights for the steps
  const int64_t S = enc_b.outputs.dim(1);
  const bool with_weights = decoder.attention != nullptr;
  const int K = width;
  const int64_t BK = search.rows();
  // Expand every row to K hypotheses: row b*K + k comes from row b.
  Tensor expand = Tensor::empty({BK}, DType::i32);
  Tensor lengths = Tensor::empty({BK}, DType::i32);
  for (int64_t i = 0; i < BK; ++i) {
    expand.i32()[i] = static_cast<int32_t>(i / K);
    lengths.i32()[i] = src_lengths.i32()[i / K];
  }
  EncoderOutput enc;
  enc.outputs = gather_rows(enc_b.outputs, expand);
  for (const Tensor& h : enc_b.h) enc.h.push_back(gather_rows(h, expand));
  for (const Tensor& c : enc_b.c) enc.c.push_back(gather_rows(c, expand));
  // The per-batch attention memory of the expanded rows (projections run on B·K rows once).
  const nn::StepMemory memory = decoder.prepare(enc, lengths);
  DecoderState state = decoder.initial_state(enc, memory, BK);
  // The pointer: each hypothesis's source in extended ids (BK, S), and Vx.
  const bool pointer = config.pointer;
  Tensor ext;
  if (pointer) {
    ext = Tensor::empty({BK, S}, DType::i32);  // (BK, S): row i from row i / K
    for (int64_t i = 0; i < BK; ++i) std::copy_n(src_ext.i32() + (i / K) * S, S, ext.i32() + i * S);
  }
  const int64_t Vx = std::max<int64_t>(config.vocab, extended_vocab);
  std::vector<float> copy(pointer ? static_cast<size_t>(BK) : 0);

  for (int t = 0; t < max_len; ++t) {
    const Tensor emb = decoder.embedding.forward(in_vocabulary(search.next_tokens(), config.vocab));  // (BK, emb)
    const Decoder::Step s = decoder.step(emb, state, memory, with_weights);
    // (BK, Vx) with the pointer, else (BK, V)
    const Tensor logp =
        pointer ? decoder.step_pointer_log_probs(s, emb, ext, Vx) : log_softmax(decoder.step_logits(s, emb));
    for (size_t i = 0; i < copy.size(); ++i) copy[i] = 1.0f - s.p_gen.f32()[i];
    if (!search.advance(logp, with_weights ? s.weights.f32() : nullptr, pointer ? copy.data() : nullptr)) break;
    // Reorder the decoder state to the new hypotheses.
    search.reorder(state);
  }
  return search.result();
}

}  // namespace detail

}  // namespace attn::models
